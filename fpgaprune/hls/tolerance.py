"""How far C-sim may stand from QKeras at each layer where the two do not compute the same numbers, derived from
the types. Every layer up to the logits gets a bound: 0 (bit-exact), a stated tolerance, or None (no bound
follows from the types: any difference there fails C-sim, naming the layer).

Where they part, each layer's own error:
- Averaging k values (average and global average pooling) divides in the accumulator type: with k a power of
  2 that is exact (the derived types carry log2(k) more fraction bits); otherwise the quotient is truncated
  to the accumulator's, then the result's, fraction bits: less than one step of each below the exact mean.
- A Conv/Dense whose products need more bits than the reference computes with exactly (24 where it computes in
  float32; 53 in float64, as the exact references of QKeras and Brevitas do) is rounded by the reference, while
  hls4ml's accumulator is exact: at most gamma_n = n u / (1 - n u) of |x| |W| (u its unit roundoff, n the
  fan-in and the bias), with |x| from its input type.
- A batch normalization whose scale and bias are not on a short grid (one that follows no Conv/Dense, so it
  cannot fold) is computed by the reference in floating point and by the export with its scale truncated to the
  scale type and its bias to the bias type (`precision/batchnorm.py`): |x| (one scale step + 4u |scale|) + one
  bias step + 4u (|beta| + |mean scale|) + 2u |y|, from its input, scale, bias and result types.
- A table activation (sigmoid, tanh, hard sigmoid, softmax; `Activation` layers, or inside a Conv/Dense) is read
  from hls4ml's table: its own error follows from the table's size and entry type, the input's type and the
  result's type (`table_error.py`), and an incoming error grows by the function's largest slope.
- Recurrent layers (LSTM, GRU) compute sigmoid and tanh by tables in hls4ml: no bound follows from the types.
  The logits after one (or the recurrent layer, where its output is the model's) are judged by the tolerance
  their tests use, 2% of the largest |logit| (tests/hls/test_hls_adapter.py), a heuristic the verdict names; the
  layers between are listed with their differences and judged there, at the logits.
Errors then run through the layers: a Conv/Dense (depthwise and separable ones too) multiplies them by its
largest column sum of |weights|, a batch normalization by its largest |scale|, a quantizer adds at most one of
its steps, ReLU, max pooling, reshapes and identities pass them on, Add/Subtract/Average add them.

A bound counts only where it could fail: one larger than 1/16 of the range its layer's type can reach
(`USEFUL_SHARE`) would pass almost any design, so that layer is unbounded instead (`Unbounded`, with what to
change), and any difference there fails C-sim, naming it.
"""

import math
import re
from dataclasses import dataclass

import numpy as np

from fpgaprune.hls import table_error
from fpgaprune.hls.names import map_keys
from fpgaprune.hls.precision.batchnorm import batchnorm_affine
from fpgaprune.model.layer_kinds import AVERAGE_POOLING as _AVERAGING
from fpgaprune.model.layer_kinds import MAX_POOLING, MERGES, MOVES, PADDINGS, VALUES_PASS
from fpgaprune.quantize.fixed_types import FixedType, exact_frac
from fpgaprune.record.model_record import ActivationRecord, LayerRecord, ModelRecord

RECURRENT_RELATIVE = 0.02
FLOAT32_BITS, FLOAT64_BITS = 24, 53  # the significand bits of the reference's float type
UNIT = 2.0**-FLOAT32_BITS  # float32's unit roundoff
USEFUL_SHARE = 1 / 16  # the largest bound that judges anything, as a share of its layer type's range
# Layers that pass an error on unchanged: values moved, reshaped, maxed or passed through.
_SAME = (*VALUES_PASS, *MOVES, *PADDINGS, *MAX_POOLING, "ReLU", "Concatenate", "Maximum", "Minimum")
_PASSING_ACTIVATIONS = ("relu", "linear")  # 1-Lipschitz and exact in both: an error passes unchanged
_TYPE = re.compile(r"(?:ap_)?(u?)fixed<\s*(\d+)\s*,\s*(-?\d+)\s*((?:,[^>]*)?)>")
_SATURATING = {"SAT", "AP_SAT", "SAT_SYM", "AP_SAT_SYM"}


