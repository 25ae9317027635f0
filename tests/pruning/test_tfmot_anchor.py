"""The benchmarks' tfmot anchor (`benchmarks/bench_pareto.py`): every method must start from the same model."""

import sys
from pathlib import Path

import numpy as np

from fpgaprune import data
from fpgaprune.model.architectures import small_cnn
from fpgaprune.tfk import keras

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"


def test_tfmot_run_starts_from_the_pretrained_weights_and_leaves_them_unchanged(monkeypatch):
    """tfmot's wrapper around the pretrained layer itself trained and pruned that layer in place, so every later
    method of a benchmark started from tfmot's result. The run must copy the layers, and carry every weight."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import bench_pareto

    dataset = data.digits(seed=0)
    keras.utils.set_random_seed(0)
    pretrained = small_cnn(dataset.x_train.shape[1:], (4, 8), dataset.classes)
    before = [w.copy() for w in pretrained.get_weights()]
    started, train = {}, bench_pareto.train

    def record_start(model, dataset, epochs, callbacks=()):
        started.update(
            {w.name.replace("prune_low_magnitude_", ""): v for w, v in zip(model.weights, model.get_weights())}
        )
        return train(model, dataset, epochs, callbacks)

    monkeypatch.setattr(bench_pareto, "train", record_start)
    pruned = bench_pareto.tfmot_run(pretrained, dataset, 0.8, 1, 4, layers=["conv2", "fc"])
    for weight, value in zip(pretrained.weights, before):
        np.testing.assert_array_equal(weight.numpy(), value, err_msg=weight.name)  # unchanged
        np.testing.assert_array_equal(started[weight.name], value, err_msg=weight.name)  # where tfmot started
    assert np.mean(pruned.get_layer("conv2").kernel.numpy() == 0) > 0.7  # and it did prune its own copy
    sys.modules.pop("bench_pareto", None)
