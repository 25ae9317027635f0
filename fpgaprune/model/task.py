"""What a model is trained for, read from its output activation and its labels: the loss, the metric, and
which figures make sense (an argmax agreement for classes, an error for regression targets).

- softmax or logits, integer classes or one-hot rows: classification, sparse categorical cross-entropy, accuracy;
- sigmoid or one logit, 0/1 labels: binary, binary cross-entropy, accuracy;
- sigmoid or logits, 0/1 rows (multi-hot; one-hot too): multilabel, binary cross-entropy, label accuracy;
- linear (or any other activation), float targets: regression, MSE (or MAE, Huber), RMSE (or MAE).

One-hot rows become class indices (the same loss as categorical cross-entropy). `training.task` and
`training.loss` set them explicitly; a contradiction with the model or the data is one line.
"""

from dataclasses import dataclass

import numpy as np

from fpgaprune.errors import DataError
from fpgaprune.model.layer_kinds import OUTPUT_PASS

TASKS = ("classification", "binary", "multilabel", "regression")
LOSSES = {
    "classification": ("sparse_categorical_crossentropy", "categorical_crossentropy"),
    "binary": ("binary_crossentropy",),
    "multilabel": ("binary_crossentropy",),
    "regression": ("mse", "mae", "huber"),
}
METRICS = {"accuracy": "accuracy", "label_accuracy": "label accuracy", "rmse": "RMSE", "mae": "MAE"}


@dataclass(frozen=True)
class Task:
    """A trained model's task: its kind, its output activation and units, the labels' form and the loss."""

    kind: str  # classification, binary, multilabel or regression
    output: str  # softmax, sigmoid or linear (logits, or regression values)
    units: int
    labels: str  # integer, one_hot, multi_hot, binary or targets
    loss: str

    @property
    def from_logits(self) -> bool:
        return self.output == "linear" and self.kind != "regression"

    @property
    def metric(self) -> str:
        """The key of the headline figure in a stage's metrics: accuracy, label_accuracy, rmse or mae."""
        if self.kind == "regression":
            return "mae" if self.loss == "mae" else "rmse"
        return "label_accuracy" if self.kind == "multilabel" else "accuracy"

    @property
    def higher_is_better(self) -> bool:
        return self.kind != "regression"

    @property
    def agreement(self) -> str | None:
        """What C-sim and QKeras are compared on besides their values: None for regression targets."""
        return {
            "classification": "argmax agreement",
            "binary": "decision agreement",
            "multilabel": "label decision agreement",
        }.get(self.kind)

    def describe(self) -> str:
        labels = {
            "integer": "integer class labels",
            "one_hot": "one-hot labels",
            "multi_hot": "0/1 label rows",
            "binary": "0/1 labels",
            "targets": "float targets",
        }[self.labels]
        output = "logits" if self.from_logits else f"{self.output} output"
        return f"{self.kind} ({output}, {labels}): {self.loss.replace('_', ' ')}, metric {METRICS[self.metric]}"

    def labels_for_training(self, y: np.ndarray) -> np.ndarray:
        """`y` in the form the loss takes: class indices, or float rows of the output's width."""
        y = np.asarray(y)
        if self.kind == "classification":
            return (y.argmax(axis=1) if y.ndim == 2 else y).astype(np.int64)
        if self.kind == "multilabel" and y.ndim == 1:
            return np.eye(self.units, dtype=np.float32)[y.astype(np.int64)]
        return y.reshape(len(y), -1).astype(np.float32)

    def decisions(self, outputs: np.ndarray) -> np.ndarray:
        """What the model decides: a class per sample, or 0/1 per output (None-like for regression: the values)."""
        outputs = np.asarray(outputs).reshape(len(outputs), -1)
        if self.kind == "classification":
            return outputs.argmax(axis=1)
        if self.kind in ("binary", "multilabel"):
            return outputs > (0.0 if self.from_logits else 0.5)
        return outputs

    def score(self, outputs: np.ndarray, y: np.ndarray) -> float:
        """The metric of `outputs` against labels `y` (in any form `labels_for_training` takes)."""
        target = self.labels_for_training(y)
        if self.kind == "regression":
            error = np.asarray(outputs, np.float64).reshape(target.shape) - target
            return float(np.mean(np.abs(error)) if self.metric == "mae" else np.sqrt(np.mean(error**2)))
        decided = self.decisions(outputs)
        expected = target if self.kind == "classification" else target.reshape(decided.shape) > 0.5
        return float(np.mean(decided == expected))

    def agreement_of(self, a: np.ndarray, b: np.ndarray) -> float | None:
        """How often two models' outputs decide alike (None for regression)."""
        if self.agreement is None:
            return None
        return float(np.mean(self.decisions(a) == self.decisions(b)))

    def format_score(self, value: float) -> str:
        return f"{value:.2%}" if self.higher_is_better else f"{value:.4g}"