def parse_type(text, saturation: bool = False) -> FixedType | None:
    """`ap_fixed<16,6>`, `fixed<8,3,RND_CONV,SAT>`, `ufixed<6,2>` as a FixedType (None for anything else); with
    `saturation`, a type that saturates (SAT, SAT_SYM) is marked `quantizing`."""
    match = _TYPE.fullmatch(str(text).replace(" ", ""))
    if not match:
        return None
    saturates = saturation and bool(set(match[4].split(",")) & _SATURATING)
    return FixedType(int(match[2]), int(match[3]), not match[1], saturates)


def export_type(text) -> FixedType | None:
    """`parse_type`, where a type that saturates is marked `quantizing`: its value is clipped to its range, as an
    activation quantizer's is."""
    return parse_type(text, saturation=True)


def node_types(hls_config: dict, saturation: bool = False) -> dict:
    """{hls4ml node: {variable: FixedType}} from an HLSConfig's `LayerName` precisions; with `saturation`, a type
    that saturates is marked (`export_type`)."""
    found = {}
    for node, settings in (hls_config.get("LayerName") or {}).items():
        precision = settings.get("Precision") if isinstance(settings, dict) else None
        items = precision.items() if isinstance(precision, dict) else [("result", precision)]
        found[node] = {key: fixed for key, text in items if (fixed := parse_type(text, saturation)) is not None}
    return found


@dataclass(frozen=True)
class Tolerance:
    """|C-sim - QKeras| at a layer may reach `absolute` + `relative` x the largest |value| of QKeras there; with a
    `modulus`, the difference is taken modulo it first (a type that wraps, where the value is read only through a
    quantizer that wraps at the same period); with a `clip` (lo, hi), QKeras' value is clipped to it first (a
    type that saturates, where the value is read only through a quantizer that saturates at the same range)."""

    absolute: float
    relative: float
    reason: str
    advice: str
    modulus: float | None = None
    clip: tuple[float, float] | None = None

    def bound(self, largest: float) -> float:
        return self.absolute + self.relative * largest


def export_tolerance(bound, hls_config: dict, names: dict | None = None, input_type=None) -> Tolerance | None:
    """The tolerance at the logits (the last layer with weights) of a bound model (`record.resolved`) or a
    record, from an export's HLSConfig (`names`: the export's {hls4ml node: user's layer name})."""
    weighted = _record(bound).weighted()
    if not weighted:
        return None
    found = export_layer_tolerances(bound, hls_config, names, input_type).get(weighted[-1].name)
    return found if isinstance(found, Tolerance) else None


def _record(bound_or_record) -> ModelRecord:
    return bound_or_record if isinstance(bound_or_record, ModelRecord) else bound_or_record.record


def node_tables(hls_config: dict) -> dict:
    """{hls4ml node: its Table} where the HLSConfig sets one (`table_size`, `table_t`)."""
    found = {}
    for node, settings in (hls_config.get("LayerName") or {}).items():
        if isinstance(settings, dict) and {"table_size", "table_t"} & set(settings):
            entry = parse_type(settings.get("table_t", "")) or table_error.Table.entry
            found[node] = table_error.Table(int(settings.get("table_size", table_error.Table.size)), entry)
    return found


def export_layer_tolerances(model, hls_config: dict, names: dict | None = None, input_type=None) -> dict:
    """`layer_tolerances` from an export's HLSConfig and input type."""
    names = names or {}
    types, tables = map_keys(node_types(hls_config, saturation=True), names), map_keys(node_tables(hls_config), names)
    return layer_tolerances(model, types, input_type, tables)


def logits_tolerance(model, logits_name: str, types: dict, input_type=None) -> Tolerance | None:
    """The tolerance at the layer `logits_name`: None where C-sim must be bit-exact, or where no bound is known
    (`layer_tolerances` tells the two apart)."""
    return layer_tolerances(model, types, input_type).get(logits_name)


