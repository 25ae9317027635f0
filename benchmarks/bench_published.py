"""fpgaprune's resource rules against published Vivado HLS / Vitis HLS results of stock hls4ml designs.

The designs are in `published/hls4ml_tutorial_jet_tagger.yaml`: the hls4ml tutorial's jet-tagging MLP
(16-64-32-32-5), dense and 75% pruned, at 16 bits and with 6-bit QKeras weights, at reuse factors 1 and 2,
from Vitis HLS 2024.1 (xcu250) and Vivado HLS 2019.2 (xczu3eg), each a C-synthesis estimate.

The jet data set cannot be fetched here, so each network is trained on synthetic data (five Gaussian classes
in 16 features), pruned to the published sparsity (magnitude, per layer, then retrained with the zeros held),
and its weights rounded to the published grid (no QKeras training: the trained float weights are rounded).
The rules then price it as stock hls4ml builds it: every nonzero weight a product (the HLS compiler drops
the zeros of the Latency strategy), on the part's DSP48E2. Printed: estimate / published per resource; then,
per tool, a scale per resource fitted on two designs (dense and pruned, 16 bits, reuse 1) and the error on the
two held out (reuse 2, and 6-bit QKeras). Target: held-out LUT within +-25%, DSP within +-15%.

    python benchmarks/bench_published.py [--seeds 3]
"""

import argparse
from pathlib import Path

import numpy as np
import yaml

import fpgaprune as fp
from fpgaprune.pruning import Pruner
from fpgaprune.resources.estimator import Cost, LayerTypes, layer_cost
from fpgaprune.text_table import format_rows
from fpgaprune.tfk import keras

DESIGNS = Path(__file__).parent / "published" / "hls4ml_tutorial_jet_tagger.yaml"
RESOURCES = ("DSP", "LUT", "FF")
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


def estimate(kernels: list, precision: str, reuse: int) -> Cost:
    """The rules' estimate of the design as stock hls4ml builds it (zeros dropped by the HLS compiler)."""
    weight_bits, frac, hidden_bits = PRECISIONS[precision]
    total = Cost()
    for i, kernel in enumerate(kernels):
        lo, hi = -(2 ** (weight_bits - 1)), 2 ** (weight_bits - 1) - 1
        codes = np.clip(np.round(kernel * 2.0**frac), lo, hi).astype(np.int64)
        inputs, outputs = np.nonzero(codes)
        types = LayerTypes(weight_bits, frac, INPUT_BITS if i == 0 else hidden_bits, ACCUM_BITS, reuse, "latency",
                           "io_parallel", 1, DSP_A, DSP_B)
        cost = layer_cost(codes[inputs, outputs], outputs, types)
        for key in ("products", "dsp", "lut", "ff"):
            setattr(total, key, getattr(total, key) + getattr(cost, key))
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    published = yaml.safe_load(DESIGNS.read_text())
    designs = published["designs"]
    networks = {}
    for design in designs:
        key = (design["sparsity"],)
        if key not in networks:
            networks[key] = [trained_network(published["network"], design["sparsity"], seed)
                             for seed in range(args.seeds)]
    ratios, rows = {}, []
    for design in designs:
        costs = [estimate(k, design["precision"], design["reuse_factor"]) for k in networks[(design["sparsity"],)]]
        mean = {"DSP": np.mean([c.dsp for c in costs]), "LUT": np.mean([c.lut for c in costs]),
                "FF": np.mean([c.ff for c in costs])}
        ratios[design["name"]] = {r: mean[r] / design["resources"][r] for r in RESOURCES}
        rows.append((design["name"], f"{design['tool']} {design['version']}", int(np.mean([c.products for c in costs])),
                     *(f"{mean[r]:.0f} / {design['resources'][r]} = {ratios[design['name']][r]:.2f}"
                       for r in RESOURCES)))
    print(f"rules' estimate / published C-synthesis figure ({args.seeds} seeds of synthetic-data training)")
    print("\n".join(format_rows(("design", "tool", "products", "DSP", "LUT", "FF"), rows)))
    _calibrate(designs, ratios)


def _calibrate(designs: list, ratios: dict) -> None:
    """Per tool and resource: scale = published / estimate, the geometric mean over the fit designs; then the
    held-out designs' error after scaling."""
    print("\nper tool, scales fitted on", ", ".join(FIT), "; error on the designs held out:")
    for tool in sorted({d["tool"] for d in designs}):
        mine = [d for d in designs if d["tool"] == tool]
        fit = [d for d in mine if d["name"].split("-", 1)[1] in FIT]
        held = [d for d in mine if d not in fit]
        for resource in RESOURCES:
            logs = [np.log(ratios[d["name"]][resource]) for d in fit if ratios[d["name"]][resource] > 0]
            scale = float(np.exp(-np.mean(logs))) if logs else float("nan")
            errors = [ratios[d["name"]][resource] * scale - 1 for d in held]
            target = TARGETS.get(resource)
            verdict = "" if target is None else (" within" if all(abs(e) <= target for e in errors) else " OUTSIDE") + \
                f" the +-{target:.0%} target"
            print(f"  {tool:<10} {resource:<3} scale {scale:6.3f}  held out: " +
                  ", ".join(f"{d['name']} {e:+.0%}" for d, e in zip(held, errors)) + verdict)


if __name__ == "__main__":
    main()
