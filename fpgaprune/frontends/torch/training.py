"""Training and inference of a module for the pipeline: the run's optimizer, the task's loss, and fpgaprune's
training hooks driven from the loop (`fpgaprune.hooks`)."""

import numpy as np
import torch

from fpgaprune.hooks import TrainingRun

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

    def weights(self) -> list:
        return [value.detach().cpu().numpy().copy() for value in self.model.state_dict().values()]


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


def fit(model, x, y, *, task, optimizer, learning_rate, epochs, batch_size, hooks=()) -> None:
    optim, loss_fn, run = OPTIMIZERS[optimizer](model.parameters(), lr=learning_rate), loss_of(task), TorchRun(model)
    x, y = torch.as_tensor(np.asarray(x, np.float32)), torch.as_tensor(np.asarray(task.labels_for_training(y)))
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
            losses.append(float(loss))
            if any(hook.step_end(run, batch, losses[-1]) for hook in hooks):
                return
        for hook in hooks:
            hook.epoch_end(run, epoch, float(np.mean(losses)))
    for hook in hooks:
        hook.end(run)


def predict(model, x, batch_size: int = 256) -> np.ndarray:
    model.eval()
    with torch.no_grad():
        x = torch.as_tensor(np.asarray(x, np.float32))
        return np.concatenate([model(x[i : i + batch_size]).cpu().numpy() for i in range(0, len(x), batch_size)])
