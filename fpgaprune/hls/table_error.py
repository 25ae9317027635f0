"""How far hls4ml's table activations may stand from the function they stand for, derived from the table (its
entries, hls4ml's input range, the type the entries are written in), the input's type and the result's type.

hls4ml 1.3 (`nnet_activation.h`, Vivado and Vitis, io_parallel and io_stream alike; emulated bit for bit and
checked against its C-sim in this project's measurements):
- sigmoid: entry i holds sigmoid(16 (i - N/2) / N), written into the table type (truncating); an input x reads
  entry trunc(x N / 16) + N/2, truncated toward zero and clamped to [0, N-1]. tanh the same over [-4, 4).
  So |table(x) - f(x)| <= L * (one step of the table) where the input's grid is finer than the table's (0 where
  it is as coarse: every input is an entry), or f's distance to its limit beyond the table's range; plus one step
  of the table type, the float the table was computed in, and one step of the result type where it is coarser
  than the table's. L is f's largest slope: 1/4 for sigmoid, 1 for tanh.
- hard_sigmoid: clip(slope x + 0.5, 0, 1) with Keras' slope 0.2 written as ap_ufixed<16,0> (0.19999695...): the
  slope's rounding times the largest |x|, plus one step of the result type.
- softmax (not at the output): exp and 1/sum are read from tables addressed by the top bits of their inputs; no
  bound tighter than its outputs' range [0, 1] follows from the types.
An error e in the input adds L * e (0.2 for hard_sigmoid).
"""

import math
from dataclasses import dataclass

from fpgaprune.quantize.fixed_types import FixedType

FLOAT_MARGIN = 2.0**-21  # the float32 functions the table and the reference were computed with (a few ulps of 1)
HARD_SIGMOID_SLOPE = math.floor(0.2 * 2**16) / 2**16  # Keras' 0.2 as hls4ml writes it: ap_ufixed<16,0>, truncated


@dataclass(frozen=True)
class Table:
    """An activation's table as the export configures it: its entries and the type they are written in."""

    size: int = 1024  # hls4ml's default `table_size`
    entry: FixedType = FixedType(18, 8)  # hls4ml's default `table_t`


# function -> (hls4ml's input range [-limit, limit), the largest slope, the function, its values at -inf and +inf)
TABLES = {
    "sigmoid": (8.0, 0.25, lambda v: 1.0 / (1.0 + math.exp(-v)), (0.0, 1.0)),
    "tanh": (4.0, 1.0, math.tanh, (-1.0, 1.0)),
}
SLOPES = {"sigmoid": 0.25, "tanh": 1.0, "hard_sigmoid": 0.2, "softmax": 1.0}


def own_error(function: str, table: Table | None, fixed_in: FixedType | None, result: FixedType | None) -> float:
    """The most hls4ml's `function` can differ from the exact function on the inputs the input type holds (no
    error in them): see the module's docstring."""
    if function == "softmax":
        return 1.0
    result_step = 2.0**-result.frac if result is not None else 0.0
    if function == "hard_sigmoid":
        peak = max(abs(fixed_in.lo), abs(fixed_in.hi)) if fixed_in is not None else math.inf
        return (0.2 - HARD_SIGMOID_SLOPE) * peak + result_step + FLOAT_MARGIN
    table = table or Table()
    limit, slope, f, (low, high) = TABLES[function]
    step = 2 * limit / table.size  # between entries
    on_entries = fixed_in is not None and (2.0**-fixed_in.frac / step).is_integer()  # every input is an entry
    reading = 0.0 if on_entries else slope * step
    beyond = fixed_in is None or fixed_in.lo < -limit or fixed_in.hi >= limit - step
    clipping = max(f(-limit) - low, high - f(limit - step)) if beyond else 0.0
    coarser = result_step if result is not None and result.frac < table.entry.frac else 0.0
    holds = [table.entry] + ([result] if result is not None else [])
    saturating = max([0.0] + [high - t.hi for t in holds] + [t.lo - low for t in holds])
    return max(reading, clipping) + 2.0**-table.entry.frac + coarser + saturating + FLOAT_MARGIN


def reason(function: str, node: str, table: Table | None) -> str:
    """The one line that states a table's bound, naming the node."""
    if function == "softmax":
        return (
            f"hls4ml computes the softmax '{node}' with exp and 1/sum tables addressed by the top bits of their "
            "inputs: no bound tighter than its range [0, 1] follows from the types"
        )
    if function == "hard_sigmoid":
        return f"hls4ml's hard sigmoid '{node}' takes Keras' slope 0.2 as {HARD_SIGMOID_SLOPE:.8f} (ap_ufixed<16,0>)"
    table = table or Table()
    limit = TABLES[function][0]
    return (
        f"hls4ml reads {function} '{node}' from a {table.size}-entry table over [-{limit:g}, {limit:g}) written as "
        f"{table.entry.hls()}"
    )
