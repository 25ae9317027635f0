"""What a run measures with yosys, within its budgets.

- `all`: every layer's DA circuit (in parts when large), and one removed conv kernel put back into its layer
  (measured in the same parts, so only its own part differs; the others come from the cache).
- `sample` (the default): the removal of one pruned conv kernel (the one whose output column is cheapest to
  measure), measured on the DA circuit of the output column that held it, with and without it; without a
  removed kernel, one output column of the layer with the cheapest adder graph. Every small layer's da4ml cost is
  traced (no yosys), and its DA LUTs are then the calibrated estimate (`calibration.RECORD`), which the sampled
  circuits check again.

Either way each circuit runs in a watched worker (`yosys.synthesize_all`): what a budget stops is reported,
with its reason, instead of measured.
"""

from dataclasses import dataclass, field

import numpy as np

from fpgaprune.record.model_record import ModelRecord
from fpgaprune.resources.calibration import checked, fit, held_out_errors, recorded
from fpgaprune.resources.circuit_parts import Part
from fpgaprune.resources.measure import KernelRemoval, live_matrix, restored_kernel
from fpgaprune.resources.yosys import (
    MeasurementBudget,
    Synthesis,
    Unmeasured,
    estimated_cost,
    fixed_kif,
    layer_parts,
    synthesize_all,
    trace_costs,
)

SCOPES = ("sample", "all")


@dataclass
class Measured:
    """What a measurement found: per layer (hls4ml node) its synthesis or da4ml cost, the sampled circuits, the
    kernel removal, the calibration, what the budgets stopped, and each circuit's time and memory."""

    scope: str
    layers: dict = field(default_factory=dict)  # node -> Synthesis (scope all)
    traced: dict = field(default_factory=dict)  # node -> da4ml cost of the layer as one circuit (or its parts')
    samples: dict = field(default_factory=dict)  # label -> Synthesis of a sampled circuit (scope sample)
    removal: KernelRemoval | None = None
    calibration: object = None
    unmeasured: dict = field(default_factory=dict)  # circuit -> why it was not measured
    jobs: list = field(default_factory=list)


def removed_kernel(exported, dense, estimate, cheapest: bool = False):
    """A removed conv kernel whose channels were kept: (its node's record, its name, the node's live matrix with it
    restored, its output column), or None. The first in layer order; with `cheapest`, the one whose output column,
    restored, has the cheapest adder graph (the quickest to measure)."""
    records = {record.plan.origin.layer: record for record in exported.nodes.values()}
    found = []
    for saving in estimate.savings():
        record = records[saving.layer]
        if record.plan.kind != "conv2d":
            continue
        try:
            name, restored = restored_kernel(record, dense.layers[saving.layer], *saving.group)
        except ValueError:  # its channel was stripped
            continue
        column = list(record.plan.origin.outputs).index(saving.group[1])
        if not cheapest:
            return record, name, restored, column
        others = np.count_nonzero(live_matrix(record)[:, column])  # what stays in the column without the kernel
        found.append(
            (
                others == 0,
                estimated_cost(restored[:, [column]], fixed_kif(record.input)),
                len(found),
                (record, name, restored, column),
            )
        )
    return min(found)[3] if found else None  # a column that keeps other kernels, the cheapest of those


