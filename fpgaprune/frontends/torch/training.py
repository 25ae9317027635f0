"""Training and inference of a module for the pipeline: the run's optimizer, the task's loss, and fpgaprune's
training hooks driven from the loop (`fpgaprune.training.hooks`)."""

import numpy as np
import torch

from fpgaprune.frontends.torch.layers import record_input_shape
from fpgaprune.training.hooks import TrainingRun

OPTIMIZERS = {
    "adam": torch.optim.Adam,
    "sgd": torch.optim.SGD,
    "rmsprop": torch.optim.RMSprop,
    "adamw": torch.optim.AdamW,
}


class TorchRun(TrainingRun):
    def __init__(self, model):
        self.model, self._step = model, 0

    @property
    def step(self) -> int:
        return self._step

    def weights(self) -> dict:
        return model_weights(self.model)


def _plain_key(key: str) -> str:
    """A state-dict key as the module names it without a hold (`0.parametrizations.weight.original` -> `0.weight`)."""
    return key.replace(".parametrizations.", ".").replace(".original", "")


def _hold_keys(model) -> set:
    from fpgaprune.frontends.torch.holds import HeldParametrization

    return {
        f"{name}.{buffer}"
        for name, module in model.named_modules()
        if isinstance(module, HeldParametrization)
        for buffer, _ in module.named_buffers(recurse=False)
    }


def model_weights(model) -> dict:
    """{key as the plain module names it: a copy} of the state dict, the holds' masks and targets left out."""
    holds = _hold_keys(model)
    return {
        _plain_key(key): value.detach().cpu().numpy().copy()
        for key, value in model.state_dict().items()
        if key not in holds
    }


def set_model_weights(model, weights: dict) -> None:
    """Load `model_weights`' arrays back, whichever parameters are held now."""
    state = {
        key: torch.as_tensor(weights[_plain_key(key)])
        for key in model.state_dict()
        if _plain_key(key) in weights and key not in _hold_keys(model)
    }
    model.load_state_dict(state, strict=False)


def loss_of(task):
    """The task's loss as PyTorch computes it on the model's outputs (logits, or probabilities after a softmax
    or sigmoid output, as the task read them)."""
    name = task.loss
    if name in ("sparse_categorical_crossentropy", "categorical_crossentropy"):  # labels are class indices
        return (
            (lambda out, y: torch.nn.functional.cross_entropy(out, y.long()))
            if task.from_logits
            else (lambda out, y: torch.nn.functional.nll_loss(torch.log(out.clamp_min(1e-7)), y.long()))
        )
    if name in ("binary_crossentropy",):
        return (
            (lambda out, y: torch.nn.functional.binary_cross_entropy_with_logits(out, y.float()))
            if task.from_logits
            else (lambda out, y: torch.nn.functional.binary_cross_entropy(out, y.float()))
        )
    losses = {
        "mse": torch.nn.functional.mse_loss,
        "mae": torch.nn.functional.l1_loss,
        "huber": torch.nn.functional.huber_loss,
    }
    return lambda out, y: losses[name](out, y.float().reshape(out.shape))


def input_tensor(x) -> torch.Tensor:
    """`x` as a float32 tensor in PyTorch's own layout (NCHW strides). numpy may give an array strides that torch
    reads as channels-last (one channel moved from NHWC: `.contiguous()` keeps them); the convolutions then keep
    that memory format and a forward's `x.view(x.size(0), -1)` fails."""
    tensor = torch.as_tensor(np.asarray(x, np.float32))
    return tensor if _standard(tensor) else tensor.clone(memory_format=torch.contiguous_format)


def _standard(tensor) -> bool:
    expected, stride = [], 1
    for size in reversed(tensor.shape):
        expected.insert(0, stride)
        stride *= size
    return list(tensor.stride()) == expected


def fit(model, x, y, *, task, optimizer, learning_rate, epochs, batch_size, hooks=()) -> None:
    record_input_shape(model, x)
    optim, loss_fn, run = OPTIMIZERS[optimizer](model.parameters(), lr=learning_rate), loss_of(task), TorchRun(model)
    x, y = input_tensor(x), torch.as_tensor(np.asarray(task.labels_for_training(y)))
    for hook in hooks:
        hook.begin(run)
    for epoch in range(epochs):
        for hook in hooks:
            hook.epoch_begin(run, epoch)
        model.train()
        order, losses = torch.randperm(len(x)), []
        for batch, start in enumerate(range(0, len(x), batch_size)):
            for hook in hooks:
                hook.step_begin(run, batch)
            take = order[start : start + batch_size]
            optim.zero_grad()
            loss = loss_fn(model(x[take]), y[take])
            loss.backward()
            optim.step()
            run._step += 1
            losses.append(loss.item())
            if any(hook.step_end(run, batch, losses[-1]) for hook in hooks):
                return
        for hook in hooks:
            hook.epoch_end(run, epoch, float(np.mean(losses)))
    for hook in hooks:
        hook.end(run)


def predict(model, x, batch_size: int = 256) -> np.ndarray:
    record_input_shape(model, x)
    model.eval()
    with torch.no_grad():
        x = input_tensor(x)
        return np.concatenate([model(x[i : i + batch_size]).cpu().numpy() for i in range(0, len(x), batch_size)])
