"""A layer too large for one yosys run, split into parts that are measured one by one and summed.

`x @ W` splits into blocks of W: runs of output columns first (their circuits are independent), then, when one
column is still too costly, runs of input rows. Row blocks of one column run give partial sums; an adder tree
(`partial_sums_adder`, traced by da4ml with the partial sums' own fixed-point types) adds them, and is measured
like any part. The parts share no logic, so the sum can differ from the one circuit's figure either way (da4ml's
sharing is heuristic); `Synthesis.layer_da4ml_cost` against `da4ml_cost` says by how much in da4ml's terms.

Also what a measurement's circuits are sized by and give back (`MeasurementBudget`, `Synthesis`, `Unmeasured`):
shared by the jobs that run them (`circuit_jobs.py`) and the measurement that plans them (`yosys.py`).
"""

import math
from dataclasses import dataclass

import numpy as np

from fpgaprune.support.tools import cores
from fpgaprune.workers.circuit import partial_sums_logic


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
    return partial_sums_logic(out_kifs)


SOURCE = "measured: yosys synth_xilinx of da4ml's adder graph"
PART_COST = 6000  # estimated da4ml cost of the largest circuit synthesized whole; larger ones go in parts
TRACE_MB = (200.0, 2.8e-5)  # da4ml trace memory, MB ~ a + b * trace_size (`trace_mb`)
YOSYS_MB = 400.0  # room left for yosys itself beside a circuit's trace


@dataclass(frozen=True)
class Synthesis:
    """yosys' cell counts of one layer; `da4ml_cost` is that of the circuits synthesized (the parts' sum)."""

    luts: int
    carry: int
    ff: int
    da4ml_cost: float
    source: str = SOURCE
    parts: int = 1  # blocks of the matrix synthesized separately (no logic shared between them)
    layer_da4ml_cost: float | None = None  # da4ml's cost of the layer as one circuit, when it went in parts


@dataclass(frozen=True)
class Unmeasured:
    """A circuit that the budgets stopped, or that failed: why."""

    reason: str


@dataclass(frozen=True)
class MeasurementBudget:
    """What all circuits of one measurement may take together: wall seconds and bytes of memory (the processes
    running at once), and how many run at once (default: one per core)."""

    seconds: float = 600.0
    memory: int = 2 << 30
    workers: int | None = None

    def concurrency(self) -> int:
        return self.workers or parallel_workers()

    def per_circuit(self) -> int:
        return self.memory // self.concurrency()


def weight_bits(weights: np.ndarray) -> int:
    """The bits of the widest live weight on the matrix's own grid (sign included)."""
    live = weights[weights != 0]
    if not live.size:
        return 1
    frac = next((f for f in range(25) if np.all(np.round(live * 2.0**f) == live * 2.0**f)), 24)
    return math.ceil(math.log2(float(np.abs(live).max()) * 2.0**frac + 1)) + 1


def estimated_cost(weights: np.ndarray, kif: tuple[int, int, int]) -> float:
    """A guess at da4ml's cost from the matrix alone (no trace): live weights x (input bits + weight bits), each
    row's input bits its own where `kif` has one per input. Within about 2x of the traced cost on the layers
    measured here; it only cuts layers into parts."""
    input_bits = np.broadcast_to(np.sum([np.asarray(v, np.float64) for v in kif], axis=0), weights.shape[:1])
    return float(np.count_nonzero(weights, axis=1) @ (input_bits + weight_bits(weights)))


def trace_size(rows: int, cols: int, bits: int) -> float:
    """What da4ml's trace time and memory grow with: (inputs x weight bits)^2 x outputs."""
    return float(rows * bits) ** 2 * cols


def trace_mb(rows: int, cols: int, bits: int) -> float:
    """da4ml's trace memory, MB: an upper fit of measurements here (hls4ml's settings, 8-bit inputs): 64 x 10
    8-bit weights 232 MB, 128 x 10 326, 256 x 10 6-bit 741, 64 x 64 606, 234 x 10 1174, 512 x 10 6-bit 2069."""
    return TRACE_MB[0] + TRACE_MB[1] * trace_size(rows, cols, bits)


def max_rows(budget: MeasurementBudget, cols: int = 1, bits: int = 8) -> int:
    """The most inputs a circuit of `cols` outputs may trace at once within its share of the memory budget."""
    room = budget.per_circuit() / 2**20 - YOSYS_MB - TRACE_MB[0]
    return max(4, int(math.sqrt(max(room, 0.0) / TRACE_MB[1] / max(cols, 1)) / bits))


def layer_parts(
    weights: np.ndarray,
    kif: tuple[int, int, int],
    part_cost: float = PART_COST,
    budget: MeasurementBudget | None = None,
) -> list[Part]:
    """The parts a layer is measured in, from its matrix: column runs by estimated cost, row runs by the memory
    each column run's trace would need."""
    n_in, n_out = weights.shape
    cost = estimated_cost(weights, kif)
    columns = -(-n_out // min(n_out, max(1, math.ceil(cost / part_cost))))  # outputs per column run
    rows = max_rows(budget or MeasurementBudget(), columns, weight_bits(weights))
    return circuit_parts(n_in, n_out, cost, part_cost, rows)


def combined(results: list[Synthesis], parts: int, layer_cost: float | None) -> Synthesis:
    """One layer's figures from its circuits' (the parts and their partial-sum adders): the sum, or the one
    circuit as it is."""
    if parts == 1:
        return results[0]
    return Synthesis(
        sum(p.luts for p in results),
        sum(p.carry for p in results),
        sum(p.ff for p in results),
        sum(p.da4ml_cost for p in results),
        results[0].source,
        parts,
        layer_cost,
    )


def parallel_workers() -> int:
    """One circuit per core (`tools.cores`)."""
    return cores()
