"""What the synth and report stages read and record: the shipped export (from its manifest, no conversion),
yosys on each layer's DA circuit and on one kernel's removal, and the budget rows."""

from pathlib import Path

from fpgaprune.hls import load_export
from fpgaprune.pipeline.progress import counted
from fpgaprune.pipeline.records import SynthRecord, stage_metrics
from fpgaprune.pipeline.settings import budget_of
from fpgaprune.pipeline.training import stage_model
from fpgaprune.report import Measurements
from fpgaprune.resources import estimate_resources
from fpgaprune.resources.calibration import Calibration
from fpgaprune.resources.fit_verdict import checked_usage
from fpgaprune.resources.measure import KernelRemoval
from fpgaprune.resources.measurement_plan import measure_export
from fpgaprune.resources.yosys import MeasurementBudget, Synthesis


def shipped_export(run_dir: Path):
    """The export of the hls stage, reloaded from `hls/project`'s manifest: nothing is converted again."""
    return load_export(run_dir / "hls" / "project")


def measurement_budget(config):
    """The synth stage's budgets: `outputs.synth_time_budget_s` and `outputs.synth_memory_budget_mb`."""
    return MeasurementBudget(config.outputs.synth_time_budget_s, config.outputs.synth_memory_budget_mb << 20)


def yosys_measurements(config, run_dir: Path, cancel=None, progress: bool = True) -> dict:
    """yosys on the export's DA circuits (`outputs.measure`: a sample or all of them), within the synth stage's
    budgets, one watched worker per core; the record of synth.json."""
    from dataclasses import asdict

    exported = shipped_export(run_dir)
    dense = stage_model(config, run_dir, "quantize", "dense").record
    budget = measurement_budget(config)
    measured = measure_export(
        exported,
        dense,
        estimate_resources(exported, dense),
        config.outputs.measure,
        budget,
        progress=(lambda items, label, total: counted(items, label, "circuit", total=total)) if progress else None,
        cancel=cancel,
    )
    record = {
        "scope": measured.scope,
        "layers": {name: asdict(s) for name, s in measured.layers.items()},
        "traced": measured.traced,
        "samples": {name: asdict(s) for name, s in measured.samples.items()},
        "unmeasured": measured.unmeasured,
        "jobs": measured.jobs,
        "budget": {"seconds": budget.seconds, "memory_mb": budget.memory >> 20, "workers": budget.concurrency()},
    }
    if measured.removal:
        r = measured.removal
        record["removal"] = {
            "layer": r.layer,
            "kernel": r.kernel,
            "with": asdict(r.with_kernel),
            "without": asdict(r.without_kernel),
            "where": r.where,
        }
    if measured.calibration:
        c = measured.calibration
        record["calibration"] = {
            "scale": c.scale,
            "fit": c.calibration_layers,
            "held_out": c.held_out,
            "source": c.source,
            "recorded_errors": c.recorded_errors,
            "text": c.format(),
        }
    return record


def measurements(run_dir: Path):
    record = SynthRecord.read(run_dir / "synth" / "synth.json")
    measured = Measurements(
        vendor=record.vendor, scope=record.scope, traced=record.traced, unmeasured=record.unmeasured
    )
    measured.yosys = {name: Synthesis(**s) for name, s in record.layers.items()}
    measured.samples = {name: Synthesis(**s) for name, s in record.samples.items()}
    if record.removal:
        r = record.removal
        measured.removals = [
            KernelRemoval(
                r["layer"], r["kernel"], Synthesis(**r["with"]), Synthesis(**r["without"]), r.get("where", "")
            )
        ]
    if record.calibration:
        c = record.calibration
        measured.calibration = Calibration(
            c["scale"],
            c["fit"],
            {k: tuple(v) for k, v in c["held_out"].items()},
            c.get("source", ""),
            c.get("recorded_errors", {}),
        )
    return measured


INPUT_SCALE_HINT = 16.0  # inputs reaching beyond this are likely unscaled (pixels 0-255, raw energies)


def saturation_lines(config, profile, dataset) -> list[str]:
    """One line per layer whose values fall outside their range more often than `outputs.saturation_threshold`
    (its worst row), saying what to change."""
    lines, seen = [], set()
    for row in profile.over(config.outputs.saturation_threshold):
        layer = row.layer.split("/")[0]
        if layer not in seen:
            seen.add(layer)
            lines.append(f"{row.describe()}; {_advice(row, float(abs(dataset.x_train).max()))}")
    return lines


def _advice(row, input_peak: float) -> str:
    layer, _, weight = row.layer.partition("/")
    if row.what == "weights":
        key = {"kernel": "kernel", "bias": "bias"}.get(weight, weight)
        return (
            f"give its quantizer more integer bits (quantization.layers.{layer}.{key}, now {row.limit}), or keep "
            "the weights smaller in training"
        )
    if row.what == "accumulator":
        return f"widen its accumulator (hls.config LayerName.{layer}.Precision.accum, now {row.limit})"
    scale = ""
    if input_peak > INPUT_SCALE_HINT:
        scale = f"scale the inputs (they reach {input_peak:g}; e.g. to [0, 1]), or "
    if row.what == "input":
        return f"{scale}widen the input type (now {row.limit})"
    if row.where == "after export":
        return f"{scale}widen its type in hls.config (LayerName.{layer}, now {row.limit})"
    return (
        f"{scale}give its activation quantizer more integer bits (quantization.layers.{layer}.activation, "
        f"now {row.limit})"
    )


def budget_rows(config, run_dir: Path, estimate) -> list:
    """Per constraint: the budget, the estimates at pruning, after QAT and after repair, and the exported
    project's figure as its fit verdict reads it (`fit_verdict.checked_usage`), with what priced each."""
    budget = budget_of(config)
    metrics = {stage: stage_metrics(run_dir, stage)["budget"] for stage in ("prune", "quantize")}
    usage, sources = checked_usage(estimate)
    achieved = budget.fractions(usage)
    return [
        {
            "constraint": c.name,
            "describe": c.describe(budget.board),
            "budget": c.limit,
            "pruning": metrics["prune"]["estimate"][c.name],
            "after_qat": metrics["quantize"]["after_qat"][c.name],
            "final": metrics["quantize"]["final"][c.name],
            "achieved": float(a),
            "fits": bool(a <= c.limit + 1e-9),
            "priced_by": "; ".join(f"{r}: {sources[r]}" for r in c.resources),
        }
        for c, a in zip(budget.constraints, achieved)
    ]
