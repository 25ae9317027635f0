"""Fixed-point types and value ranges: what data needs, and their unions. What a quantizer produces is the
front end's to say (`qkeras_front.quantizer_type`)."""

import math
import re
from dataclasses import dataclass

import numpy as np

from fpgaprune.errors import NonFiniteError

MAX_INPUT_FRAC = 16
MAX_EXACT_FRAC = 24


@dataclass(frozen=True)
class FixedType:
    """A fixed-point type: `width` bits, `integer` of them before the point (sign included when signed)."""

    width: int
    integer: int
    signed: bool = True
    quantizing: bool = False  # an activation quantizer: rounds to nearest (even) and saturates, as QKeras does

    @property
    def frac(self) -> int:
        return self.width - self.integer

    @property
    def lo(self) -> float:
        return -(2.0 ** (self.integer - 1)) if self.signed else 0.0

    @property
    def hi(self) -> float:
        return 2.0 ** (self.integer - (1 if self.signed else 0)) - 2.0**-self.frac

    def hls(self) -> str:
        modes = ",RND_CONV,SAT" if self.quantizing else ""
        return f"{'fixed' if self.signed else 'ufixed'}<{self.width},{self.integer}{modes}>"

    @classmethod
    def parse(cls, text: str) -> "FixedType":
        """The inverse of `hls()`: `fixed<8,3>`, `ufixed<6,2,RND_CONV,SAT>`."""
        match = re.fullmatch(r"(u?)fixed<(-?\d+),(-?\d+)(,RND_CONV,SAT)?>", text.replace(" ", ""))
        if not match:
            raise ValueError(f"not a fixed-point type: {text!r} (expected fixed<W,I> or ufixed<W,I>)")
        return cls(int(match[2]), int(match[3]), not match[1], bool(match[4]))

    @classmethod
    def covering(cls, lo: float, hi: float, frac: int) -> "FixedType":
        """The narrowest type holding every multiple of 2^-frac in [lo, hi] (both finite)."""
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise NonFiniteError(f"no fixed-point type covers [{lo}, {hi}]: the range must be finite")
        signed = lo < 0
        integer = 1 - frac if signed else -frac
        while not (cls(integer + frac, integer, signed).lo <= lo and hi <= cls(integer + frac, integer, signed).hi):
            integer += 1
        return cls(max(integer + frac, 1), integer, signed)


@dataclass(frozen=True)
class ValueRange:
    lo: float
    hi: float
    frac: int


def input_type(x: np.ndarray) -> FixedType:
    """The narrowest type that holds the data exactly (on a grid of at most 2^-16)."""
    x = np.asarray(x, np.float64)
    for frac in range(MAX_INPUT_FRAC + 1):
        if np.all(np.round(x * 2.0**frac) == x * 2.0**frac):
            break
    return FixedType.covering(float(x.min()), float(x.max()), frac)


def union(*types: FixedType) -> FixedType:
    """The narrowest type holding every value of each of `types`."""
    signed = any(t.signed for t in types)
    integer = max(t.integer + (1 if signed and not t.signed else 0) for t in types)
    frac = max(t.frac for t in types)
    return FixedType(integer + frac, integer, signed)


def exact_frac(values: np.ndarray) -> int | None:
    """The fewest fraction bits that hold every value exactly, or None when more than 24 would be needed."""
    for frac in range(-8, MAX_EXACT_FRAC + 1):
        if np.all(np.round(values * 2.0**frac) == values * 2.0**frac):
            return frac
    return None


def is_power_of_two(values: np.ndarray) -> bool:
    """Whether every value is a power of 2 (a scale that shifts, exactly)."""
    mantissa, _ = np.frexp(np.asarray(values, np.float64))
    return bool(np.all(mantissa == 0.5))
