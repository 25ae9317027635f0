"""The report people read: report.html (Jinja2 + matplotlib, inline PNGs), report.md and resources.csv."""

from fpgaprune.report.render import Measurements, report_context, write_report

__all__ = ["Measurements", "report_context", "write_report"]
