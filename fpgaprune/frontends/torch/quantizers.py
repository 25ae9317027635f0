"""The quantizers of the PyTorch front end: Brevitas quantizers with a constant power-of-two scale, so that what
QAT trains is what hls4ml types exactly (`FixedQuantizer`).

fpgaprune's quantizer texts (`quantize/spec.py`) become Brevitas injectors with QKeras' semantics, measured bit
for bit against QKeras 0.9.0 (half-to-even rounding, saturation, the full signed range):
`quantized_bits(bits, integer, alpha=1)` for weights, biases and signed activations, `quantized_relu(bits,
integer)` for ReLUs. A Brevitas model brought in is read through its quantizers' own scale and bit width: a
per-tensor power-of-two scale with no zero point is exact through hls4ml; anything else is one line.
"""

import math
from dataclasses import dataclass

import numpy as np

from fpgaprune.errors import QuantizationConfigError
from fpgaprune.quantize.fixed_types import FixedType
from fpgaprune.quantize.spec import check_quantizer_text, quantizer_call

USE_INSTEAD = "use quantized_bits(bits,integer,alpha=1) (weights, biases) or quantized_relu(bits,integer) (ReLUs)"


@dataclass(frozen=True)
class FixedQuantizer:
    """A constant power-of-two quantizer: round half to even onto `fixed`'s grid, saturate (`narrow`: at
    -max, as Brevitas' narrow-range weights do)."""

    fixed: FixedType
    narrow: bool = False
    text: str = ""

    @property
    def bits(self) -> int:
        return self.fixed.width

    def __call__(self, values) -> np.ndarray:
        scale = 2.0**self.fixed.frac
        low = -self.fixed.hi if self.narrow else self.fixed.lo
        steps = np.clip(np.round(np.asarray(values, np.float64) * scale), low * scale, self.fixed.hi * scale)
        return steps / scale

    def __str__(self) -> str:
        return self.text or self.fixed.hls()

    def get_config(self) -> dict:
        """Its settings, as QKeras' quantizers give theirs."""
        fixed = self.fixed
        return {"bits": fixed.width, "integer": fixed.integer - int(fixed.signed), "signed": fixed.signed}


_BITS = {"bits": None, "integer": None, "symmetric": False, "keep_negative": True, "alpha": 1}
_RELU = {"bits": None, "integer": None, "use_sigmoid": False, "negative_slope": False}


def from_text(text: str, where: str) -> FixedQuantizer:
    """The quantizer of a text that has an exact route to hls4ml; one line naming `where` for any other."""
    name, args, kwargs = quantizer_call(check_quantizer_text(text, where))
    allowed = {"quantized_bits": _BITS, "quantized_relu": _RELU}.get(name)
    options = {**dict(zip(allowed or (), args)), **kwargs}
    if allowed is not None and all(_as_default(key, value, allowed) for key, value in options.items()):
        bits, integer = int(options.get("bits", 8)), int(options.get("integer", 0))
        signed = name == "quantized_bits"
        return FixedQuantizer(FixedType(bits, integer + int(signed), signed), text=text)
    raise QuantizationConfigError(f"{where}: {text!r} has no exact route from PyTorch to hls4ml; {USE_INSTEAD}")


def _as_default(key: str, value, allowed: dict) -> bool:
    """Whether an argument keeps the plain fixed-point grid (bits and integer take any value)."""
    if key not in allowed:
        return not value  # stochastic rounding, an upper bound, a scale: not the plain grid
    default = allowed[key]
    if default is None:
        return True
    if key == "alpha":
        return value in (None, 1, 1.0, "1")
    return bool(value) == bool(default)


def brevitas_quant(quantizer: FixedQuantizer, role: str):
    """The Brevitas injector for `role` (kernel, bias, activation) with the quantizer's constant scale."""
    from fpgaprune.frontends.torch import brevitas_quants as quants

    top = 2.0 ** (quantizer.fixed.integer - (1 if quantizer.fixed.signed else 0))  # 2**integer as QKeras writes it
    if role == "kernel":
        return quants.FixedWeight.let(bit_width=quantizer.bits, scaling_const=top)
    if role == "bias":
        return quants.FixedBias.let(bit_width=quantizer.bits, scaling_const=top)
    if quantizer.fixed.signed:
        return quants.FixedSignedAct.let(bit_width=quantizer.bits, min_val=-top, max_val=top)
    return quants.FixedRelu.let(bit_width=quantizer.bits, max_val=top)


def read_proxy(proxy, where: str) -> FixedQuantizer | None:
    """What a Brevitas quantizer proxy computes, as a FixedQuantizer; None when it is off (a float tensor); one
    line naming `where` when no fixed-point type holds it exactly."""
    if proxy is None or not getattr(proxy, "is_quant_enabled", False):
        return None
    if getattr(proxy, "requires_input_scale", False):
        raise QuantizationConfigError(
            f"{where}: its bias quantizer takes the input's scale (as Int16Bias does); give it a scale of its "
            "own (fpgaprune's quantized_bits bias)"
        )
    scale, bits = proxy.scale(), int(proxy.bit_width())
    zero = proxy.zero_point() if hasattr(proxy, "zero_point") else 0
    values = np.asarray(scale.detach().cpu().numpy() if hasattr(scale, "detach") else scale, np.float64)
    frac = -math.log2(float(values.ravel()[0])) if values.size and values.ravel()[0] > 0 else math.nan
    per_tensor = values.size == 1 or bool(np.all(values == values.ravel()[0]))
    if not (per_tensor and frac == round(frac) and not np.any(np.asarray(zero))):
        raise QuantizationConfigError(
            f"{where}: a Brevitas quantizer with scale {values.ravel()[:3].tolist()}, zero point "
            f"{np.asarray(zero).ravel()[:3].tolist()} is not exact through hls4ml (it needs one power-of-two scale "
            f"per tensor and no zero point); {USE_INSTEAD}, or Brevitas' *FixedPoint quantizers"
        )
    signed = bool(proxy.is_signed)
    fixed = FixedType(bits, bits - int(round(frac)), signed)
    return FixedQuantizer(fixed, bool(getattr(proxy, "is_narrow_range", False)) and signed)
