"""The RTL backend against da4ml's own `trace_model` on HGQ2 models (the HGQ2 environment, docs/hgq2.md): the
digits CNN of the HGQ2 tests (conv 3x3 x6 -> conv 3x3 x8 -> dense 10, half of conv2's kernels removed), HGQ2 QAT
with its input quantizers per tensor and per value, then fully unrolled by both: da4ml's cost of each logic, and
whether they compute the same outputs on the held-out samples. The stream's cost (per tensor only) beside them.

    .venv-hgq2/bin/python benchmarks/bench_rtl_hgq2.py [--epochs 3]
"""

import argparse
import tempfile
from pathlib import Path

import numpy as np


def _quantized(granularity: str, epochs: int):
    import keras
    from sklearn.datasets import load_digits

    import fpgaprune as fp
    from fpgaprune.framework import front_end_of
    from fpgaprune.model.task import infer_task
    from fpgaprune.record import resolved

    data = load_digits()
    x, y = (np.minimum(data.images, 15) / 16).astype("float32")[..., None], data.target
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            keras.layers.Conv2D(6, 3, activation="relu", name="conv1"),
            keras.layers.Conv2D(8, 3, activation="relu", name="conv2"),
            keras.layers.Flatten(name="flatten"),
            keras.layers.Dense(10, name="fc"),
        ]
    )
    model.compile(keras.optimizers.Adam(3e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x[:1400], y[:1400], epochs=4, batch_size=64, verbose=0)
    pruned = fp.prune(model, 0.5, layers=["conv2"], selections=["conv2[:, :, 3, 5]"])
    spec = {"library": "hgq2", "hgq2": {"beta0": 1e-5, "activation_granularity": granularity}}
    quantized = fp.quantized_twin(pruned, spec)
    front = front_end_of(quantized)
    task = infer_task(resolved(quantized), y, y, "digits")
    front.fit(
        quantized, x[:1400], y[:1400], task=task, optimizer="adamw", learning_rate=5e-3, epochs=epochs, batch_size=64
    )
    front.calibrate(quantized, x[:1400])
    return quantized, x[1400:]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args(argv)
    from da4ml.converter import trace_model
    from da4ml.trace import comb_trace

    import fpgaprune as fp

    print("granularity  trace_model cost  RTL unrolled cost  ratio  same outputs  stream cost")
    with tempfile.TemporaryDirectory() as scratch:
        for granularity in ("tensor", "element"):
            quantized, x_test = _quantized(granularity, args.epochs)
            flat = x_test.reshape(len(x_test), -1)
            unrolled = fp.export(quantized, "rtl_unrolled", "ulx3s-85f", Path(scratch) / granularity, x=x_test,
                                 backend="RTL")  # fmt: skip
            theirs = comb_trace(*trace_model(quantized))
            same = np.array_equal(unrolled.hls_model.logic.predict(flat), theirs.predict(flat))
            stream = "refused (types differ by position)"
            if granularity == "tensor":
                streamed = fp.export(quantized, "latency_parallel", "ulx3s-85f", Path(scratch) / "s", x=x_test,
                                     backend="RTL")  # fmt: skip
                stream = f"{streamed.manifest['da4ml_cost']:g}"
            ours = unrolled.manifest["da4ml_cost"]
            print(f"{granularity:<12} {theirs.cost:<17g} {ours:<18g} {ours / theirs.cost:<6.3f} {same!s:<13} {stream}")


if __name__ == "__main__":
    from record import run_recorded

    run_recorded(main, __file__)
