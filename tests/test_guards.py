"""NaN and Inf stop with one line, at once: in training, before export, and where a fixed-point range is sized
(which used to loop forever on NaN)."""

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import fpgaprune as fp
from fpgaprune.quantize.fixed_types import FixedType, input_type
from fpgaprune.record import resolved
from fpgaprune.tfk import keras
from fpgaprune.training.guards import StopOnNonFiniteLoss, check_finite_weights

FPGAPRUNE = Path(sys.executable).with_name("fpgaprune")


@pytest.mark.parametrize("lo, hi", [(np.nan, 1.0), (-1.0, np.inf), (-np.inf, np.nan)])
def test_a_non_finite_range_has_no_fixed_type(lo, hi):
    with pytest.raises(fp.NonFiniteError, match="must be finite"):
        FixedType.covering(lo, hi, 4)


def test_input_data_with_nan_has_no_input_type():
    with pytest.raises(fp.NonFiniteError):
        input_type(np.array([0.0, np.nan, 0.5]))


def _model_with(value):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, name="fc"), keras.layers.Dense(2, name="out")])
    weights = model.get_weights()
    weights[2][1, 1] = value
    model.set_weights(weights)
    return model


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_weights_are_named_by_layer(value):
    with pytest.raises(fp.NonFiniteError, match=r"export: layer 'out' weight 'kernel:0' holds 1 non-finite"):
        check_finite_weights(resolved(_model_with(value)), "export")


def test_export_refuses_a_nan_weight_at_once(tmp_path):
    started = time.perf_counter()
    with pytest.raises(fp.NonFiniteError, match="layer 'out'"):
        fp.export(_model_with(np.nan), "latency_parallel", "pynq-z2", tmp_path / "prj", x=np.zeros((4, 4)))
    assert not (tmp_path / "prj").exists()
    assert time.perf_counter() - started < 60  # a bound, not a timing: the old code never returned


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_a_nan_loss_stops_training_naming_the_stage_and_epoch(optimizer):
    model = _model_with(np.nan)
    model.compile(optimizer, keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = np.ones((64, 4), np.float32), np.zeros(64, np.int64)
    with pytest.raises(fp.NonFiniteError, match=r"finetune: the training loss became nan in epoch 1 \(batch 1\)"):
        model.fit(x, y, epochs=3, batch_size=16, verbose=0, callbacks=[StopOnNonFiniteLoss("finetune")])


def test_a_diverging_run_stops_with_one_line(tmp_path):
    """A learning rate so large that the loss overflows: the run stops in its first stage, one line, exit 1."""
    config = tmp_path / "diverge.yaml"
    config.write_text("name: diverge\ntraining: {optimizer: sgd, learning_rate: 1.0e+30, epochs: 3}\n")
    env = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run(
        [str(FPGAPRUNE), "run", str(config), "--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    errors = [line for line in result.stderr.splitlines() if line.startswith("error")]
    assert result.returncode == 1, result.stderr[-2000:]
    assert errors and errors[0].startswith("error: stage train failed: train: the training loss became"), errors
    assert "Traceback" not in result.stderr


def test_a_second_run_on_a_busy_run_directory_gets_one_line(tmp_path):
    from fpgaprune.pipeline.runner import run_lock

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    env = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
    with run_lock(run_dir):  # the first run, still going
        result = subprocess.run(
            [str(FPGAPRUNE), "run", "--out", str(run_dir)], capture_output=True, text=True, env=env, timeout=300
        )
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and len(lines) == 1, result.stderr[-2000:]
    assert f"pid {os.getpid()}" in lines[0] and "another fpgaprune run" in lines[0]
    assert not (run_dir / "train").exists()
