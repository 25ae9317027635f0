"""Training in a run: its dataset, its model and its task (`fpgaprune.model.task`: the loss and the metric), `fit_model`
with the run's optimizer and progress, the metric, and the models that earlier stages saved."""

from pathlib import Path

from fpgaprune import data
from fpgaprune.framework import library_front_end
from fpgaprune.model.loading import load_bound
from fpgaprune.model.task import Task, infer_task
from fpgaprune.pipeline.progress import EpochBar
from fpgaprune.record import Bound
from fpgaprune.training.guards import StopOnNonFiniteLoss, check_data_fits_model, check_finite_weights


def dataset_of(config):
    """The run's dataset (digits, Fashion-MNIST or an .npz); the built-in images NCHW for a PyTorch module (an
    .npz is taken in its own layout)."""
    if config.data.dataset == "npz":
        return data.load_npz(config.data.file)
    dataset = data.digits(seed=config.seed) if config.data.dataset == "digits" else data.fashion_mnist()
    return dataset.channels_first() if config.model.torch else dataset


def task_of(config, bound, dataset) -> Task:
    """The run's task: `training.task`/`training.loss`, or what the bound model's output and the labels make."""
    return infer_task(
        bound,
        dataset.y_train,
        dataset.y_test,
        str(config.data.file or config.data.dataset),
        config.training.task,
        config.training.loss,
        dataset.x_test[:1],
    )


def calibrated(bound, dataset):
    """The bound model with the ranges its quantizers learn from data set from the training inputs (HGQ2's
    `trace_minmax`: its activation quantizers wrap; `FrontEnd.calibrate`), after every QAT, before pricing or
    export."""
    bound.front.calibrate(bound.model, dataset.x_train)
    return bound


def fit_model(bound, dataset, epochs, learning_rate, config, label, callbacks=()):
    """The bound model trained `epochs` epochs by its front end, with the run's optimizer, its task's loss and a
    progress bar (`callbacks`: more training hooks)."""
    hooks = [StopOnNonFiniteLoss(label), EpochBar(epochs, label), *callbacks]
    bound.front.fit(
        bound.model,
        dataset.x_train,
        dataset.y_train,
        task=task_of(config, bound, dataset),
        optimizer=config.training.optimizer,
        learning_rate=learning_rate,
        epochs=epochs,
        batch_size=config.training.batch_size,
        hooks=hooks,
    )
    return bound


def scores(config, bound, dataset) -> dict:
    """The task's metric on the held-out data, as a stage records it: {"metric": "accuracy", "accuracy": 0.97}."""
    task = task_of(config, bound, dataset)
    outputs = bound.front.predict(bound.model, dataset.x_test, batch_size=256)
    return {"metric": task.metric, task.metric: task.score(outputs, dataset.y_test)}


def build_model(config, dataset):
    """The configured architecture, or the user's model file (checked: finite weights, fits the data), bound to
    the front end that built or read it (`record.Bound`): the run's one resolution of its starting model."""
    section = config.model
    if section.given() or section.module:
        bound = load_bound(
            section.file,
            trust_code=section.trust_code,
            json=section.json,
            weights=section.weights,
            **({"architecture": section.module, "arguments": section.arguments} if section.module else {}),
        )
        check_finite_weights(bound, section.describe())
        check_data_fits_model(dataset, bound, str(config.data.file or config.data.dataset))
    else:
        bound = _built_in(config, dataset)
    task_of(config, bound, dataset)  # the output and the labels fit each other
    return bound


def _built_in(config, dataset):
    """The built-in network the config names, in the Keras of the run's quantizer library (tf_keras for QKeras,
    Keras 3 for HGQ2)."""
    arguments = {"input_shape": dataset.x_train.shape[1:], "classes": dataset.classes}
    if config.model.architecture != "original_question_cnn":
        arguments["filters"] = tuple(config.model.filters)
    front = library_front_end(config.quantization.library)
    return Bound(front.build(config.model.architecture, arguments), front)


def stage_file(config, name: str = "model") -> str:
    """The name of a model file a stage writes: `model.keras`, or `model.pt` in a PyTorch run."""
    return name + config.model.suffix


def stage_model(config, run_dir: Path, stage: str, name: str = "model"):
    """The model that `stage` saved in the run directory, bound to the front end that read it."""
    return load_bound(run_dir / stage / stage_file(config, name), trust_code=config.model.trust_code)
