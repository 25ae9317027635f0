"""Executed multiplications per inference, fpgaprune's kernel-sparse code vs stock hls4ml, on Fashion-MNIST.

A 16-16 CNN is trained for one epoch, its conv2 kernels and fc weights pruned one-shot by L1 to several
sparsities, quantized to 8 bits, and exported with each preset. An instrumented C-sim build counts the
products each layer runs per inference; the table prints that count / (live weights x output positions)
for both (target for fpgaprune: 1.00 at every reuse factor), checks C-sim against QKeras, and prints the
C-sim compile time of both builds, measured side by side in this run.
"""

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from fpgaprune import data
from fpgaprune.hls import convert_model, count_products, csim_check, export_config
from fpgaprune.hls.manifest import quantized_kernel
from fpgaprune.pruning import Pruner
from fpgaprune.pruning.costs import output_positions
from fpgaprune.quantize import input_type, to_qkeras
from fpgaprune.record import record_of, resolved
from fpgaprune.support.text_table import format_rows
from fpgaprune.tfk import keras

SPEC = {
    "default": {
        "kernel": "quantized_bits(8,0,alpha=1)",
        "bias": "quantized_bits(8,3,alpha=1)",
        "activation": "quantized_relu(8,3)",
    }
}
PRESETS = ("latency_parallel", "resource_parallel", "latency_stream", "resource_stream")


def cnn(filters=(16, 16)):
    keras.utils.set_random_seed(0)
    L = keras.layers
    return keras.Sequential(
        [
            keras.Input((28, 28, 1)),
            L.Conv2D(filters[0], 3, strides=2, activation="relu", name="conv1"),
            L.Conv2D(filters[1], 3, strides=2, activation="relu", name="conv2"),
            L.Flatten(),
            L.Dense(10, name="fc"),
        ]
    )


def pruned_qkeras(pretrained, dataset, sparsity):
    pruner = Pruner(structure={"conv2": "kernel", "fc": "element"}, layers=["conv2", "fc"])
    model = pruner.prune(pretrained, sparsity)
    return to_qkeras(model, SPEC)


def live_products(model) -> int:
    return sum(
        int(np.count_nonzero(quantized_kernel(record_of(model).layers[layer.name]))) * output_positions(layer)
        for layer in model.layers
        if quantized_kernel(record_of(model).layers[layer.name]) is not None
    )


def timed_compile(hls_model) -> float:
    start = time.perf_counter()
    hls_model.compile()
    return time.perf_counter() - start


def measure(model, x, preset, workdir: Path, compile_times: bool) -> dict:
    row = {}
    for label, sparse in (("fpgaprune", True), ("hls4ml", False)):
        config, io_type, _ = export_config(resolved(model), preset, x, kernel_sparse=sparse)
        hls_model = convert_model(
            resolved(model), config, workdir / f"{preset}_{label}", io_type=io_type, backend="Vitis"
        )
        if compile_times:
            row[f"{label} compile s"] = f"{timed_compile(hls_model):.1f}"
        if sparse:
            check = csim_check(hls_model, resolved(model), x, input_type(x))
            row["C-sim"] = "bit-exact" if check.bit_exact else f"{check.mismatches} differ"
        row[label] = sum(count_products(hls_model, x[:2]).values()) / live_products(model)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sparsities", type=float, nargs="+", default=[0.5, 0.75, 0.9])
    parser.add_argument("--presets", nargs="+", default=list(PRESETS))
    args = parser.parse_args()
    dataset = data.fashion_mnist()
    pretrained = cnn()
    pretrained.compile(keras.optimizers.Adam(1e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    pretrained.fit(dataset.x_train, dataset.y_train, batch_size=128, epochs=1, verbose=0)
    x = dataset.x_test[:50]
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for i, sparsity in enumerate(args.sparsities):
            model = pruned_qkeras(pretrained, dataset, sparsity)
            for preset in args.presets:
                row = measure(model, x, preset, Path(scratch) / f"s{i}", compile_times=(i == 0))
                rows.append(
                    (
                        f"{sparsity:.2f}",
                        preset,
                        f"{row['fpgaprune']:.2f}",
                        f"{row['hls4ml']:.2f}",
                        row["C-sim"],
                        row.get("fpgaprune compile s", ""),
                        row.get("hls4ml compile s", ""),
                    )
                )
    header = (
        "sparsity",
        "preset",
        "fpgaprune exec/live",
        "hls4ml exec/live",
        "C-sim vs QKeras",
        "fpgaprune compile s",
        "hls4ml compile s",
    )
    print("\n".join(format_rows(header, rows)))


if __name__ == "__main__":
    from record import run_recorded

    run_recorded(main, __file__)
