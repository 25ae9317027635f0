"""hls4ml types for QLSTM and QGRU layers."""

import numpy as np

from fpgaprune.hls.precision.plan import PASSTHROUGH, PrecisionPlan, column_bounds
from fpgaprune.quantize.fixed_types import FixedType, ValueRange, union
from fpgaprune.record.model_record import LayerRecord, ModelRecord

# Recurrent layers: hls4ml keeps h (and the LSTM cell state c) in `result`, and the gates, their activations
# and every sum in `accum`. Without a fixed state quantizer the state keeps STATE_FRAC fraction bits; the
# sigmoid/tanh tables (`table_t`) hold [-1, 1] with TABLE_FRAC, in RECURRENT_TABLE_SIZE entries.
STATE_FRAC = 12
TABLE_FRAC = 16
RECURRENT_TABLE_SIZE = 4096


def recurrent_types(plan: PrecisionPlan, layer: LayerRecord, current: ValueRange) -> None:
    """Types for QLSTM/QGRU from the live weights: |h| <= 1 and, for an LSTM, |c| <= the sequence length
    (c_t = f c_(t-1) + i g with gates in [0, 1] and |g| <= 1). C-sim is close, not bit-exact: hls4ml's
    activation tables approximate QKeras' float sigmoid/tanh."""
    weights = {role: layer.weight(role) for role in ("kernel", "recurrent", "bias")}
    types = {role: weight.fixed if weight is not None else None for role, weight in weights.items()}
    if None in types.values():
        plan.notes.append(f"{layer.name}: recurrent quantizers without a fixed type; left to hls4ml")
        return
    state = layer.options.get("state_type")
    state_frac = state.frac if state is not None else STATE_FRAC
    units, steps = layer.options["units"], layer.input_shape[1]
    bias = weights["bias"].quantized if layer.use_bias else np.zeros(1)
    bias, recurrent_bias = (bias[0], bias[1]) if bias.ndim == 2 else (bias, 0.0)
    kernel = weights["kernel"].columns(weights["kernel"].quantized.shape[-1])
    recurrent = weights["recurrent"].columns(kernel.shape[-1])
    x_lower, x_upper = column_bounds(kernel, bias, current)
    h_lower, h_upper = column_bounds(recurrent, recurrent_bias, ValueRange(-1.0, 1.0, state_frac))
    lower = x_lower + np.minimum(h_lower, 0.0)
    upper = x_upper + np.maximum(h_upper, 0.0)
    frac = max(
        types["kernel"].frac + current.frac, types["recurrent"].frac + state_frac, types["bias"].frac, TABLE_FRAC
    )
    accum = FixedType.covering(min(float(lower.min()), -1.0), max(float(upper.max()), 1.0), frac)
    result = FixedType.covering(-1.0, 1.0, state_frac)
    if layer.kind == "LSTM":  # hls4ml 1.3's lstm() compiles only with input = result = accum types
        source = FixedType.covering(current.lo, current.hi, current.frac)
        accum = result = union(accum, FixedType.covering(-float(steps), float(steps), state_frac), source)
    plan.types[layer.name] = {
        "weight": types["kernel"],
        "recurrent_weight": types["recurrent"],
        "bias": types["bias"],
        "recurrent_bias": types["bias"] if np.ndim(recurrent_bias) else FixedType(1, 1),
        "accum": accum,
        "result": result,
        "table_t": FixedType.covering(-1.0, 1.0, TABLE_FRAC),
    }
    plan.settings[layer.name] = {"table_size": RECURRENT_TABLE_SIZE}
    plan.ranges[layer.name] = ValueRange(-1.0, 1.0, state_frac)
    plan.notes.append(
        f"{layer.name}: {layer.class_name} types derived for {units} units over {steps} steps; "
        "C-sim is close to QKeras, not bit-exact (hls4ml's sigmoid/tanh tables)"
    )
    if layer.kind == "GRU" and not layer.options.get("reset_after", True):
        plan.notes.append(
            f"{layer.name}: hls4ml 1.3's GRU computes reset_after=True; this layer has "
            "reset_after=False, so C-sim will not match QKeras"
        )


def retype_lstm_source(plan: PrecisionPlan, record: ModelRecord, name: str) -> None:
    """Give the tensor that feeds an LSTM the LSTM's own type (hls4ml 1.3 needs them equal). Reshapes and
    other pass-through nodes take their input's type, so the first typed node upstream is changed. A
    quantizing activation cannot be widened without changing its rounding: that case is left to hls4ml."""
    common = plan.types[name]["result"]
    layers = record.layers
    source = layers[name].inbound[0] if layers[name].inbound else plan.input_name
    while source in layers and layers[source].role in PASSTHROUGH and layers[source].inbound:
        source = layers[source].inbound[0]
    if source not in layers or layers[source].role in PASSTHROUGH:
        source = plan.input_name
    node = source if source in plan.types and "accum" not in plan.types[source] else f"{source}_linear"
    current = plan.types.get(node, {}).get("result")
    if current is None or current.quantizing:
        del plan.types[name]
        plan.notes.append(
            f"{name}: hls4ml 1.3's LSTM needs its input typed like its state; the input "
            f"'{source}' has no type fpgaprune may widen (a quantizer's output keeps its rounding), "
            "so the LSTM's types are left to hls4ml"
        )
        return
    plan.types[node]["result"] = common
