"""fpgaprune's C-synthesis model against published Vivado HLS results of stock hls4ml CNNs, layer by layer.

The designs are in `published/hls4ml_tutorial_part6_cnn.yaml`: the hls4ml tutorial's part-6 CNN (SVHN, three
3x3 convolutions of 16/16/24 filters, Dense 42/64/10), 50% of its weights pruned element-wise, at ap_fixed<16,6>
and with 6-bit QKeras weights, io_stream, Latency, reuse factor 1, C-synthesized by Vivado HLS 2020.1.

SVHN cannot be fetched here, and the published weights were not released: each network is rebuilt and trained
on Fashion-MNIST (Debian's `dataset-fashion-mnist`), padded to 32x32 and repeated over 3 channels, pruned to the
published sparsity per layer (magnitude, element-wise, the output layer kept whole) and retrained with the zeros
held. Its BatchNormalization is folded into the layer before it where the published design folds it (hls4ml's
fusion at 16 bits; QConv2DBatchnorm at 6 bits), and its weights are rounded to the design's grid (no QKeras
training: the trained float weights are rounded, so more of them round to zero than QAT would leave).

Each layer is priced as stock hls4ml builds it, by `csynth.MODELS` (the only Vivado HLS model is 2019.2's, fitted
on Dense layers in io_parallel: it is applied here to 2020.1 designs and to io_stream convolutions, where it was
never checked). Printed: per layer, model / published for DSP and LUT, and the error per layer kind.

Then a model of Vivado HLS 2020.1 in io_stream is fitted on one design (FIT: 16 bits) and held out on the two
others (the 16-bit replicate with other weights, and 6-bit QKeras): three coefficients, the LUTs per weight site
and per live product, and the narrowest constant (its odd part, `csynth.odd_width`) that the tool still puts in
a DSP; narrower constants are LUT multipliers priced by their CSD digits. Targets on the designs held out: DSP
within +-15% and LUT within +-25% per layer.

    python benchmarks/bench_published_cnn.py [--seeds 2]
"""

import argparse
from dataclasses import replace
from pathlib import Path

import numpy as np
import yaml

import fpgaprune as fp
from fpgaprune.data import fashion_mnist
from fpgaprune.pruning import Pruner
from fpgaprune.resources import csynth
from fpgaprune.support.text_table import format_rows
from fpgaprune.tfk import keras

DESIGNS = Path(__file__).parent / "published" / "hls4ml_tutorial_part6_cnn.yaml"
MODEL = "vivado_hls 2019.2"  # the model applied (the designs are 2020.1's: no model of that version exists)
FIXED16 = (16, 10)  # ap_fixed<16,6>: weight bits, fraction bits
QKERAS6 = (6, 5)  # quantized_bits(6,0,alpha=1)
DSP_A, DSP_B = 27, 18  # DSP48E2 (xcu250)
TRAIN_IMAGES = 12000
FIT = "vivado2020-pruned50-16b-stream"  # the design the 2020.1 model is fitted on; the others are held out
TARGETS = {"DSP": 0.15, "LUT": 0.25}
STREAM_2020 = csynth.CsynthModel("Vivado HLS 2020.1 (io_stream, fitted here)", 0.0, 0.0, False, False, True, "")


def svhn_shaped(dataset, count: int):
    """Fashion-MNIST images padded to 32x32 and repeated over 3 channels, scaled to [0, 1]."""

    def shaped(x):
        x = np.pad(np.asarray(x, np.float32).reshape(-1, 28, 28) / 255.0, ((0, 0), (2, 2), (2, 2)))
        return np.repeat(x[..., None], 3, axis=-1)

    return shaped(dataset.x_train[:count]), dataset.y_train[:count]


