"""C-simulation against the QKeras model, compared at the logits over every held-out sample.

The reference gets its input converted exactly as the hardware's input type converts a float (ap_fixed:
truncation and wrap-around unless the type says RND_CONV/SAT). The logits are the output of the last
Conv/Dense layer, before any table-based activation (softmax, sigmoid, tanh); there the outputs must be
bit-identical wherever QKeras' float32 accumulation is exact, or within a tolerance derived from the types
where hls4ml is not exact (`tolerance.py`: averaging k values, k not a power of 2; recurrent tables). After a
table activation only the decisions are compared. One pass gives the hardware's outputs and its traced
layers (hls4ml's trace calls), and one QKeras pass every layer's values: the per-layer diff of a
disagreement and the numerical profile read both.
"""

import math
from dataclasses import dataclass, field

import numpy as np

from fpgaprune.hls.hls4ml_bridge import library_run
from fpgaprune.hls.tolerance import Tolerance, Unbounded, export_layer_tolerances
from fpgaprune.quantize.fixed_types import FixedType
from fpgaprune.record import resolved
from fpgaprune.support.text_table import format_rows
from fpgaprune.support.tools import cores

TABLE_ACTIVATIONS = ("softmax", "sigmoid", "tanh", "hard_sigmoid", "softsign")
CHUNK = 256  # samples per pass: the traces and layer values of one chunk are held at a time


DIFF_HEADER = ("layer", "values differing", "max |diff|", "first (sample, index)", "C-sim", "QKeras")


def diff_header(reference: str) -> tuple:
    """The per-layer diff's columns, the last named after the model C-sim is compared with."""
    return (*DIFF_HEADER[:-1], reference)


def simulated_subset(held_out: int, limit, seed: int = 0) -> np.ndarray | None:
    """The held-out samples C-sim runs when there are more than `limit` (an int, or "all"): a seeded uniform
    sample, in order; None: all of them."""
    if limit == "all" or held_out <= int(limit):
        return None
    return np.sort(np.random.default_rng(seed).choice(held_out, int(limit), replace=False))


def hardware_input(x: np.ndarray, fixed: FixedType) -> np.ndarray:
    """`x` as the hardware's input type holds it (float32)."""
    scaled = np.asarray(x, np.float64) * 2.0**fixed.frac
    if fixed.quantizing:
        steps = np.clip(np.round(scaled), fixed.lo * 2.0**fixed.frac, fixed.hi * 2.0**fixed.frac)
    else:
        steps = np.floor(scaled)
        span, low = 2.0**fixed.width, fixed.lo * 2.0**fixed.frac
        steps = np.mod(steps - low, span) + low  # AP_WRAP
    return (steps / 2.0**fixed.frac).astype(np.float32)


def logits_layer(record):
    """The last layer with weights (a Conv/Dense, depthwise, separable or recurrent one) of a model's record, and
    whether a table-based activation follows (inside it or after it)."""
    layers = list(record.layers.values())
    last = record.weighted()[-1]
    names = [_activation_text(layer) for layer in layers[layers.index(last) :]]
    return last, any(table in name for name in names for table in TABLE_ACTIVATIONS)


def _activation_text(layer) -> str:
    """The layer's activation as its function's or its quantizer's name, lower case ("" for none)."""
    activation = layer.activation
    return str(activation.function or activation.class_name).lower() if activation is not None else ""


def exactness_bound(layer, fixed_bits: int) -> int:
    """weight bits + input bits + log2(fan-in): float32 accumulation is exact when this is at most 24 (from the
    layer's record)."""
    weights = layer.weights
    kernel = weights.get("kernel") or next(iter(weights.values()))
    fan_in = int(np.prod(kernel.quantized.shape[:-1]))
    return kernel.bits + fixed_bits + math.ceil(math.log2(max(fan_in, 2)))


