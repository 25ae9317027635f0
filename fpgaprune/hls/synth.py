"""Vendor C-synthesis where `vitis_hls` or `vivado_hls` is on PATH; otherwise a clear "skipped"."""

import shutil
from dataclasses import dataclass, field

TOOLS = ("vitis_hls", "vivado_hls")


@dataclass
class SynthResult:
    ran: bool
    tool: str | None
    reason: str = ""
    report: dict = field(default_factory=dict)


def find_hls_tool() -> str | None:
    """The first of vitis_hls, vivado_hls on PATH, or None."""
    return next((tool for tool in TOOLS if shutil.which(tool)), None)


def csynth(hls_model) -> SynthResult:
    """Run C-synthesis of an exported project and parse its report, or say why it was skipped."""
    tool = find_hls_tool()
    if tool is None:
        return SynthResult(False, None, "skipped: vitis_hls not found (nor vivado_hls) on PATH")
    from hls4ml.report import parse_vivado_report

    hls_model.build(csim=False, synth=True, vsynth=False)
    return SynthResult(True, tool, report=parse_vivado_report(hls_model.config.get_output_dir()) or {})
