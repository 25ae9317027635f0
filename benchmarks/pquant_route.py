"""PQuantML's trained models carried into hls4ml 1.3 exactly, as HGQ2 models of the same arithmetic.

hls4ml 1.3.0 parses no PQuantML layer (its handler came after that release, hls4ml PR #1400, and it builds the
same quantizer nodes as HGQ2's). A PQuantML Keras model after `apply_final_compression` computes:
- per PQConv2d / PQDense: its input through `input_quantizer`, then the convolution or product with its stored
  kernel (masked and quantized, `_kernel`) plus its stored bias (`_bias`, quantized);
- per PQActivation (ReLU): its input through `input_quantizer`, then the ReLU;
- the layers it does not replace (MaxPooling2D, Flatten) as they are.

Each of its fixed-point quantizers (RND, SAT) is floor(clip(x, -k 2^i, 2^i - 2^-f) 2^f + 1/2) / 2^f, the function
HGQ2's KIF quantizer computes too (both call the `quantizers` package's `fixed_point` op), so `hgq2_copy` is the
same arithmetic: QConv2D / QDense with untrainable input, kernel and bias quantizers at PQuantML's (k, i, f), and an
activation's input quantizer as a standalone HGQ2 `Quantizer` before a plain ReLU. The kernels are copied as
stored: they lie on their quantizer's grid and range, so the kernel quantizer leaves them as they are and every
pruned weight stays exactly 0. `same_forward` checks the copy against PQuantML's own forward; hls4ml's BitExact
pass then types the copy's export (fpgaprune's HGQ2 export), which C-sim checks as for every HGQ2 model.

PQuantML's high-granularity (HGQ) quantizers (`use_high_granularity_quantization`) are HGQ2's own `Quantizer`
inside its wrapper, built from a `QuantizerConfig("kif", ...)` at its granularity's axes (per tensor, or per
weight). The copy's quantizer of that place is built from the same config, and the trained variables (k, i, f per
element, and HGQ2's bookkeeping) are copied into it: the same quantizer, so the same arithmetic, each weight at its
own learned width.

What this does not copy is refused in one line naming the layer: a ReLU multiplier, output quantizers, dynamic
data quantization, and any other layer class.
"""

import numpy as np

PLAIN_LAYERS = ("InputLayer", "MaxPooling2D", "Flatten")


def _kif(quantizer, where: str) -> tuple:
    """(k, i, f) of a PQuantML fixed-point quantizer (per tensor), or one line saying why it is not one."""
    if getattr(quantizer, "round_mode", "RND") != "RND" or getattr(quantizer, "overflow", "SAT") != "SAT":
        raise ValueError(f"{where}: rounding {quantizer.round_mode}, overflow {quantizer.overflow}; expected RND, SAT")
    values = [np.asarray(v, dtype=np.float64) for v in quantizer.get_quantization_bits()]
    if any(v.size != 1 for v in values):
        raise ValueError(f"{where}: widths per channel or element; the copy takes one width per tensor")
    return tuple(float(v.reshape(())) for v in values)


def _config(kif: tuple, place: str):
    from hgq.quantizer import QuantizerConfig

    k, i, f = kif
    return QuantizerConfig(
        "kif",
        place,
        k0=bool(k),
        i0=i,
        f0=f,
        round_mode="RND",
        overflow_mode="SAT",
        heterogeneous_axis=(),
        trainable=False,
    )


def _quantizer_config(quantizer, place: str, where: str):
    """The HGQ2 config of the copy's quantizer of PQuantML's `quantizer`: its own, if it is an HGQ one."""
    if getattr(quantizer, "use_hgq", False):
        return quantizer.quantizer.config
    return _config(_kif(quantizer, where), place)


def _copy_trained(source, copy, where: str) -> None:
    """PQuantML's trained HGQ quantizer `source` into the copy's (built from the same config); nothing to copy for
    a fixed-point one, whose widths are in the copy's config."""
    if not getattr(source, "use_hgq", False):
        return
    found, wanted = source.quantizer.get_weights(), copy.get_weights()
    if [w.shape for w in found] != [w.shape for w in wanted]:
        shapes = [w.shape for w in found], [w.shape for w in wanted]
        raise ValueError(f"{where}: HGQ quantizer variables of shapes {shapes[0]}, the copy's {shapes[1]}")
    copy.set_weights(found)