@dataclass
class CsimResult:
    """C-sim against QKeras over `samples` held-out samples, at the logits `layer` (what `fp.csim` returns)."""

    layer: str
    bit_exact: bool
    mismatches: int
    max_abs_diff: float
    argmax_agreement: float | None  # how often the decisions agree (the task's: argmax, 0/1; None: regression)
    table_activation: bool
    float32_exact: bool
    diff: list = field(default_factory=list)  # the first layers that differ, as a table with its header
    samples: int = 0
    agreement: str | None = "argmax agreement"
    logits_agreement: float | None = None  # argmax of the logits, before a table activation
    ties: int = 0  # samples whose C-sim outputs tie at the top where QKeras' do not
    tolerance: Tolerance | None = None
    tolerance_bound: float | None = None
    first_difference: str = ""  # one labelled line: the first layer that differs
    profile: object = None  # quantize.profile.Profile of the same pass, when collected
    held_out: int = 0  # the held-out samples `samples` were drawn from (0: the same set, all simulated)
    beyond: str = ""  # the first layer up to the logits that differs beyond its bound (or with none), and why
    judged: list = field(default_factory=list)  # the layers that differ within their tolerance, one line each
    reference: str = "QKeras"  # the quantized model's library, which C-sim is compared with

    @property
    def within_tolerance(self) -> bool | None:
        return None if self.tolerance_bound is None else self.max_abs_diff <= self.tolerance_bound

    @property
    def passed(self) -> bool:
        """The logits bit-exact or within their tolerance, and every layer before them too."""
        return (self.bit_exact or bool(self.within_tolerance)) and not self.beyond

    def scope(self) -> str:
        """Which samples were simulated: "450 samples", or "2000 of the 10000 held-out samples (a seeded
        sample...)"."""
        if not self.held_out or self.held_out <= self.samples:
            return f"{self.samples} samples"
        return (
            f"{self.samples} of the {self.held_out} held-out samples (a seeded sample, outputs.csim_samples; "
            "`all` simulates every one)"
        )

    def verdict(self, brief: bool = False) -> str:
        """How C-sim compares at the logits; `brief`: without the tolerance's reasons (a table's cell)."""
        if self.bit_exact:
            return "bit-exact"
        if self.within_tolerance:
            reason = "" if brief else f": {self.tolerance.reason}"
            return f"within its tolerance (max |diff| {self.max_abs_diff:.3g} <= {self.tolerance_bound:.3g}{reason})"
        return f"NOT bit-exact ({self.mismatches} values differ, max |diff| {self.max_abs_diff:.3g})"

    def agreement_text(self) -> str:
        """The decisions compared, and why they differ where the logits agree (a table's ties)."""
        if self.argmax_agreement is None:
            return ""
        text = f"{self.agreement} {self.argmax_agreement:.2%}"
        if self.table_activation and self.argmax_agreement < 1 and self.logits_agreement is not None:
            text += (
                f" after the output's table activation (at the logits {self.logits_agreement:.2%}): its "
                f"rounded outputs tie at the top in {self.ties} sample(s) where {self.reference}'s float ones do not"
            )
        return text

    def format(self) -> str:
        lines = [
            f"C-sim vs {self.reference} at the logits ({self.layer}), {self.scope()}: {self.verdict()}"
            + (f"; {self.agreement_text()}" if self.argmax_agreement is not None else "")
        ]
        if self.tolerance is not None and not self.bit_exact:
            lines.append(f"the tolerance: {self.tolerance.reason}; to be exact: {self.tolerance.advice}")
        lines += [f"within its tolerance: {line}" for line in self.judged]
        lines += [f"NOT within the types' bounds: {self.beyond}"] if self.beyond else []
        return "\n".join(lines + self.diff)

    def metrics(self) -> dict:
        """What the csim stage records (JSON-ready); `from_metrics` reads it back for the report."""
        return {
            "bit_exact": self.bit_exact,
            "argmax_agreement": self.argmax_agreement,
            "agreement": self.agreement,
            "logits_agreement": self.logits_agreement,
            "ties": self.ties,
            "mismatches": self.mismatches,
            "max_abs_diff": self.max_abs_diff,
            "logits_layer": self.layer,
            "samples": self.samples,
            "reference": self.reference,
            "held_out": self.held_out or self.samples,
            "table_activation": self.table_activation,
            "float32_exact": self.float32_exact,
            "tolerance": self.tolerance_bound,
            "within_tolerance": self.within_tolerance,
            "tolerance_reason": self.tolerance.reason if self.tolerance else None,
            "tolerance_advice": self.tolerance.advice if self.tolerance else None,
            "beyond": self.beyond,
            "layers_within_tolerance": self.judged,
        }

    @classmethod
    def from_metrics(cls, metrics: dict) -> "CsimResult":
        reason = metrics.get("tolerance_reason")
        advice = metrics.get("tolerance_advice") or ""
        tolerance = Tolerance(metrics.get("tolerance") or 0.0, 0.0, reason, advice) if reason else None
        return cls(
            metrics.get("logits_layer", "?"),
            metrics["bit_exact"],
            metrics.get("mismatches", 0),
            metrics.get("max_abs_diff", 0.0),
            metrics.get("argmax_agreement"),
            metrics.get("table_activation", False),
            metrics.get("float32_exact", True),
            samples=metrics.get("samples", 0),
            agreement=metrics.get("agreement", "argmax agreement"),
            logits_agreement=metrics.get("logits_agreement"),
            ties=metrics.get("ties", 0),
            tolerance=tolerance,
            tolerance_bound=metrics.get("tolerance"),
            held_out=metrics.get("held_out", 0),
            beyond=metrics.get("beyond", ""),
            judged=metrics.get("layers_within_tolerance", []),
            reference=metrics.get("reference", "QKeras"),
        )


