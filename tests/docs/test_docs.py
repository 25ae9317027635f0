"""The README and the docs site say only what the code does: every Python block runs, every YAML block is a
valid run config, every `fpgaprune` command line names real commands and flags, every config key written in
backticks exists, and every API name used is in the API reference. A block marked `<!-- fragment -->` on the
line above it is shown, not run (it uses names defined elsewhere); the rest run, in order, one namespace per page.
"""

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
PAGES = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
FRAGMENT = "<!-- fragment"
FILE_SUFFIXES = {"py", "yaml", "json", "md", "txt", "csv", "keras", "h5", "npz", "png", "html"}
KERAS_NAMES = {"model.fit", "model.compile", "model.predict", "model.save"}  # Keras' Model, not the config's
SECTIONS = ("model", "data", "training", "pruning", "finetune", "quantization", "hls", "outputs", "sweep")


def blocks(path: Path) -> list[tuple[str, str, int, bool]]:
    """(language, code, line, fragment) of every fenced block of a page."""
    text = path.read_text()
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        found.append((match[1], match[2], line, before.strip().startswith(FRAGMENT)))
    return found


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


RUNNABLE = [path for path in PAGES if any(lang == "python" and not frag for lang, _, _, frag in blocks(path))]


@pytest.mark.parametrize("page", RUNNABLE, ids=_name)
def test_every_python_block_runs(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__docs__"}
    failures, ran = [], 0
    for lang, code, line, fragment in blocks(page):
        if lang != "python" or fragment:
            continue
        try:
            exec(compile(code, f"{_name(page)}:{line}", "exec"), namespace)
            ran += 1
        except Exception as error:  # the page and line of the block that failed; later blocks need its names
            failures.append(f"{_name(page)}:{line}: the block fails: {type(error).__name__}: {error}")
            break
    assert not failures, failures[0]
    assert ran >= 1


def test_every_yaml_block_is_a_valid_run_config():
    from fpgaprune.pipeline.schema import parse_config

    checked = 0
    for page in PAGES:
        for lang, code, line, fragment in blocks(page):
            if lang == "yaml" and not fragment:
                parse_config(code, f"{_name(page)}:{line}")  # ConfigError names the file, line and key
                checked += 1
    assert checked >= 3


def inline_code(text: str) -> list[str]:
    """The inline code spans of a page, outside its fenced blocks."""
    return re.findall(r"`([^`\n]+)`", FENCE.sub("", text))


def _command_lines(text: str) -> list[str]:
    """Every `fpgaprune <command> ...` in code: fenced shell blocks and inline code."""
    lines = [
        line
        for match in FENCE.finditer(text)
        if match[1] in ("bash", "sh", "console", "")
        for line in match[2].split("\n")
    ]
    lines += inline_code(text)
    found = [re.search(r"(?:^|[\s/])(fpgaprune [a-z].*)", line) for line in lines if "import fpgaprune" not in line]
    return [match[1] for match in found if match]


def test_every_command_line_names_a_real_command_and_its_flags():
    from fpgaprune.cli import main

    checked = 0
    for page in PAGES:
        for line in _command_lines(page.read_text()):
            words = line.split()
            command = main.commands.get(words[1])
            assert command is not None, f"{_name(page)}: `{line}`: no command {words[1]!r}"
            flags = {opt for param in command.params for opt in param.opts + param.secondary_opts}
            for flag in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", line):
                assert flag in flags, f"{_name(page)}: `{line}`: {words[1]} has no {flag} ({sorted(flags)})"
            checked += 1
    assert checked >= 10


def test_every_config_key_in_backticks_exists():
    from fpgaprune.pipeline.config_reference import config_rows

    rows = config_rows()
    keys = {row["key"] for row in rows} | {
        f"{row['key']}.{part}"
        for row in rows
        if row["type"].startswith("mapping")
        for part in ("kernel", "bias", "activation", "recurrent")
    }
    pattern = re.compile(rf"(?:^|[\s{{(,])((?:{'|'.join(SECTIONS)})\.[a-z_]+(?:\.[a-z_]+)*)(?=$|[:=\s,)}}])")
    checked = 0
    for page in PAGES:
        for span in inline_code(page.read_text()):
            for key in pattern.findall(span):
                if key not in KERAS_NAMES and key.rsplit(".", 1)[-1] not in FILE_SUFFIXES:
                    assert key in keys, f"{_name(page)}: `{key}` is not a config key"
                    checked += 1
    assert checked >= 20


def test_every_api_name_the_docs_use_is_in_the_reference():
    from fpgaprune import errors

    documented = set(re.findall(r"^::: [\w.]*?(\w+)$", (ROOT / "docs/reference/api.md").read_text(), re.M))
    documented |= {name for name in dir(errors) if name.endswith("Error")}  # `::: fpgaprune.errors` lists them
    for page in PAGES:
        text = page.read_text()
        used = set(re.findall(r"\bfp\.([A-Za-z_]\w*)", text))
        for lang, code, _, _ in blocks(page):
            if lang == "python":
                for names in re.findall(r"^\s*from fpgaprune[\w.]* import (\([^)]*\)|[^\n]+)", code, re.M):
                    names = re.sub(r"#[^\n]*", "", names)  # a comment after the import
                    used |= {n.strip(" ()\n") for n in names.split(",") if n.strip(" ()\n")}
        missing = sorted(used - documented - {"errors"})
        assert not missing, f"{_name(page)} uses {missing}, which docs/reference/api.md does not document"


def test_the_site_builds_strictly_and_offline(tmp_path):
    """`mkdocs build --strict`: a broken link or anchor, a page missing from the nav or an API name mkdocstrings
    cannot resolve fails; the pages load no web font (the theme's `font: false`)."""
    import subprocess
    import sys

    mkdocs = Path(sys.executable).with_name("mkdocs")
    done = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    pages = list((tmp_path / "site").rglob("*.html"))
    assert len(pages) >= 15
    assert not [page for page in pages if "fonts.googleapis" in page.read_text()]


def test_the_readme_is_short_and_keeps_its_two_commands_as_ci_runs_them():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) <= 25_000
    ci_lines = (ROOT / ".ci/run").read_text().strip().split("\n")
    commands = [code.strip() for lang, code, _, _ in blocks(ROOT / "README.md") if lang == "bash"]
    main_job = "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/fpgaprune run"
    assert ci_lines[-1] in commands  # CI's last line is the README's test command
    assert main_job in commands and any(main_job in line for line in ci_lines)  # and CI runs the main job as written


def test_the_figures_are_committed_and_the_data_path_is_the_pipelines():
    """docs/make_figures.py makes them from the code and from runs; CI checks them without re-running those."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_figures", ROOT / "docs" / "make_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from fpgaprune.pipeline.records import STAGE_NAMES

    assert tuple(module.STAGE_TEXT) == STAGE_NAMES
    assert module.check() == []


def test_the_config_reference_lists_every_key_with_its_default():
    from fpgaprune.pipeline.config_reference import config_reference_markdown, config_rows
    from fpgaprune.pipeline.schema import RunConfig

    page = config_reference_markdown()
    rows = config_rows()
    assert {row["key"] for row in rows} >= {f"outputs.{name}" for name in RunConfig().outputs.model_fields}
    for row in rows:
        assert f"`{row['key']}`" in page
    assert "| `outputs.csim_samples` | integer > 0 or one of `all` | `2000` |" in page
