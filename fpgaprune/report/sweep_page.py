"""The sweep page (sweep.html): the Pareto plot and the results table, in the report's style."""

import base64
from pathlib import Path

from fpgaprune.report import figures

TEMPLATES = Path(__file__).parent / "templates"


def sweep_page(table: list, axes: list, board, source: str) -> tuple[bytes, str]:
    """(pareto.png, sweep.html) for a sweep's result rows."""
    import jinja2

    png = figures.pareto(table, board.name)
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=jinja2.select_autoescape(["html", "html.j2"])
    )
    done = [row for row in table if row["status"] == "ok"]
    metric = next((row["metric"] for row in done), "accuracy")
    lower = metric in ("rmse", "mae")
    best = (min if lower else max)(done, key=lambda row: row["score_quantized"], default=None)
    shown = (lambda v: f"{100 * v:.2f}%") if "accuracy" in metric else (lambda v: f"{v:.4g}")
    html = environment.get_template("sweep.html.j2").render(
        table=table,
        axes=axes,
        board=board,
        source=source,
        png=base64.b64encode(png).decode("ascii"),
        best=best,
        failed=[row for row in table if row["status"] != "ok"],
        title=f"fpgaprune sweep on {board.name}",
        metric=metric.replace("_", " ") if "accuracy" in metric else metric.upper(),
        shown=shown,
        lower=lower,
    )
    return png, html