def _check_layer(layer) -> None:
    """One line where `layer` computes something the copy would not."""
    if getattr(layer, "quantize_output", False) and getattr(layer, "enable_quantization", True):
        raise ValueError(f"layer '{layer.name}': an output quantizer; the copy takes input quantizers only")
    if getattr(layer, "use_multiplier", False):
        raise ValueError(f"layer '{layer.name}': a ReLU multiplier (use_relu_multiplier); turn it off")
    if getattr(layer, "dynamic_data", False):
        raise ValueError(f"layer '{layer.name}': dynamic data quantization; the copy takes trained widths")
    if hasattr(layer, "final_compression_done") and not layer.final_compression_done:
        raise ValueError(f"layer '{layer.name}': call pquant's apply_final_compression(model) first")


_LANES = (("i", "input_quantizer", "datalane"), ("k", "weight_quantizer", "weight"), ("b", "bias_quantizer", "bias"))


def _lanes(layer) -> list:
    """(HGQ2 lane, PQuantML quantizer, place) of each quantizer a PQConv2d / PQDense uses (a bias only if it has
    one)."""
    return [lane for lane in _LANES if lane[0] != "b" or layer.use_bias]


def _quantized_layer(layer):
    """The HGQ2 layer of a PQConv2d / PQDense, its stored kernel and bias copied after it is built."""
    from hgq.layers import QConv2D, QDense

    quantizers = {
        f"{lane}q_conf": _quantizer_config(getattr(layer, source), place, f"layer '{layer.name}' {source}")
        for lane, source, place in _lanes(layer)
    }
    if type(layer).__name__ == "PQDense":
        return QDense(layer.units, use_bias=layer.use_bias, name=layer.name, **quantizers)
    return QConv2D(
        layer.filters,
        layer.kernel_size,
        strides=layer.strides,
        padding=layer.padding,
        dilation_rate=layer.dilation_rate,
        use_bias=layer.use_bias,
        name=layer.name,
        **quantizers,
    )


def hgq2_copy(model):
    """The HGQ2 Keras model that computes what the finalized PQuantML `model` (a chain of layers) computes."""
    import keras
    from hgq.config import LayerConfigScope
    from hgq.quantizer import Quantizer

    copied, quantizers = [], []
    with LayerConfigScope(enable_ebops=True, beta0=0.0):
        x = inputs = keras.Input(model.input_shape[1:], name=model.layers[0].name if model.layers else None)
        for layer in model.layers:
            kind = type(layer).__name__
            if kind == "InputLayer":
                continue
            _check_layer(layer)
            if kind in ("PQDense", "PQConv2d"):
                copy = _quantized_layer(layer)
                x = copy(x)
                copied.append((layer, copy))
            elif kind == "PQActivation" and layer.activation_name == "relu":
                where = f"layer '{layer.name}' input_quantizer"
                quantizer = Quantizer(
                    _quantizer_config(layer.input_quantizer, "datalane", where), name=f"{layer.name}_in"
                )
                x = keras.layers.Activation("relu", name=layer.name)(quantizer(x))
                quantizers.append((layer.input_quantizer, quantizer, where))
            elif kind in PLAIN_LAYERS:
                x = layer.__class__.from_config(layer.get_config())(x)
            else:
                raise ValueError(f"layer '{layer.name}': a {kind}, which the copy does not take")
        copy_model = keras.Model(inputs, x, name=f"{model.name}_hgq2")
    for layer, copy in copied:
        copy.kernel.assign(np.asarray(layer._kernel))
        if layer.use_bias:
            copy.bias.assign(np.asarray(layer._bias))
        for lane, source, _ in _lanes(layer):
            quantizers.append((getattr(layer, source), getattr(copy, f"{lane}q"), f"layer '{layer.name}' {source}"))
    for source, copy, where in quantizers:
        _copy_trained(source, copy, where)
    return copy_model


def same_forward(model, copy, x, batch_size: int = 1024) -> tuple:
    """(whether the copy's outputs equal PQuantML's bit for bit on `x`, the largest difference)."""
    largest = 0.0
    for start in range(0, len(x), batch_size):
        ours = np.asarray(copy(x[start : start + batch_size], training=False))
        theirs = np.asarray(model(x[start : start + batch_size], training=False))
        largest = max(largest, float(np.abs(ours - theirs).max()))
    return largest == 0.0, largest


def kernel_zeros(model) -> dict:
    """{layer: the share of its stored kernel that is exactly 0} of a finalized PQuantML model."""
    return {
        layer.name: float(np.mean(np.asarray(layer._kernel) == 0))
        for layer in model.layers
        if type(layer).__name__ in ("PQDense", "PQConv2d")
    }
