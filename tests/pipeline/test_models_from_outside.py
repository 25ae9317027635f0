"""The models hls4ml users already have, through the CLI as they come: a Keras 2.4 JSON architecture with HDF5
weights, QKeras models with serialized quantizer dicts (their quantizers kept, or replaced layer by layer), a
model pruned elsewhere (its zeros stay zero), and an input BatchNormalization (C-sim judged by the tolerance its
types give, stated). Bad files get one line and exit code 2."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from cli_host import shared_host
from outside_models import (
    digits_arrays,
    float_mlp,
    input_batchnorm_cnn,
    pruned_elsewhere,
    qkeras_cnn,
    qkeras_mlp,
    run_config,
    save_as_keras24_h5,
    save_json_and_weights,
    trained,
)
from user_cases import ENV, run_case

KEPT = "its own quantizers, kept"


def cli(*args, cwd=None):
    return shared_host(ENV).run(list(args), cwd=cwd)


def _errors(result) -> list:
    return [line for line in result.stderr.splitlines() if line.startswith("error")]


def test_a_keras24_qkeras_cnn_as_json_and_weights_runs_as_it_is(tmp_path):
    """No quantization section: QAT fine-tunes the QKeras model as it is (its quantizers kept, its inner relu
    too); a chosen kernel is removed; C-sim is bit-exact; the report says each layer kept its quantizers."""
    model = trained(qkeras_cnn, digits_arrays(flat=False))
    architecture, weights = save_json_and_weights(model, tmp_path, "qcnn")
    pruning = {"selections": ["q_conv2d_1[:, :, 3, 5]"], "targets": {"q_conv2d_1": 0.5}}
    path = run_config(tmp_path, "qcnn", {"json": str(architecture), "weights": str(weights)}, False, pruning=pruning)
    assert cli("validate", str(path)).returncode == 0
    result, metrics = run_case(path)
    assert result.returncode == 0, result.stderr[-3000:]
    csim = metrics["csim"]
    assert (csim["bit_exact"] or csim["within_tolerance"]) and csim["beyond"] == ""
    kept = ("q_conv2d", "q_conv2d_1", "q_batch_normalization", "q_activation", "q_dense")
    assert metrics["quantize"]["quantizers"] == {name: KEPT for name in kept}
    assert metrics["train"]["trained"] is False and metrics["quantize"]["accuracy"] > 0.8, {
        s: m.get("accuracy") for s, m in metrics.items()
    }
    run = Path(yaml.safe_load(path.read_text())["outputs"]["dir"])
    assert KEPT in (run / "report" / "report.html").read_text()
    quantized = json.loads((run / "hls" / "project" / "fpgaprune_manifest.json").read_text())
    assert quantized["hls_nodes"]["q_conv2d_1"]["live_weights"] < 8 * 12 * 9 / 2 + 1


def test_a_qkeras_mlp_saved_by_keras24_keeps_its_quantizers_but_the_one_a_layer_key_replaces(tmp_path):
    """The file holds Keras 2.4's quantizer dicts; the run saves and reads back its own stage files; one
    per-layer key replaces fc2's kernel quantizer, and the others stay the model's."""
    model = trained(qkeras_mlp, digits_arrays(flat=True))
    file = save_as_keras24_h5(model, tmp_path / "qmlp.h5")
    replaced = {"layers": {"fc2": {"kernel": "quantized_bits(4,0,alpha=1)"}}}
    path = run_config(
        tmp_path, "qmlp", {"file": str(file)}, True, pruning={"targets": {"fc1": 0.5}}, quantization=replaced
    )
    result, metrics = run_case(path)
    assert result.returncode == 0, result.stderr[-3000:]
    sources = metrics["quantize"]["quantizers"]
    assert sources["fc1"] == sources["output"] == sources["relu1"] == KEPT
    assert sources["fc2"] == f"{KEPT}; kernel from quantization.layers"
    run = Path(yaml.safe_load(path.read_text())["outputs"]["dir"])
    assert "quantized_bits(4,0,0,alpha=1)" in (run / "quantize" / "quantization.txt").read_text()
    assert metrics["csim"]["bit_exact"]


def test_a_model_pruned_elsewhere_keeps_its_zeros_as_pruned_entries(tmp_path):
    """Its exact zeros are held at 0 through fine-tuning and QAT, counted as pruned, and said in one line;
    pruning.keep_input_zeros: false releases them."""
    model = pruned_elsewhere(trained(float_mlp, digits_arrays(flat=True)))
    model.save(tmp_path / "pruned.h5")
    zeros = {layer.name: int(np.sum(layer.get_weights()[0] == 0)) for layer in model.layers}
    path = run_config(tmp_path, "pruned", {"file": str(tmp_path / "pruned.h5")}, True, finetune={"epochs": 2})
    result, metrics = run_case(path)
    assert result.returncode == 0, result.stderr[-3000:]
    held = metrics["prune"]["input_zeros"]["held"]
    assert held == {
        f"{name}/kernel": [count, int(np.prod(model.get_layer(name).kernel.shape))] for name, count in zeros.items()
    }
    line = next(line for line in result.stdout.splitlines() if line.startswith("zeros:"))
    assert f"{sum(zeros.values())} exact zeros held at 0 as pruned (fc1/kernel 70%" in line
    assert metrics["finetune"]["weights_pruned"] == metrics["prune"]["weights_pruned"] > 0.5
    run = Path(yaml.safe_load(path.read_text())["outputs"]["dir"])
    nodes = json.loads((run / "hls" / "project" / "fpgaprune_manifest.json").read_text())["hls_nodes"]
    assert all(nodes[name]["live_weights"] <= nodes[name]["weights"] - count for name, count in zeros.items())
    config, kept = yaml.safe_load(path.read_text()), metrics["finetune"]["weights_pruned"]
    config["pruning"] = {"keep_input_zeros": False}
    path.write_text(yaml.safe_dump(config))
    released, metrics = run_case(path)
    assert released.returncode == 0 and "input_zeros" not in metrics["prune"]
    assert metrics["finetune"]["weights_pruned"] < kept / 2  # the zeros trained back


def test_an_input_batchnorm_is_judged_by_its_bound_until_the_bound_could_not_fail(tmp_path):
    """The BN that cannot fold keeps its scale to 16 significant bits in the export while QKeras computes with the
    exact one: C-sim judges layer by layer against the stated bound, not waved through. Through relu1's and
    conv2's quantizers (one step each, times the column sums after them) the bound at fc reaches 12.3, past 1/16
    of fixed<16,7>'s 128: it could not fail, so C-sim fails there, naming fc, the input BN and the way out (before
    issue 68 the run passed "within its tolerance")."""
    model = trained(input_batchnorm_cnn, digits_arrays(flat=False))
    model.save(tmp_path / "bn.h5")
    path = run_config(tmp_path, "bn", {"file": str(tmp_path / "bn.h5")}, False, pruning={"targets": {"conv2": 0.5}})
    result, _ = run_case(path)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error")]
    assert result.returncode == 1 and len(errors) == 1, result.stderr[-3000:]
    assert "'fc' differs from QKeras" in errors[0] and "so it could not fail" in errors[0], errors
    assert "'bn0' (a batch normalization that cannot fold) keeps its scale to 2^-" in errors[0]
    assert "normalize the data instead of 'bn0'" in errors[0]


def test_bad_architecture_and_weights_files_are_one_line_each(tmp_path):
    model = float_mlp()
    architecture, weights = save_json_and_weights(model, tmp_path, "mlp")
    config = json.loads(architecture.read_text())
    lambda_layer = {
        "class_name": "Lambda",
        "config": {"name": "code", "trainable": True, "dtype": "float32", "function": ["e30=", None, None]},
    }
    config["config"]["layers"].insert(1, lambda_layer)
    (tmp_path / "code.json").write_text(json.dumps(config))
    other = keras_model_of_other_shape()
    other.save_weights(tmp_path / "other.h5")
    (tmp_path / "text.json").write_text("[1, 2")
    cases = [
        (["--json", str(tmp_path / "code.json"), "--weights", str(weights)], "layer 'code' is a Lambda"),
        (["--json", str(architecture), "--weights", str(tmp_path / "other.h5")], "do not fit the architecture"),
        (["--json", str(tmp_path / "text.json"), "--weights", str(weights)], "is not valid JSON"),
        (["--json", str(architecture)], "give MODEL (a .keras/.h5 file), or --json"),
        ([str(tmp_path / "mlp_weights.h5"), "--json", str(architecture), "--weights", str(weights)], "not both"),
    ]
    for arguments, expected in cases:
        result = cli("inspect", *arguments, "--out", str(tmp_path / "maps"))
        assert result.returncode == 2 and len(_errors(result)) == 1, (arguments, result.stderr[-2000:])
        assert expected in _errors(result)[0], (expected, _errors(result))
    shown = cli("inspect", "--json", str(architecture), "--weights", str(weights), "--out", str(tmp_path / "maps"))
    assert shown.returncode == 0 and "fc1" in shown.stdout


def keras_model_of_other_shape():
    from fpgaprune.tfk import keras

    return keras.Sequential([keras.Input((64,)), keras.layers.Dense(7, name="fc1")])


@pytest.mark.parametrize(
    "model, expected",
    [
        ({"json": "a.json"}, "model.json: model.json (the architecture) and model.weights"),
        ({"file": "m.h5", "json": "a.json", "weights": "w.h5"}, "give model.file, or model.json with model.weights"),
        ({"json": "missing.json", "weights": "w.h5"}, "model.json: found 'missing.json'; no such file"),
    ],
)
def test_a_run_config_names_an_architecture_and_its_weights_together(tmp_path, model, expected):
    for name in ("a.json", "m.h5", "w.h5"):
        (tmp_path / name).write_text("x")
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({"model": model}))
    result = cli("validate", str(path), cwd=tmp_path)
    assert result.returncode == 2 and len(_errors(result)) == 1 and expected in _errors(result)[0], result.stderr


def test_the_python_api_reads_an_architecture_and_its_weights(tmp_path):
    import fpgaprune as fp

    model = trained(qkeras_cnn, digits_arrays(flat=False), epochs=1)
    architecture, weights = save_json_and_weights(model, tmp_path, "qcnn")
    loaded = fp.load_model(json=architecture, weights=weights)
    x = digits_arrays(flat=False)["x_test"][:32]
    assert np.array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    assert type(loaded.get_layer("q_activation").quantizer).__name__ == "quantized_relu"
    with pytest.raises(fp.ModelFileError, match="an architecture needs its weights"):
        fp.load_model(json=architecture)
    assert sys.modules["qkeras"].QActivation.from_config(loaded.get_layer("q_activation").get_config())
