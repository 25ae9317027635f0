"""Training in a run: its dataset, its model and its task (`fpgaprune.model.task`: the loss and the metric), `fit_model`
with the run's optimizer and progress, the metric, and the models that earlier stages saved."""

from pathlib import Path

import fpgaprune as fp
from fpgaprune import data
from fpgaprune.framework import library_front_end
from fpgaprune.model.task import Task, infer_task
from fpgaprune.pipeline.progress import EpochBar
from fpgaprune.record import resolved
from fpgaprune.training.guards import StopOnNonFiniteLoss, check_data_fits_model, check_finite_weights


def dataset_of(config):
    """The run's dataset (digits, Fashion-MNIST or an .npz); the built-in images NCHW for a PyTorch module (an
    .npz is taken in its own layout)."""
    if config.data.dataset == "npz":
        return data.load_npz(config.data.file)
    dataset = data.digits(seed=config.seed) if config.data.dataset == "digits" else data.fashion_mnist()
    return dataset.channels_first() if config.model.torch else dataset


def task_of(config, model, dataset) -> Task:
    """The run's task: `training.task`/`training.loss`, or what the model's output and the labels make."""
    return infer_task(
        model,
        dataset.y_train,
        dataset.y_test,
        str(config.data.file or config.data.dataset),
        config.training.task,
        config.training.loss,
        dataset.x_test[:1],
    )


def calibrated(model, dataset, front):
    """`model` with the ranges its quantizers learn from data set from the training inputs (HGQ2's `trace_minmax`:
    its activation quantizers wrap; `FrontEnd.calibrate` of the model's front end `front`), after every QAT,
    before pricing or export."""
    front.calibrate(model, dataset.x_train)
    return model


def fit_model(model, dataset, epochs, learning_rate, config, label, callbacks=(), *, front):
    """`model` trained `epochs` epochs by its front end `front`, with the run's optimizer, its task's loss and a
    progress bar (`callbacks`: more training hooks)."""
    hooks = [StopOnNonFiniteLoss(label), EpochBar(epochs, label), *callbacks]
    front.fit(
        model,
        dataset.x_train,
        dataset.y_train,
        task=task_of(config, model, dataset),
        optimizer=config.training.optimizer,
        learning_rate=learning_rate,
        epochs=epochs,
        batch_size=config.training.batch_size,
        hooks=hooks,
    )
    return model


def scores(config, model, dataset, front) -> dict:
    """The task's metric on the held-out data, as a stage records it: {"metric": "accuracy", "accuracy": 0.97}."""
    task = task_of(config, model, dataset)
    outputs = front.predict(model, dataset.x_test, batch_size=256)
    return {"metric": task.metric, task.metric: task.score(outputs, dataset.y_test)}


def build_model(config, dataset):
    """The configured architecture, or the user's model file (checked: finite weights, fits the data)."""
    section = config.model
    if section.given() or section.module:
        model = fp.load_model(
            section.file,
            trust_code=section.trust_code,
            json=section.json,
            weights=section.weights,
            **({"architecture": section.module, "arguments": section.arguments} if section.module else {}),
        )
        check_finite_weights(resolved(model), section.describe())
        check_data_fits_model(dataset, model, str(config.data.file or config.data.dataset))
    else:
        model = _built_in(config, dataset)
    task_of(config, model, dataset)  # the output and the labels fit each other
    return model


def _built_in(config, dataset):
    """The built-in network the config names, in the Keras of the run's quantizer library (tf_keras for QKeras,
    Keras 3 for HGQ2)."""
    arguments = {"input_shape": dataset.x_train.shape[1:], "classes": dataset.classes}
    if config.model.architecture != "original_question_cnn":
        arguments["filters"] = tuple(config.model.filters)
    return library_front_end(config.quantization.library).build(config.model.architecture, arguments)


def stage_file(config, name: str = "model") -> str:
    """The name of a model file a stage writes: `model.keras`, or `model.pt` in a PyTorch run."""
    return name + config.model.suffix


def stage_model(config, run_dir: Path, stage: str, name: str = "model"):
    """The model that `stage` saved in the run directory."""
    return fp.load_model(run_dir / stage / stage_file(config, name), trust_code=config.model.trust_code)
