"""How far C-sim may stand from the HGQ2 model at each traced layer, from the types hls4ml's BitExact pass gave.

BitExact types each node with the bits its readers need: a layer whose reader is an HGQ2 quantizer keeps only the
bits that quantizer can still tell apart. Where the quantizer wraps (WRAP, HGQ2's default), the node's fraction
bits are truncated (TRN) and its integer bits wrapped at the same period: its traced output equals the HGQ2
model's value modulo 2^I (I: its type's integer bits), within less than one step of its type, and the quantizer
after it gives the same value in both. Where the quantizer saturates (SAT, SAT_SYM), BitExact folds its rounding
and saturation into the node's type: the traced output is the quantizer's, within one step of the HGQ2 model's
value clipped to the type's range. The logits (the last layer with a kernel) and everything after them must
be bit-exact, but where HGQ2's float32 reference is not exact itself: a kernel layer whose sums need more than 24
bits (its widest weight + its widest input + log2 of its fan-in) may be rounded by float32 by up to
gamma_n sum |x| |W| (u = 2^-24, gamma_n = n u / (1 - n u), n its fan-in and bias), while hls4ml's sum is exact;
an HGQ2 quantizer that reads a value that differs may round it one step the other way, and what differs grows by
each later kernel's largest column sum of |weights|."""

import math

import numpy as np

from fpgaprune.frontends.hgq2.quantizers import is_hgq2, quantized, quantizer_bits
from fpgaprune.frontends.hgq2.types import input_kif, kernel_input_kif
from fpgaprune.hls.tolerance import UNIT, Tolerance
from fpgaprune.quantize.fixed_types import FixedType

REASON = (
    "hls4ml's BitExact pass keeps the bits of {name} its reader's quantizer needs, {type} (judged modulo "
    "{period:g}, where both wrap)"
)
SATURATED = (
    "hls4ml's BitExact pass folds the rounding and saturation of {name}'s reader's quantizer into its type, "
    "{type} saturating (judged against the value clipped to [{lo:g}, {hi:g}])"
)
FLOAT32 = "HGQ2 accumulates '{name}' in float32, not exactly ({bits} bits of products > 24)"


def layer_tolerances(model, types: dict, input_type=None) -> dict:
    """{layer: a Tolerance (one step of its result type modulo its period before the logits, plus what HGQ2's
    float32 sums may move), or None where it must be bit-exact}."""
    layers = list(model.layers)
    with_kernel = [i for i, layer in enumerate(layers) if getattr(layer, "kernel", None) is not None]
    exact_from = with_kernel[-1] if with_kernel else 0
    found, error, sources = {}, 0.0, ()
    for index, layer in enumerate(layers):
        error, sources = _carried(layer, error, sources)
        fixed = types.get(layer.name, {}).get("result")
        reason = "; ".join(sources)
        if index >= exact_from or fixed is None:
            found[layer.name] = Tolerance(error, 0.0, reason, _ADVICE) if error else None
            continue
        found[layer.name] = _kept_bits(layer.name, fixed, error, sources)
    return found


def _kept_bits(name: str, fixed, error: float, sources: tuple) -> Tolerance:
    """A traced layer before the logits whose type keeps the bits its reader's quantizer needs: one step of it,
    modulo its period where it wraps, or against the value clipped to its range where it saturates."""
    plain = FixedType(fixed.width, fixed.integer, fixed.signed)
    if fixed.quantizing:
        own = SATURATED.format(name=name, type=plain.hls(), lo=fixed.lo, hi=fixed.hi)
        return Tolerance(2.0**-fixed.frac + error, 0.0, "; ".join((own, *sources)), "", clip=(fixed.lo, fixed.hi))
    period = 2.0**fixed.integer
    own = REASON.format(name=name, type=plain.hls(), period=period)
    return Tolerance(2.0**-fixed.frac + error, 0.0, "; ".join((own, *sources)), "", period)


_ADVICE = "narrow the inputs or the weights of the layers named to make their float32 sums exact"


def _carried(layer, error: float, sources: tuple) -> tuple[float, tuple]:
    """What may differ after `layer`: an input quantizer adds one of its steps to a value that differs, a kernel
    multiplies it by its largest column sum of |weights| and adds its own float32 rounding."""
    if not is_hgq2(layer):
        return error, sources
    kif = kernel_input_kif(layer) if getattr(layer, "kernel", None) is not None else input_kif(layer)
    if error and kif is not None:
        error += _step(kif)
    if getattr(layer, "kernel", None) is None or kif is None:
        return error, sources
    kernel = quantized(layer, "kernel", np.asarray(layer.kernel)).reshape(kif[0].size, -1)
    colsum = float(np.abs(kernel).sum(axis=0).max())
    own, bits = _float32(layer, kernel, kif)
    if own:
        sources += (FLOAT32.format(name=layer.name, bits=bits),)
    return error * colsum + own, sources


def _step(kif: tuple) -> float:
    """The coarsest step of the values a quantizer keeps bits of."""
    k, i, f = (np.asarray(v).ravel() for v in kif)
    kept = k + i + f > 0
    return float(2.0 ** -np.min(f[kept])) if kept.any() else 0.0


def _float32(layer, kernel: np.ndarray, kif: tuple) -> tuple[float, int]:
    """(the most HGQ2's float32 sums of the layer can stand from the exact ones, the bits its products need)."""
    k, i, f = (np.asarray(v, np.float64).ravel() for v in kif)
    n = kernel.shape[0] + 1  # the fan-in and the bias
    bits = quantizer_bits(layer, "kernel") + int(np.max(k + i + f)) + math.ceil(math.log2(max(n, 2)))
    if bits <= 24:
        return 0.0, bits
    peak = np.where(k + i + f > 0, 2.0**i, 0.0)  # the largest |x| of each row's type
    return n * UNIT / (1 - n * UNIT) * float((np.abs(kernel) * peak[:, None]).sum(axis=0).max()), bits


def record_types(hls_model, hls_config: dict) -> None:
    """Write the result type BitExact gave each node into `hls_config` (the export's) over what the config said
    (BitExact overrides it), so that the project's config states the types it was built with."""
    for node in hls_model.get_layers():
        precision = node.get_output_variable().type.precision
        settings = hls_config.setdefault("LayerName", {}).setdefault(node.name, {})
        current = settings.get("Precision")
        if not isinstance(current, dict):
            current = settings["Precision"] = {} if current is None else {"result": current}
        current["result"] = str(precision)
