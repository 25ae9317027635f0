"""Progress for training epochs and stages, on the terminal (click)."""

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

    def on_epoch_end(self, epoch, logs=None):
        self.bar.label = f"    {self.label} (loss {float((logs or {}).get('loss', float('nan'))):.3f})"
        self.bar.update(1)

    def on_train_end(self, logs=None):
        self.bar.__exit__(None, None, None)
