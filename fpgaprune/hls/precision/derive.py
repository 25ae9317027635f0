"""hls4ml precisions derived from a model's record (its quantizers' types and quantized weights) and the input's
range, for bit-exact C-simulation.

Each tensor gets a range [lo, hi] on a grid of 2^-frac. A Conv/Dense layer's accumulator is sized from its
actual quantized weights: for each output channel, the largest and smallest sums that any input in range can
produce (each input at the end of its range that matches its weight's sign), plus the bias. Pruned and
quantized-to-zero weights add nothing, so pruning narrows the accumulators. Products are exact, so the
accumulator's fraction is the weight's plus the input's (or the bias', if finer).
"""

import numpy as np

from fpgaprune.hls.precision.batchnorm import SCALE_BITS, batchnorm_types
from fpgaprune.hls.precision.merge import merge_types, reshaping_types
from fpgaprune.hls.precision.plan import PASSTHROUGH, PrecisionPlan, column_bounds
from fpgaprune.hls.precision.recurrent import recurrent_types, retype_lstm_source
from fpgaprune.model.layer_kinds import MERGES, MOVES, PADDINGS
from fpgaprune.model.layer_kinds import POOLING as _POOLING
from fpgaprune.quantize.fixed_types import FixedType, ValueRange, is_power_of_two
from fpgaprune.record import record_of
from fpgaprune.record.model_record import LayerRecord, ModelRecord

# Softmax (a table-based activation): probabilities with 16 fractional bits, exp and 1/sum tables of 4096
# entries with 17 and 14 fractional bits. Measured on the digits MLP (tests/hls/test_export_csim.py): argmax
# agreement with QKeras 99.6% at hls4ml's defaults (ties in the 10-bit result), 100% with these.
SOFTMAX_TYPES = {
    "result": FixedType(16, 0, False, True),
    "exp_table_t": FixedType(18, 1, False, True),
    "inv_table_t": FixedType(18, 4, False, True),
}
SOFTMAX_TABLES = {"exp_table_size": 4096, "inv_table_size": 4096}
# Sigmoid and tanh: 4096-entry tables over hls4ml's [-8, 8) with 16 fraction bits (hls4ml: 1024 and 10).
_UNIT = {"sigmoid": FixedType(17, 1, False, True), "tanh": FixedType(18, 2, True, True)}
TABLE_ACTIVATIONS = {
    "softmax": (SOFTMAX_TYPES, SOFTMAX_TABLES),
    **{name: ({"result": fixed, "table_t": fixed}, {"table_size": 4096}) for name, fixed in _UNIT.items()},
}


def _table_activation(plan: PrecisionPlan, node: str, function: str) -> None:
    types, settings = TABLE_ACTIVATIONS[function]
    plan.types[node] = dict(types)
    plan.settings[node] = dict(settings)
    low = -1.0 if function == "tanh" else 0.0
    plan.ranges[node] = ValueRange(low, 1.0, 16)
    if function != "softmax":
        plan.notes.append(
            f"{node}: {function} is a 4096-entry table in hls4ml; C-sim is close to QKeras, not bit-exact"
        )


def derive_precisions(model, input_fixed: FixedType) -> PrecisionPlan:
    """Walk a model's record (or a model's, bound or bare: an entry point) in order, giving every node the exact
    types for its live weights and input range."""
    record = record_of(model)
    plan = PrecisionPlan(record.input_name)
    plan.types[record.input_name] = {"result": input_fixed}
    source_range = ValueRange(input_fixed.lo, input_fixed.hi, input_fixed.frac)
    for name in record.topological():
        inbound, kind = record.layers[name].inbound, record.layers[name].role
        if kind in MERGES:
            merge_types(plan, name, kind, [plan.ranges.get(source) for source in inbound])
            continue
        current = plan.ranges.get(inbound[0]) if inbound else source_range
        if current is not None:
            _derive_node(plan, record, name, current)
    return plan


def _derive_node(plan: PrecisionPlan, record: ModelRecord, name: str, current: ValueRange) -> None:
    """The types of one single-input node, whose input lies in `current`."""
    layer = record.layers[name]
    kind, precision = layer.role, layer.precision if layer.quantized else None
    if precision == "linear":  # every kernel column is one accumulation
        _dense_like(plan, layer, current)
    elif precision == "separable":
        _separable(plan, layer, current)
    elif layer.batchnorm is not None:  # a QBatchNormalization, or a float one a QKeras model carries unfolded
        batchnorm_types(plan, layer, current)
    elif precision == "recurrent":
        recurrent_types(plan, layer, current)
        if layer.kind == "LSTM" and name in plan.types:
            retype_lstm_source(plan, record, name)
    elif layer.quantizing_activation:
        fixed = layer.applies.fixed
        if fixed is None:
            plan.notes.append(f"{name}: activation {layer.applies.described} has no fixed type; left to hls4ml")
            return
        plan.types[name] = {"result": fixed}
        plan.ranges[name] = ValueRange(fixed.lo, fixed.hi, fixed.frac)
        function = layer.applies.table
        if function is not None:  # the real sigmoid/tanh: hls4ml's table, rounded to the quantizer's grid
            plan.types[name]["table_t"] = TABLE_ACTIVATIONS[function][0]["table_t"]
            plan.settings[name] = dict(TABLE_ACTIVATIONS[function][1])
    elif kind in PASSTHROUGH:
        plan.ranges[name] = current
    elif kind in MOVES or kind in PADDINGS:
        reshaping_types(plan, name, kind, current)
    elif kind in _POOLING:
        _pooling(plan, layer, kind, current)
    elif kind == "Activation" and _activation_name(layer) in TABLE_ACTIVATIONS:
        _table_activation(plan, name, _activation_name(layer))
    elif _plain_relu(layer, kind):
        plan.types[name], plan.ranges[name] = _relu(current)
    else:
        plan.notes.append(f"{name}: {kind} is not derived; it and what follows keep hls4ml's precisions")


