"""A sweep's results: one row per point (CSV and Markdown), the Pareto plot and the sweep page."""

import csv
import io
import json
from pathlib import Path

from fpgaprune.hls import load_board
from fpgaprune.pipeline.records import stage_score
from fpgaprune.report.sweep_page import sweep_page
from fpgaprune.support.atomic import write_bytes_atomic, write_text_atomic

COLUMNS = (
    "point",
    "status",
    "score_dense",
    "score_pruned",
    "score_quantized",
    "products",
    "LUT",
    "DSP",
    "LUT_fraction",
    "DSP_fraction",
    "fits",
    "bit_exact",
    "measured_LUT",
    "seconds",
    "same_run_as",
)
SOURCE = (
    "LUT and DSP: estimate of the exported project (fpgaprune rules); measured_LUT: yosys, DA circuit; "
    "products: per inference (live weights x output positions)"
)
LOWER_IS_BETTER = ("rmse", "mae")


def _measured_lut(point_dir: Path):
    try:
        layers = json.loads((point_dir / "synth" / "synth.json").read_text()).get("layers") or {}
    except (OSError, ValueError):
        return None
    return sum(layer["luts"] for layer in layers.values()) if layers else None


def rows(outcome, board, out: Path) -> list:
    """One dict per point (grid order): its values, status, the task's metric by stage (`score_*`, with `metric`
    naming it), estimated and measured resources."""
    table = []
    for result in outcome.results:
        row = {
            "point": result.name,
            **result.values,
            "status": "failed: " + result.error if result.error else "ok",
            "seconds": result.seconds,
            "same_run_as": result.same_as,
        }
        metrics = result.metrics or {}
        if "report" in metrics:
            report = metrics["report"]
            (metric, quantized), dense, pruned = (
                stage_score(metrics[stage]) for stage in ("quantize", "train", "finetune")
            )
            row.update(
                metric=metric,
                score_dense=dense[1],
                score_pruned=pruned[1],
                score_quantized=quantized,
                products=report["products"][1],
                LUT=report["lut"][1],
                DSP=report["dsp"][1],
                fits=report["fits"],
                LUT_fraction=report["lut"][1] / board.resources["LUT"],
                DSP_fraction=report["dsp"][1] / max(board.resources["DSP"], 1),
                bit_exact=metrics["csim"]["bit_exact"],
                measured_LUT=_measured_lut(out / "points" / result.name),
            )
            if row["measured_LUT"] is not None:
                row["measured_LUT_fraction"] = row["measured_LUT"] / board.resources["LUT"]
        table.append(row)
    return table


def metric_of(table: list) -> str:
    """The metric the finished points share ("accuracy" when none finished)."""
    return next((row["metric"] for row in table if row.get("metric")), "accuracy")


def pareto(table: list, cost: str) -> set:
    """Points no other point beats: at least as good in the metric (higher, or lower for an error) and at most
    as costly, better in one."""
    done = [r for r in table if r["status"] == "ok"]
    sign = -1.0 if metric_of(table) in LOWER_IS_BETTER else 1.0
    good = {r["point"]: sign * r["score_quantized"] for r in done}
    undominated = set()
    for r in done:
        if not any(
            good[o["point"]] >= good[r["point"]]
            and o[cost] <= r[cost]
            and (good[o["point"]] > good[r["point"]] or o[cost] < r[cost])
            for o in done
        ):
            undominated.add(r["point"])
    return undominated


def _named(column: str, metric: str) -> str:
    """A `score_*` column under the metric's name: accuracy_quantized, rmse_quantized."""
    return column.replace("score", metric, 1) if column.startswith("score_") else column


def _format(value) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    return "" if value is None else str(value)


def to_csv(table: list, axes: list) -> str:
    metric, buffer = metric_of(table), io.StringIO()
    writer = csv.DictWriter(
        buffer,
        fieldnames=[*axes, *(_named(c, metric) for c in COLUMNS), "pareto_LUT", "pareto_DSP"],
        extrasaction="ignore",
    )
    writer.writeheader()
    for row in table:
        writer.writerow({_named(k, metric): v if k in axes else _format(v) for k, v in row.items()})
    return buffer.getvalue()


def to_markdown(table: list, axes: list) -> str:
    columns = [
        *axes,
        "status",
        "score_quantized",
        "LUT",
        "DSP",
        "LUT_fraction",
        "fits",
        "bit_exact",
        "pareto_LUT",
        "pareto_DSP",
    ] + (["same_run_as"] if any(row.get("same_run_as") for row in table) else [])
    metric = metric_of(table)
    lines = ["| " + " | ".join(_named(c, metric) for c in columns) + " |", "|" + " --- |" * len(columns)]
    lines += [
        "| " + " | ".join(str(row.get(c)) if c in axes else _format(row.get(c)) for c in columns) + " |"
        for row in table
    ]
    return "\n".join(lines) + f"\n\n{SOURCE}.\n"


def summary_line(result) -> str:
    if result.error:
        return f"{result.name}: FAILED: {result.error}"
    report, (metric, quantized) = result.metrics["report"], stage_score(result.metrics["quantize"])
    took = f"the run of {result.same_as}, copied" if result.same_as else f"{result.seconds:.0f} s"
    score = f"{metric.replace('_', ' ')} {quantized:.2%}" if "accuracy" in metric else f"{metric} {quantized:.4g}"
    return (
        f"{result.name}: {score}, LUT {report['lut'][1]}, DSP {report['dsp'][1]} (estimate), "
        f"{'fits' if report['fits'] else 'does NOT fit'} ({took})"
    )


def write_results(out: Path, outcome, config) -> dict:
    """results.csv, results.md, pareto.png and sweep.html under `out`, each written atomically."""
    board = load_board(config.board)
    table = rows(outcome, board, out)
    fronts = {cost: pareto(table, cost) for cost in ("LUT_fraction", "DSP_fraction")}
    for row in table:
        row["pareto_LUT"] = row["point"] in fronts["LUT_fraction"]
        row["pareto_DSP"] = row["point"] in fronts["DSP_fraction"]
    axes = sorted({axis for result in outcome.results for axis in result.values})
    png, html = sweep_page(table, axes, board, SOURCE)
    return {
        "png": write_bytes_atomic(out / "pareto.png", png),
        "csv": write_text_atomic(out / "results.csv", to_csv(table, axes)),
        "md": write_text_atomic(out / "results.md", to_markdown(table, axes)),
        "html": write_text_atomic(out / "sweep.html", html),
    }