def part6_network(network: dict):
    """The tutorial's float network (part6_cnns.ipynb, "Defining the model")."""
    x = inputs = keras.Input(tuple(network["input"]))
    for conv in network["conv"]:
        x = keras.layers.Conv2D(conv["filters"], tuple(conv["kernel"]), use_bias=False, name=conv["name"])(x)
        x = keras.layers.BatchNormalization(name=f"bn_{conv['name']}")(x)
        x = keras.layers.MaxPooling2D(2)(keras.layers.Activation("relu")(x))
    x = keras.layers.Flatten()(x)
    for dense in network["dense"][:-1]:
        x = keras.layers.Dense(dense["units"], use_bias=False, name=dense["name"])(x)
        x = keras.layers.Activation("relu")(keras.layers.BatchNormalization(name=f"bn_{dense['name']}")(x))
    last = network["dense"][-1]
    return keras.Model(inputs, keras.layers.Dense(last["units"], name=last["name"])(x))


def trained(network: dict, seed: int, x, y):
    """The network trained, pruned to the published sparsity per layer, retrained with the zeros held."""
    keras.utils.set_random_seed(seed)
    model = part6_network(network)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(keras.optimizers.Adam(3e-3), loss)
    model.fit(x, y, epochs=2, batch_size=256, verbose=0)
    for sparsity in sorted({s for s in network["pruned"].values() if s}):
        layers = [name for name, s in network["pruned"].items() if s == sparsity]
        model = Pruner(structure="element", layers=layers).prune(fp.hold(model), sparsity=sparsity)
    model.compile(keras.optimizers.Adam(1e-3), loss)
    model.fit(x, y, epochs=1, batch_size=256, verbose=0)
    return model


def folded_kernels(model, network: dict) -> dict:
    """{layer: kernel with the BatchNormalization after it folded in} (zeros stay zeros)."""
    kernels = {}
    for name in [c["name"] for c in network["conv"]] + [d["name"] for d in network["dense"]]:
        kernel = np.asarray(model.get_layer(name).kernel, np.float64)
        try:
            bn = model.get_layer(f"bn_{name}")
        except ValueError:
            kernels[name] = kernel
            continue
        gamma, _, _, var = (np.asarray(w, np.float64) for w in bn.get_weights())
        kernels[name] = kernel * gamma / np.sqrt(var + bn.epsilon)
    return kernels