def input_types(record, dense: ModelRecord | None = None) -> tuple:
    """The types of the node's inputs, as its DA circuit gets them: the node's one input type, or, where the
    model's front end types them value by value (HGQ2), one per kernel row, capped by the node's as hls4ml's DA
    pass caps them (the rows of kept input channels where the export stripped some); `dense`: the dense model's
    record, which holds those types (`LayerRecord.input_types`)."""
    kif = fixed_kif(record.input)
    if dense is None:
        return kif
    rows = dense.layers[record.plan.origin.layer].input_types
    if rows is None:
        return kif
    plan = record.plan
    if len(rows[0]) != plan.n_in:  # stripped: the kept channels' rows of each window position
        rows = [np.asarray(v).reshape(-1, len(v) // np.prod(plan.window[:-1]))[:, plan.origin.inputs] for v in rows]
    return tuple(np.minimum(np.ravel(v), cap) for v, cap in zip(rows, kif))


def _circuit(record, matrix=None, column=None, dense=None) -> tuple:
    matrix = live_matrix(record) if matrix is None else matrix
    bias = record.bias
    if column is not None:
        matrix, bias = matrix[:, [column]], None if bias is None else bias[[column]]
    return matrix, input_types(record, dense), None, bias


def _sample_circuits(exported, removed, dense=None) -> tuple[dict, str]:
    """The sampled circuits: the removed kernel's output column with and without it, or one cheap column."""
    if removed:
        record, kernel, restored, column = removed
        where = f"{record.plan.origin.layer} output {record.plan.origin.outputs[column]}"
        return {
            ("without", kernel): _circuit(record, column=column, dense=dense),
            ("with", kernel): _circuit(record, restored, column, dense),
        }, where
    record = min(exported.nodes.values(), key=lambda r: estimated_cost(live_matrix(r), fixed_kif(r.input)))
    matrix = live_matrix(record)
    costs = [estimated_cost(matrix[:, [c]], fixed_kif(record.input)) for c in range(matrix.shape[1])]
    column = int(np.argsort(costs)[len(costs) // 2])
    where = f"{record.plan.origin.layer} output {record.plan.origin.outputs[column]}"
    return {("column", where): _circuit(record, column=column, dense=dense)}, where


def _all_circuits(exported, removed, dense=None) -> dict:
    circuits = {record.name: _circuit(record, dense=dense) for record in exported.nodes.values()}
    if removed:  # both in the same parts, so the parts without the kernel are the same circuits (cached)
        record, kernel, restored, _ = removed
        matrix, kif, _, bias = circuits[record.name]
        parts = layer_parts(matrix, kif)
        circuits[record.name] = (matrix, kif, parts, bias)
        circuits[("with", kernel)] = (restored, kif, parts, bias)
    return circuits


def _traced_costs(exported, measured: Measured, dense=None) -> None:
    """Every small layer's da4ml cost, traced without yosys (the calibrated DA estimate's input)."""
    for name, cost in trace_costs({r.name: _circuit(r, dense=dense) for r in exported.nodes.values()}).items():
        if isinstance(cost, Unmeasured):
            measured.unmeasured[f"{name} (calibrated estimate)"] = cost.reason
        else:
            measured.traced[name] = cost


def measure_export(
    exported,
    dense,
    estimate,
    scope: str = "sample",
    budget: MeasurementBudget | None = None,
    progress=None,
    cancel=None,
) -> Measured:
    """Measure the export's DA circuits (`scope`) within `budget`; `progress(iterator, label, total)` wraps
    the measurement's results (a progress bar) when given. `dense`: the dense model's record (None: no removal)."""
    budget = budget or MeasurementBudget()
    removed = removed_kernel(exported, dense, estimate, cheapest=scope == "sample") if dense is not None else None
    measured = Measured(scope)
    if scope == "sample":
        circuits, where = _sample_circuits(exported, removed, dense)
        label = f"yosys: the DA circuit of {where}" + (f", with and without {removed[1]}" if removed else "")
    else:
        circuits, label = _all_circuits(exported, removed, dense), "yosys: each layer's DA circuit"
    results = synthesize_all(circuits, exported.board.family, budget=budget, cancel=cancel, log=measured.jobs)
    results = dict(progress(results, label, len(circuits)) if progress else results)
    for name, result in results.items():
        if isinstance(result, Unmeasured):
            measured.unmeasured[" ".join(name) if isinstance(name, tuple) else name] = result.reason
        elif isinstance(name, tuple):
            measured.samples[" ".join(name)] = result
        else:
            measured.layers[name] = result
    _removal(measured, removed, results, scope)
    if scope == "sample":
        _traced_costs(exported, measured, dense)
    else:
        measured.traced = {name: s.layer_da4ml_cost or s.da4ml_cost for name, s in measured.layers.items()}
    measured.calibration = _calibration(measured)
    return measured


def _calibration(measured: Measured):
    """Scope all: fitted on half the run's layers, checked on the others. Scope sample: the recorded calibration,
    checked on the sampled circuits."""
    if measured.scope == "sample":
        return checked(recorded(), measured.samples)
    names = list(measured.layers)
    if len(names) < 2:
        return None
    return held_out_errors(
        fit({n: measured.layers[n] for n in names[::2]}), {n: measured.layers[n] for n in names[1::2]}
    )


def _removal(measured: Measured, removed, results: dict, scope: str) -> None:
    if not removed:
        return
    record, kernel, _, column = removed
    with_it = results.get(("with", kernel))
    without = results.get(("without", kernel)) if scope == "sample" else results.get(record.name)
    if isinstance(with_it, Synthesis) and isinstance(without, Synthesis):
        where = (
            f"the DA circuit of output {record.plan.origin.outputs[column]} of {record.plan.origin.layer}"
            if scope == "sample"
            else f"the DA circuit of {record.plan.origin.layer}"
        )
        measured.removal = KernelRemoval(record.name, kernel, with_it, without, where)


__all__ = ["Measured", "Part", "SCOPES", "measure_export", "removed_kernel"]