@dataclass
class _Error:
    """The bound on one layer's output error: absolute, relative (after a recurrent layer), and its sources."""

    absolute: float = 0.0
    relative: float = 0.0
    sources: tuple = ()
    advice: tuple = ()

    def scaled(self, factor: float, plus: float = 0.0, source: str = "", advice: str = "") -> "_Error":
        return _Error(
            self.absolute * factor + plus,
            self.relative,  # the recurrent tolerance: each layer's own largest |value| sets its scale
            self.sources + ((source,) if source and plus else ()),
            self.advice + ((advice,) if advice and plus and advice not in self.advice else ()),
        )


def layer_tolerances(bound, types: dict, input_type: FixedType | None = None, tables: dict | None = None) -> dict:
    """{layer: its Tolerance; None where it must be bit-exact; `UNBOUNDED` where an error reaches it and no bound
    follows from the types}, for every layer. `types`: {layer: {variable: FixedType}} as the export's HLSConfig
    gives them; `input_type`: the network input's; `tables`: {node: table_error.Table} where the config sets one
    (hls4ml's defaults elsewhere). A front end whose export types come from its own library (HGQ2's, through
    hls4ml's BitExact pass) gives its own bounds. `bound`: a bound model (`record.resolved`), or a record."""
    if isinstance(bound, ModelRecord):
        return record_tolerances(bound, types, input_type, tables)
    own = bound.front.layer_tolerances(bound.model, types, input_type)
    if own is not None:
        return useful_tolerances(bound.record, own, types)
    return record_tolerances(bound.record, types, input_type, tables)


def useful_tolerances(record: ModelRecord, tolerances: dict, types: dict) -> dict:
    """The bounds (derived, or a front end's own) with the rule every bound keeps: past USEFUL_SHARE of what its
    layer's type can reach, a layer and every layer after it is unbounded, for that reason."""
    out = dict(tolerances)
    for name in record.topological():
        unbounded = next((out[s] for s in record.layers[name].inbound if isinstance(out.get(s), Unbounded)), None)
        found = out.get(name)
        if unbounded is not None:
            out[name] = unbounded
        elif isinstance(found, Tolerance) and not found.relative and found.modulus is None:
            error = _Error(found.absolute, 0.0, (found.reason,), (found.advice,) if found.advice else ())
            useful = _useful(name, error, types.get(name, {}).get("result"))
            out[name] = useful if isinstance(useful, Unbounded) else found
    return out


def record_tolerances(record: ModelRecord, types: dict, input_type=None, tables: dict | None = None) -> dict:
    """`layer_tolerances` of a model's record."""
    bits = FLOAT32_BITS if record.float32 else FLOAT64_BITS
    inputs = frozenset(name for name, layer in record.layers.items() if layer.role == "InputLayer")
    context = _Nodes(types, tables or {}, record.quantizer_library, bits, inputs)
    errors, peaks, out = {}, {}, {}
    for name in record.topological():
        layer = record.layers[name]
        inbound = [errors[source] for source in layer.inbound if source in errors]
        if any(isinstance(e, Unbounded) for e in inbound):
            errors[name] = out[name] = UNBOUNDED
            continue
        peak_in = max([peaks.get(s, 0.0) for s in layer.inbound] or [_peak(input_type)])
        peaks[name] = _peak(types.get(name, {}).get("result")) or peak_in
        fixed_in = _input_type(record, name, types, input_type)
        found = _propagated(layer, inbound, context, peak_in, fixed_in)
        compared, errors[name] = found if isinstance(found, tuple) else (found, found)
        out[name] = compared if isinstance(compared, Unbounded) else None if _zero(compared) else _tolerance(compared)
    return useful_tolerances(record, out, types)


@dataclass(frozen=True)
class Unbounded:
    """An error reaches the layer and no bound that could fail follows from the types: why, and what to change."""

    reason: str = "no bound follows from its types"
    advice: str = ""

    def __repr__(self):
        return "UNBOUNDED"


UNBOUNDED = Unbounded()


