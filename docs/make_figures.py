"""The docs' figures, made from the code and from real runs (never drawn by hand), written to docs/figures/.

    python docs/make_figures.py            # all: the data path, then a default run and a 4-point sweep (minutes)
    python docs/make_figures.py --check    # the data path's boxes are the pipeline's stages; the run figures exist

- `data_path.svg`: the data path, from the pipeline's own stage list (`pipeline.records.STAGE_NAMES`).
- `report_first_screen.png`: the first screen of the default run's report.html, in headless Chromium.
- `pareto.png`: the Pareto plot of a 4-point digits sweep (sparsity x bits).

What the run and the sweep printed (the report's headline, the sweep's table) is recorded in
`benchmarks/results/make_figures/`, so the README's headline numbers link to the run behind its figures.
"""

import argparse
import io
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).parents[1]
FIGURES = ROOT / "docs" / "figures"
sys.path.insert(0, str(ROOT))

# What each stage of `fpgaprune run` does, as the data path reads (a test checks these are the pipeline's stages).
STAGE_TEXT = {
    "train": "train\nthe dense model",
    "prune": "prune\nholds (and strip)",
    "finetune": "fine-tune\nheld at zero",
    "quantize": "quantize\nQKeras QAT",
    "hls": "hls\nkernel-sparse export",
    "csim": "csim\nbit-exact check",
    "synth": "synth\nyosys measurement",
    "report": "report\nestimates, savings",
}
RUN_FIGURES = ("report_first_screen.png", "pareto.png")


def data_path_svg() -> bytes:
    """The data path as an SVG: one box per stage, in the pipeline's order (no date in it: reproducible)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fpgaprune.pipeline.records import STAGE_NAMES

    plt.rcParams["svg.hashsalt"] = "fpgaprune"
    plt.rcParams["svg.fonttype"] = "none"  # text stays text: readable, searchable, and checked by `check`
    from matplotlib.patches import FancyBboxPatch

    step, width = 2.0, 1.7  # box centres and widths, in data units
    figure, axes = plt.subplots(figsize=(15, 1.4))
    for index, stage in enumerate(STAGE_NAMES):
        x = index * step
        axes.add_patch(
            FancyBboxPatch(
                (x - width / 2, -0.4), width, 0.8, boxstyle="round,pad=0.02", facecolor="#e8f0fe", edgecolor="#3367d6"
            )
        )
        axes.text(x, 0, STAGE_TEXT[stage], ha="center", va="center", fontsize=8.5)
        if index:
            axes.annotate(
                "",
                xy=(x - width / 2 - 0.02, 0),
                xytext=(x - step + width / 2 + 0.02, 0),
                arrowprops={"arrowstyle": "->", "color": "#3367d6"},
            )
    axes.set_xlim(-1.0, (len(STAGE_NAMES) - 1) * step + 1.0)
    axes.set_ylim(-0.6, 0.6)
    axes.axis("off")
    out = io.BytesIO()
    figure.savefig(out, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(figure)
    return out.getvalue()


def default_run(directory: Path) -> Path:
    """The default run, as the README's main job runs it (`fpgaprune run`), in `directory`; prints its console
    output (the stage times and the headline) and returns its report.html."""
    command = [str(Path(sys.executable).with_name("fpgaprune")), "run", "--out", str(directory)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    print(done.stdout)
    return directory / "report" / "report.html"


def screenshot(html: Path, png: Path) -> None:
    """The page's first screen (1280 x 900) in headless Chromium."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = shutil.which("chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,900"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    try:
        driver.get(html.resolve().as_uri())
        driver.save_screenshot(str(png))
    finally:
        driver.quit()


def sweep_pareto(directory: Path) -> Path:
    """A 4-point digits sweep (sparsity 0.3, 0.7 x bits 4, 6; short training, no yosys); its pareto.png."""
    from fpgaprune.pipeline.schema import load_config
    from fpgaprune.sweep import run_sweep

    config = load_config(ROOT / "examples" / "digits.yaml")[0]
    config = config.model_copy(update={"outputs": config.outputs.model_copy(update={"synthesize_layers": False})})
    run_sweep(config, {"sparsity": [0.3, 0.7], "bits": [4, 6]}, directory, cpus=2, echo=lambda line: None)
    return directory / "pareto.png"


def svg_texts(svg: bytes) -> list[str]:
    """The text lines of an SVG, in order (matplotlib writes each line of a label as one <text>)."""
    import re
    from html import unescape

    return [unescape(text) for text in re.findall(r"<text[^>]*>([^<]*)</text>", svg.decode())]


def check() -> list[str]:
    """What is wrong with the committed figures: the data path's boxes are not the pipeline's stages (compared as
    text, so another matplotlib's drawing passes), or a figure is missing."""
    from fpgaprune.pipeline.records import STAGE_NAMES

    problems = []
    expected = [line for stage in STAGE_NAMES for line in STAGE_TEXT[stage].split("\n")]
    if svg_texts((FIGURES / "data_path.svg").read_bytes()) != expected:
        problems.append("docs/figures/data_path.svg differs from the pipeline's stages: run docs/make_figures.py")
    problems += [f"docs/figures/{name} is missing" for name in RUN_FIGURES if not (FIGURES / name).is_file()]
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare and check; write nothing")
    args = parser.parse_args()
    if args.check:
        problems = check()
        print("\n".join(problems) or "figures up to date")
        return 1 if problems else 0
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from record import run_recorded

    run_recorded(make_all, "docs/make_figures.py", [])
    return 0


def make_all() -> None:
    """Every figure; prints the default run's console output and the sweep's table (recorded by `run_recorded`)."""
    FIGURES.mkdir(exist_ok=True)
    (FIGURES / "data_path.svg").write_bytes(data_path_svg())
    with tempfile.TemporaryDirectory() as scratch:
        html = default_run(Path(scratch) / "run")
        screenshot(html, FIGURES / "report_first_screen.png")
        pareto = sweep_pareto(Path(scratch) / "sweep")
        shutil.copyfile(pareto, FIGURES / "pareto.png")
        print("the sweep (results.md):")
        print(pareto.with_name("results.md").read_text())
    print(f"written: {', '.join(sorted(p.name for p in FIGURES.iterdir()))}")


if __name__ == "__main__":
    sys.exit(main())
