"""Accuracy against multipliers removed on Fashion-MNIST: fpgaprune kernel pruning vs tfmot unstructured pruning.

All runs start from the same pretrained CNN (16-32-32 filters unless `--widths` says otherwise). Each pruning
method then trains `--prune-epochs` more epochs with a gradual polynomial schedule (Zhu & Gupta) and removes the
same number of multipliers; the dense model trains the same number of extra epochs. conv1 (kernels of one input
channel) stays dense. Two allocations of the same multiplier budget, each run with both methods:
- uniform: conv2, conv3 and fc each lose the same fraction of their weights (tfmot's usual setup);
- convs only: fc (under 1% of the multipliers) stays dense, and conv2/conv3 lose a little more to compensate.
Prints the table and writes a Pareto PNG.
"""

import argparse
import time
from pathlib import Path

import numpy as np

import fpgaprune as fp
from fpgaprune import data
from fpgaprune.pruning import GradualPruning, PolynomialDecay, Pruner
from fpgaprune.pruning.costs import output_positions
from fpgaprune.tfk import keras

LOSS = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
PRUNED = ("conv2", "conv3", "fc")


def cnn(seed=0, widths=(16, 32, 32)):
    keras.utils.set_random_seed(seed)
    L = keras.layers
    return keras.Sequential(
        [
            keras.Input((28, 28, 1)),
            L.Conv2D(widths[0], 3, activation="relu", name="conv1"),
            L.MaxPooling2D(),
            L.Conv2D(widths[1], 3, activation="relu", name="conv2"),
            L.MaxPooling2D(),
            L.Conv2D(widths[2], 3, activation="relu", name="conv3"),
            L.Flatten(),
            L.Dense(10, name="fc"),
        ]
    )


def multipliers(model) -> tuple[int, int]:
    """(all multipliers, multipliers of nonzero weights) over the Conv/Dense layers, per inference."""
    total = live = 0
    for layer in model.layers:
        if type(layer).__name__ in ("Conv2D", "Dense"):
            kernel = layer.get_weights()[0]
            total += kernel.size * output_positions(layer)
            live += np.count_nonzero(kernel) * output_positions(layer)
    return total, live


def accuracy(model, dataset) -> float:
    return float(np.mean(np.argmax(model.predict(dataset.x_test, batch_size=512, verbose=0), 1) == dataset.y_test))


def train(model, dataset, epochs, callbacks=(), lr=1e-3):
    model.compile(keras.optimizers.Adam(lr), LOSS)
    model.fit(dataset.x_train, dataset.y_train, batch_size=128, epochs=epochs, verbose=0, callbacks=list(callbacks))


