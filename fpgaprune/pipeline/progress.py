"""Progress on the terminal (stderr, click): bars with a rate and an ETA where progress can be counted
(training epochs, layers synthesized), and elapsed time where it cannot (a g++ build, a vendor run)."""

import threading
import time
from contextlib import contextmanager

import click

from fpgaprune.training.hooks import TrainingHook

TICK_SECONDS = 1.0  # how often an elapsed-time line is redrawn on a terminal


def _stderr():
    return click.get_text_stream("stderr")


def rate_label(label: str, done: int, total: int, started: float, unit: str, extra: str = "") -> str:
    """ "label (extra, 2.1 s/unit, ETA 13 s)" after `done` of `total` items, from the mean time per item so far."""
    seconds = max(time.perf_counter() - started, 1e-9) / max(done, 1)
    return f"    {label} ({extra}{seconds:.1f} s/{unit}, ETA {seconds * (total - done):.0f} s)"


class EpochBar(TrainingHook):
    """A progress bar over the epochs of one training, showing the last loss, the time per epoch and the ETA."""

    def __init__(self, epochs: int, label: str):
        super().__init__()
        self.epochs, self.label, self.bar = epochs, label, None

    def begin(self, run):
        self.bar = click.progressbar(length=self.epochs, label=f"    {self.label}", file=_stderr())
        self.bar.__enter__()
        self.started = time.perf_counter()

    def epoch_end(self, run, epoch, loss):
        loss = float("nan") if loss is None else loss
        self.bar.label = rate_label(self.label, epoch + 1, self.epochs, self.started, "epoch", f"loss {loss:.3f}, ")
        self.bar.update(1)

    def end(self, run):
        self.bar.__exit__(None, None, None)


def counted(items, label: str, unit: str, total: int | None = None):
    """Yield `items` (a list, or an iterator of `total` items) under a progress bar whose label gives the time
    per item and the ETA."""
    started, total = time.perf_counter(), len(items) if total is None else total
    with click.progressbar(length=total, label=f"    {label}", file=_stderr()) as bar:
        for done, item in enumerate(items, start=1):
            yield item
            bar.label = rate_label(label, done, total, started, unit)
            bar.update(1)


@contextmanager
def elapsed(label: str):
    """While the block runs, a terminal shows "label: 12 s elapsed", redrawn every second; then one line with
    the total. For work whose progress cannot be counted. The block gets a `note(text)` for what the work is
    doing now: shown in the ticking line on a terminal, one line per change elsewhere."""
    stream, started, stop, doing = _stderr(), time.perf_counter(), threading.Event(), [""]
    live = stream.isatty()

    def shown() -> str:
        return f"    {label}: {doing[0] + ', ' if doing[0] else ''}{time.perf_counter() - started:.0f} s elapsed"

    def tick():
        while not stop.wait(TICK_SECONDS):
            stream.write(f"\r{shown()}\033[K")
            stream.flush()

    def note(text: str) -> None:
        changed, doing[0] = text.split(",")[0] != doing[0].split(",")[0], text
        if not live and changed:
            stream.write(f"{shown()}\n")
            stream.flush()

    ticker = threading.Thread(target=tick, daemon=True)
    if live:
        ticker.start()
    try:
        yield note
    finally:
        stop.set()
        if ticker.is_alive():
            ticker.join()
        redraw, clear = ("\r", "\033[K") if live else ("", "")  # over the ticking line on a terminal
        stream.write(f"{redraw}    {label}: {time.perf_counter() - started:.1f} s{clear}\n")
        stream.flush()