def design_layers(kernels: dict, network: dict, precision: str) -> dict:
    """{layer: (weight codes, weight bits, input bits, kind)} as the design builds each layer."""
    convs = {c["name"] for c in network["conv"]}
    first, last = network["conv"][0]["name"], network["dense"][-1]["name"]
    layers = {}
    for name, kernel in kernels.items():
        quantized = precision == "qkeras6" and name != last  # the output Dense stays at ap_fixed<16,6>
        bits, frac = QKERAS6 if quantized else FIXED16
        codes = np.clip(np.round(kernel * 2.0**frac), -(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        input_bits = 16 if precision == "fixed16" or name == first else 6  # quantized_relu(6) feeds the others
        layers[name] = (codes, bits, input_bits, "conv, io_stream" if name in convs else "dense, io_stream")
    return layers


def layer_rows(data: dict, kernels: list, model) -> list:
    """Per design and layer: (design, layer, kind, bits, live products, mean DSP and LUT of `model`, published)."""
    rows = []
    for design in data["designs"]:
        per_seed = [design_layers(k, data["network"], design["precision"]) for k in kernels]
        for name, published in design["layers"].items():
            _, bits, input_bits, kind = per_seed[0][name]
            features = [
                csynth.layer_features(
                    s[name][0], bits, input_bits, design["reuse_factor"], DSP_A, DSP_B, model.dsp_min_width
                )
                for s in per_seed
            ]
            estimates = [csynth.csynth_estimate(f, model) for f in features]
            products = int(np.mean([f.products for f in features]))
            rows.append(
                (
                    design["name"],
                    name,
                    kind,
                    f"{bits}x{input_bits}",
                    products,
                    *(float(np.mean([e[r] for e in estimates])) for r in ("DSP", "LUT")),
                    published,
                    features,
                )
            )
    return rows


def print_rows(rows: list, title: str) -> dict:
    """The table of model / published per layer; returns {(kind, resource, held out): [errors]}."""
    table, errors = [], {}
    for design, name, kind, bits, products, dsp, lut, published, _ in rows:
        table.append((design, name, kind, bits, products, _ratio(dsp, published["DSP"]), _ratio(lut, published["LUT"])))
        for resource, estimate in (("DSP", dsp), ("LUT", lut)):
            if published[resource]:
                key = (kind, resource, design != FIT)
                errors.setdefault(key, []).append(estimate / published[resource] - 1)
    print(title)
    print("\n".join(format_rows(("design", "layer", "kind", "bits (w x in)", "live products", "DSP", "LUT"), table)))
    return errors


def fitted_2020(data: dict, kernels: list):
    """STREAM_2020 fitted on FIT: the DSP width threshold with the least absolute DSP error, then the two LUT
    coefficients by least squares (the rules' multiplier LUTs first)."""

    def dsp_error(width):
        rows = layer_rows(
            {**data, "designs": [d for d in data["designs"] if d["name"] == FIT]},
            kernels,
            replace(STREAM_2020, dsp_min_width=width),
        )
        return sum(abs(dsp - published["DSP"]) for *_, dsp, _, published, _ in rows), rows

    width, (_, rows) = min(((w, dsp_error(w)) for w in range(2, 13)), key=lambda item: item[1][0])
    model = replace(STREAM_2020, dsp_min_width=width)
    fit_rows = [(f, published["LUT"], model) for *_, published, features in rows for f in features]
    per_site, per_product = csynth.fit_lut_coefficients(fit_rows)
    return replace(model, lut_per_site=per_site, lut_per_product=per_product)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=2)
    args = parser.parse_args()
    data = yaml.safe_load(DESIGNS.read_text())
    x, y = svhn_shaped(fashion_mnist(), TRAIN_IMAGES)
    kernels = [folded_kernels(trained(data["network"], seed, x, y), data["network"]) for seed in range(args.seeds)]
    model = csynth.MODELS[MODEL]
    errors = print_rows(
        layer_rows(data, kernels, model),
        f"{model.tool} C-synthesis model / published (Vivado HLS "
        f"2020.1), per layer ({args.seeds} seeds of Fashion-MNIST training)",
    )
    print("\nerror per layer kind (mean |model / published - 1|, and the range), the model as it is (not refitted):")
    _print_errors({(kind, resource): v for (kind, resource, _), v in errors.items()})
    fitted = fitted_2020(data, kernels)
    print(
        f"\n{fitted.tool}, fitted on {FIT}: {fitted.lut_per_site:.3f} LUT per weight site, "
        f"{fitted.lut_per_product:.3f} per live product, DSP for constants of odd part >= {fitted.dsp_min_width} "
        "bits (narrower: CSD LUT multipliers)"
    )
    errors = print_rows(layer_rows(data, kernels, fitted), "model / published, per layer:")
    print("\nerror per layer kind on the designs held out (targets: DSP +-15%, LUT +-25% per layer):")
    _print_errors({(kind, resource): v for (kind, resource, held), v in errors.items() if held}, TARGETS)
    print("on the design it was fitted on (not a check):")
    _print_errors({(kind, resource): v for (kind, resource, held), v in errors.items() if not held})


def _print_errors(errors: dict, targets: dict | None = None) -> None:
    for (kind, resource), values in sorted(errors.items()):
        within = f", {sum(abs(v) <= targets[resource] for v in values)} of {len(values)} within" if targets else ""
        print(
            f"  {kind:<17} {resource}: {np.mean(np.abs(values)):.1%} ({min(values):+.1%} .. {max(values):+.1%}), "
            f"{len(values)} layers{within}"
        )


def _ratio(estimate: float, published_figure: int) -> str:
    return (
        f"{estimate:.0f} / {published_figure} = {estimate / published_figure:.2f}"
        if published_figure
        else f"{estimate:.0f} / 0"
    )


if __name__ == "__main__":
    from record import run_recorded

    run_recorded(main, __file__)
