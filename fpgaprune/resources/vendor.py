"""A synthesized project's own report, where one exists, read by the backend it was exported for
(`Backend.synthesis_figures`: Vivado/Vitis HLS' C-synthesis report, Catapult's Vivado utilization report) and
shown in a column of its own."""

from fpgaprune.hls.backend import backend_named, backend_of_project


def vendor_report(project_dir, backend: str | None = None) -> dict | None:
    """{resource: count, "latency_cycles", "ii_cycles" (where reported), "source"} of a synthesized project, or
    None; `backend`: hls4ml's name of its backend (default: the project's manifest's)."""
    found = backend_named(backend) if backend else backend_of_project(project_dir)
    return found.synthesis_figures(project_dir)