class _LayerDiff:
    """Per traced layer: how many values differ from QKeras, the largest difference and the first one."""

    def __init__(self, reference: str = "QKeras", tolerances: dict | None = None):
        self.counts, self.largest, self.first, self.peak, self.reference = {}, {}, {}, {}, reference
        tolerances = {name: t for name, t in (tolerances or {}).items() if isinstance(t, Tolerance)}
        # {layer: the period its type wraps at}: differences are taken modulo it
        self.moduli = {name: t.modulus for name, t in tolerances.items() if t.modulus}
        # {layer: the range its type saturates to}: the reference is clipped to it
        self.clips = {name: t.clip for name, t in tolerances.items() if t.clip}

    def add(self, name: str, start: int, traced: np.ndarray, reference: np.ndarray, ids=None) -> None:
        """`start`: the chunk's first sample; `ids`: each row's sample number in the held-out set, if not
        `start + row` (a subset was simulated)."""
        traced = traced.reshape(reference.shape)
        if name in self.clips:
            reference = np.clip(reference, *self.clips[name])
        difference = traced - reference
        if name in self.moduli:
            period = self.moduli[name]
            difference = (difference + period / 2) % period - period / 2
        differs = difference != 0
        count = int(differs.sum())
        self.counts[name] = self.counts.get(name, 0) + count
        self.peak[name] = max(self.peak.get(name, 0.0), float(np.abs(reference).max()) if reference.size else 0.0)
        if count:
            self.largest[name] = max(self.largest.get(name, 0.0), float(np.abs(difference).max()))
            if name not in self.first:
                index = tuple(int(i) for i in np.argwhere(differs)[0])
                sample = int(ids[index[0]]) if ids is not None else start + index[0]
                self.first[name] = ((sample, *index[1:]), float(traced[index]), float(reference[index]))

    def judged(self, order: list, tolerances: dict) -> tuple[list, str]:
        """(a line per layer of `order` that differs within its tolerance, the first that differs beyond it or
        with no bound: why, or "")."""
        within = []
        for name in (name for name in order if self.counts.get(name)):
            found, tolerance = f"{self.counts[name]} values, max |diff| {self.largest[name]:.3g}", tolerances.get(name)
            if isinstance(tolerance, Unbounded):
                advice = f"; to bound it: {tolerance.advice}" if tolerance.advice else ""
                return within, f"'{name}' differs from {self.reference} ({found}) and {tolerance.reason}{advice}"
            if tolerance is None:
                return within, f"'{name}' differs from {self.reference} ({found}) where it must be bit-exact"
            if tolerance.relative:  # hls4ml's sigmoid/tanh tables: no bound per layer; the logits' tolerance judges
                within.append(f"'{name}' ({found}: {tolerance.reason}; a heuristic, judged at the logits)")
                continue
            bound = tolerance.bound(self.peak[name])
            if self.largest[name] > bound:
                return (
                    within,
                    f"'{name}' differs from {self.reference} ({found}) beyond its tolerance {bound:.3g} "
                    f"({tolerance.reason})",
                )
            within.append(f"'{name}' ({found} <= {bound:.3g}: {tolerance.reason})")
        return within, ""

    def rows(self, order: list, limit: int = 3) -> list:
        names = [name for name in order if self.counts.get(name)][:limit]
        return [
            (
                name,
                self.counts[name],
                f"{self.largest[name]:g}",
                str(self.first[name][0]),
                f"{self.first[name][1]:g}",
                f"{self.first[name][2]:g}",
            )
            for name in names
        ]


