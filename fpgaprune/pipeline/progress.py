"""Progress for training epochs and stages, on the terminal (click)."""

import time

import click

from fpgaprune.tfk import keras


class EpochBar(keras.callbacks.Callback):
    """A click progress bar over the epochs of one `fit`, showing the last loss."""

    def __init__(self, epochs: int, label: str):
        super().__init__()
        self.epochs, self.label, self.bar = epochs, label, None

    def on_train_begin(self, logs=None):
        self.bar = click.progressbar(length=self.epochs, label=f"    {self.label}", file=click.get_text_stream("stderr"))
        self.bar.__enter__()
        self.started = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        seconds = max(time.perf_counter() - self.started, 1e-9) / (epoch + 1)  # per epoch, so far
        remaining = seconds * (self.epochs - epoch - 1)
        self.bar.label = (f"    {self.label} (loss {float((logs or {}).get('loss', float('nan'))):.3f}, "
                          f"{seconds:.1f} s/epoch, ETA {remaining:.0f} s)")
        self.bar.update(1)

    def on_train_end(self, logs=None):
        self.bar.__exit__(None, None, None)
