"""Progress on the terminal: a rate and an ETA where items can be counted, elapsed time where they cannot."""

import io
import time

import pytest

from fpgaprune.pipeline import progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_the_rate_and_eta_come_from_the_mean_time_per_item():
    label = progress.rate_label("yosys", 2, 5, time.perf_counter() - 10.0, "layer", "3 LUT, ")
    assert label.strip() == "yosys (3 LUT, 5.0 s/layer, ETA 15 s)"


def test_counted_yields_every_item_in_order(monkeypatch):
    stream = Terminal()
    monkeypatch.setattr(progress, "_stderr", lambda: stream)
    assert list(progress.counted(["conv1", "conv2", "fc"], "yosys", "layer")) == ["conv1", "conv2", "fc"]
    assert "s/layer, ETA 0 s" in stream.getvalue()  # the label after the last item


def test_counted_takes_an_iterator_with_its_length(monkeypatch):
    stream = Terminal()
    monkeypatch.setattr(progress, "_stderr", lambda: stream)
    done = list(progress.counted((name for name in ("fc", "conv1")), "yosys", "circuit", total=2))
    assert done == ["fc", "conv1"] and "s/circuit, ETA 0 s" in stream.getvalue()


def test_elapsed_ticks_on_a_terminal_and_ends_with_the_total(monkeypatch):
    stream = Terminal()
    monkeypatch.setattr(progress, "_stderr", lambda: stream)
    monkeypatch.setattr(progress, "TICK_SECONDS", 0.02)
    with progress.elapsed("g++ build"):
        time.sleep(0.2)
    text = stream.getvalue()
    assert "g++ build: 0 s elapsed" in text and text.endswith("\n")
    total = float(text.rsplit("g++ build: ", 1)[1].split(" s")[0])
    assert 0.2 <= total < 60


def test_elapsed_without_a_terminal_writes_one_line_even_when_the_work_fails(monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr(progress, "_stderr", lambda: stream)
    with pytest.raises(RuntimeError), progress.elapsed("vitis_hls"):
        raise RuntimeError("failed")
    assert stream.getvalue().count("\n") == 1 and "elapsed" not in stream.getvalue()


def test_elapsed_shows_what_the_work_is_doing_now(monkeypatch):
    """On a terminal the ticking line names the current step; elsewhere each new step is one line (a step's
    detail after its comma, such as arcs left, is not a new step)."""
    terminal, log = Terminal(), io.StringIO()
    monkeypatch.setattr(progress, "TICK_SECONDS", 0.02)
    for stream in (terminal, log):
        monkeypatch.setattr(progress, "_stderr", lambda stream=stream: stream)
        with progress.elapsed("nextpnr") as note:
            for text in ("nextpnr: packing", "nextpnr: routing", "nextpnr: routing, 10 of 20 arcs left"):
                note(text)
                time.sleep(0.1)
    assert "nextpnr: nextpnr: routing, 10 of 20 arcs left, 0 s elapsed" in terminal.getvalue()
    lines = log.getvalue().splitlines()
    assert [line.split(": ", 1)[1].rsplit(",", 1)[0] for line in lines[:-1]] == ["nextpnr: packing", "nextpnr: routing"]
    assert len(lines) == 3 and "elapsed" not in lines[-1]
