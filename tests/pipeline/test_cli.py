"""The CLI end to end (subprocesses), resumable stages, and malformed configs (exit code 2, one line, key path)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from cli_host import shared_host
from hls_helpers import tree_hash
from text_helpers import negative_zeros
from watch_imports import run_watched

from fpgaprune.cli import DEFAULT_CONFIG, STAGE_NAMES, entry

FPGAPRUNE = [sys.executable, "-m", "fpgaprune.cli"]
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}


def cli(*args, cwd=None, timeout=600):
    """`fpgaprune ARGS` in this worker's CLI host (tests/cli_host.py): TensorFlow imported once."""
    return shared_host(ENV).run(list(args), cwd=cwd, timeout=timeout)


def test_default_run_end_to_end(tmp_path):
    # as the README runs it: no arguments, its run directory relative to the working directory. The limit guards
    # against a hang, it is no timing: the run takes under a minute on an idle 2-core machine (more when yowasp's
    # WebAssembly is compiled first), and CI machines have been seen 2-3x slower
    result, imported = run_watched(["-m", "fpgaprune.cli", "run"], tmp_path, cwd=tmp_path, timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "tf_keras" in imported and not imported & {"torch", "brevitas"}, imported  # a Keras run loads no torch
    run = tmp_path / "runs" / "digits"
    for stage in STAGE_NAMES:
        record = json.loads((run / stage / "stage.json").read_text())
        assert record["versions"]["hls4ml"] == "1.3.0" and record["seconds"] >= 0
    assert (run / "report" / "report.html").exists() and (run / "report" / "resources.csv").exists()
    assert (run / "hls" / "project" / "fpgaprune_manifest.json").exists()
    csim = json.loads((run / "csim" / "stage.json").read_text())["metrics"]
    assert csim["bit_exact"] and csim["argmax_agreement"] == 1.0 and csim["samples"] == csim["held_out"] == 450
    quantized = json.loads((run / "quantize" / "stage.json").read_text())["metrics"]
    assert quantized["accuracy"] >= 0.90 and quantized["conv_kernels_pruned"] >= 0.5
    assert "report: " in result.stdout and "bit-exact logits" in result.stdout
    headline = result.stdout.strip().splitlines()[-6:]  # the console ends with the headline block
    assert [line.split(":")[0] for line in headline] == [
        "report",
        "accuracy",
        "products",
        "resources",
        "measured",
        "C-sim",
    ], headline
    assert "fits on the board" in headline[3] and headline[5].startswith("C-sim:     bit-exact")
    assert not negative_zeros(result.stdout + result.stderr), negative_zeros(result.stdout + result.stderr)
    assert "RuntimeWarning" not in result.stderr  # C-sim's workers import no package of fpgaprune's
    assert not list(run.glob(".*"))  # no temporary stage left
    _the_sample_was_measured_beside_csim_within_the_budgets(run, result.stdout, headline[4])
    _a_weight_changed_in_a_header_fails_the_csim_rerun(run)
    _an_assert_that_stops_the_design_is_one_line_and_the_stages_before_stay(run)


def _the_sample_was_measured_beside_csim_within_the_budgets(run: Path, stdout: str, measured: str):
    """By default yosys measures one removed kernel's output column, with and without it, beside C-sim, each
    circuit in a watched worker within its share of the memory budget."""
    synth = json.loads((run / "synth" / "synth.json").read_text())
    assert (
        synth["scope"] == "sample"
        and synth["unmeasured"] == {}
        and synth["removal"]["where"].startswith("the DA circuit of output ")
    )
    share = synth["budget"]["memory_mb"] / synth["budget"]["workers"]
    assert all(job["cached"] or job["peak_mb"] <= share for job in synth["jobs"]), synth["jobs"]
    assert stdout.index("synth     running beside") < stdout.index("csim      running")
    assert measured.startswith(f"measured:  removing {synth['removal']['kernel']}: ")


def _a_weight_changed_in_a_header_fails_the_csim_rerun(run: Path):
    """Synthesis reads weights/*.h: a large change there alone makes the csim stage fail, naming the layer,
    and C-sim leaves the shipped project as it found it."""
    manifest = json.loads((run / "hls" / "project" / "fpgaprune_manifest.json").read_text())
    array = next(a for a in manifest["hls_nodes"]["fc"]["weight_headers_sha256"] if a.startswith("w"))
    header = run / "hls" / "project" / "firmware" / "weights" / f"{array}.h"
    head, values = header.read_text().split("= {", 1)
    first, rest = values.split(",", 1)
    header.write_text(f"{head}= {{{float(first) + 0.75:.5f},{rest}")
    before = tree_hash(run / "hls" / "project")
    result = cli("run", "--out", str(run), "--from", "csim")
    errors = [line for line in result.stderr.splitlines() if line.startswith("error")]
    assert result.returncode == 1 and len(errors) == 1, result.stderr[-3000:]
    assert "stage csim failed" in errors[0] and f"layer 'fc': {array}[0]" in errors[0], errors
    assert tree_hash(run / "hls" / "project") == before
    assert not list(run.glob(".synth.tmp-*"))  # the synth stage that had started beside csim was stopped


def _an_assert_that_stops_the_design_is_one_line_and_the_stages_before_stay(run: Path):
    """Should one of hls4ml's headers assert in the design (one injected into the shipped project's ReLU), C-sim's
    worker stops, not the CLI: exit 1 and one line naming the layer and the header (issue 68: exit 134, no
    message); the stages before csim stay as they were."""
    header = run / "hls" / "project" / "firmware" / "nnet_utils" / "nnet_activation.h"
    text = header.read_text()
    body = text.index("{", text.index("void relu(data_T data")) + 1
    header.write_text(text[:body] + '\n    assert(CONFIG_T::n_in == 0 && "injected");' + text[body:])
    before = {stage: (run / stage / "stage.json").read_text() for stage in ("train", "quantize", "hls")}
    result = cli("run", "--out", str(run), "--from", "csim")
    errors = [line for line in result.stderr.splitlines() if line.startswith("error")]
    assert result.returncode == 1 and len(errors) == 1, result.stderr[-3000:]
    assert (
        "stage csim failed: C-sim of " in errors[0]
        and "stopped in layer 'relu1': hls4ml's nnet_activation.h:" in errors[0]
    )
    assert {stage: (run / stage / "stage.json").read_text() for stage in before} == before


@pytest.fixture
def quick_config(tmp_path):
    config = yaml.safe_load(DEFAULT_CONFIG.read_text())
    config["training"]["epochs"] = 3
    config["model"]["filters"] = [4, 8]
    config["finetune"]["epochs"] = 1
    config["quantization"]["qat_epochs"] = 1
    config["outputs"] = {"dir": str(tmp_path / "run"), "tb_samples": 20, "synthesize_layers": False}
    path = tmp_path / "quick.yaml"
    path.write_text(yaml.safe_dump(config))
    return path, config


def _ran(stdout: str) -> list:
    """The stages that ran, in the pipeline's order (synth starts beside csim, before it)."""
    ran = [line.split()[0] for line in stdout.splitlines() if " running" in line and line.strip().endswith("...")]
    return sorted(ran, key=STAGE_NAMES.index)


def test_resume_skips_what_is_up_to_date_and_reruns_what_changed(quick_config):
    path, config = quick_config
    first = cli("run", str(path))
    assert first.returncode == 0, first.stderr[-3000:]
    assert _ran(first.stdout) == list(STAGE_NAMES)
    second = cli("run", str(path))
    assert second.returncode == 0 and _ran(second.stdout) == []
    assert second.stdout.count("up to date (skipped)") == len(STAGE_NAMES)
    config["pruning"]["targets"] = {"conv2": 0.7}
    path.write_text(yaml.safe_dump(config))
    third = cli("run", str(path))
    assert third.returncode == 0 and _ran(third.stdout) == list(STAGE_NAMES[1:])
    config["outputs"]["csim_samples"] = 100  # C-sim of a seeded sample of the 450 held-out images
    path.write_text(yaml.safe_dump(config))
    forced = cli("run", str(path), "--from", "csim")
    assert forced.returncode == 0 and _ran(forced.stdout) == ["csim", "synth", "report"]
    csim = json.loads((Path(config["outputs"]["dir"]) / "csim" / "stage.json").read_text())["metrics"]
    assert (csim["samples"], csim["held_out"]) == (100, 450) and csim["bit_exact"]
    assert "over 100 of the 450 held-out samples (a seeded sample" in forced.stdout
    config["hls"]["backend"] = "Catapult"  # another backend: the export and everything after it
    path.write_text(yaml.safe_dump(config))
    catapult = cli("run", str(path))
    assert catapult.returncode == 0, catapult.stderr[-3000:]
    assert _ran(catapult.stdout) == ["hls", "csim", "synth", "report"]
    csim = json.loads((Path(config["outputs"]["dir"]) / "csim" / "stage.json").read_text())["metrics"]
    assert csim["bit_exact"] and csim["argmax_agreement"] == 1.0
    project = Path(config["outputs"]["dir"]) / "hls" / "project"
    assert json.loads((project / "fpgaprune_manifest.json").read_text())["backend"] == "Catapult"
    top = (project / "firmware" / "myproject.cpp").read_text()
    assert "ac_channel" not in top and top.count("nnet::fpgaprune_sparse_") == 3  # io_parallel, kernel-sparse
    assert (project / "firmware" / "ac_types").is_dir()
    report = (Path(config["outputs"]["dir"]) / "report" / "report.html").read_text()
    assert "rules only: no vendor-checked C-synthesis model for Catapult" in report  # no Vitis model judges it


def test_a_killed_stage_leaves_nothing_half_written_and_resumes(quick_config):
    path, config = quick_config
    run = Path(config["outputs"]["dir"])
    process = subprocess.Popen(
        [*FPGAPRUNE, "run", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=ENV,
        start_new_session=True,
    )
    deadline = time.time() + 300
    while time.time() < deadline and not list(run.glob(".csim.tmp-*")):
        time.sleep(0.2)
    assert list(run.glob(".csim.tmp-*")), "the csim stage never started"
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert not (run / "csim").exists() and (run / "hls" / "stage.json").exists()
    resumed = cli("run", str(path))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert _ran(resumed.stdout) == ["csim", "synth", "report"]
    assert not list(run.glob(".*.tmp-*"))


def _broken(config: dict, change) -> dict:
    broken = json.loads(json.dumps(config))
    change(broken)
    return broken


BROKEN = {
    "wrong type for epochs": (lambda c: c["training"].update(epochs="many"), "training.epochs"),
    "negative epochs": (lambda c: c["training"].update(epochs=-1), "training.epochs"),
    "unknown top-level key": (lambda c: c.update(trainng={}), "trainng"),
    "unknown nested key": (lambda c: c["pruning"].update(scheduel="one_shot"), "pruning.scheduel"),
    "bad slice": (lambda c: c["pruning"].update(selections=["conv2[:, :, 1:x]"]), "pruning.selections.0"),
    "index out of range": (lambda c: c["pruning"].update(selections=["conv2[:, :, 40, 3]"]), "pruning.selections.0"),
    "unknown layer in a selection": (lambda c: c["pruning"].update(selections=["conv9[0]"]), "pruning.selections.0"),
    "missing model file": (lambda c: c["model"].update(file="nowhere/model.keras"), "model.file"),
    "missing data file": (lambda c: c["data"].update(dataset="npz", file="nowhere.npz"), "data.file"),
    "unknown dataset": (lambda c: c["data"].update(dataset="cifar"), "data.dataset"),
    "unknown board": (lambda c: c.update(board="pynq-z3"), "board"),
    "unknown preset": (lambda c: c["hls"].update(preset="fastest"), "hls.preset"),
    "reuse factor 0": (lambda c: c["hls"].update(reuse_factor=0), "hls.reuse_factor"),
    "negative reuse factor": (lambda c: c["hls"].update(reuse_factor=-2), "hls.reuse_factor"),
    "unknown io type": (lambda c: c["hls"].update(io_type="io_serial"), "hls.io_type"),
    "quantizer mapping 0 to 1": (
        lambda c: c["quantization"]["default"].update(kernel="binary"),
        "quantization.default.kernel",
    ),
    "po2 quantizer": (
        lambda c: c["quantization"]["default"].update(kernel="quantized_po2(4)"),
        "quantization.default.kernel",
    ),
    "unparsable quantizer": (
        lambda c: c["quantization"]["default"].update(kernel="quantized_bits(6,"),
        "quantization.default.kernel",
    ),
    "unknown quantizer": (
        lambda c: c["quantization"].update(layers={"fc": {"kernel": "quantised_bits(4)"}}),
        "quantization.layers.fc.kernel",
    ),
    "quantizers for an unknown layer": (
        lambda c: c["quantization"].update(layers={"conv9": {"kernel": "quantized_bits(4,0)"}}),
        "quantization.layers.conv9",
    ),
    "activation quantizer for another function": (
        lambda c: c["quantization"].update(layers={"relu2": {"activation": "quantized_tanh(8)"}}),
        "quantization.layers.relu2.activation",
    ),
    "sparsity of 1.5": (lambda c: c["pruning"].update(targets={"conv2": 1.5}), "pruning.targets.conv2"),
    "target on an unknown layer": (lambda c: c["pruning"].update(targets={"conv7": 0.5}), "pruning.targets.conv7"),
    "global scope with two targets": (
        lambda c: c["pruning"].update(scope="global", targets={"conv1": 0.3, "conv2": 0.6}),
        "pruning.targets",
    ),
    "unknown structure": (lambda c: c["pruning"].update(structure="kernels"), "pruning.structure"),
    "unknown inline hls key": (lambda c: c["hls"].update(config={"Model": {"ReuseFacter": 2}}), "hls.config"),
    "wrong learning rate": (lambda c: c["finetune"].update(learning_rate=0), "finetune.learning_rate"),
    "unknown batch-norm handling": (lambda c: c["quantization"].update(batchnorm="squash"), "quantization.batchnorm"),
    "list where a mapping goes": (lambda c: c.update(training=[1, 2]), "training"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_malformed_configs_exit_2_with_one_line_naming_the_key(tmp_path, case, capsys):
    change, key_path = BROKEN[case]
    config = yaml.safe_load(DEFAULT_CONFIG.read_text())
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(_broken(config, change), sort_keys=False))
    code = entry(["validate", str(path)])
    message = capsys.readouterr().err.strip()
    assert code == 2, message
    assert len(message.splitlines()) == 1 and "Traceback" not in message, message
    assert message.startswith(f"error: {path}:") and f" {key_path}:" in message, message


def test_the_examples_validate(capsys):
    for example in ("digits", "prune_one_kernel", "digits_ulx3s"):
        assert entry(["validate", f"examples/{example}.yaml"]) == 0, capsys.readouterr().err


def test_an_error_names_the_line(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    path.write_text("name: x\ntraining:\n  epochs: 3\n  batch_size: zero\n")
    code, err = entry(["validate", str(path)]), capsys.readouterr().err
    assert code == 2 and f"error: {path}:4: training.batch_size: found 'zero';" in err


def _laughs() -> str:
    """A 'billion laughs': nine levels of nine aliases, 600 bytes on disk. Expanded, level i holds
    1 + 9 * level(i - 1) values (level 0: 10), 490,329,054 in all, and the root mapping 12 more."""
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 9)]
    return "\n".join(lines) + "\nname: x\n"


HOSTILE_YAML = {
    "billion laughs": (_laughs, "expand to 490,329,066 values, over the 100,000"),
    "an alias cycle": (lambda: "name: x\nloop: &a [*a]\n", "an *alias refers to a value that holds it (a cycle)"),
    "nested 50,000 deep": (lambda: "name: " + "[" * 50000 + "]" * 50000 + "\n", "nests too deep to parse"),
    "5 MB": (lambda: "name: x\n" + "# padding\n" * 500000, "the config is over 4 MiB"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_YAML))
def test_a_hostile_yaml_is_one_line_not_a_hang(tmp_path, case, capsys):
    """PyYAML's safe_load shares aliased values, but anything that walks them (line numbers, validation) expands
    them; a hostile file is refused from its composed nodes, before that."""
    text, expected = HOSTILE_YAML[case]
    path = tmp_path / "hostile.yaml"
    path.write_text(text())
    code, err = entry(["validate", str(path)]), capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith(f"error: {path}: ") and expected in err, err


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_an_endless_file_is_read_only_up_to_the_limit(capsys):
    code, err = entry(["validate", "/dev/zero"]), capsys.readouterr().err.strip()
    assert code == 2 and err == "error: /dev/zero: the config is over 4 MiB; a YAML config is kilobytes", err


def test_anchors_and_aliases_still_work_and_errors_name_their_line(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    path.write_text("name: x\ntraining:\n  epochs: &n 3\nfinetune:\n  epochs: *n\n  learning_rate: -1\n")
    code, err = entry(["validate", str(path)]), capsys.readouterr().err
    assert code == 2 and f"error: {path}:6: finetune.learning_rate: found -1;" in err, err
    path.write_text("name: x\ntraining:\n  epochs: &n 3\nfinetune:\n  epochs: *n\n")
    assert entry(["validate", str(path)]) == 0, capsys.readouterr().err
    path.write_text("name: x\ntraining: &t\n  epochs: 3\n  batch_size: 8\nfinetune: *t\n")
    code, err = entry(["validate", str(path)]), capsys.readouterr().err
    # finetune takes no batch_size: the key is reached through the alias, so the line is the alias's
    assert code == 2 and f"error: {path}:5: finetune.batch_size: unknown key;" in err, err