def fpgaprune_run(pretrained, dataset, sparsity, epochs, steps_per_epoch, layers=PRUNED):
    structure = {"conv2": "kernel", "conv3": "kernel", "fc": "element"}
    pruner = Pruner(structure={name: structure[name] for name in layers}, layers=list(layers))
    model = pruner.attach(pretrained)
    end = int(0.6 * epochs * steps_per_epoch)
    schedule = PolynomialDecay(0.0, sparsity, 0, end, frequency=max(1, end // 30))
    train(model, dataset, epochs, [GradualPruning(pruner, schedule)])
    return fp.finalize(model)[0]


def tfmot_run(pretrained, dataset, sparsity, epochs, steps_per_epoch, layers=PRUNED):
    import tensorflow_model_optimization as tfmot

    end = int(0.6 * epochs * steps_per_epoch)
    schedule = tfmot.sparsity.keras.PolynomialDecay(0.0, sparsity, 0, end, frequency=max(1, end // 30))

    def wrap(layer):  # a fresh layer: wrapping `layer` itself would train and prune `pretrained` in place
        fresh = layer.__class__.from_config(layer.get_config())
        if layer.name in layers:
            return tfmot.sparsity.keras.prune_low_magnitude(fresh, pruning_schedule=schedule)
        return fresh

    model = keras.models.clone_model(pretrained, clone_function=wrap)
    model.set_weights(_tfmot_weights(model, pretrained))
    train(model, dataset, epochs, [tfmot.sparsity.keras.UpdatePruningStep()])
    return tfmot.sparsity.keras.strip_pruning(model)


def _tfmot_weights(wrapped, pretrained):
    """Pretrained kernels/biases into the wrapped model, by layer and weight name (the wrappers' extra
    mask/threshold/step variables keep their init); every pretrained weight must find its place."""

    def key(weight):
        layer, _, name = weight.name.replace("prune_low_magnitude_", "").partition("/")
        return layer, name.split("/")[-1]

    by_key = {key(w): v for w, v in zip(pretrained.weights, pretrained.get_weights())}
    values = [by_key.pop(key(w), value) for w, value in zip(wrapped.weights, wrapped.get_weights())]
    if by_key:
        raise RuntimeError(f"tfmot's wrapped model has no place for {sorted(by_key)}")
    return values


CONVS = ("conv2", "conv3")


def convs_only(run):
    """`run` with fc dense and the convs' sparsity raised so that the same multipliers are removed."""

    def convs_run(pretrained, dataset, sparsity, epochs, steps_per_epoch):
        costs = {
            name: pretrained.get_layer(name).kernel.shape.num_elements() * output_positions(pretrained.get_layer(name))
            for name in PRUNED
        }
        conv_sparsity = min(1.0, sparsity * sum(costs.values()) / sum(costs[name] for name in CONVS))
        return run(pretrained, dataset, conv_sparsity, epochs, steps_per_epoch, layers=CONVS)

    return convs_run


METHODS = {
    "fpgaprune kernel, uniform": fpgaprune_run,
    "tfmot unstructured, uniform": tfmot_run,
    "fpgaprune kernel, convs only": convs_only(fpgaprune_run),
    "tfmot unstructured, convs only": convs_only(tfmot_run),
}


def methods(allocations) -> dict:
    return {name: run for name, run in METHODS.items() if name.split(", ")[1] in allocations}


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6.5, 4.5), constrained_layout=True)
    for method, marker in zip(METHODS, "oDs^"):
        points = sorted((r["removed"], r["accuracy"]) for r in rows if r["method"] == method)
        if not points:
            continue
        axis.plot([100 * p[0] for p in points], [100 * p[1] for p in points], marker=marker, label=method)
    dense = next(r for r in rows if r["method"] == "dense")
    axis.axhline(100 * dense["accuracy"], color="grey", linestyle="--", label="dense (same epochs)")
    axis.set_xlabel("multipliers removed (%)")
    axis.set_ylabel("Fashion-MNIST test accuracy (%)")
    axis.legend()
    axis.grid(alpha=0.3)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)


def one_seed(seed, args, dataset, steps) -> list[dict]:
    """Every method at every sparsity from one pretrained model (and its dense twin) of this seed."""
    keras.utils.set_random_seed(seed)
    pretrained = cnn(seed, args.widths)
    train(pretrained, dataset, args.pretrain_epochs)
    dense = keras.models.clone_model(pretrained)
    dense.set_weights(pretrained.get_weights())
    train(dense, dataset, args.prune_epochs)
    total, _ = multipliers(dense)
    rows = [{"method": "dense", "sparsity": 0.0, "removed": 0.0, "accuracy": accuracy(dense, dataset)}]
    for sparsity in args.sparsities:
        for method, run in methods(args.allocations).items():
            keras.utils.set_random_seed(seed + 1)
            model = run(pretrained, dataset, sparsity, args.prune_epochs, steps)
            _, live = multipliers(model)
            rows.append(
                {
                    "method": method,
                    "sparsity": sparsity,
                    "removed": 1 - live / total,
                    "accuracy": accuracy(model, dataset),
                }
            )
            print(f"  seed {seed} {method:<32} sparsity {sparsity:.2f}: {rows[-1]['accuracy']:.4f}", flush=True)
    return rows


def averaged(rows_by_seed: list[list[dict]]) -> list[dict]:
    """Rows with the mean accuracy over seeds and its spread (max - min)."""
    merged = []
    for rows in zip(*rows_by_seed):
        accuracies = [r["accuracy"] for r in rows]
        merged.append({**rows[0], "accuracy": float(np.mean(accuracies)), "spread": max(accuracies) - min(accuracies)})
    return merged


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pretrain-epochs", type=int, default=8)
    parser.add_argument("--prune-epochs", type=int, default=10)
    parser.add_argument("--sparsities", type=float, nargs="+", default=[0.5, 0.75, 0.9])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--widths", type=int, nargs=3, default=[16, 32, 32], help="filters of conv1, conv2, conv3")
    parser.add_argument(
        "--allocations", nargs="+", default=["uniform", "convs only"], choices=["uniform", "convs only"]
    )
    parser.add_argument("--out", default="benchmarks/out/pareto.png")
    args = parser.parse_args(argv)
    dataset = data.fashion_mnist()
    steps = int(np.ceil(len(dataset.y_train) / 128))
    started = time.perf_counter()
    rows = averaged([one_seed(seed, args, dataset, steps) for seed in args.seeds])
    print(
        f"\nFashion-MNIST, {'-'.join(map(str, args.widths))} CNN, {args.pretrain_epochs} + {args.prune_epochs} "
        f"epochs per model, mean over seeds {args.seeds} ({time.perf_counter() - started:.0f} s)"
    )
    print(f"{'method':<32}{'sparsity':>9}{'mult. removed':>15}{'accuracy':>10}{'spread':>8}")
    for r in rows:
        print(
            f"{r['method']:<32}{r['sparsity']:>9.2f}{r['removed']:>15.2%}{r['accuracy']:>10.2%}"
            f"{100 * r['spread']:>8.2f}"
        )
    for sparsity in args.sparsities:
        at = {r["method"]: r for r in rows if r["sparsity"] == sparsity}
        for allocation in args.allocations:
            ours, theirs = at[f"fpgaprune kernel, {allocation}"], at[f"tfmot unstructured, {allocation}"]
            print(
                f"{sparsity:.0%} of the pruned layers' multipliers removed, {allocation}: fpgaprune kernel - tfmot "
                f"unstructured = {100 * (ours['accuracy'] - theirs['accuracy']):+.2f} points (multipliers removed "
                f"{ours['removed']:.2%} vs {theirs['removed']:.2%})"
            )
    plot(rows, Path(args.out))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    from record import run_recorded

    run_recorded(main, __file__)
