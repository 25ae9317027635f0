"""What the synth and report stages read and record: the shipped export (from its manifest, no conversion),
yosys on each layer's DA circuit and on one kernel's removal, and the budget rows."""

from pathlib import Path

from fpgaprune.pipeline.progress import counted, elapsed
from fpgaprune.pipeline.records import SynthRecord, stage_metrics
from fpgaprune.pipeline.settings import budget_of
from fpgaprune.pipeline.training import stage_model


def shipped_export(run_dir: Path):
    """The export of the hls stage, reloaded from `hls/project`'s manifest: nothing is converted again."""
    from fpgaprune.hls import load_export

    return load_export(run_dir / "hls" / "project")


def kernel_removal_record(exported, dense, estimate, family: str):
    """yosys on the conv layer of the first removed conv kernel (in layer order), with that kernel restored and
    as exported; None when no conv kernel was removed except in stripped channels."""
    from dataclasses import asdict

    from fpgaprune.resources.measure import kernel_removal

    records = {record.plan.origin.layer: record for record in exported.nodes.values()}
    for saving in estimate.savings():
        record = records[saving.layer]
        if record.plan.kind != "conv2d":
            continue
        try:
            with elapsed(f"yosys: {saving.name} restored, and as exported"):
                removal = kernel_removal(record, dense.get_layer(saving.layer), *saving.group, family)
        except ValueError:  # its channel was stripped
            continue
        return {"layer": removal.layer, "kernel": removal.kernel, "with": asdict(removal.with_kernel),
                "without": asdict(removal.without_kernel)}
    return None


def yosys_measurements(config, run_dir: Path) -> dict:
    from dataclasses import asdict

    from fpgaprune.resources import estimate_resources
    from fpgaprune.resources.calibration import fit, held_out_errors
    from fpgaprune.resources.measure import measure_node

    exported = shipped_export(run_dir)
    family, records = exported.board.family, list(exported.nodes.values())
    layers = {record.name: measure_node(record, family)
              for record in counted(records, "yosys: each layer's DA circuit", "layer")}
    record = {"layers": {name: asdict(s) for name, s in layers.items()}}
    dense = stage_model(config, run_dir, "quantize", "dense.keras")
    removal = kernel_removal_record(exported, dense, estimate_resources(exported, dense), family)
    if removal:
        record["removal"] = removal
    names = list(layers)
    if len(names) >= 2:
        calibration = held_out_errors(fit({n: layers[n] for n in names[::2]}), {n: layers[n] for n in names[1::2]})
        record["calibration"] = {"scale": calibration.scale, "fit": calibration.calibration_layers,
                                 "held_out": calibration.held_out, "text": calibration.format()}
    return record


def measurements(run_dir: Path):
    from fpgaprune.report import Measurements
    from fpgaprune.resources.calibration import Calibration
    from fpgaprune.resources.measure import KernelRemoval
    from fpgaprune.resources.yosys import Synthesis

    record = SynthRecord.read(run_dir / "synth" / "synth.json")
    measured = Measurements(vendor=record.vendor)
    measured.yosys = {name: Synthesis(**s) for name, s in record.layers.items()}
    if record.removal:
        r = record.removal
        measured.removals = [KernelRemoval(r["layer"], r["kernel"], Synthesis(**r["with"]), Synthesis(**r["without"]))]
    if record.calibration:
        c = record.calibration
        measured.calibration = Calibration(c["scale"], c["fit"], {k: tuple(v) for k, v in c["held_out"].items()})
    return measured


def budget_rows(config, run_dir: Path, estimate) -> list:
    """Per constraint: the budget, the estimates at pruning, after QAT and after repair, and the exported estimate."""
    budget = budget_of(config)
    metrics = {stage: stage_metrics(run_dir, stage)["budget"] for stage in ("prune", "quantize")}
    pruned = estimate.total("pruned")
    achieved = budget.fractions({"LUT": pruned.lut, "DSP": pruned.dsp})
    return [{"constraint": c.name, "describe": c.describe(budget.board), "budget": c.limit,
             "pruning": metrics["prune"]["estimate"][c.name], "after_qat": metrics["quantize"]["after_qat"][c.name],
             "final": metrics["quantize"]["final"][c.name], "achieved": float(a), "fits": bool(a <= c.limit + 1e-9)}
            for c, a in zip(budget.constraints, achieved)]
