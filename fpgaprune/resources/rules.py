"""How one product of a weight and an input maps to hardware: the stated rules and their sources.

These are estimates, not measurements; every figure that uses them is labelled "estimate".

- A weight whose quantized value is 0 makes no product (fpgaprune's code has no site for it).
- A weight of ±2^k is a shift: no multiplier and no LUTs, only an adder input (wiring).
- Otherwise the product is a multiplier. It goes to DSPs when one operand is wider than 10 bits and the
  other has at least 6, and to LUTs otherwise. Sources: Duarte et al., "Fast inference of deep neural
  networks in FPGAs for particle physics", JINST 13 (2018) P07027, sec. 5.3: with fixed-point widths below
  about 10 bits, Vivado HLS builds the multiplications from LUTs and the DSP count falls to zero; and the
  hls4ml tutorial's published Vivado HLS 2019.2 runs (benchmarks/published/): 6-bit weights times 16-bit
  inputs took 221 DSPs for 256 products. `benchmarks/bench_published.py` checks the rules against them.
- A DSP multiplier takes ceil(a/A) * ceil(b/B) DSP slices for operands of a >= b bits on an A x B DSP
  (DSP48E1: 25 x 18, DSP48E2: 27 x 18; UG479, UG579).
- A LUT multiplier by a constant adds one shifted copy of the input per nonzero digit of the constant's
  canonical signed-digit form (CSD), so it costs (digits - 1) adders of (input bits + log2|constant|) bits,
  one LUT per bit on the carry chain (UG474/UG574: one LUT6 + carry per adder bit).
- A product the DSP rule above would put in DSPs, in a layer whose products are bound to LUTs (`Multipliers:
  fabric`, hls/multipliers.py), is a LUT multiplier priced by `fabric_multiplier_luts`: the same adders counted by
  the constant's binary digits or its CSD digits and one more, whichever fewer, or one LUT6 per product bit for an
  input of at most 6 bits. Checked against yosys `synth_xilinx -nodsp` (`FABRIC_RULE_SOURCE`).
- Summing n terms (the live products and the bias) takes n - 1 adders of the accumulator's width, one LUT
  per bit. With reuse factor R, a layer's multipliers are divided by R. Its adders (and their pipeline
  registers) are divided by R in the Resource strategies, which accumulate a block of products per cycle, but
  not in the Latency strategy, where hls4ml limits only the multiplications: there the published Vivado HLS
  2019.2 reports grow from 88k to 128k LUT between R = 1 and R = 2 (`resources/csynth.py`).
- Pipeline registers: one accumulator-wide register per adder-tree level per output (FFs).
- Weights in ROM (Resource strategy, R > 1): each cycle reads ceil(live / R) weights, so the ROM is that
  many weights wide and R deep; it takes ceil(width / 36) * ceil(R / 512) BRAM_18K when it holds more than
  1024 bits, and LUTs (distributed ROM) otherwise (UG473/UG573: 18 Kb block RAM, widest port 36 bits).
"""

import math

import numpy as np

LUT_MULTIPLIER_MAX_BITS = 10  # a product whose operands are both at most this wide is built from LUTs
DSP_NARROW_MIN_BITS = 6  # ... and so is one whose narrower operand is below this
LUT_INPUTS = 6  # a LUT6: any function of up to 6 bits
BRAM_18K_BITS = 18 * 1024
BRAM_MAX_WIDTH = 36
BRAM_DEPTH_AT_36 = 512
DISTRIBUTED_ROM_MAX_BITS = 1024


def csd_digits(value: int) -> int:
    """Nonzero digits of `value` in canonical signed-digit form."""
    value, digits = abs(int(value)), 0
    while value:
        if value & 1:
            digits += 1
            value = value - 1 if (value & 3) == 1 else value + 1
        value >>= 1
    return digits


def is_power_of_two(value: int) -> bool:
    value = abs(int(value))
    return value != 0 and value & (value - 1) == 0