class _Comparison:
    """The logits, the decisions and the per-layer diff, accumulated chunk by chunk."""

    def __init__(self, bound, task, tolerances: dict | None = None):
        self.record, self.task = bound.record, task
        self.logits, self.table = logits_layer(self.record)
        self.samples = self.mismatches = self.agree = self.decided = self.logits_agree = self.ties = 0
        self.largest_diff = self.largest_logit = 0.0
        self.reference = bound.front.quantizer_library
        self.layers = _LayerDiff(self.reference, tolerances)

    def add(self, start: int, outputs: np.ndarray, traces: dict, values, ids=None) -> None:
        n = len(outputs)
        reference = values.outputs.reshape(n, -1)
        final = np.asarray(outputs).reshape(reference.shape)
        hardware_logits, reference_logits = final, reference
        if self.table:
            if self.logits.name not in (traces or {}):
                raise ValueError(f"a table activation follows {self.logits.name}: comparing its logits needs its trace")
            reference_logits = values.traced(self.logits.name).reshape(n, -1)
            hardware_logits = np.asarray(traces[self.logits.name]).reshape(reference_logits.shape)
        self.samples += n
        self.mismatches += int(np.sum(hardware_logits != reference_logits))
        self.largest_diff = max(self.largest_diff, float(np.abs(hardware_logits - reference_logits).max()))
        self.largest_logit = max(self.largest_logit, float(np.abs(reference_logits).max()))
        self._decisions(final, reference, hardware_logits, reference_logits)
        for name in self.record.layers:
            if name in (traces or {}) and name in values.layer_outputs:
                self.layers.add(name, start, np.asarray(traces[name]), values.traced(name), ids)

    def _decisions(self, final, reference, hardware_logits, reference_logits) -> None:
        """Classes: how many argmaxes agree (and ties of a table); 0/1 outputs: how many decisions agree."""
        kind = self.task.kind if self.task is not None else "classification"
        if kind in ("binary", "multilabel"):
            same = self.task.decisions(final) == self.task.decisions(reference)
            self.agree, self.decided = self.agree + int(same.sum()), self.decided + same.size
        elif kind == "classification":
            self.agree += int(np.sum(final.argmax(1) == reference.argmax(1)))
            self.logits_agree += int(np.sum(hardware_logits.argmax(1) == reference_logits.argmax(1)))
            self.decided += len(final)
            top, reference_top = np.sort(final, axis=1)[:, -2:], np.sort(reference, axis=1)[:, -2:]
            if final.shape[1] > 1:
                self.ties += int(np.sum((top[:, 0] == top[:, 1]) & (reference_top[:, 0] != reference_top[:, 1])))

    def result(self, fixed: FixedType, tolerance: Tolerance | None, tolerances: dict | None = None) -> CsimResult:
        """`tolerances`: each layer's (`tolerance.layer_tolerances`); without them, every layer before the logits
        must be bit-exact, and the logits within `tolerance`."""
        agreement = self.agree / self.decided if self.decided else None
        order = list(self.record.layers)
        rows = self.layers.rows(order)
        judged_layers = order[: order.index(self.logits.name)]  # after the logits only the decisions count
        if isinstance((tolerances or {}).get(self.logits.name), Unbounded):  # the logits too: with the reason why
            judged_layers.append(self.logits.name)
        judged, beyond = self.layers.judged(judged_layers, tolerances or {})
        result = CsimResult(
            self.logits.name,
            self.mismatches == 0,
            self.mismatches,
            self.largest_diff,
            agreement,
            self.table,
            exactness_bound(self.logits, fixed.width) <= 24,
            format_rows(diff_header(self.reference), rows) if rows else [],
            self.samples,
            self.task.agreement if self.task is not None else "argmax agreement",
            self.logits_agree / self.samples if self.table else None,
            self.ties,
            tolerance,
            tolerance.bound(self.largest_logit) if tolerance else None,
            beyond=beyond,
            judged=judged,
            reference=self.reference,
        )
        if rows:
            name, count, largest, first, csim, qkeras = rows[0]
            result.first_difference = (
                f"the first layer that differs is '{name}': {count} values, max |diff| "
                f"{largest}, the first at (sample, index) {first}: C-sim {csim}, "
                f"{self.reference} {qkeras}"
            )
        return result