def _useful(name: str, error, result: FixedType | None):
    """`error`, or Unbounded where its bound exceeds USEFUL_SHARE of the range `result` can reach (a bound that
    could not fail); a relative (recurrent) tolerance is a stated heuristic and stays."""
    if isinstance(error, Unbounded) or result is None or error.relative or _zero(error):
        return error
    reach = result.hi - result.lo
    if error.absolute <= USEFUL_SHARE * reach:
        return error
    sources = "; ".join(dict.fromkeys(error.sources))
    changes = [
        *error.advice,
        f"wider accumulators or finer types for '{name}' and the layers before it (hls.config LayerName)",
        f"a narrower quantization of it (quantization.layers.{name})",
    ]
    if "float32" in sources:
        changes.append("a reference computed exactly (a front end whose reference is float64)")
    return Unbounded(
        f"the bound the types give at '{name}', {error.absolute:.3g}, is more than 1/16 of what its type "
        f"{result.hls()} can reach ({reach:.3g}), so it could not fail ({sources})",
        "; ".join(dict.fromkeys(changes)),
    )


def _tolerance(error: _Error) -> Tolerance:
    reason = "; ".join(dict.fromkeys(error.sources))
    return Tolerance(error.absolute, error.relative, reason, "; ".join(error.advice))


def _peak(fixed: FixedType | None) -> float:
    """The largest |value| a type holds (0 when unknown)."""
    return max(abs(fixed.lo), abs(fixed.hi)) if fixed is not None else 0.0


def _input_type(record: ModelRecord, name: str, types: dict, network_input) -> FixedType | None:
    """The type of a layer's input: its inbound layer's result (its activation quantizer's, where one is inside
    it), through layers that keep the type (the network input's where they start at it)."""
    sources = record.layers[name].inbound
    if not sources:
        return network_input
    while len(sources) == 1:
        source = record.layers[sources[0]]
        activation = source.activation
        if activation is not None and activation.quantizer and activation.fixed is not None:
            return activation.fixed  # a Conv/Dense's quantizer inside it: what flows on is its output
        found = types.get(sources[0], {}).get("result")
        if found is not None or source.role not in _SAME:
            return found
        sources = source.inbound
    return network_input if not sources else None


def _zero(error: _Error) -> bool:
    return not (error.absolute or error.relative)


@dataclass(frozen=True)
class _Nodes:
    """The export's settings by hls4ml node: types, and the tables of table activations; what computes the
    reference (named in reasons), and with how many significand bits (24: float32; 53: float64)."""

    types: dict
    tables: dict
    library: str = "the quantized model"
    reference_bits: int = FLOAT32_BITS
    inputs: frozenset = frozenset()  # the model's input layers

    @property
    def unit(self) -> float:
        """The reference's unit roundoff."""
        return 2.0**-self.reference_bits

    @property
    def float_name(self) -> str:
        return "float32" if self.reference_bits == FLOAT32_BITS else "float64"

    def of(self, node: str) -> dict:
        return self.types.get(node, {})


def _propagated(layer: LayerRecord, inbound: list, nodes: _Nodes, peak_in: float, fixed_in):
    """The bound on the error of the layer's output, given its inputs' bounds (UNBOUNDED: none is known)."""
    error = max(inbound, key=lambda e: e.absolute + e.relative, default=_Error())
    kind = layer.role
    if kind in ("Activation", "Softmax") and _function_name(layer, kind) in table_error.SLOPES:
        return _through_table(layer.name, _function_name(layer, kind), error, nodes, fixed_in)
    if kind in MERGES:
        if kind in ("Add", "Subtract", "Average"):
            return _Error(
                sum(e.absolute for e in inbound),
                max((e.relative for e in inbound), default=0.0),
                sum((e.sources for e in inbound), ()),
                sum((e.advice for e in inbound), ()),
            )
        return error if kind in _SAME or _zero(error) else UNBOUNDED
    if kind in _AVERAGING:
        return _averaged(layer, kind, error, nodes)
    precision = layer.precision or ""
    if precision == "recurrent":
        return _recurrent(layer, error)
    if kind in _SAME or (kind == "Activation" and _function_name(layer) in _PASSING_ACTIVATIONS):
        return error
    if precision in ("linear", "separable") and _kernels(layer):
        return _through_kernel(layer, error, peak_in, fixed_in, nodes)
    if layer.quantizing_activation:
        function, quantizer = layer.applies.table, layer.applies
        if function is not None:  # hls4ml's table, rounded to the quantizer's grid (as QKeras rounds the function)
            tabled = _through_table(layer.name, function, error, nodes, fixed_in)
            return tabled if isinstance(tabled, Unbounded) else _rounded(layer, tabled, quantizer)
        return error if _zero(error) else _rounded(layer, error, quantizer)
    if layer.batchnorm is not None:
        return _through_batchnorm(layer, error, nodes, peak_in)
    return error if _zero(error) else UNBOUNDED


