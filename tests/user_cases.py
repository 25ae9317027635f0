"""Models and data of the shapes users bring (issue: "a user's own model, as it comes"), each saved as its own
files: a trained tf_keras `.h5`, an `.npz` and a run config, the way a user runs `fpgaprune run` on them."""

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml
from cli_host import shared_host

from fpgaprune import data
from fpgaprune.tfk import keras

L = keras.layers
FPGAPRUNE = [sys.executable, "-m", "fpgaprune.cli"]
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
Q8 = {
    "kernel": "quantized_bits(8,1,alpha=1)",
    "bias": "quantized_bits(8,3,alpha=1)",
    "activation": "quantized_relu(8,2)",
}


@dataclass
class Case:
    """A model builder, its labels and training loss, and what the run config adds."""

    build: object
    labels: object = None  # y (integer digits) -> the labels the user saved
    loss: object = "sparse_categorical_crossentropy"
    inputs: object = None  # x (8, 8, 1) in [0, 1] -> the inputs the user saved
    config: dict = field(default_factory=dict)


def _cnn(*head, filters=8):
    return keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            L.Conv2D(filters, 3, name="conv1"),
            L.ReLU(name="relu1"),
            L.Flatten(name="flatten"),
            *head,
        ]
    )


def _functional(merge):
    image = keras.Input((8, 8, 1), name="image")
    a = L.ReLU(name="relu1")(L.Conv2D(6, 3, padding="same", name="conv1")(image))
    b = L.ReLU(name="relu2")(L.Conv2D(6, 3, padding="same", name="conv2")(a if merge == "add" else image))
    merged = L.Add(name="add")([a, b]) if merge == "add" else L.Concatenate(name="concat")([a, b])
    return keras.Model(image, L.Dense(10, name="fc")(L.Flatten(name="flatten")(L.MaxPooling2D(2, name="pool")(merged))))


def _pooled(global_pool):
    pool = L.GlobalAveragePooling2D(name="gap") if global_pool else L.AveragePooling2D(2, name="avg")
    body = [
        keras.Input((8, 8, 1)),
        L.ZeroPadding2D(1, name="pad"),
        L.Conv2D(8, 3, name="conv1"),
        L.ReLU(name="relu1"),
        L.Dropout(0.1, name="drop"),
        L.Conv2D(12, 3, name="conv2"),
        L.ReLU(name="relu2"),
        pool,
    ]
    if not global_pool:
        body.append(L.Flatten(name="flatten"))
    return keras.Sequential(body + [L.Dense(10, name="dense_out"), L.Activation("softmax", name="softmax")])


def _recurrent(kind, head: bool = True):
    """A recurrent layer over the digit's rows, a Dense after it (`head`), or its output the model's."""
    return keras.Sequential([keras.Input((8, 8)), kind(16, name="rnn")] + ([L.Dense(10, name="fc")] if head else []))


LOGITS = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
ROWS = {"inputs": lambda x: x[..., 0]}  # a digit as a sequence of 8 rows of 8
CASES = {
    "softmax": Case(lambda: _cnn(L.Dense(10, activation="softmax", name="fc"))),
    "one_hot": Case(
        lambda: _cnn(L.Dense(10, activation="softmax", name="fc")), lambda y: np.eye(10)[y], "categorical_crossentropy"
    ),
    "sigmoid": Case(
        lambda: _cnn(L.Dense(1, activation="sigmoid", name="fc")),
        lambda y: (y >= 5).astype(np.int64),
        "binary_crossentropy",
    ),
    "regression": Case(lambda: _cnn(L.Dense(1, name="fc")), lambda y: (y / 9.0).astype(np.float32), "mse"),
    "unscaled": Case(lambda: _cnn(L.Dense(10, activation="softmax", name="fc")), inputs=lambda x: np.round(x * 255)),
    "lstm": Case(
        lambda: _recurrent(L.LSTM),
        loss=LOGITS,
        config={"pruning": {"structure": "element", "targets": {"rnn": 0.5}}, "quantization": {"default": Q8}},
        **ROWS,
    ),
    "gru": Case(  # its output the model's (issue 68: C-sim looked for a Dense or Conv there)
        lambda: _recurrent(L.GRU, head=False),
        loss=LOGITS,
        config={"pruning": {"structure": "element", "targets": {"rnn": 0.5}}, "quantization": {"default": Q8}},
        **ROWS,
    ),
    "average_pooling": Case(lambda: _pooled(False)),
    "global_average_pooling": Case(lambda: _pooled(True)),
    "residual_add": Case(lambda: _functional("add"), loss=LOGITS),
    "concatenate": Case(lambda: _functional("concatenate"), loss=LOGITS),
    "names": Case(
        lambda: keras.Sequential(
            [
                keras.Input((8, 8, 1)),
                L.Conv2D(8, 3, name="conv.2"),
                L.ReLU(name="relu-2"),
                L.Flatten(name="flat"),
                L.Dense(10, name="dense-out"),
            ]
        ),
        loss=LOGITS,
        config={"pruning": {"targets": {"conv.2": 0.5}}},
    ),
}


def write_case(name: str, root: Path, epochs: int = 4) -> Path:
    """Train the case's model on the digits, save it with tf_keras (.h5) beside its .npz; return its run config."""
    case, digits = CASES[name], data.digits()
    keras.utils.set_random_seed(0)
    inputs = case.inputs or (lambda x: x)
    labels = case.labels or (lambda y: y)
    arrays = {
        "x_train": inputs(digits.x_train),
        "y_train": labels(digits.y_train),
        "x_test": inputs(digits.x_test),
        "y_test": labels(digits.y_test),
    }
    model = case.build()
    model.compile(keras.optimizers.Adam(3e-3), case.loss)
    model.fit(arrays["x_train"], arrays["y_train"], epochs=epochs, batch_size=32, verbose=0)
    model.save(root / f"{name}.h5")
    np.savez(root / f"{name}.npz", **arrays)
    config = {
        "name": name,
        "model": {"file": str(root / f"{name}.h5")},
        "data": {"dataset": "npz", "file": str(root / f"{name}.npz")},
        "pruning": {"structure": "kernel", "targets": {"conv1": 0.5}},
        "finetune": {"epochs": 1},
        "quantization": {"qat_epochs": 1},
        "outputs": {"dir": str(root / "runs" / name), "tb_samples": 20, "synthesize_layers": False},
    }
    for section, values in case.config.items():
        config[section] = {**config.get(section, {}), **values}
    path = root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def run_case(path: Path) -> tuple:
    """(the CLI's result, {stage: metrics}) of `fpgaprune run` on a case's config."""
    result = shared_host(ENV).run(["run", path])  # as `fpgaprune run PATH` in a process that imported TensorFlow
    run = Path(yaml.safe_load(path.read_text())["outputs"]["dir"])
    metrics = {stage.parent.name: json.loads(stage.read_text())["metrics"] for stage in run.glob("*/stage.json")}
    return result, metrics
