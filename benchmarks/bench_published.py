"""fpgaprune's resource rules against published Vivado HLS / Vitis HLS results of stock hls4ml designs.

The designs are in `published/hls4ml_tutorial_jet_tagger.yaml`: the hls4ml tutorial's jet-tagging MLP
(16-64-32-32-5), dense and 75% pruned, at 16 bits and with 6-bit QKeras weights, at reuse factors 1 and 2,
from Vitis HLS 2024.1 (xcu250) and Vivado HLS 2019.2 (xczu3eg), each a C-synthesis estimate.

The jet data set cannot be fetched here, so each network is trained on synthetic data (five Gaussian classes
in 16 features), pruned to the published sparsity (magnitude, per layer, then retrained with the zeros held),
and its weights rounded to the published grid (no QKeras training: the trained float weights are rounded).
Each is priced as stock hls4ml builds it, by the per-tool C-synthesis model (`fpgaprune/resources/csynth.py`),
against the published figures of its dense layers (the reports' Instance rows; the activations are left out).
Printed: model / published per resource, and fpgaprune's own LUT rules beside it; then, per tool, the model's
two LUT coefficients refitted on two designs (dense and 75% pruned, 16 bits, reuse 1) and its error on the two
held out (reuse 2, and 6-bit QKeras). Target: held-out LUT within +-25%, DSP within +-15%.

    python benchmarks/bench_published.py [--seeds 3]
"""

import argparse
from dataclasses import replace
from pathlib import Path

import numpy as np
import yaml

import fpgaprune as fp
from fpgaprune.pruning import Pruner
from fpgaprune.resources import csynth
from fpgaprune.resources.estimator import LayerTypes, layer_cost
from fpgaprune.support.text_table import format_rows
from fpgaprune.tfk import keras

DESIGNS = Path(__file__).parent / "published" / "hls4ml_tutorial_jet_tagger.yaml"
FIT = ("dense-16b-rf1", "pruned75-16b-rf1")  # the designs each tool's scales are fitted on; the rest are held out
# (weight bits, weight fraction bits, hidden activation bits): ap_fixed<16,6>, or QKeras quantized_bits(6,0) with
# quantized_relu(6). The input is ap_fixed<16,6> and the accumulator hls4ml's default ap_fixed<16,6> in both.
PRECISIONS = {"fixed16": (16, 10, 16), "qkeras6": (6, 5, 6)}
INPUT_BITS = ACCUM_BITS = 16
DSP_A, DSP_B = 27, 18  # DSP48E2 on both parts (UltraScale+)
TARGETS = {"DSP": 0.15, "LUT": 0.25}


def synthetic_jets(seed: int, n: int = 6000):
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 1.5, (5, 16))
    labels = rng.integers(0, 5, n)
    return (centres[labels] + rng.normal(0, 1, (n, 16))).astype(np.float32), labels


def trained_network(network: dict, sparsity: float, seed: int) -> list:
    """The tutorial's MLP trained on synthetic jets, pruned to `sparsity` per layer: its float kernels."""
    keras.utils.set_random_seed(seed)
    x, y = synthetic_jets(seed)
    layers = [keras.Input((network["inputs"],))]
    for i, units in enumerate(network["units"]):
        last = i == len(network["units"]) - 1
        layers.append(keras.layers.Dense(units, activation=None if last else "relu", name=f"fc{i + 1}"))
    model = keras.Sequential(layers)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(keras.optimizers.Adam(3e-3), loss)
    model.fit(x, y, epochs=5, batch_size=128, verbose=0)
    if sparsity:
        model = Pruner(structure="element").prune(fp.hold(model), sparsity=sparsity)
        model.compile(keras.optimizers.Adam(1e-3), loss)
        model.fit(x, y, epochs=3, batch_size=128, verbose=0)
    return [np.asarray(layer.kernel) for layer in model.layers]


def layer_features(kernels: list, precision: str, reuse: int) -> list:
    """`csynth.LayerFeatures` of each dense layer, its weights rounded to the design's grid (zeros kept)."""
    weight_bits, frac, hidden_bits = PRECISIONS[precision]
    lo, hi = -(2 ** (weight_bits - 1)), 2 ** (weight_bits - 1) - 1
    return [
        csynth.layer_features(
            np.clip(np.round(kernel * 2.0**frac), lo, hi),
            weight_bits,
            INPUT_BITS if i == 0 else hidden_bits,
            reuse,
            DSP_A,
            DSP_B,
        )
        for i, kernel in enumerate(kernels)
    ]