def _function_name(layer: LayerRecord, kind: str = "") -> str:
    """The name of a layer's float activation function ("linear" when it has none; a Softmax layer's "softmax")."""
    if kind == "Softmax":
        return "softmax"
    activation = layer.activation
    if activation is not None and activation.quantizer and activation.function is None:
        return activation.class_name  # a quantizer as the activation (QKeras' quantized_relu): it rounds
    return activation.function if activation is not None and activation.function is not None else "linear"


def _through_table(node: str, function: str, error: _Error, nodes: _Nodes, fixed_in):
    """A table activation (`table_error`): the incoming error times the function's largest slope, plus the
    table's own error on inputs of `fixed_in`'s type; UNBOUNDED where that is not finite."""
    own = table_error.own_error(function, nodes.tables.get(node), fixed_in, nodes.of(node).get("result"))
    if not math.isfinite(own):
        return UNBOUNDED
    return error.scaled(
        table_error.SLOPES[function],
        own,
        table_error.reason(function, node, nodes.tables.get(node)),
        f"more entries (table_size) and a finer table_t for '{node}' in hls.config bring it closer",
    )


def _recurrent(layer: LayerRecord, error: _Error) -> _Error:
    """From a recurrent layer on, every layer is judged at RECURRENT_RELATIVE of its largest |value|."""
    reason = (
        f"hls4ml computes the sigmoid/tanh of {layer.name} by tables: judged at {RECURRENT_RELATIVE:.0%} of the "
        "largest |value|, a heuristic (no bound is derived for recurrent layers)"
    )
    advice = (
        "no setting makes hls4ml 1.3's recurrent tables exact; larger tables (table_size in hls.config) bring it closer"
    )
    return _Error(error.absolute, RECURRENT_RELATIVE, error.sources + (reason,), error.advice + (advice,))


def _averaged(layer: LayerRecord, kind: str, error: _Error, nodes: _Nodes):
    k = int(np.prod(layer.input_shape[1:-1])) if kind.startswith("Global") else int(np.prod(layer.options["pool_size"]))
    if not k & (k - 1):
        return error
    types = nodes.of(layer.name)
    accum, result = types.get("accum"), types.get("result")
    if accum is None or result is None:
        return UNBOUNDED
    own = 2.0**-accum.frac + 2.0**-result.frac + 2 * nodes.unit * max(abs(result.lo), result.hi)
    return error.scaled(
        1.0,
        own,
        f"averaging '{layer.name}' ({k} values) is not exact in fixed point (not a power of 2)",
        "use a power-of-2 pooling window, or give the pooling's accum and result types more fraction bits "
        "(hls.config LayerName)",
    )


def _kernels(layer: LayerRecord) -> list:
    """The layer's kernels in the order it applies them, each as columns of one accumulation: a Conv/Dense's
    kernel, a depthwise convolution's depthwise kernel (a column per input channel and multiplier), a separable
    one's depthwise then pointwise kernel."""
    found = []
    for name in ("depthwise_kernel", "pointwise_kernel", "kernel"):
        weight = layer.weights.get(name)
        if weight is not None:
            shape = weight.quantized.shape
            columns = shape[-2] * shape[-1] if name == "depthwise_kernel" else shape[-1]
            found.append((weight, weight.columns(columns)))
    return found


