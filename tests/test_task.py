"""The task follows the model's output activation and the labels: loss, metric, decisions; contradictions are
one line naming the file, the array or the layer."""

import numpy as np
import pytest

from fpgaprune.errors import DataError
from fpgaprune.frontends.tensorflow.training import keras_loss
from fpgaprune.model.task import infer_task, label_form
from fpgaprune.record import resolved
from fpgaprune.tfk import keras

L = keras.layers
RNG = np.random.default_rng(0)
INTEGERS = RNG.integers(0, 10, 60)
BINARY = RNG.integers(0, 2, 60)
MULTI_HOT = RNG.integers(0, 2, (60, 4))
TARGETS = RNG.normal(size=60).astype(np.float32)


def _model(units, activation=None, separate=False):
    head = [L.Dense(units, name="out")] + ([L.Activation(activation, name="act")] if separate else [])
    if not separate:
        head = [L.Dense(units, activation=activation, name="out")]
    return keras.Sequential([keras.Input((5,)), L.Dense(8, activation="relu", name="hidden"), *head])


@pytest.mark.parametrize(
    "model, labels, kind, output, loss, metric",
    [
        (_model(10, "softmax"), INTEGERS, "classification", "softmax", "sparse_categorical_crossentropy", "accuracy"),
        (
            _model(10, "softmax", separate=True),
            np.eye(10)[INTEGERS],
            "classification",
            "softmax",
            "sparse_categorical_crossentropy",
            "accuracy",
        ),
        (_model(10), INTEGERS, "classification", "linear", "sparse_categorical_crossentropy", "accuracy"),
        (_model(1, "sigmoid"), BINARY, "binary", "sigmoid", "binary_crossentropy", "accuracy"),
        (_model(1), BINARY, "binary", "linear", "binary_crossentropy", "accuracy"),
        (_model(4, "sigmoid"), MULTI_HOT, "multilabel", "sigmoid", "binary_crossentropy", "label_accuracy"),
        (
            _model(4, "sigmoid"),
            np.eye(4)[INTEGERS % 4],
            "multilabel",
            "sigmoid",
            "binary_crossentropy",
            "label_accuracy",
        ),
        (_model(1), TARGETS, "regression", "linear", "mse", "rmse"),
        (_model(3), RNG.normal(size=(60, 3)), "regression", "linear", "mse", "rmse"),
        (_model(1, "relu"), np.abs(TARGETS), "regression", "linear", "mse", "rmse"),
        # a ReLU at the output (a published LeNet-5 ends so): its integer labels make it a classifier of logits
        (_model(10, "relu"), INTEGERS, "classification", "linear", "sparse_categorical_crossentropy", "accuracy"),
        (
            _model(10, "relu", separate=True),
            INTEGERS,
            "classification",
            "linear",
            "sparse_categorical_crossentropy",
            "accuracy",
        ),
    ],
)
def test_the_output_activation_and_the_labels_make_the_task(model, labels, kind, output, loss, metric):
    task = infer_task(resolved(model), labels, labels[:20], "data.npz")
    assert (task.kind, task.output, task.loss, task.metric) == (kind, output, loss, metric)
    assert task.from_logits == (output == "linear" and kind != "regression")
    trained = task.labels_for_training(labels)
    model.compile("adam", keras_loss(task, keras))
    model.fit(np.zeros((60, 5), np.float32), trained, epochs=1, verbose=0)  # the loss takes these labels


def test_label_forms():
    assert label_form(INTEGERS, 10) == "integer" and label_form(BINARY, 1) == "binary"
    assert label_form(np.eye(10)[INTEGERS], 10) == "one_hot" and label_form(MULTI_HOT, 4) == "multi_hot"
    assert label_form(TARGETS, 1) == "targets" and label_form(BINARY.astype(float), 10) == "integer"


