"""What an HLS tool's C-synthesis reports for a stock hls4ml layer (Latency strategy), per tool and io type;
each model says the layer kinds and io type it was fitted and held out on (`models_for`).

Stock hls4ml leaves a pruned weight's zero to the HLS compiler. The published reports of the hls4ml tutorial
(benchmarks/published/) show that the tools treat those zeros differently, so each tool has its own model:

- LUT = lut_per_site x weight sites (every weight of the layer, zero or not)
      + lut_per_product x live products (nonzero weights)
      + the LUT multipliers + the multiplexers of shared multipliers.
  The two coefficients are fitted per tool on two designs (dense and 75% pruned, 16 bits, reuse factor 1);
  `benchmarks/bench_published.py` refits them and prints the error on the designs held out.
- Vivado HLS 2019.2 keeps about 11 LUTs per zero weight (its adder), prices a LUT multiplier as a generic
  w x i array (w * i LUTs) and, with reuse factor R, shares the multipliers: each shared one has an R:1
  multiplexer on both operands, two bits per LUT6 ((R - 1) * (w + i) / 2 LUTs).
- Vitis HLS 2024.1 drops the zeros, prices a LUT multiplier by its constant (`rules.lut_multiplier_luts`) and
  does not share constant products under the Latency strategy's reuse factor (the tutorial's fc1-fc3 report
  the same DSPs and LUTs at R = 1 and R = 2).
- DSP: the rules' count (`rules.product_kind`), divided by R where the tool shares. Vitis HLS 2024.1 builds
  34-72% of 16-bit constant products from LUTs by a choice no rule found here predicts: its DSPs are not
  modelled (`dsp_modelled`).

The two rules (multipliers, multiplexers) were written after reading all four designs of each tool; only the
two coefficients are fitted, on two of them.

- Vivado HLS 2020.1 in io_stream (the tutorial's part-6 CNN, convolutions and Dense; `bench_published_cnn.py`):
  the same LUT form with CSD-priced LUT multipliers, and a product stays in a DSP only when its constant's odd
  part is at least `dsp_min_width` bits. Three coefficients, fitted on one 16-bit design, held out on a 16-bit
  replicate with other weights and on the 6-bit QKeras design (`held_out`, `errors`).
"""

import math
from dataclasses import dataclass

import numpy as np

from fpgaprune.hls.backend import registered_cost_models
from fpgaprune.hls.cost_models import BUILT_IN, CsynthModel
from fpgaprune.resources import rules

MODELS = BUILT_IN  # the built-in backends' models, by tool and version


def models_for(kind: str, io_type: str, strategy: str, fabric: bool = False) -> list:
    """The models checked on layers like this one (Latency strategy only: no published Resource design; none for
    a layer whose products are bound to LUTs, `Multipliers: fabric`: no published design binds them)."""
    if fabric:
        return []
    return [m for m in registered_cost_models() if strategy == "latency" and io_type == m.io_type and kind in m.kinds]


@dataclass
class LayerFeatures:
    """What the model reads of one layer: counts of its weight sites and of its products by kind."""

    sites: int
    products: int
    dsp_slices: int  # DSP slices of the DSP products, before any sharing
    generic_multiplier_luts: int  # the LUT products as w x i arrays
    csd_multiplier_luts: int  # the LUT products by the CSD rule
    mux_luts_per_product: float  # what one product adds in multiplexers at reuse R when multipliers are shared
    reuse: int


def odd_width(code: int) -> int:
    """Bits of a constant's odd part (|code| without its trailing zeros, which are a shift)."""
    value = abs(int(code))
    return (value >> ((value & -value).bit_length() - 1)).bit_length() if value else 0


def layer_features(
    codes: np.ndarray,
    weight_bits: int,
    input_bits: int,
    reuse: int,
    dsp_a_bits: int = 27,
    dsp_b_bits: int = 18,
    dsp_min_width: int | None = None,
) -> LayerFeatures:
    """Features of a layer whose weights (zeros included) have integer codes `codes`; `dsp_min_width`: the
    model's (`CsynthModel.dsp_min_width`)."""
    codes = np.asarray(codes, np.int64).ravel()
    live = codes[codes != 0]
    kinds = [rules.product_kind(int(c), weight_bits, input_bits) for c in live]
    if dsp_min_width is not None:
        kinds = ["lut" if k == "dsp" and odd_width(c) < dsp_min_width else k for c, k in zip(live, kinds)]
    lut_codes = [int(c) for c, kind in zip(live, kinds) if kind == "lut"]
    reuse = max(int(reuse), 1)
    return LayerFeatures(
        sites=int(codes.size),
        products=int(live.size),
        dsp_slices=kinds.count("dsp") * rules.dsp_slices(weight_bits, input_bits, dsp_a_bits, dsp_b_bits),
        generic_multiplier_luts=len(lut_codes) * weight_bits * input_bits,
        csd_multiplier_luts=sum(rules.lut_multiplier_luts(c, input_bits) for c in lut_codes),
        mux_luts_per_product=(reuse - 1) / reuse * (weight_bits + input_bits) / 2,
        reuse=reuse,
    )


def rule_luts(features: LayerFeatures, model: CsynthModel) -> float:
    """The LUTs the rules give (multipliers, multiplexers), before the fitted terms."""
    multipliers = features.generic_multiplier_luts if model.generic_lut_multipliers else features.csd_multiplier_luts
    mux = features.products * features.mux_luts_per_product if model.shares_under_reuse else 0.0
    return multipliers + mux


def csynth_estimate(features: LayerFeatures, model: CsynthModel) -> dict:
    """{"LUT": ..., "DSP": ... or None} as `model`'s tool would report the layer in C-synthesis."""
    lut = model.lut_per_site * features.sites + model.lut_per_product * features.products + rule_luts(features, model)
    share = features.reuse if model.shares_under_reuse else 1
    return {"LUT": lut, "DSP": math.ceil(features.dsp_slices / share) if model.dsp_modelled else None}


def product_figures(
    code: int, weight_bits: int, input_bits: int, reuse: int, dsp_a_bits: int, dsp_b_bits: int, model: CsynthModel
) -> tuple[float, float]:
    """(DSP, LUT) that one product of weight code `code` adds to `model`'s figure for fpgaprune's code, which has
    no site for a zero (a zero adds nothing): a layer's products sum to its `fpgaprune_*` figures
    (`estimate.csynth_rows`) up to the rounding of its DSPs. The budget's knapsack prices with this."""
    if int(code) == 0:
        return 0.0, 0.0
    features = layer_features(
        np.array([code]), weight_bits, input_bits, reuse, dsp_a_bits, dsp_b_bits, model.dsp_min_width
    )
    share = features.reuse if model.shares_under_reuse else 1
    return features.dsp_slices / share, csynth_estimate(features, model)["LUT"]


def fit_lut_coefficients(rows: list) -> tuple[float, float]:
    """(lut_per_site, lut_per_product) by least squares over rows of (LayerFeatures, published LUT, model)."""
    matrix = np.array([[f.sites, f.products] for f, _, _ in rows], np.float64)
    target = np.array([lut - rule_luts(f, model) for f, lut, model in rows], np.float64)
    (per_site, per_product), *_ = np.linalg.lstsq(matrix, target, rcond=None)
    return float(per_site), float(per_product)
