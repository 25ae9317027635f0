"""The default demo: train a small CNN on the offline digits, prune its weakest conv2 kernels, retrain, compare.

Run it with `python -m fpgaprune.demo [--out runs/demo] [--fraction 0.5]`.
"""

import argparse
import time
from pathlib import Path

import numpy as np

import fpgaprune as fp
from fpgaprune import data
from fpgaprune.architectures import small_cnn
from fpgaprune.pruning import kernel_scores, weakest_kernels
from fpgaprune.tfk import keras


def _train(model, dataset, epochs: int, learning_rate: float) -> float:
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(keras.optimizers.Adam(learning_rate), loss, metrics=["accuracy"])
    model.fit(dataset.x_train, dataset.y_train, batch_size=32, epochs=epochs, verbose=0, shuffle=True)
    return _accuracy(model, dataset)


def _accuracy(model, dataset) -> float:
    logits = model.predict(dataset.x_test, verbose=0, batch_size=256)
    return float(np.mean(np.argmax(logits, axis=1) == dataset.y_test))


def run(out_dir="runs/demo", fraction: float = 0.5, epochs: int = 20, seed: int = 0) -> dict:
    """Train, prune the `fraction` of conv2 kernels with the lowest L1 norm, retrain; return the accuracies."""
    keras.utils.set_random_seed(seed)
    started = time.perf_counter()
    dataset = data.digits(seed=seed)
    dense = small_cnn(filters=(16, 32))
    dense_accuracy = _train(dense, dataset, epochs, 3e-3)

    kernel = dense.get_layer("conv2").kernel.numpy()
    mask = weakest_kernels(kernel, fraction, norm="l1")
    scores = kernel_scores(kernel, "l1")
    weakest = np.dstack(np.unravel_index(np.argsort(scores, axis=None)[:5], scores.shape))[0]
    print(f"conv2 {list(kernel.shape)}: pruning {int(mask[0, 0].sum())} of {scores.size} kernels by L1 norm")
    print("  weakest: " + ", ".join(f"conv2[:, :, {ci}, {co}] ({scores[ci, co]:.3f})" for ci, co in weakest))

    held = fp.hold(dense, fp.MaskManifest().prune("conv2/kernel", where=mask))
    pruned_accuracy = _accuracy(held, dataset)
    retrained_accuracy = _train(held, dataset, epochs // 2, 1e-3)
    drift = int(np.count_nonzero(held.get_layer("conv2").kernel.numpy()[mask]))

    final, manifest = fp.finalize(held)
    out = Path(out_dir)
    fp.save_model(final, out / "pruned.keras")
    manifest.save(out / "masks.json")
    result = {
        "dense": dense_accuracy,
        "pruned, no retraining": pruned_accuracy,
        "pruned + retrained": retrained_accuracy,
    }
    print(f"\nheld-out accuracy on {len(dataset.y_test)} digits:")
    for stage, value in result.items():
        print(f"  {stage:<24} {value:7.2%}")
    print(f"pruned weights that moved during retraining: {drift} (must be 0)")
    print(f"wrote {out / 'pruned.keras'} and {out / 'masks.json'} in {time.perf_counter() - started:.0f} s")
    return {**result, "drift": drift}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="runs/demo", help="directory for the pruned model and mask manifest")
    parser.add_argument("--fraction", type=float, default=0.5, help="fraction of conv2 kernels to prune")
    parser.add_argument("--epochs", type=int, default=20, help="training epochs (retraining gets half)")
    args = parser.parse_args(argv)
    result = run(args.out, args.fraction, args.epochs)
    return 0 if result["drift"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
