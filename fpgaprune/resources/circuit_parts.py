"""A layer too large for one yosys run, split into parts that are measured one by one and summed.

`x @ W` splits into blocks of W: runs of output columns first (their circuits are independent), then, when one
column is still too costly, runs of input rows. Row blocks of one column run give partial sums; an adder tree
(`partial_sums_adder`, traced by da4ml with the partial sums' own fixed-point types) adds them, and is measured
like any part. The parts share no logic, so the sum can differ from the one circuit's figure either way (da4ml's
sharing is heuristic); `Synthesis.layer_da4ml_cost` against `da4ml_cost` says by how much in da4ml's terms.
"""

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Part:
    """One block of the matrix: its input rows and output columns."""

    rows: slice
    cols: slice


def _runs(size: int, count: int) -> list[slice]:
    bounds = np.linspace(0, size, count + 1).round().astype(int)
    return [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


def circuit_parts(n_in: int, n_out: int, cost: float, part_cost: float, max_rows: int | None = None) -> list[Part]:
    """Blocks whose adder graphs cost about `part_cost` each: column runs (as even as possible), and within each
    the same row runs when a column alone costs more, or when more than `max_rows` inputs would be traced at
    once. Ordered by column run, then row run."""
    count = max(1, math.ceil(cost / part_cost))
    col_runs = min(n_out, count)
    row_runs = min(n_in, max(math.ceil(count / col_runs), math.ceil(n_in / max_rows) if max_rows else 1))
    return [Part(rows, cols) for cols in _runs(n_out, col_runs) for rows in _runs(n_in, row_runs)]


def column_groups(parts: list[Part]) -> list[list[int]]:
    """Indices of the parts that share each column run (their partial sums are added)."""
    groups: dict = {}
    for index, part in enumerate(parts):
        groups.setdefault((part.cols.start, part.cols.stop), []).append(index)
    return list(groups.values())


def partial_sums_adder(out_kifs: list[np.ndarray]):
    """da4ml's logic adding the partial sums of one column run; `out_kifs[r]` is part r's (3, columns) output
    types (da4ml's `out_kifs`: sign, integer and fraction bits)."""
    from fpgaprune.workers.circuit import partial_sums_logic

    return partial_sums_logic(out_kifs)
