"""The quantizers of the PyTorch front end: Brevitas quantizers with a constant power-of-two scale, so that what
QAT trains is what hls4ml types exactly (`FixedQuantizer`).

fpgaprune's quantizer texts (`quantize/spec.py`) become Brevitas injectors with QKeras' semantics, measured bit
for bit against QKeras 0.9.0 (half-to-even rounding, saturation, the full signed range):
`quantized_bits(bits, integer, alpha=1)` for weights, biases and signed activations, `quantized_relu(bits,
integer)` for ReLUs. A Brevitas model brought in is read through its quantizers' own scale and bit width: a
per-tensor power-of-two scale with no zero point is exact through hls4ml (`FixedQuantizer`). Brevitas' defaults
(a float scale per tensor or per channel, learned or from statistics) are read as `ScaledQuantizer`s: holds and
estimates take them, the export does not, and the quantized twin converts each to the nearest power-of-two
quantizer of the same bits (`nearest_text`), which QAT then recovers from.
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


@dataclass(frozen=True)
class ScaledQuantizer:
    """A Brevitas quantizer with a float scale (per tensor, or per output channel: the last axis in fpgaprune's
    layout) and no zero point: what it computes, which no fixed-point type holds exactly. `scale` is NaN for a
    bias quantizer that takes its input's scale (Int8Bias, Int32Bias), which only a forward knows."""

    scale: np.ndarray
    bits: int
    signed: bool
    narrow: bool = False
    fixed = None  # no fixed-point type: the export refuses it, the quantized twin converts it

    @property
    def input_scaled(self) -> bool:
        """A bias quantizer whose scale is its input's times its weight's (Int32Bias, Int8Bias)."""
        return bool(np.isnan(self.scale).any())

    def __call__(self, values) -> np.ndarray:
        values = np.asarray(values, np.float64)
        if np.isnan(self.scale).any():
            return values  # rounded at the input's scale, unknown here
        scale = self.scale.reshape(-1) if self.scale.size > 1 else self.scale.reshape(())
        top = 2 ** (self.bits - 1) - 1 if self.signed else 2**self.bits - 1
        low = (-top if self.narrow else -top - 1) if self.signed else 0
        return np.clip(np.round(values / scale), low, top) * scale

    def __str__(self) -> str:
        if self.input_scaled:
            return f"Brevitas {self.bits}-bit bias at its input's scale times its weight's"
        where = "per channel" if self.scale.size > 1 else f"{float(self.scale.reshape(-1)[0]):.4g}"
        return f"Brevitas {self.bits}-bit {'signed' if self.signed else 'unsigned'}, float scale {where}"

    def nearest(self) -> FixedType | None:
        """The power-of-two type of the same bits whose step is nearest its (largest) scale, in log2; None for an
        input-scaled bias."""
        if np.isnan(self.scale).any():
            return None
        frac = -round(math.log2(float(np.max(self.scale))))
        return FixedType(self.bits, self.bits - frac, self.signed)


def text_of(fixed: FixedType) -> str:
    """fpgaprune's quantizer text of a fixed-point type: quantized_bits for signed, quantized_relu for unsigned."""
    if fixed.signed:
        return f"quantized_bits({fixed.width},{fixed.integer - 1},alpha=1)"
    return f"quantized_relu({fixed.width},{fixed.integer})"


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


def read_proxy(proxy, where: str) -> FixedQuantizer | ScaledQuantizer | None:
    """What a Brevitas quantizer proxy computes: a FixedQuantizer where a fixed-point type holds it exactly, a
    ScaledQuantizer where its scale is a float (Brevitas' defaults); None when it is off (a float tensor); one
    line naming `where` for a zero point, which no fixed-point type without an offset holds."""
    if proxy is None or not getattr(proxy, "is_quant_enabled", False):
        return None
    if getattr(proxy, "requires_input_scale", False):  # Int32Bias, Int8Bias: its bit_width() needs a forward
        return ScaledQuantizer(np.array([math.nan]), int(proxy.tensor_quant.msb_clamp_bit_width_impl()), True)
    bits, signed = int(proxy.bit_width()), bool(proxy.is_signed)
    narrow = bool(getattr(proxy, "is_narrow_range", False)) and signed
    scale = proxy.scale()
    zero = proxy.zero_point() if hasattr(proxy, "zero_point") else 0
    values = np.asarray(scale.detach().cpu().numpy() if hasattr(scale, "detach") else scale, np.float64)
    if np.any(np.asarray(zero.detach().cpu().numpy() if hasattr(zero, "detach") else zero)):
        raise QuantizationConfigError(
            f"{where}: a Brevitas quantizer with zero point {np.asarray(zero).ravel()[:3].tolist()} is not exact "
            f"through hls4ml (a fixed-point type has no offset); {USE_INSTEAD}, or Brevitas' *FixedPoint quantizers"
        )
    first = float(values.ravel()[0]) if values.size else math.nan
    frac = -math.log2(first) if first > 0 else math.nan
    if not (bool(np.all(values == first)) and frac == round(frac)):
        return ScaledQuantizer(values.reshape(-1), bits, signed, narrow)
    return FixedQuantizer(FixedType(bits, bits - int(round(frac)), signed), narrow)