def test_scores_and_agreements_by_task():
    classes = infer_task(resolved(_model(3)), np.array([0, 1, 2]), np.array([0, 1, 2]), "d")
    outputs = np.array([[3.0, 0, 0], [0, 1, 2], [0, 0, 5]])
    assert classes.score(outputs, np.array([0, 1, 2])) == pytest.approx(2 / 3)
    assert classes.score(outputs, np.eye(3)[[0, 1, 2]]) == pytest.approx(2 / 3)  # one-hot labels alike
    binary = infer_task(resolved(_model(1, "sigmoid")), np.array([0, 1, 1, 0]), np.array([0, 1]), "d")
    assert binary.score(np.array([[0.2], [0.7], [0.4], [0.9]]), np.array([0, 1, 1, 0])) == 0.5
    assert binary.agreement == "decision agreement"
    assert binary.agreement_of(np.array([[0.2], [0.7]]), np.array([[0.4], [0.6]])) == 1.0
    regression = infer_task(resolved(_model(1)), TARGETS, TARGETS, "d")
    assert regression.score(TARGETS + 0.5, TARGETS) == pytest.approx(0.5)  # RMSE, in the targets' units
    assert regression.agreement is None and regression.agreement_of(TARGETS, TARGETS) is None
    assert regression.format_score(0.123456) == "0.1235" and not regression.higher_is_better
    mae = infer_task(resolved(_model(1)), TARGETS, TARGETS, "d", loss="mae")
    assert mae.metric == "mae" and mae.score(TARGETS - 0.25, TARGETS) == pytest.approx(0.25)


@pytest.mark.parametrize(
    "model, y_train, y_test, options, message",
    [
        (
            _model(10, "softmax"),
            TARGETS,
            TARGETS,
            {},
            "data.npz: y_train holds float targets, but the output layer "
            "'out' is a softmax (classes); for regression end the model with a linear Dense, or give class labels",
        ),
        (
            _model(4, "softmax"),
            MULTI_HOT,
            MULTI_HOT,
            {},
            "y_train rows hold several 1s (multi-label), but the output layer 'out' is a softmax",
        ),
        (
            _model(10),
            np.full(60, 12),
            INTEGERS,
            {},
            "y_train holds the label 12; the output layer 'out' has 10 classes, so labels must lie in 0..9",
        ),
        (
            _model(10),
            TARGETS,
            TARGETS,
            {},
            "y_train holds 1 float target per sample; the output layer 'out' has 10 units, and a regression "
            "needs one target per unit; for classes, give integer labels",
        ),
        (
            _model(1, "sigmoid"),
            INTEGERS,
            INTEGERS,
            {},
            "y_train must hold 0/1 labels, 1 per sample, for the sigmoid output layer 'out' (binary)",
        ),
        (
            _model(1, "softmax"),
            BINARY,
            BINARY,
            {},
            "the output layer 'out' has 1 unit; classification needs one per class",
        ),
        (_model(10), INTEGERS, np.eye(10)[INTEGERS], {}, "y_train holds integer labels but y_test one-hot ones"),
        (
            _model(10),
            INTEGERS,
            INTEGERS,
            {"loss": "mse"},
            "training.loss 'mse' does not train a classification task; "
            "use sparse_categorical_crossentropy or categorical_crossentropy",
        ),
        (
            _model(10, "softmax"),
            INTEGERS,
            INTEGERS,
            {"task": "regression"},
            "training.task 'regression' needs a linear output; the output layer 'out' is a softmax",
        ),
        (
            _model(4, "tanh"),
            MULTI_HOT,
            MULTI_HOT,
            {},
            "the output layer 'out' ends in tanh, which fpgaprune does not train these labels with",
        ),
        (
            _model(10, "relu"),
            INTEGERS,
            INTEGERS,
            {"task": "regression"},
            "y_train holds 1 integer label per sample; the output layer 'out' has 10 units, and a regression needs "
            "one target per unit; for classes, set training.task: classification",
        ),
    ],
)
def test_a_contradiction_is_one_line_naming_the_file_the_array_or_the_layer(model, y_train, y_test, options, message):
    with pytest.raises(DataError) as error:
        infer_task(resolved(model), y_train, y_test, "data.npz", **options)
    assert message in str(error.value) and "\n" not in str(error.value), str(error.value)
