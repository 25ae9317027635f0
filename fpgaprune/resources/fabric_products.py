"""A constant product built from LUTs (no DSP), measured: one weight code times a signed input, synthesized by
yosys `synth_xilinx -nodsp` (the check of `rules.fabric_multiplier_luts`, `benchmarks/bench_fabric_products.py`).

The product is the one fpgaprune's kernel-sparse code asks an HLS tool to build in fabric (`Multipliers:
fabric`): a signed input of `input_bits` times a weight constant of `weight_bits` (its integer code), the full
product width. yosys builds it from its generic multiplier with the constant's zero partial products folded
away, so what it measures is a shift-and-add circuit of the constant's digits.
"""

import tempfile
from pathlib import Path

from fpgaprune.resources.yosys import FAMILY, synthesized


def product_verilog(code: int, weight_bits: int, input_bits: int) -> str:
    """A module `product` whose output is its input times the constant `code` (a signed `weight_bits` integer)."""
    width = weight_bits + input_bits
    sign = "-" if code < 0 else ""
    return (
        f"module product(input signed [{input_bits - 1}:0] x, output signed [{width - 1}:0] y);\n"
        f"  localparam signed [{weight_bits - 1}:0] C = {sign}{weight_bits}'sd{abs(int(code))};\n"
        "  assign y = x * C;\nendmodule\n"
    )


def measure_product(code: int, weight_bits: int, input_bits: int, family: str = "UltraScale+") -> dict:
    """{"luts", "carry", "tool"}: yosys `synth_xilinx -nodsp -flatten -nowidelut` of `product_verilog`."""
    with tempfile.TemporaryDirectory(prefix="fpgaprune-product-") as scratch:
        root = Path(scratch)
        (root / "product.v").write_text(product_verilog(code, weight_bits, input_bits))
        script = (
            f"read_verilog -sv product.v; synth_xilinx -family {FAMILY[family]} -nodsp -flatten -nowidelut "
            "-top product; tee -o stat.txt stat"
        )
        counts, tool = synthesized(root, script, f"yosys on a {code} x {input_bits}-bit product")
    return {"luts": counts["luts"], "carry": counts["carry"], "tool": tool.describe()}
