"""Vivado/Vitis HLS reports, where they exist: parsed with hls4ml's own reader, shown in a column of their own."""

import contextlib
import io
from pathlib import Path

KEYS = {"DSP": "DSP", "LUT": "LUT", "FF": "FF", "BRAM_18K": "BRAM_18K", "URAM": "URAM"}
SOURCE = "vendor: Vivado/Vitis HLS C-synthesis report"


def vendor_report(project_dir) -> dict | None:
    """{resource: count, "latency_cycles", "ii_cycles", "source"} of a synthesized project, or None."""
    from hls4ml.report import parse_vivado_report

    project_dir = Path(project_dir)
    if not (project_dir / "project.tcl").exists():
        return None
    with contextlib.redirect_stdout(io.StringIO()):  # hls4ml prints why it found nothing
        report = parse_vivado_report(str(project_dir)) or {}
    synth = report.get("CSynthesisReport")
    if not synth:
        return None
    found = {name: int(synth[key]) for name, key in KEYS.items() if str(synth.get(key, "")).isdigit()}
    found.update(latency_cycles=int(synth["WorstLatency"]), ii_cycles=int(synth["IntervalMax"]), source=SOURCE)
    return found
