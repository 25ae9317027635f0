"""A sweep's results: one row per point (CSV and Markdown), the Pareto plot and the sweep page."""

import csv
import io
import json
from pathlib import Path

from fpgaprune.atomic import write_bytes_atomic, write_text_atomic

COLUMNS = ("point", "status", "accuracy_dense", "accuracy_pruned", "accuracy_quantized", "products", "LUT", "DSP",
           "LUT_fraction", "DSP_fraction", "fits", "bit_exact", "measured_LUT", "seconds", "same_run_as")
SOURCE = "LUT and DSP: estimate of the exported project (fpgaprune rules); measured_LUT: yosys, DA circuit"


def _measured_lut(point_dir: Path):
    try:
        layers = json.loads((point_dir / "synth" / "synth.json").read_text()).get("layers") or {}
    except (OSError, ValueError):
        return None
    return sum(layer["luts"] for layer in layers.values()) if layers else None


def rows(outcome, board, out: Path) -> list:
    """One dict per point (grid order): its values, status, accuracies, estimated and measured resources."""
    table = []
    for result in outcome.results:
        row = {"point": result.name, **result.values, "status": "failed: " + result.error if result.error else "ok",
               "seconds": result.seconds, "same_run_as": result.same_as}
        metrics = result.metrics or {}
        if "report" in metrics:
            report = metrics["report"]
            row.update(accuracy_dense=metrics["train"]["accuracy"], accuracy_pruned=metrics["finetune"]["accuracy"],
                       accuracy_quantized=metrics["quantize"]["accuracy"], products=report["products"][1],
                       LUT=report["lut"][1], DSP=report["dsp"][1], fits=report["fits"],
                       LUT_fraction=report["lut"][1] / board.resources["LUT"],
                       DSP_fraction=report["dsp"][1] / max(board.resources["DSP"], 1),
                       bit_exact=metrics["csim"]["bit_exact"], measured_LUT=_measured_lut(out / "points" / result.name))
            if row["measured_LUT"] is not None:
                row["measured_LUT_fraction"] = row["measured_LUT"] / board.resources["LUT"]
        table.append(row)
    return table


def pareto(table: list, cost: str) -> set:
    """Points no other point beats: at least as accurate and at most as costly, better in one."""
    done = [r for r in table if r["status"] == "ok"]
    front = set()
    for r in done:
        if not any(o["accuracy_quantized"] >= r["accuracy_quantized"] and o[cost] <= r[cost]
                   and (o["accuracy_quantized"] > r["accuracy_quantized"] or o[cost] < r[cost]) for o in done):
            front.add(r["point"])
    return front


def _format(value) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    return "" if value is None else str(value)


def to_csv(table: list, axes: list) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=[*axes, *COLUMNS, "pareto_LUT", "pareto_DSP"], extrasaction="ignore")
    writer.writeheader()
    for row in table:
        writer.writerow({k: v if k in axes else _format(v) for k, v in row.items()})
    return buffer.getvalue()


def to_markdown(table: list, axes: list) -> str:
    columns = [*axes, "status", "accuracy_quantized", "LUT", "DSP", "LUT_fraction", "fits", "bit_exact",
               "pareto_LUT", "pareto_DSP"] + (["same_run_as"] if any(row.get("same_run_as") for row in table) else [])
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    lines += ["| " + " | ".join(str(row.get(c)) if c in axes else _format(row.get(c)) for c in columns) + " |"
              for row in table]
    return "\n".join(lines) + f"\n\n{SOURCE}.\n"


def summary_line(result) -> str:
    if result.error:
        return f"{result.name}: FAILED: {result.error}"
    report, quantized = result.metrics["report"], result.metrics["quantize"]["accuracy"]
    took = f"the run of {result.same_as}, copied" if result.same_as else f"{result.seconds:.0f} s"
    return (f"{result.name}: accuracy {quantized:.2%}, LUT {report['lut'][1]}, DSP {report['dsp'][1]} (estimate), "
            f"{'fits' if report['fits'] else 'does NOT fit'} ({took})")


def write_results(out: Path, outcome, config) -> dict:
    """results.csv, results.md, pareto.png and sweep.html under `out`, each written atomically."""
    from fpgaprune.hls import load_board
    from fpgaprune.report.sweep_page import sweep_page

    board = load_board(config.board)
    table = rows(outcome, board, out)
    fronts = {cost: pareto(table, cost) for cost in ("LUT_fraction", "DSP_fraction")}
    for row in table:
        row["pareto_LUT"] = row["point"] in fronts["LUT_fraction"]
        row["pareto_DSP"] = row["point"] in fronts["DSP_fraction"]
    axes = sorted({axis for result in outcome.results for axis in result.values})
    png, html = sweep_page(table, axes, board, SOURCE)
    return {"png": write_bytes_atomic(out / "pareto.png", png),"csv": write_text_atomic(out / "results.csv", to_csv(table, axes)),
            "md": write_text_atomic(out / "results.md", to_markdown(table, axes)),
            "html": write_text_atomic(out / "sweep.html", html)}

