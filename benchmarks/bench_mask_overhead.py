"""Per-step training time of a CNN with 30% of its conv kernels held at zero, four ways, side by side.

Variants: no masks; fpgaprune holds; tfmot prune_low_magnitude (ConstantSparsity at the same sparsity);
the `.assign(0)` of every pruned kernel after each batch (the original question's workaround).
The variants run in interleaved rounds in one process; each reports the median time per step after its
first (tracing) epoch, as a ratio to "no masks".
"""

import argparse
import time

import numpy as np

import fpgaprune as fp
from fpgaprune import data
from fpgaprune.pruning import weakest_kernels
from fpgaprune.tfk import keras

SPARSITY = 0.3
LOSS = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def build_cnn(input_shape, seed=0):
    keras.utils.set_random_seed(seed)
    return keras.Sequential(
        [
            keras.Input(input_shape),
            keras.layers.Conv2D(16, 3, activation="relu", name="conv1"),
            keras.layers.Conv2D(32, 3, activation="relu", name="conv2"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Conv2D(32, 3, activation="relu", name="conv3"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Flatten(),
            keras.layers.Dense(10, name="fc"),
        ]
    )


def kernel_masks(model):
    return {
        name: weakest_kernels(model.get_layer(name).kernel.numpy(), SPARSITY) for name in ("conv1", "conv2", "conv3")
    }


class StepTimer(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.times = []

    def on_train_batch_begin(self, batch, logs=None):
        self._start = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        self.times.append(time.perf_counter() - self._start)


class AssignZeroEachBatch(keras.callbacks.Callback):
    """What users write by hand: after every batch, `kernel[..., ci, co].assign(0)` for every pruned kernel."""

    def __init__(self, masks):
        super().__init__()
        self.pairs = {name: list(zip(*np.nonzero(mask[0, 0]))) for name, mask in masks.items()}

    def on_train_batch_end(self, batch, logs=None):
        for name, pairs in self.pairs.items():
            kernel = self.model.get_layer(name).kernel
            zeros = np.zeros(kernel.shape[:-2], np.float32)
            for ci, co in pairs:
                kernel[..., ci, co].assign(zeros)


def variants(base, masks):
    """name -> (model, extra callbacks); all start from the same weights."""
    import tensorflow_model_optimization as tfmot

    manifest = fp.MaskManifest()
    for name, mask in masks.items():
        manifest.prune(f"{name}/kernel", where=mask)
    plain = keras.models.clone_model(base)
    plain.set_weights(base.get_weights())
    assign = keras.models.clone_model(base)
    assign.set_weights(base.get_weights())
    schedule = tfmot.sparsity.keras.ConstantSparsity(SPARSITY, begin_step=0, frequency=1)
    tfmot_model = tfmot.sparsity.keras.prune_low_magnitude(keras.models.clone_model(base), pruning_schedule=schedule)
    return {
        "no masks": (plain, []),
        "fpgaprune holds": (fp.hold(base, manifest), []),
        "tfmot prune_low_magnitude": (tfmot_model, [tfmot.sparsity.keras.UpdatePruningStep()]),
        "assign(0) per batch": (assign, [AssignZeroEachBatch(masks)]),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=12800, help="training samples per epoch")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds (one epoch each)")
    args = parser.parse_args(argv)
    try:
        dataset = data.fashion_mnist()
    except fp.FpgapruneError as exc:
        print(f"{exc}; using the digits instead")
        dataset = data.digits()
    x, y = dataset.x_train[: args.samples], dataset.y_train[: args.samples]
    base = build_cnn(x.shape[1:])
    runs = variants(base, kernel_masks(base))
    timers = {}
    for name, (model, callbacks) in runs.items():
        model.compile(keras.optimizers.Adam(1e-3), LOSS)
        model.fit(x, y, batch_size=args.batch, epochs=1, verbose=0, callbacks=callbacks)  # trace + warm-up
        timers[name] = StepTimer()
    for _ in range(args.rounds):
        for name, (model, callbacks) in runs.items():
            model.fit(x, y, batch_size=args.batch, epochs=1, verbose=0, callbacks=callbacks + [timers[name]])
    medians = {name: float(np.median(timer.times)) for name, timer in timers.items()}
    print(
        f"{dataset.name}: {len(x)} samples, batch {args.batch}, {args.rounds} interleaved rounds, "
        f"{SPARSITY:.0%} of conv kernels pruned"
    )
    print(f"{'variant':<28}{'ms/step':>10}{'ratio':>9}")
    for name, median in medians.items():
        print(f"{name:<28}{median * 1e3:>10.2f}{median / medians['no masks']:>8.2f}x")
    ratio = medians["fpgaprune holds"] / medians["no masks"]
    print(f"fpgaprune overhead target <= 1.05x: {'met' if ratio <= 1.05 else 'NOT met'} ({ratio:.3f}x)")


if __name__ == "__main__":
    from record import run_recorded

    run_recorded(main, __file__)