def rules_luts(kernels: list, precision: str, reuse: int) -> float:
    """fpgaprune's own rules (`estimator.layer_cost`: zeros dropped, CSD multipliers), for comparison."""
    weight_bits, frac, hidden_bits = PRECISIONS[precision]
    total = 0
    for i, kernel in enumerate(kernels):
        lo, hi = -(2 ** (weight_bits - 1)), 2 ** (weight_bits - 1) - 1
        codes = np.clip(np.round(kernel * 2.0**frac), lo, hi).astype(np.int64)
        inputs, outputs = np.nonzero(codes)
        types = LayerTypes(
            weight_bits,
            frac,
            INPUT_BITS if i == 0 else hidden_bits,
            ACCUM_BITS,
            reuse,
            "latency",
            "io_parallel",
            1,
            DSP_A,
            DSP_B,
        )
        total += layer_cost(codes[inputs, outputs], outputs, types).lut
    return total


def model_of(design: dict) -> csynth.CsynthModel:
    return csynth.MODELS[f"{design['tool']} {design['version']}"]


def published(design: dict, resource: str) -> int:
    """The design's dense layers' figure (the sum of their Instance rows)."""
    return sum(layer[resource] for layer in design["layers"].values())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    data = yaml.safe_load(DESIGNS.read_text())
    networks = {
        s: [trained_network(data["network"], s, seed) for seed in range(args.seeds)]
        for s in sorted({d["sparsity"] for d in data["designs"]})
    }
    features = {
        d["name"]: [layer_features(k, d["precision"], d["reuse_factor"]) for k in networks[d["sparsity"]]]
        for d in data["designs"]
    }
    rows = []
    for design in data["designs"]:
        model = model_of(design)
        estimates = [[csynth.csynth_estimate(f, model) for f in seed] for seed in features[design["name"]]]
        lut = np.mean([sum(e["LUT"] for e in seed) for seed in estimates])
        dsp = np.mean([sum(e["DSP"] for e in seed) for seed in estimates]) if model.dsp_modelled else None
        rules = np.mean(
            [rules_luts(k, design["precision"], design["reuse_factor"]) for k in networks[design["sparsity"]]]
        )
        products = int(np.mean([sum(f.products for f in s) for s in features[design["name"]]]))
        rows.append(
            (
                design["name"],
                model.tool,
                products,
                "not modelled" if dsp is None else _ratio(dsp, published(design, "DSP")),
                _ratio(lut, published(design, "LUT")),
                _ratio(rules, published(design, "LUT")),
            )
        )
    print(f"C-synthesis model / published, the dense layers ({args.seeds} seeds of synthetic-data training)")
    print(
        "\n".join(
            format_rows(("design", "tool", "products", "DSP (model)", "LUT (model)", "LUT (fpgaprune rules)"), rows)
        )
    )
    _print_held_out(data["designs"], features)


def _ratio(estimate: float, published_figure: int) -> str:
    return f"{estimate:.0f} / {published_figure} = {estimate / published_figure:.2f}"


def held_out(designs: list, features: dict) -> list:
    """Per tool: (its model, the model with the two LUT coefficients refitted on FIT, {(design, resource): error
    of the refitted model on a design held out}), on the dense layers."""
    results = []
    for tool in sorted({d["tool"] for d in designs}):
        mine = [d for d in designs if d["tool"] == tool]
        model = model_of(mine[0])
        fit_rows = [
            (f, layer["LUT"], model)
            for d in mine
            if d["name"].split("-", 1)[1] in FIT
            for seed in features[d["name"]]
            for f, layer in zip(seed, d["layers"].values())
        ]
        per_site, per_product = csynth.fit_lut_coefficients(fit_rows)
        refit = replace(model, lut_per_site=per_site, lut_per_product=per_product)
        errors = {}
        for design in [d for d in mine if d["name"].split("-", 1)[1] not in FIT]:
            for resource in ("LUT", "DSP") if model.dsp_modelled else ("LUT",):
                estimate = np.mean(
                    [sum(csynth.csynth_estimate(f, refit)[resource] for f in seed) for seed in features[design["name"]]]
                )
                errors[(design["name"], resource)] = estimate / published(design, resource) - 1
        results.append((model, refit, errors))
    return results


def _print_held_out(designs: list, features: dict) -> None:
    print("\nper tool, LUT coefficients fitted on", ", ".join(FIT), "; error on the designs held out:")
    for model, refit, errors in held_out(designs, features):
        print(
            f"  {model.tool}: per site {refit.lut_per_site:.3f} LUT, per product {refit.lut_per_product:.3f} LUT "
            f"(csynth.MODELS: {model.lut_per_site}, {model.lut_per_product})"
        )
        for (name, resource), error in errors.items():
            verdict = "within" if abs(error) <= TARGETS[resource] else "OUTSIDE"
            print(f"    held out {name:<28} {resource}: {error:+.1%} ({verdict} the +-{TARGETS[resource]:.0%} target)")


if __name__ == "__main__":
    from record import run_recorded

    run_recorded(main, __file__)
