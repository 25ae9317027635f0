"""Estimates vs open-source synthesis on Fashion-MNIST layers, and the DA LUT calibration on held-out layers.

A 16-16 CNN trains one epoch; its conv2 kernels and fc weights are pruned one-shot by L1 at several
sparsities and quantized to 8 bits. For each pruned model and layer: the multiplier-export estimate, and the
DA circuit (da4ml's adder graph of `x @ W + b` with the settings of hls4ml's distributed_arithmetic pass)
synthesized by yosys, all circuits side by side in watched workers (one per core) under a generous budget.
The DA LUT estimator is fitted on the layers of some sparsities and its error reported on the layers of the
others: `fpgaprune/resources/calibration.py` RECORD keeps the result. Also: one conv2 kernel removed, measured.
"""

import argparse
import tempfile
import time
from pathlib import Path

import fpgaprune as fp
from fpgaprune import data
from fpgaprune.pruning import Pruner
from fpgaprune.quantize import to_qkeras
from fpgaprune.record import record_of
from fpgaprune.resources import estimate_resources
from fpgaprune.resources.calibration import fit, held_out_errors
from fpgaprune.resources.measure import kernel_removal, live_matrix
from fpgaprune.resources.yosys import MeasurementBudget, Synthesis, fixed_kif, synthesize_all
from fpgaprune.support.text_table import format_rows
from fpgaprune.tfk import keras

SPEC = {
    "default": {
        "kernel": "quantized_bits(8,0,alpha=1)",
        "bias": "quantized_bits(8,3,alpha=1)",
        "activation": "quantized_relu(8,3)",
    }
}


def cnn():
    keras.utils.set_random_seed(0)
    L = keras.layers
    return keras.Sequential(
        [
            keras.Input((28, 28, 1)),
            L.Conv2D(8, 3, strides=2, activation="relu", name="conv1"),
            L.Conv2D(16, 3, strides=2, activation="relu", name="conv2"),
            L.GlobalAveragePooling2D(),
            L.Dense(10, name="fc"),
        ]
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", type=float, nargs="+", default=[0.0, 0.5, 0.9])
    parser.add_argument("--held-out", type=float, nargs="+", default=[0.3, 0.75])
    args = parser.parse_args()
    dataset = data.fashion_mnist()
    pretrained = cnn()
    pretrained.compile(keras.optimizers.Adam(1e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    pretrained.fit(dataset.x_train, dataset.y_train, batch_size=128, epochs=1, verbose=0)
    dense = to_qkeras(fp.hold(pretrained), SPEC)
    budget = MeasurementBudget(seconds=6 * 3600, memory=12 << 30)
    circuits, estimates, rows = {}, {}, []
    with tempfile.TemporaryDirectory() as scratch:
        for sparsity in args.fit + args.held_out:
            pruner = Pruner(structure={"conv2": "kernel", "fc": "element"}, layers=["conv2", "fc"])
            model = to_qkeras(pruner.prune(pretrained, sparsity), SPEC)
            exported = fp.export(
                model, "latency_parallel", "zcu102", Path(scratch) / f"s{sparsity}", x=dataset.x_test[:200]
            )
            estimate = estimate_resources(exported, record_of(dense))
            for layer in estimate.layers:
                record = exported.nodes[layer.node]
                circuits[f"{layer.name}@{sparsity}"] = (live_matrix(record), fixed_kif(record.input), None, record.bias)
                estimates[f"{layer.name}@{sparsity}"] = layer
            if sparsity == args.held_out[-1]:
                last, last_estimate = exported, estimate
        log, started = [], time.perf_counter()
        measured = dict(synthesize_all(circuits, "UltraScale+", budget=budget, log=log))
        removal = kernel_removal(
            last.nodes["conv2"], record_of(dense).layers["conv2"], *_a_pruned_kernel(last_estimate), last.board.family
        )
    seconds = {entry["circuit"]: entry["seconds"] for entry in log}
    for name, synthesis in measured.items():
        layer, sparsity = name.split("@")
        if isinstance(synthesis, Synthesis):
            rows.append(
                (
                    layer,
                    f"{float(sparsity):.2f}",
                    estimates[name].pruned.products,
                    estimates[name].pruned.lut,
                    synthesis.luts,
                    f"{synthesis.da4ml_cost:.0f}",
                    f"{seconds.get(name, 0):.1f}",
                )
            )
    measured = {name: s for name, s in measured.items() if isinstance(s, Synthesis)}
    print(f"all circuits side by side: {time.perf_counter() - started:.0f} s")
    header = (
        "layer",
        "sparsity",
        "products",
        "LUT estimate (multiplier export)",
        "LUT yosys (DA, measured)",
        "da4ml cost",
        "synthesis s",
    )
    print("\n".join(format_rows(header, rows)))
    fitted = {k: v for k, v in measured.items() if float(k.split("@")[1]) in args.fit}
    calibration = held_out_errors(fit(fitted), {k: v for k, v in measured.items() if k not in fitted})
    print(calibration.format())
    print(
        f"yosys, {removal.kernel}: with it {removal.with_kernel.luts} LUT, without {removal.without_kernel.luts} "
        f"LUT ({removal.lut_difference:+d}, measured)"
    )


def _a_pruned_kernel(estimate) -> tuple[int, int]:
    saving = next(s for s in estimate.savings() if s.layer == "conv2")
    ci, co = saving.name.split("[:, :, ")[1].rstrip("]").split(", ")
    return int(ci), int(co)


if __name__ == "__main__":
    from record import run_recorded

    run_recorded(main, __file__)