def layer_diff(trace: dict, bound, x, limit: int = 3) -> list:
    """Readable lines (a table with its header) for the first layers whose C-sim trace ({layer: outputs})
    differs from the bound quantized model's values (`record.resolved`) for the same inputs `x`."""
    values, reference = bound.front.reference_probe(bound.model)(x), bound.front.quantizer_library
    diff, order = _LayerDiff(reference), list(bound.record.layers)
    for name in order:
        if name in trace and name in values.layer_outputs:
            diff.add(name, 0, np.asarray(trace[name]), values.traced(name))
    rows = diff.rows(order, limit)
    return format_rows(diff_header(reference), rows) if rows else ["no traced layer differs"]


def compare_with_qkeras(
    run,
    bound,
    x,
    fixed: FixedType,
    *,
    task=None,
    tolerance: Tolerance | None = None,
    collector=None,
    chunk: int = CHUNK,
    workers: int | None = None,
    ids: np.ndarray | None = None,
    tolerances: dict | None = None,
) -> CsimResult:
    """Compare a C-simulation with the bound quantized model (`record.resolved`) at the logits, bit for bit, over
    all of `x`.

    `run(xq)` returns (outputs, {traced layer: outputs}) of the C-simulation for the hardware inputs `xq` (any
    backend's `simulator`); a run with a `map` (hls4ml's `BridgeRun`) also spreads long sets over `workers`
    processes (default: one per core). `task` (`fpgaprune.model.task.Task`) says which decisions to compare
    (default: the argmax); `tolerance` is where hls4ml is not exact at the logits, `tolerances` at each layer
    before them (`tolerance.layer_tolerances`: a layer that differs beyond its own, or with none, fails the
    result); `collector` (`quantize.profile.ProfileCollector`) reads the same pass; `ids`: the sample numbers of `x`
    in a larger set (`simulated_subset`), for the per-layer diff.
    """
    front, model = bound.front, bound.model
    probe, comparison = front.reference_probe(model), _Comparison(bound, task, tolerances)
    starts = list(range(0, len(x), chunk))
    inputs = [hardware_input(np.asarray(x[start : start + chunk]), fixed) for start in starts]
    hardware = [np.ascontiguousarray(front.hardware_layout(model, xq)) for xq in inputs]  # hls4ml: channels-last
    workers = workers or cores()
    passes = run.map(hardware, workers) if hasattr(run, "map") else (run(xq) for xq in hardware)
    for start, xq, (outputs, traces) in zip(starts, inputs, passes):
        values = probe(xq)
        comparison.add(start, outputs, traces, values, None if ids is None else ids[start : start + chunk])
        if collector is not None:
            collector.add(np.asarray(x[start : start + chunk]), values)
    result = comparison.result(fixed, tolerance, tolerances)
    result.profile = collector.profile() if collector is not None else None
    return result


def csim_check(
    hls_model,
    model,
    x,
    fixed: FixedType,
    task=None,
    tolerance: Tolerance | None = None,
    collector=None,
    names: dict | None = None,
    tolerances: dict | None = None,
) -> CsimResult:
    """Compile `hls_model` with hls4ml's trace calls (if needed) and compare its C-simulation with the quantized
    model (bound or bare) on `x` (`compare_with_qkeras`); `names`: the export's {hls4ml node: user's layer name}.
    Unless given, the tolerances are derived from the hls_model's own types (`tolerance.export_layer_tolerances`)."""
    bound = resolved(model)
    if tolerances is None:
        hls_config = hls_model.config.config.get("HLSConfig", {})
        tolerances = export_layer_tolerances(bound, hls_config, names, fixed)
        tolerance = tolerance or logits_tolerance_of(bound.record, tolerances)
    run = library_run(hls_model, bound, x, names)
    return compare_with_qkeras(
        run, bound, x, fixed, task=task, tolerance=tolerance, collector=collector, tolerances=tolerances
    )


def logits_tolerance_of(record, tolerances: dict) -> Tolerance | None:
    """The tolerance at the logits layer of a model's record, where one is known."""
    found = tolerances.get(logits_layer(record)[0].name)
    return found if isinstance(found, Tolerance) else None