def _pooling(plan: PrecisionPlan, layer: LayerRecord, kind: str, current: ValueRange) -> None:
    """Max pooling keeps the input's type. Average pooling sums k inputs (accum) and divides by k, which
    is exact with log2(k) more fraction bits when k is a power of two (hls4ml divides in the accumulator)."""
    if "Max" in kind:
        fixed = FixedType.covering(current.lo, current.hi, current.frac)
        plan.types[layer.name] = {"accum": fixed, "result": fixed}
        plan.ranges[layer.name] = current
        return
    k = int(np.prod(layer.input_shape[1:-1])) if kind.startswith("Global") else int(np.prod(layer.options["pool_size"]))
    extra = int(np.ceil(np.log2(k))) if k > 1 else 0
    frac = current.frac + extra
    plan.types[layer.name] = {
        "accum": FixedType.covering(k * current.lo, k * current.hi, frac),
        "result": FixedType.covering(current.lo, current.hi, frac),
    }
    plan.ranges[layer.name] = ValueRange(current.lo, current.hi, frac)
    if k & (k - 1):
        plan.notes.append(
            f"{layer.name}: averaging {k} values is not exact in fixed point (k is not a power of 2); "
            f"{frac} fraction bits"
        )


def _accumulate(weights: np.ndarray, bias, weight_type: FixedType, bias_type, source: ValueRange):
    """(accumulator type, output range) of columns of `weights` fed by inputs in `source` (exact products)."""
    lower, upper = column_bounds(weights, bias, source)
    frac = max(weight_type.frac + source.frac, bias_type.frac if bias_type is not None else 0)
    accum = FixedType.covering(float(lower.min()), float(upper.max()), frac)
    return accum, ValueRange(float(lower.min()), float(upper.max()), frac)


def _padded(layer: LayerRecord, current: ValueRange) -> ValueRange:
    """With 'same' padding the zero border is an input too."""
    if layer.options.get("padding", "valid") == "valid":
        return current
    return ValueRange(min(current.lo, 0.0), max(current.hi, 0.0), current.frac)


def _dense_like(plan: PrecisionPlan, layer: LayerRecord, current: ValueRange) -> None:
    weight, bias_weight = next(iter(layer.weights.values())), layer.weights.get("bias")  # the kind's first weight
    weight_type, bias_type = weight.fixed, bias_weight.fixed if bias_weight is not None else None
    if weight_type is None or (bias_weight is not None and bias_type is None):
        plan.notes.append(
            f"{layer.name}: quantizers {weight.quantizer} / {bias_weight.quantizer if bias_weight else None} "
            "have no fixed type; left to hls4ml"
        )
        return
    shape = weight.quantized.shape
    columns = shape[-2] * shape[-1] if weight.name == "depthwise_kernel" else shape[-1]
    bias = bias_weight.quantized if bias_weight is not None else 0.0
    source = _padded(layer, current)
    if weight.scaled:  # hls4ml factors the per-channel scale into <name>_alpha
        accum, output = _apply_alpha(
            plan, layer, weight.grid.reshape(-1, columns), weight.scale, bias, (weight_type, bias_type), source
        )
    else:
        weights = weight.columns(columns)
        accum, output = _accumulate(weights, bias, weight_type, bias_type, source)
        plan.types[layer.name] = {
            "weight": weight_type,
            "bias": bias_type or FixedType(1, 1),
            "accum": accum,
            "result": accum,
        }
    _activation(plan, layer, accum, output)
    if source is not current:  # io_stream inserts zero padding before the conv
        prefix = "zp1d_" if layer.class_name.endswith("1D") else "zp2d_"
        plan.types[prefix + layer.name] = {"result": FixedType.covering(source.lo, source.hi, source.frac)}


