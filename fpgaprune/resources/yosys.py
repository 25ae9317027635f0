"""Measured hardware for the distributed-arithmetic export: da4ml's adder graph, synthesized by yosys.

For one Dense/Conv layer (one output pixel of a conv), da4ml traces `x @ W` with the layer's fixed-point
input type and quantized weights, the same constant-matrix product hls4ml's `distributed_arithmetic`
strategy builds. da4ml writes it as Verilog; Debian's yosys runs `synth_xilinx -flatten -nowidelut` on
it and its `stat` gives the LUT (LUT1-6 and INV), CARRY and FF counts. These figures are measured, for
that circuit. `-nowidelut` keeps logic in LUTs: without it yosys 0.23 sometimes builds wide functions from
LUT6 + MUXF7/8/9 trees, and the LUT count then moves against the logic (a pruned kernel measured +87 LUTs).
"""

import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fpgaprune.tools import YOSYS_TIMEOUT_S, run_tool

FAMILY = {"7-series": "xc7", "UltraScale+": "xcup"}
SOURCE = "measured: yosys synth_xilinx of da4ml's adder graph"


@dataclass(frozen=True)
class Synthesis:
    luts: int
    carry: int
    ff: int
    da4ml_cost: float
    source: str = SOURCE


def yosys_available() -> bool:
    return shutil.which("yosys") is not None


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


def _stat(text: str) -> dict:
    cells = dict(re.findall(r"^\s+(\w+)\s+(\d+)\s*$", text.split("=== design hierarchy ===")[0].split("Number of cells")[-1],
                            re.M))
    counts = {name: int(value) for name, value in cells.items()}
    luts = sum(v for k, v in counts.items() if re.fullmatch(r"LUT\d", k)) + counts.get("INV", 0)
    carry = sum(v for k, v in counts.items() if k.startswith("CARRY"))
    ff = sum(v for k, v in counts.items() if re.fullmatch(r"FD\w*", k))
    return {"luts": luts, "carry": carry, "ff": ff}


def synthesize(weights: np.ndarray, kif: tuple[int, int, int], family: str = "UltraScale+",
               workdir: Path | None = None) -> Synthesis:
    """Synthesize `x @ weights` (da4ml adder graph) with yosys and read its cell counts."""
    from da4ml.codegen import RTLModel

    comb = adder_graph(weights, kif)
    with tempfile.TemporaryDirectory(prefix="fpgaprune-yosys-") as scratch:
        root = Path(workdir or scratch)
        RTLModel(comb, "layer", root / "rtl").write()
        src = root / "rtl" / "src"
        sources = [src / "layer.v"] + sorted(p for p in (src / "static").glob("*.v") if p.name != "lookup_table.v")
        script = (f"read_verilog -sv {' '.join(str(p) for p in sources)}; "
                  f"synth_xilinx -family {FAMILY[family]} -flatten -nowidelut -top layer; tee -o {root / 'stat.txt'} stat")
        run_tool(["yosys", "-q", "-p", script], f"yosys on {src / 'layer.v'}", YOSYS_TIMEOUT_S)
        counts = _stat((root / "stat.txt").read_text())
    return Synthesis(counts["luts"], counts["carry"], counts["ff"], float(comb.cost))
