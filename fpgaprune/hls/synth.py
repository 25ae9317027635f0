"""Vendor C-synthesis of an exported project directory where `vitis_hls` or `vivado_hls` is on PATH; otherwise
a clear "skipped". It runs the project's own `build_prj.tcl`, as hls4ml's `build()` does, on the files that ship."""

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from fpgaprune.tools import HLS_TIMEOUT_S, run_tool

TOOLS = ("vitis_hls", "vivado_hls")
# hls4ml's build options: C-synthesis only (no C-sim: fpgaprune's own C-sim builds the same files with g++).
OPTIONS = {"reset": 0, "csim": 0, "synth": 1, "cosim": 0, "validation": 0, "export": 0, "vsynth": 0, "fifo_opt": 0}


@dataclass
class SynthResult:
    ran: bool
    tool: str | None
    reason: str = ""
    report: dict = field(default_factory=dict)


def find_hls_tool() -> str | None:
    """The first of vitis_hls, vivado_hls on PATH, or None."""
    return next((tool for tool in TOOLS if shutil.which(tool)), None)


def _command(project: Path, tool: str) -> list:
    """hls4ml 1.3's build command for the project's backend: Vitis reads build_opt.tcl, Vivado its arguments."""
    if tool == "vivado_hls":
        return ["vivado_hls", "-f", "build_prj.tcl", " ".join(f"{k}={v}" for k, v in OPTIONS.items())]
    (project / "build_opt.tcl").write_text(
        "array set opt {\n" + "".join(f"    {k} {v}\n" for k, v in OPTIONS.items()) + "}\n"
    )
    if shutil.which("vitis-run"):
        return ["vitis-run", "--tcl", "build_prj.tcl", "--mode", "hls"]
    return ["vitis_hls", "-f", "build_prj.tcl"]


def csynth(project) -> SynthResult:
    """C-synthesis of the exported project in `project` (a directory or an `Export`), in place, and its parsed
    report; or why it was skipped. To keep a shipped project as it is, run it on a copy."""
    project = Path(getattr(project, "path", project))
    tool = find_hls_tool()
    if tool is None:
        return SynthResult(False, None, "skipped: vitis_hls not found (nor vivado_hls) on PATH")
    from hls4ml.report import parse_vivado_report

    backend = json.loads((project / "fpgaprune_manifest.json").read_text()).get("backend", "Vitis")
    tool = "vivado_hls" if backend.lower() == "vivado" and shutil.which("vivado_hls") else tool
    run_tool(_command(project, tool), f"{tool} C-synthesis of {project}", HLS_TIMEOUT_S, cwd=project)
    return SynthResult(True, tool, report=parse_vivado_report(str(project)) or {})