def output_layer(record):
    """The layer record whose function gives the model's output (passing over reshapes and dropouts at the end),
    from the model's record."""
    names = sorted(record.outputs)
    if len(names) != 1:
        raise DataError(
            f"model '{record.name}' has {len(names)} outputs ({', '.join(names)}); fpgaprune trains "
            "models with one output"
        )
    name = names[0]
    while record.layers[name].role in OUTPUT_PASS and len(record.layers[name].inbound) == 1:  # its function stays
        name = record.layers[name].inbound[0]
    return record.layers[name]


def output_activation(record) -> tuple[str, str]:
    """(the output layer's name, its activation: softmax, sigmoid, linear, or the function's own name)."""
    layer = output_layer(record)
    if layer.class_name == "Softmax":
        return layer.name, "softmax"
    function = layer.applies or layer.activation  # the quantizer an activation layer applies, or its function
    name = str((function.function or function.class_name) if function is not None else "linear").lower()
    if "softmax" in name:
        return layer.name, "softmax"
    if "sigmoid" in name:
        return layer.name, "sigmoid"
    return layer.name, "linear" if name in ("linear", "none", "nonetype") else name


def label_form(y: np.ndarray, units: int) -> str:
    """integer, binary (0/1), one_hot, multi_hot or targets."""
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    integral = y.dtype.kind in "biu" or bool(np.all(y == np.round(y)))
    zero_one = integral and bool(np.all((y == 0) | (y == 1)))
    if y.ndim == 1:
        if zero_one and units == 1:
            return "binary"
        return "integer" if integral else "targets"
    if zero_one and y.shape[1] == units:
        return "one_hot" if bool(np.all(y.sum(axis=1) == 1)) else "multi_hot"
    return "targets"


def infer_task(
    bound,
    y_train: np.ndarray,
    y_test: np.ndarray,
    source: str,
    task: str = "auto",
    loss: str = "auto",
    x_sample: np.ndarray | None = None,
) -> Task:
    """The task of `model` trained on these labels; DataError (one line naming `source`, the array or the layer,
    and what to change) when they contradict each other or the explicit `task`/`loss`. `x_sample`: an input, for
    a model that records no output shape (a PyTorch module). `bound`: the model bound to its front end
    (`record.resolved`)."""
    layer, output = output_activation(bound.record)
    units = _output_units(bound, x_sample)
    forms = {name: label_form(y, units) for name, y in (("y_train", y_train), ("y_test", y_test))}
    form = forms["y_train"] if len(set(forms.values())) == 1 else _mixed(forms, source)
    kind = _kind(output, units, form, layer, source) if task == "auto" else task
    _check_fits(kind, output, units, form, layer, source, {"y_train": y_train, "y_test": y_test})
    chosen = LOSSES[kind][0] if loss == "auto" else loss
    if chosen not in LOSSES[kind]:
        raise DataError(
            f"{source}: training.loss {loss!r} does not train a {kind} task; use {' or '.join(LOSSES[kind])}"
        )
    return Task(kind, output if output in ("softmax", "sigmoid") else "linear", units, form, chosen)


def _output_units(bound, x_sample) -> int:
    return int(np.prod(bound.output_shape(x_sample)[1:]))


def _mixed(forms: dict, source: str) -> str:
    """y_train and y_test read differently: integer classes that happen to be 0/1 in one split are still classes."""
    values = set(forms.values())
    if values <= {"integer", "binary"}:
        return "integer"
    if values <= {"integer", "binary", "targets"}:
        return "targets"
    if values <= {"one_hot", "multi_hot"}:
        return "multi_hot"
    raise DataError(
        f"{source}: y_train holds {forms['y_train'].replace('_', '-')} labels but y_test "
        f"{forms['y_test'].replace('_', '-')} ones; give both splits the same form"
    )


