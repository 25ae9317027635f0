"""A model described once as fpgaprune's record (`record/model_record.py`), by any front end through its own
answers to the contract: what each layer's quantizers are and compute, read here and nowhere after."""

import numpy as np

from fpgaprune.frontends.layer_graph import input_shape, output_shape
from fpgaprune.frontends.layer_reading import has_inner_activation, variable_of
from fpgaprune.masking.held import HeldEntries
from fpgaprune.model.layer_kinds import MaskableWeight, kind_of, role_of
from fpgaprune.record.model_record import (
    ActivationRecord,
    BatchNormRecord,
    LayerRecord,
    ModelRecord,
    WeightRecord,
)

# Layer settings the stages after quantization read, where a layer has them.
_OPTIONS = ("padding", "pool_size", "strides", "dilation_rate", "depth_multiplier", "units", "reset_after", "epsilon")
_RELU_OPTIONS = ("max_value", "negative_slope", "threshold")
_KERNEL = MaskableWeight("kernel", "kernel", "kernel_constraint", "kernel")


def describe(front_end, model) -> ModelRecord:
    """`model` as fpgaprune's record, read through `front_end`."""
    layers, inbound, outputs = front_end.graph_edges(model)
    return ModelRecord(
        name=getattr(model, "name", None) or type(model).__name__,
        front_end=front_end.name,
        quantizer_library=front_end.quantizer_library,
        float32=front_end.float32_reference,
        input_name=front_end.input_name(model),
        layers={layer.name: describe_layer(front_end, layer, inbound[layer.name]) for layer in layers},
        outputs=tuple(outputs),
    )


def describe_layer(front_end, layer, inbound) -> LayerRecord:
    kind = kind_of(layer)
    weights = {}
    for weight in kind.weights if kind is not None else ():
        variable = variable_of(weight, layer)
        if variable is not None:
            weights[weight.name] = _weight(front_end, layer, weight, variable)
    if "kernel" not in weights and getattr(layer, "kernel", None) is not None:
        weights["kernel"] = _weight(front_end, layer, _KERNEL, layer.kernel)
    if kind is None:  # a layer of no kind: its kernels too (their zeros are reported, not held)
        for variable in getattr(layer, "weights", ()) or ():
            name = str(getattr(variable, "name", "")).split("/")[-1].split(":")[0]
            if "kernel" in name and name not in weights:
                weights[name] = _weight(front_end, layer, MaskableWeight(name, name, "", "kernel"), variable)
    return LayerRecord(
        name=layer.name,
        role=role_of(layer),
        class_name=getattr(layer, "kind_class", type(layer)).__name__,  # a view's: its module's
        inbound=tuple(inbound),
        kind=kind.name if kind is not None else None,
        precision=kind.precision if kind is not None else None,
        quantized=bool(front_end.is_quantized(layer)),
        activation=_activation(front_end, getattr(layer, "activation", None)),
        applies=_applied(front_end, layer),
        weights=weights,
        batchnorm=_batchnorm(front_end, layer) if front_end.is_batchnorm(layer) else None,
        input_shape=_shape(input_shape, layer),
        output_shape=_shape(output_shape, layer),
        options=_options(front_end, layer, kind),
        quantizer_texts=dict(front_end.quantizer_texts(layer)),
        input_quantizer=front_end.input_quantizer(layer),
        layout=front_end.index_layout(layer) if "kernel" in weights else None,
        inner_activation=has_inner_activation(layer),
        params=sum(int(np.size(front_end.array(weight))) for weight in layer.weights),
        package=layer.kind_class.__module__.split(".")[0] if hasattr(layer, "kind_class") else None,
    )


def _weight(front_end, layer, weight, variable) -> WeightRecord:
    quantizer = front_end.weight_quantizer(layer, weight.role)
    raw = front_end.array(variable)  # in fpgaprune's layout, as the framework holds it
    values = np.asarray(raw, np.float64)
    scaled = quantizer is not None and weight.name == "kernel" and front_end.has_channel_scale(quantizer)
    grid, scale = front_end.factor_scales(quantizer, raw) if scaled else (None, None)
    typed = front_end.unit_quantizer(quantizer) if scaled else quantizer
    hold = front_end.hold_of(variable)
    held, targets = hold.compiled(values.shape) if isinstance(hold, HeldEntries) else (None, None)
    folded = np.asarray(front_end.folded(layer, weight.role, raw), np.float64)
    layout = front_end.index_layout(layer) if weight.name == "kernel" else None
    return WeightRecord(
        name=weight.name,
        role=weight.role,
        values=values,
        quantized=np.asarray(front_end.quantized(layer, weight.role, raw), np.float64),
        fixed=front_end.quantizer_type(typed) if quantizer is not None else None,
        quantizer=str(quantizer) if quantizer is not None else None,
        bits=int(front_end.quantizer_bits(layer, weight.role)),
        grid=np.asarray(grid, np.float64) if scaled else None,
        scale=np.asarray(scale, np.float64) if scaled else None,
        held=held,
        folded=None if np.array_equal(folded, values) else folded,
        range=quantizer_range(quantizer, front_end) if quantizer is not None and not scaled else None,
        targets=targets,
        entries=tuple(hold.entries) if isinstance(hold, HeldEntries) else (),
        own_shape=_own_shape(front_end, layer, weight, values),
        layout=None if layout is None or tuple(layout) == tuple(range(len(layout))) else tuple(layout),
        own_name=front_end.own_weight_name(weight.name),
        zero=front_end.zero_of(quantizer) if quantizer is not None and not values.all() else 0.0,
        pruned_to=_pruned_to(front_end, quantizer, values, held, targets),
    )