def _apply_alpha(plan: PrecisionPlan, layer: LayerRecord, grid, scale, bias, types, source: ValueRange):
    """The layer accumulates its alpha=1 grid weights (no bias); `<name>_alpha` computes acc * scale + bias,
    exactly when every scale is a power of 2 ('auto_po2'). Returns the type and range that flow on."""
    weight_type, bias_type = types
    bias_frac = bias_type.frac if bias_type is not None else 0
    lower, upper = column_bounds(grid, 0.0, source)
    frac = weight_type.frac + source.frac
    accum = FixedType.covering(float(lower.min()), float(upper.max()), frac)
    plan.types[layer.name] = {
        "weight": weight_type,
        "bias": bias_type or FixedType(1, 1),
        "accum": accum,
        "result": accum,
    }
    exact = is_power_of_two(scale)
    scale_frac = int(np.max(-np.floor(np.log2(scale)))) + (0 if exact else SCALE_BITS - 1)
    scale_frac = max(scale_frac, 0)
    scale_type = FixedType.covering(float(scale.min()), float(scale.max()), scale_frac)
    out_lower, out_upper = lower * scale + bias, upper * scale + bias
    out_frac = max(frac + scale_frac, bias_frac)
    result = FixedType.covering(float(out_lower.min()), float(out_upper.max()), out_frac)
    plan.types[f"{layer.name}_alpha"] = {"scale": scale_type, "bias": bias_type or FixedType(1, 1), "result": result}
    if not exact:
        plan.notes.append(
            f"{layer.name}_alpha: alpha='auto' scales are not powers of 2; kept to {SCALE_BITS} "
            "significant bits, so C-sim can differ from QKeras by rounding (use 'auto_po2' for exact)"
        )
    return result, ValueRange(float(out_lower.min()), float(out_upper.max()), out_frac)


def _separable(plan: PrecisionPlan, layer: LayerRecord, current: ValueRange) -> None:
    """hls4ml splits it into <name>_depthwise and <name>_pointwise, reading depthwise*/pointwise* keys."""
    depthwise_weight, pointwise_weight = layer.weights["depthwise_kernel"], layer.weights["pointwise_kernel"]
    bias_weight = layer.weights.get("bias")
    depthwise_type, pointwise_type = depthwise_weight.fixed, pointwise_weight.fixed
    bias_type = bias_weight.fixed if bias_weight is not None else None
    if depthwise_type is None or pointwise_type is None or (bias_weight is not None and bias_type is None):
        plan.notes.append(f"{layer.name}: separable quantizers without a fixed type; left to hls4ml")
        return
    shape = depthwise_weight.quantized.shape
    depthwise = depthwise_weight.columns(shape[-2] * shape[-1])
    depthwise_accum, middle = _accumulate(depthwise, 0.0, depthwise_type, None, _padded(layer, current))
    pointwise = pointwise_weight.columns(pointwise_weight.quantized.shape[-1])
    bias = bias_weight.quantized if bias_weight is not None else 0.0
    accum, output = _accumulate(pointwise, bias, pointwise_type, bias_type, middle)
    plan.types[layer.name] = {
        "depthwise": depthwise_type,
        "depthwise_accum": depthwise_accum,
        "depthwise_result": depthwise_accum,
        "pointwise": pointwise_type,
        "pointwise_accum": accum,
        "pointwise_result": accum,
        "bias": bias_type or FixedType(1, 1),
        "result": accum,
    }
    _activation(plan, layer, accum, output)


def _activation(plan: PrecisionPlan, layer: LayerRecord, accum: FixedType, output: ValueRange) -> None:
    """The node hls4ml splits off for the layer's activation, and the range that flows on."""
    activation = layer.activation
    fixed = activation.fixed if activation is not None else None
    if activation is None:  # none inside the layer (PyTorch's): its output flows on
        plan.ranges[layer.name] = output
    elif activation.function == "linear":
        plan.types[f"{layer.name}_linear"] = {"result": accum}
        plan.ranges[layer.name] = output
    elif fixed is not None:
        plan.types[f"{layer.name}_{activation.class_name}"] = {"result": fixed}
        plan.ranges[layer.name] = ValueRange(fixed.lo, fixed.hi, fixed.frac)
    elif _activation_name(layer) == "relu":  # a float relu inside a (QKeras) layer: exact on the grid
        plan.types[f"{layer.name}_relu"], plan.ranges[layer.name] = _relu(output)
    elif _activation_name(layer) in TABLE_ACTIVATIONS:
        node = f"{layer.name}_{_activation_name(layer)}"
        _table_activation(plan, node, _activation_name(layer))
        plan.ranges[layer.name] = plan.ranges[node]
    else:
        plan.notes.append(
            f"{layer.name}: activation {activation.described} has no fixed type; what follows keeps hls4ml's"
        )


def _plain_relu(layer: LayerRecord, kind: str) -> bool:
    """A float max(0, x): Activation('relu'), or a ReLU layer with no cap, slope or threshold."""
    if kind == "Activation":
        return _activation_name(layer) == "relu"
    config = layer.options if kind == "ReLU" else {}
    return (
        kind == "ReLU"
        and config.get("max_value") is None
        and not config.get("negative_slope")
        and not config.get("threshold")
    )


def _relu(current: ValueRange) -> tuple[dict, ValueRange]:
    """The types and range of max(0, x) for x in `current`: exact, on the input's grid."""
    kept = ValueRange(max(current.lo, 0.0), max(current.hi, 0.0), current.frac)
    return {"result": FixedType.covering(kept.lo, kept.hi, kept.frac)}, kept


def _activation_name(layer: LayerRecord) -> str:
    return layer.activation.name if layer.activation is not None else ""
