"""What the synth and report stages read and record: the shipped export (from its manifest, no conversion),
yosys on each layer's DA circuit and on one kernel's removal, and the budget rows."""

from pathlib import Path

from fpgaprune.pipeline.progress import counted
from fpgaprune.pipeline.records import SynthRecord, stage_metrics
from fpgaprune.pipeline.settings import budget_of
from fpgaprune.pipeline.training import stage_model


def shipped_export(run_dir: Path):
    """The export of the hls stage, reloaded from `hls/project`'s manifest: nothing is converted again."""
    from fpgaprune.hls import load_export

    return load_export(run_dir / "hls" / "project")


def removed_kernel(exported, dense, estimate):
    """The first removed conv kernel (in layer order) whose channels were kept: (its node's record, its name, the
    node's live matrix with it restored); None when every removed conv kernel lies in a stripped channel."""
    from fpgaprune.resources.measure import restored_kernel

    records = {record.plan.origin.layer: record for record in exported.nodes.values()}
    for saving in estimate.savings():
        record = records[saving.layer]
        if record.plan.kind != "conv2d":
            continue
        try:
            return (record, *restored_kernel(record, dense.get_layer(saving.layer), *saving.group))
        except ValueError:  # its channel was stripped
            continue
    return None


def yosys_measurements(config, run_dir: Path) -> dict:
    """yosys on each layer's DA circuit and on one conv layer with a removed kernel restored, one process per
    core; the removal's "without" is that layer's own measurement."""
    from dataclasses import asdict

    from fpgaprune.resources import estimate_resources
    from fpgaprune.resources.calibration import fit, held_out_errors
    from fpgaprune.resources.measure import live_matrix
    from fpgaprune.resources.yosys import fixed_kif, layer_parts, synthesize_all

    exported = shipped_export(run_dir)
    records = list(exported.nodes.values())
    dense = stage_model(config, run_dir, "quantize", "dense.keras")
    circuits = {record.name: (live_matrix(record), fixed_kif(record.input)) for record in records}
    label = "yosys: each layer's DA circuit"
    removed = removed_kernel(exported, dense, estimate_resources(exported, dense))
    if removed:  # both circuits in the same parts (when that layer is large), so the other parts match
        node, kernel, restored = removed
        matrix, kif = circuits[node.name]
        parts = layer_parts(matrix, kif)
        circuits[node.name] = (matrix, kif, parts)
        circuits[("restored", kernel)] = (restored, kif, parts)
        label += f", and {node.name} with {kernel} restored"
    results = dict(counted(synthesize_all(circuits, exported.board.family), label, "circuit", total=len(circuits)))
    layers = {record.name: results[record.name] for record in records}
    record = {"layers": {name: asdict(s) for name, s in layers.items()}}
    if removed:
        record["removal"] = {"layer": node.name, "kernel": kernel, "with": asdict(results[("restored", kernel)]),
                             "without": asdict(layers[node.name])}
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
        return (f"give its quantizer more integer bits (quantization.layers.{layer}.{key}, now {row.limit}), or keep "
                "the weights smaller in training")
    if row.what == "accumulator":
        return f"widen its accumulator (hls.config LayerName.{layer}.Precision.accum, now {row.limit})"
    scale = ""
    if input_peak > INPUT_SCALE_HINT:
        scale = f"scale the inputs (they reach {input_peak:g}; e.g. to [0, 1]), or "
    if row.what == "input":
        return f"{scale}widen the input type (now {row.limit})"
    if row.where == "after export":
        return f"{scale}widen its type in hls.config (LayerName.{layer}, now {row.limit})"
    return (f"{scale}give its activation quantizer more integer bits (quantization.layers.{layer}.activation, "
            f"now {row.limit})")


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