def _kind(output: str, units: int, form: str, layer: str, source: str) -> str:
    """The task that the output activation and the labels' form make."""
    if output == "softmax":
        if form == "multi_hot":
            raise DataError(
                f"{source}: y_train rows hold several 1s (multi-label), but the output layer '{layer}' "
                "is a softmax (one class per sample); end the model with a sigmoid for multi-label"
            )
        if form == "targets":
            raise DataError(
                f"{source}: y_train holds float targets, but the output layer '{layer}' is a softmax "
                "(classes); for regression end the model with a linear Dense, or give class labels"
            )
        return "classification"
    if output == "sigmoid":
        return "binary" if units == 1 else "multilabel"
    if output != "linear":  # a ReLU (or other) output: what the labels are decides
        if form in ("integer", "one_hot") and units > 1:
            return "classification"  # its outputs are the class scores (logits), as the model's loss read them
        if form != "targets" and form != "integer":
            raise DataError(
                f"{source}: the output layer '{layer}' ends in {output}, which fpgaprune does not train "
                "these labels with; end it with softmax, sigmoid or no activation (logits), or set training.task"
            )
        return "regression"
    if form == "targets" or (form == "integer" and units == 1):
        return "regression"
    if form == "binary":
        return "binary"
    return "multilabel" if form == "multi_hot" else "classification"


def _check_fits(kind: str, output: str, units: int, form: str, layer: str, source: str, arrays: dict) -> None:
    """The labels fit the output: class indices below its units, rows of its width, a softmax of 2+ units."""
    if kind == "classification":
        if units < 2:
            raise DataError(
                f"{source}: the output layer '{layer}' has 1 unit; classification needs one per class "
                "(or a sigmoid output for two classes)"
            )
        if form == "targets":
            raise DataError(f"{source}: y_train holds float targets; a classification task needs class labels")
        for name, y in arrays.items():
            y = np.asarray(y)
            if y.ndim == 2 and y.shape[1] != units:
                raise DataError(
                    f"{source}: {name} has rows of {y.shape[1]} labels; the output layer '{layer}' has {units} units"
                )
            if y.ndim == 1 and len(y) and (y.min() < 0 or y.max() >= units):
                low, high = int(y.min()), int(y.max())
                found = f"the label {low}" if low == high else f"labels {low}..{high}"
                raise DataError(
                    f"{source}: {name} holds {found}; the output layer '{layer}' has {units} classes, so "
                    f"labels must lie in 0..{units - 1}"
                )
    elif kind in ("binary", "multilabel"):
        if output == "softmax":
            raise DataError(
                f"{source}: training.task {kind!r} needs a sigmoid or linear output; '{layer}' is a softmax"
            )
        for name, y in arrays.items():
            y = np.asarray(y)
            if kind == "multilabel" and y.ndim == 1 and form == "integer":
                if len(y) and y.max() >= units:
                    raise DataError(
                        f"{source}: {name} holds labels up to {int(y.max())}; the output layer "
                        f"'{layer}' has {units} units"
                    )
                continue
            if np.asarray(y).reshape(len(y), -1).shape[1] != units or not np.all((y == 0) | (y == 1)):
                raise DataError(
                    f"{source}: {name} must hold 0/1 labels, {units} per sample, for the {output} output "
                    f"layer '{layer}' ({kind}); found shape {y.shape}"
                )
    elif output in ("softmax", "sigmoid"):
        raise DataError(
            f"{source}: training.task 'regression' needs a linear output; the output layer '{layer}' is a {output}"
        )
    else:
        for name, y in arrays.items():
            width = np.asarray(y).reshape(len(y), -1).shape[1]
            if width != units:
                integral = form in ("integer", "binary")
                what = f"{width} {'integer label' if integral else 'float target'}{'s' if width > 1 else ''}"
                hint = "set training.task: classification" if integral else "give integer labels"
                raise DataError(
                    f"{source}: {name} holds {what} per sample; the output layer '{layer}' has {units} units, "
                    f"and a regression needs one target per unit; for classes, {hint}"
                )
