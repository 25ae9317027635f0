"""The report of a run whose backend is RTL: its headline is the measurement (tool and version, device, LUT dense ->
pruned, the clock achieved against the target), then the scores, the RTL simulation, the stream's stages and what
each design measured. report.md and a plain report.html with the same content."""

import html
from pathlib import Path

from fpgaprune.support.atomic import write_text_atomic


def write_rtl_report(out_dir, title: str, headline: str | None, scores: dict, csim: str, manifest, measured) -> dict:
    """report.md and report.html into `out_dir`; `measured`: synth/measured.json's record (None: not measured)."""
    lines = [f"# {title}", "", f"**{headline or 'not measured: the synth stage measured no design'}**", ""]
    lines += ["## Scores", "", "| stage | score |", "| --- | --- |"]
    lines += [f"| {stage} | {value:.4f} |" for stage, value in scores.items() if value is not None]
    lines += ["", "## RTL simulation (Verilator)", "", csim.strip(), ""]
    lines += [f"## Design ({manifest['layout']}, {manifest['part']})", "", manifest.get("interface", ""), ""]
    if manifest.get("stages"):
        lines += ["| layers | kind | input | output | window | strides | da4ml cost |", "| --- " * 7 + "|"]
        for stage in manifest["stages"]:
            shape = ("x".join(map(str, stage[key])) for key in ("input", "output", "window", "strides"))
            lines.append(f"| {', '.join(stage['layers'])} | {stage['kind']} | {' | '.join(shape)} | "
                         f"{stage['da4ml_cost']:g} |")  # fmt: skip
    lines += ["", "## Measured", ""]
    for label in ("dense", "pruned"):
        entry = (measured or {}).get(label, {})
        lines.append(f"- {label}: {entry.get('stopped') or entry.get('line') or 'not measured'}")
        if entry.get("estimate"):
            lines.append(f"  - before place and route: {entry['estimate']}")
    text = "\n".join(lines) + "\n"
    out_dir = Path(out_dir)
    page = f"<!doctype html><meta charset='utf-8'><title>{html.escape(title)}</title><pre>{html.escape(text)}</pre>"
    return {
        "md": write_text_atomic(out_dir / "report.md", text),
        "html": write_text_atomic(out_dir / "report.html", page),
    }