def product_kind(code: int, weight_bits: int, input_bits: int, fabric: bool = False) -> str:
    """'none', 'shift', 'dsp' or 'lut' for a weight with integer code `code` (value / weight step); `fabric`: the
    layer's products are bound to LUTs (`Multipliers: fabric`), so none is 'dsp'."""
    if code == 0:
        return "none"
    if is_power_of_two(code):
        return "shift"
    wide, narrow = max(weight_bits, input_bits), min(weight_bits, input_bits)
    if not fabric and wide > LUT_MULTIPLIER_MAX_BITS and narrow >= DSP_NARROW_MIN_BITS:
        return "dsp"
    return "lut"


def dsp_slices(weight_bits: int, input_bits: int, dsp_a_bits: int, dsp_b_bits: int) -> int:
    wide, narrow = max(weight_bits, input_bits), min(weight_bits, input_bits)
    return math.ceil(wide / dsp_a_bits) * math.ceil(narrow / dsp_b_bits)


def lut_multiplier_luts(code: int, input_bits: int) -> int:
    """LUTs of a constant multiplier built from shifted adds."""
    digits = csd_digits(code)
    return max(digits - 1, 0) * (input_bits + math.ceil(math.log2(abs(code) + 1)))


# `fabric_multiplier_luts` against yosys 0.70 `synth_xilinx -nodsp` (benchmarks/bench_fabric_products.py): its form
# was chosen on seed 0's 96 sample products; seed 1's 48 hold it out (lowest and highest error per product)
FABRIC_RULE_ERROR = (-0.55, 0.98)
FABRIC_RULE_SOURCE = (
    "a LUT-built product is priced by rules.fabric_multiplier_luts (a shifted add per binary or CSD digit of its "
    "constant, whichever needs fewer, or one LUT6 per product bit for inputs of at most 6 bits), checked against "
    "yosys 0.70 synth_xilinx -nodsp on sample constant products (benchmarks/bench_fabric_products.py): held out, "
    "-55% to +98% per product and -0.9% summed; an estimate, not a vendor tool's figure"
)


def fabric_multiplier_luts(code: int, weight_bits: int, input_bits: int) -> int:
    """LUTs of a constant product the rules would put in a DSP, built from LUTs instead (`Multipliers: fabric`):
    one adder of the input's width plus the constant's per digit but one, counting the constant's binary digits
    or its CSD digits and one more (the subtractions), whichever is fewer; or, for an input of at most 6 bits,
    one LUT6 per product bit (each bit is a function of the input alone), whichever is fewer. Fitted to nothing;
    its form was chosen against yosys: `FABRIC_RULE_SOURCE`."""
    code = abs(int(code))
    digits = min(bin(code).count("1"), csd_digits(code) + 1)
    adds = max(digits - 1, 0) * (input_bits + math.ceil(math.log2(code + 1)))
    return min(adds, input_bits + weight_bits) if input_bits <= LUT_INPUTS else adds


def product_luts(code: int, weight_bits: int, input_bits: int, fabric: bool = False) -> int:
    """LUTs of one product's multiplier: none for a shift or a DSP; `fabric_multiplier_luts` for a product that
    `fabric` moves out of a DSP; else `lut_multiplier_luts`."""
    kind = product_kind(code, weight_bits, input_bits, fabric)
    if kind != "lut":
        return 0
    if fabric and product_kind(code, weight_bits, input_bits) == "dsp":
        return fabric_multiplier_luts(code, weight_bits, input_bits)
    return lut_multiplier_luts(code, input_bits)


def adder_tree_luts(terms: int, accum_bits: int) -> int:
    return max(terms - 1, 0) * accum_bits


def adder_tree_levels(terms: int) -> int:
    return math.ceil(math.log2(terms)) if terms > 1 else 0


def rom_bram_18k(live: int, weight_bits: int, reuse: int) -> int:
    """BRAM_18K for the weights of a Resource-strategy layer (0 when they fit distributed ROM)."""
    width = math.ceil(live / reuse) * weight_bits
    if reuse <= 1 or width * reuse <= DISTRIBUTED_ROM_MAX_BITS:
        return 0
    return math.ceil(width / BRAM_MAX_WIDTH) * math.ceil(reuse / BRAM_DEPTH_AT_36)


def codes(values: np.ndarray, frac_bits: int) -> np.ndarray:
    """Integer codes of weights on a 2^-frac grid."""
    return np.round(np.asarray(values, np.float64) * 2.0**frac_bits).astype(np.int64)
