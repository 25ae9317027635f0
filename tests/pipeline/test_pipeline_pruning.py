"""The pipeline's prune stage: each schedule takes each layer in `pruning.targets` to its own sparsity."""

import numpy as np
import pytest
import yaml

import fpgaprune as fp
from fpgaprune.cli import DEFAULT_CONFIG
from fpgaprune.pipeline import stages
from fpgaprune.pipeline.schema import parse_config

TARGETS = {"conv1": 0.25, "conv2": 0.75}


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    """A run directory whose train stage is done (1 epoch), and the config text it came from."""
    config = yaml.safe_load(DEFAULT_CONFIG.read_text())
    config["training"]["epochs"] = 1
    config["pruning"].update(targets=TARGETS, epochs=1)
    run_dir = tmp_path_factory.mktemp("run")
    (run_dir / "train").mkdir()
    stages.train(parse_config(yaml.safe_dump(config))[0], run_dir, run_dir / "train")
    return run_dir, config


@pytest.mark.parametrize(
    "schedule", [{"schedule": "one_shot"}, {"schedule": "polynomial"}, {"schedule": "one_shot", "lottery_rounds": 2}]
)
def test_each_schedule_reaches_every_layers_own_target(trained_run, schedule):
    run_dir, config = trained_run
    config = {**config, "pruning": {**config["pruning"], **schedule}}
    out = run_dir / f"prune-{len(list(run_dir.iterdir()))}"
    out.mkdir()
    stages.prune(parse_config(yaml.safe_dump(config))[0], run_dir, out)
    model = fp.load_model(out / "model.keras")
    for layer, target in TARGETS.items():
        kernel = model.get_layer(layer).kernel.numpy()
        dead = np.all(kernel.reshape(-1, *kernel.shape[-2:]) == 0, axis=0)
        assert dead.mean() == pytest.approx(target), (schedule, layer)
    assert np.count_nonzero(model.get_layer("fc").kernel.numpy() == 0) == 0  # not a target: untouched
