"""Vendor C-synthesis of an exported project directory, by the tool of the backend it was exported for (its
`hls.backend.Backend`: vitis_hls or vivado_hls for the Vivado family, catapult for Catapult) where one is on
PATH; otherwise a clear "skipped". It runs the project's own `build_prj.tcl`, as hls4ml's `build()` does, on the
files that ship."""

from dataclasses import dataclass, field
from pathlib import Path

from fpgaprune.hls.backend import DEFAULT_BACKEND, backend_named, backend_of_project
from fpgaprune.support.tools import HLS_TIMEOUT_S, run_tool


@dataclass
class SynthResult:
    ran: bool
    tool: str | None
    reason: str = ""
    report: dict = field(default_factory=dict)


def find_hls_tool(backend: str = DEFAULT_BACKEND) -> str | None:
    """The first of the backend's C-synthesis tools on PATH (Vitis: vitis_hls, then vivado_hls), or None."""
    return backend_named(backend).synthesis_tool()


def csynth(project) -> SynthResult:
    """C-synthesis of the exported project in `project` (a directory or an `Export`), in place, and its parsed
    report; or why it was skipped. To keep a shipped project as it is, run it on a copy."""
    project = Path(getattr(project, "path", project))
    backend = backend_of_project(project)
    tool = backend.synthesis_tool()
    if tool is None:
        return SynthResult(False, None, backend.not_found())
    command = backend.synthesis_command(project, tool)
    run_tool(command, f"{tool} C-synthesis of {project}", HLS_TIMEOUT_S, cwd=project)
    return SynthResult(True, tool, report=backend.read_report(project))
