"""The report people read: report.html (Jinja2 + matplotlib, inline PNGs), report.md and resources.csv."""

from fpgaprune.support.lazy import exports

_MODULES = {
    "Measurements": "render",
    "report_context": "render",
    "write_report": "render",
}
__getattr__ = exports(__name__, _MODULES)
__all__ = sorted(_MODULES)