def _through_kernel(layer: LayerRecord, error: _Error, peak_in: float, fixed_in, nodes: _Nodes):
    """A Conv/Dense (depthwise, separable): the incoming error times each kernel's largest column sum of
    |weights|, plus the reference's rounding of each accumulation where its float type does not hold it
    exactly: (that, as C-sim compares the layer before its own activation; what flows on after it)."""
    out, peak, width = error, peak_in, fixed_in.width if fixed_in is not None else None
    for weight, columns in _kernels(layer):
        colsum = float(np.abs(columns).sum(axis=0).max())
        fan_in = columns.shape[0] + 1
        own, bits = 0.0, None
        if width is not None:
            bits = weight.bits + width + math.ceil(math.log2(max(fan_in, 2)))
            if bits > nodes.reference_bits:
                own = fan_in * nodes.unit / (1 - fan_in * nodes.unit) * peak * colsum
            width = bits  # a separable layer's pointwise kernel reads the depthwise sums
        out = out.scaled(
            colsum,
            own,
            f"{nodes.library} accumulates '{layer.name}' in {nodes.float_name}, not exactly ({bits} bits of "
            f"products > {nodes.reference_bits})",
            f"narrow the input or the weights of '{layer.name}' to make its {nodes.float_name} accumulation exact",
        )
        peak *= colsum
    activation, function = layer.activation, _function_name(layer)
    if function in table_error.SLOPES:  # hls4ml's node `<layer>_<function>` reads the layer's result
        return out, _through_table(f"{layer.name}_{function}", function, out, nodes, nodes.of(layer.name).get("result"))
    if _zero(out) or function in _PASSING_ACTIVATIONS:
        return out, out
    return out, _rounded(layer, out, activation) if activation is not None and activation.quantizer else UNBOUNDED


def _through_batchnorm(layer: LayerRecord, error: _Error, nodes: _Nodes, peak_in: float):
    """A batch normalization: the incoming error times its largest |scale|, plus its own where the export keeps
    its scale and bias to their types' steps and the reference computes in floating point."""
    scale, bias = batchnorm_affine(layer, quantized=True)
    largest = float(np.abs(scale).max())
    types, unit = nodes.of(layer.name), nodes.unit
    scale_type, bias_type, result = types.get("scale"), types.get("bias"), types.get("result")
    exact = exact_frac(scale) is not None and exact_frac(bias) is not None
    if exact and (scale_type is None or exact_frac(scale) <= scale_type.frac):
        return error.scaled(largest)
    if scale_type is None or bias_type is None or result is None:
        return UNBOUNDED
    mean = layer.batchnorm.mean
    own = (
        peak_in * (2.0**-scale_type.frac + 4 * unit * largest)
        + 2.0**-bias_type.frac
        + 4 * unit * float(np.abs(bias).max() + np.abs(mean * scale).max())
        + 2 * unit * _peak(result)
    )
    return error.scaled(
        largest,
        own,
        f"'{layer.name}' (a batch normalization that cannot fold) keeps its scale to 2^-"
        f"{scale_type.frac} and its bias to 2^-{bias_type.frac} in the export; {nodes.library} computes it in "
        f"{nodes.float_name}",
        _batchnorm_advice(layer, nodes),
    )


def _batchnorm_advice(layer: LayerRecord, nodes: _Nodes) -> str:
    """What makes a batch normalization exact: folding it where a Conv/Dense stands before it, else moving it after
    one, or (on the input) normalizing the data instead."""
    if set(layer.inbound) <= nodes.inputs:
        return (
            f"normalize the data instead of '{layer.name}' (a batch normalization of the input is an affine map of it)"
        )
    return f"fold '{layer.name}' into the Conv/Dense before it (quantization.batchnorm: fold), or move it after one"


def _rounded(layer: LayerRecord, error: _Error, quantizer: ActivationRecord) -> _Error:
    """An error through a quantizer: a value that differs may round one step the other way."""
    step = _step(quantizer)
    return error.scaled(1.0, step, f"'{layer.name}' rounds inputs that differ: one step ({step:g}) more")


def _step(quantizer: ActivationRecord) -> float:
    """One step of an activation quantizer (0 for a float activation; inf for a quantizer of no fixed type)."""
    if not quantizer.quantizer:
        return 0.0
    return 2.0**-quantizer.fixed.frac if quantizer.fixed is not None else math.inf