def _own_shape(front_end, layer, weight, values) -> tuple:
    """The weight's shape in the framework's own layout (a selection's index addresses it); a weight of a layer of
    no kind, which no selection names, keeps fpgaprune's."""
    try:
        return tuple(int(n) for n in front_end.index_shape(layer, weight))
    except AttributeError:
        return tuple(values.shape)


def _pruned_to(front_end, quantizer, values, held, targets):
    """What the quantizer makes of the entries a hold keeps at 0, as training sees them; None where none is."""
    if quantizer is None or held is None or not (pruned := held & (targets == 0)).any():
        return None
    return np.asarray(front_end.pruned_values(quantizer, np.asarray(values, np.float32), pruned), np.float64)


def _applied(front_end, layer) -> ActivationRecord | None:
    """The quantizer an activation quantizer of its own (QActivation) applies, and the table hls4ml reads for it."""
    if not front_end.is_quantized_activation(layer):
        return None
    quantizer = front_end.activation_quantizer(layer)
    return ActivationRecord(
        function=None,
        class_name=type(quantizer).__name__,
        described=str(quantizer),
        quantizer=hasattr(quantizer, "get_config"),
        fixed=front_end.quantizer_type(quantizer, activation=True),
        table=front_end.table_function(layer),
        **_limits(front_end, quantizer),
        **(front_end.quantizer_curve(quantizer) if hasattr(quantizer, "get_config") else {}),
    )


def _activation(front_end, activation) -> ActivationRecord | None:
    """A layer's `activation` (None: it has none)."""
    if activation is None:
        return None
    quantizer = hasattr(activation, "get_config")
    return ActivationRecord(
        function=getattr(activation, "__name__", None),
        class_name=type(activation).__name__,
        described=str(activation),
        quantizer=quantizer,
        fixed=front_end.quantizer_type(activation, activation=True) if quantizer else None,
        **_limits(front_end, activation),
        **(front_end.quantizer_curve(activation) if quantizer else {}),
    )


def _limits(front_end, quantizer) -> dict:
    """An activation quantizer's range and whether it is a ReLU one (below 0 is its function), for the profile."""
    if not hasattr(quantizer, "get_config"):
        return {}
    fixed = front_end.quantizer_type(quantizer)
    relu = "relu" in type(quantizer).__name__ or (fixed is not None and not fixed.signed)
    return {"range": quantizer_range(quantizer, front_end), "relu": relu}


def quantizer_range(quantizer, front_end) -> tuple[float, float] | None:
    """[lo, hi] of what a quantizer outputs: its fixed-point type's, or else what it makes of a wide ramp (None
    when that is not finite)."""
    fixed = front_end.quantizer_type(quantizer)
    if fixed is not None:
        return fixed.lo, fixed.hi
    own = front_end.quantizer_range(quantizer)
    if own is not None:
        return own
    ramp = np.concatenate([-np.logspace(-6, 6, 400)[::-1], [0.0], np.logspace(-6, 6, 400)]).astype(np.float32)
    out = front_end.quantize_array(quantizer, ramp)
    return (float(out.min()), float(out.max())) if np.all(np.isfinite(out)) else None


def _batchnorm(front_end, layer) -> BatchNormRecord:
    """x * scale + bias, from the float parameters and (as the library computes it) the quantized ones."""
    channels = layer.moving_mean.shape[0]

    def affine(quantized: bool):
        def value(variable_name, quantizer_name, default):
            variable = getattr(layer, variable_name, None)
            if variable is None:
                return np.full(channels, default)
            quantizer = front_end.weight_quantizer(layer, quantizer_name) if quantized else None
            return np.asarray(quantizer(variable) if quantizer else variable, np.float64)

        scale = value("gamma", "gamma", 1.0) / np.sqrt(value("moving_variance", "variance", 1.0) + layer.epsilon)
        return scale, value("beta", "beta", 0.0) - value("moving_mean", "mean", 0.0) * scale

    (scale, bias), (quantized_scale, quantized_bias) = affine(False), affine(True)
    return BatchNormRecord(scale, bias, quantized_scale, quantized_bias, np.asarray(layer.moving_mean, np.float64))


def _options(front_end, layer, kind) -> dict:
    options = {key: getattr(layer, key) for key in _OPTIONS if getattr(layer, key, None) is not None}
    if kind is not None and kind.precision == "recurrent":  # the state's quantizer (QLSTM/QGRU), if any
        state = front_end.weight_quantizer(layer, "state")
        options["state_type"] = front_end.quantizer_type(state) if state is not None else None
    if role_of(layer) == "ReLU" and hasattr(layer, "get_config"):
        config = layer.get_config()
        options.update({key: config.get(key) for key in _RELU_OPTIONS})
    return options


def _shape(read, layer) -> tuple:
    try:
        return tuple(read(layer))
    except (AttributeError, ValueError, RuntimeError):
        return ()
