"""A user's own model and data files: every bad one gets one line from the CLI (no traceback), the files are
never modified, and nothing in a model file runs while it loads (unless the user opts in)."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from cli_host import CliHost

from fpgaprune import data
from fpgaprune.tfk import keras

FPGAPRUNE = Path(sys.executable).with_name("fpgaprune")
ENV = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}  # the CLI quiets itself


def _model(input_shape=(8, 8, 1)):
    return keras.Sequential(
        [
            keras.Input(input_shape),
            keras.layers.Conv2D(4, 3, name="conv1"),
            keras.layers.Flatten(),
            keras.layers.Dense(10, name="fc"),
        ]
    )


def _arrays(**changes):
    d = data.digits()
    arrays = {"x_train": d.x_train[:200], "y_train": d.y_train[:200], "x_test": d.x_test[:50], "y_test": d.y_test[:50]}
    arrays.update(changes)
    return {key: value for key, value in arrays.items() if value is not None}


def _with_value(key, index, value):
    arrays = _arrays()
    changed = np.array(arrays[key], dtype=np.float32)
    changed[index] = value
    return _arrays(**{key: changed})


def _bad_weight(value):
    model = _model()
    weights = model.get_weights()
    weights[0][0, 0, 0, 0] = value
    model.set_weights(weights)
    return model


def _rewrite_config(source: Path, target: Path, change, member: str = "config.json") -> None:
    """A copy of the archive `source` (.keras or .npz) with `member` passed through `change` (bytes -> bytes)."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for item in old.infolist():
            content = old.read(item.filename)
            new.writestr(item, change(content) if item.filename == member else content)


def _foreign_module(config: bytes) -> bytes:
    parsed = json.loads(config)
    parsed["config"]["layers"][1]["module"] = "os"
    return json.dumps(parsed).encode()


def _unknown_class(config: bytes) -> bytes:
    parsed = json.loads(config)
    parsed["config"]["layers"][1]["class_name"] = "MyCustomConv"
    return json.dumps(parsed).encode()


def _nested(config: bytes, depth: int = 300) -> bytes:
    """Layer 1's config with a value nested `depth` dicts deep: valid JSON, past the walk's MAX_DEPTH."""
    parsed = json.loads(config)
    inner = {}
    for _ in range(depth):
        inner = {"a": inner}
    parsed["config"]["layers"][1]["config"]["extra"] = inner
    return json.dumps(parsed).encode()


def _zip_bomb(source: Path, target: Path, inflated: str, megabytes: int = 80) -> None:
    """A .keras copy with `inflated` (a member's name) padded to `megabytes` MB of spaces (80 KB on disk)."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as new:
        for item in old.infolist():
            if item.filename != inflated:
                new.writestr(item, old.read(item.filename))
                continue
            with new.open(inflated, "w", force_zip64=True) as member:
                member.write(old.read(item.filename))
                for _ in range(megabytes):
                    member.write(b" " * 2**20)


def _lying_header(good: Path, target: Path) -> None:
    """An .npz whose x_train header declares a 25 TB array over 512 stored bytes."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 8, 8, 1), }".ljust(117) + "\n"
    npy = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + bytes(512)
    _rewrite_config(good, target, lambda _: npy, member="x_train.npy")


def _make_files(root: Path) -> None:
    """Every input file of the table below, written once."""
    _model().save(root / "good.keras")
    np.savez(root / "good.npz", **_arrays())
    (root / "text.h5").write_text("this is not HDF5\n")
    (root / "empty.keras").write_bytes(b"")
    (root / "empty.h5").write_bytes(b"")
    good = (root / "good.keras").read_bytes()
    (root / "truncated.keras").write_bytes(good[: len(good) // 2])
    with zipfile.ZipFile(root / "noconfig.keras", "w") as archive:
        archive.writestr("metadata.json", "{}")
    _rewrite_config(root / "good.keras", root / "badjson.keras", lambda config: b"{not json")
    _rewrite_config(root / "good.keras", root / "module.keras", _foreign_module)
    _rewrite_config(root / "good.keras", root / "unknown.keras", _unknown_class)
    _rewrite_config(root / "good.keras", root / "nested.keras", _nested)
    _rewrite_config(root / "good.keras", root / "brackets.keras", lambda config: b"[" * 10**5 + b"]" * 10**5)
    _zip_bomb(root / "good.keras", root / "bomb.keras", "config.json")
    _zip_bomb(root / "good.keras", root / "weights_bomb.keras", "model.weights.h5")
    _model().save_weights(root / "weights_only.h5")
    (root / "dir.keras").mkdir()
    (root / "model.pt").write_bytes(good)
    lam = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            keras.layers.Lambda(lambda t: t * 2.0, name="double"),
            keras.layers.Flatten(),
            keras.layers.Dense(10),
        ]
    )
    lam.save(root / "lambda.h5")
    lam.save(root / "lambda.keras")
    _bad_weight(np.nan).save(root / "nan_weight.keras")
    _bad_weight(np.inf).save(root / "inf_weight.h5")
    _model((28, 28, 1)).save(root / "mnist_shaped.keras")
    keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            keras.layers.Conv2D(4, 3, name="block1.conv-a"),  # two names that
            keras.layers.ReLU(name="block1_conv_a"),
            keras.layers.Conv2D(2, 3, name="conv.2"),  # clash as C++
            keras.layers.ReLU(name="conv-2"),
            keras.layers.Flatten(),  # identifiers: each pair named
            keras.layers.Dense(10),
        ]
    ).save(root / "dotted_name.keras")
    keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            keras.layers.Conv2DTranspose(4, 3, name="up"),
            keras.layers.Flatten(),
            keras.layers.Dense(10),
        ]
    ).save(root / "transpose.keras")
    keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            keras.layers.RandomFlip(),
            keras.layers.GaussianNoise(0.1),
            keras.layers.Conv2D(4, 3),
            keras.layers.SpatialDropout2D(0.1),
            keras.layers.Flatten(),
            keras.layers.Dense(10),
        ]
    ).save(root / "augmented.keras")
    keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            keras.layers.Conv2D(4, 3),
            keras.layers.LayerNormalization(name="norm"),
            keras.layers.Flatten(),
            keras.layers.Dense(10),
        ]
    ).save(root / "norm4d.keras")
    np.savez(root / "no_x_test.npz", **_arrays(x_test=None))
    _lying_header(root / "good.npz", root / "lying.npz")
    (root / "text.npz").write_text("x_train,y_train\n1,2\n")
    (root / "empty.npz").write_bytes(b"")
    np.savez(root / "object.npz", **_arrays(y_train=np.array([{"label": 1}] * 200, dtype=object)))
    np.savez(root / "strings.npz", **_arrays(y_test=np.array(["cat"] * 50)))
    np.savez(root / "nan_x.npz", **_with_value("x_train", (3, 2, 2, 0), np.nan))
    np.savez(root / "inf_x.npz", **_with_value("x_test", (0, 0, 0, 0), np.inf))
    np.savez(
        root / "shape.npz",
        **_arrays(x_train=np.zeros((200, 4, 8, 1), np.float32), x_test=np.zeros((50, 4, 8, 1), np.float32)),
    )
    np.savez(root / "labels.npz", **_arrays(y_train=np.full(200, 12)))
    np.savez(root / "negative.npz", **_arrays(y_test=np.full(50, -1)))
    np.savez(root / "lengths.npz", **_arrays(y_train=np.zeros(150, np.int64)))
    np.savez(root / "fractional.npz", **_arrays(y_train=np.full(200, 0.5)))
    keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            keras.layers.Conv2D(4, 3, name="conv1"),
            keras.layers.Flatten(),
            keras.layers.Dense(10, activation="softmax", name="fc"),
        ]
    ).save(root / "softmax.keras")
    np.savez(root / "targets.npz", **_arrays(y_train=np.linspace(0, 1, 200), y_test=np.linspace(0, 1, 50)))
    np.savez(
        root / "multi_hot.npz",
        **_arrays(
            y_train=np.tile([1, 1, 0, 0, 0, 0, 0, 0, 0, 0], (200, 1)),
            y_test=np.tile([0, 1, 0, 0, 0, 0, 0, 0, 0, 1], (50, 1)),
        ),
    )
    np.savez(root / "mixed_forms.npz", **_arrays(y_test=np.eye(10)[np.zeros(50, np.int64)]))
    np.save(root / "single.npy", np.zeros(3))
    shutil.copy(root / "single.npy", root / "single.npz")
    (root / "dir.npz").mkdir()
    (root / "garbage.yaml").write_bytes(b"\x00\x01\x02 not yaml: [")
    (root / "list.yaml").write_text("- 1\n- 2\n")
    (root / "configdir.yaml").mkdir()


def _config(root: Path, model="good.keras", npz="good.npz", extra="") -> str:
    path = root / f"run-{model}-{npz}{'-' + str(abs(hash(extra))) if extra else ''}.yaml"
    path.write_text(f"model: {{file: {root / model}}}\ndata: {{dataset: npz, file: {root / npz}}}\n{extra}")
    return str(path)


# case: (CLI arguments, given the files' directory; the words the one line must contain)
CASES = {
    "model: text in a .h5": (lambda r: ["validate", _config(r, "text.h5")], "not an HDF5 file"),
    "model: empty .keras": (lambda r: ["validate", _config(r, "empty.keras")], "empty"),
    "model: empty .h5": (lambda r: ["validate", _config(r, "empty.h5")], "empty"),
    "model: truncated .keras": (lambda r: ["validate", _config(r, "truncated.keras")], ".keras"),
    "model: .keras without config.json": (lambda r: ["validate", _config(r, "noconfig.keras")], "config.json"),
    "model: config.json not JSON": (lambda r: ["validate", _config(r, "badjson.keras")], "not valid JSON"),
    "model: foreign module": (lambda r: ["validate", _config(r, "module.keras")], "module 'os'"),
    "model: unknown class": (lambda r: ["validate", _config(r, "unknown.keras")], "MyCustomConv"),
    "model: config nested past the walk's limit": (
        lambda r: ["validate", _config(r, "nested.keras")],
        "nests deeper than 200 levels",
    ),
    "model: config nested past the JSON parser": (
        lambda r: ["validate", _config(r, "brackets.keras")],
        "nests too deep to parse",
    ),
    "model: config.json inflates to 80 MB": (
        lambda r: ["validate", _config(r, "bomb.keras")],
        "config.json is 80 MiB, over the 64 MiB",
    ),
    "model: weights inflate to 80 MB": (
        lambda r: ["validate", _config(r, "weights_bomb.keras")],
        "the archive inflates to 80 MiB from 0.1 MiB on disk (over 50x",
    ),
    "model: layer names that clash in C++": (
        lambda r: ["validate", _config(r, "dotted_name.keras")],
        "'block1.conv-a' and 'block1_conv_a' would both be 'block1_conv_a'; "
        "'conv.2' and 'conv-2' would both be 'conv_2'",
    ),
    "model: a layer hls4ml cannot convert": (
        lambda r: ["validate", _config(r, "transpose.keras")],
        "layer 'up' is a Conv2DTranspose, which hls4ml",
    ),
    "model: a shape hls4ml's handler refuses": (
        lambda r: ["validate", _config(r, "norm4d.keras")],
        "layer 'norm': hls4ml",
    ),
    "model: weights-only .h5": (lambda r: ["validate", _config(r, "weights_only.h5")], "no model config"),
    "model: a directory": (lambda r: ["validate", _config(r, "dir.keras")], "is a directory"),
    "model: wrong suffix": (lambda r: ["validate", _config(r, "model.pt")], ".keras or .h5"),
    "model: missing file": (lambda r: ["validate", _config(r, "missing.keras")], "no such file"),
    "model: Lambda in .h5": (lambda r: ["validate", _config(r, "lambda.h5")], "'double' is a Lambda"),
    "model: Lambda in .keras": (lambda r: ["validate", _config(r, "lambda.keras")], "'double' is a Lambda"),
    "model: NaN weight": (lambda r: ["validate", _config(r, "nan_weight.keras")], "layer 'conv1'"),
    "model: Inf weight": (lambda r: ["validate", _config(r, "inf_weight.h5")], "non-finite"),
    "model: input shape": (lambda r: ["validate", _config(r, "mnist_shaped.keras")], "expects (28, 28, 1)"),
    "inspect: Lambda": (lambda r: ["inspect", str(r / "lambda.h5"), "--out", str(r / "inspect")], "Lambda"),
    "inspect: text": (lambda r: ["inspect", str(r / "text.h5"), "--out", str(r / "inspect")], "HDF5"),
    "data: no x_test": (lambda r: ["validate", _config(r, npz="no_x_test.npz")], "no array 'x_test'"),
    "data: a header declaring 25 TB": (
        lambda r: ["validate", _config(r, npz="lying.npz")],
        "'x_train' declares shape (99999999999, 8, 8, 1)",
    ),
    "data: text": (lambda r: ["validate", _config(r, npz="text.npz")], "not a readable .npz"),
    "data: empty file": (lambda r: ["validate", _config(r, npz="empty.npz")], "not a readable .npz"),
    "data: pickled objects": (lambda r: ["validate", _config(r, npz="object.npz")], "y_train"),
    "data: strings": (lambda r: ["validate", _config(r, npz="strings.npz")], "'y_test' has dtype"),
    "data: NaN input": (lambda r: ["validate", _config(r, npz="nan_x.npz")], "'x_train' holds 1 non-finite"),
    "data: Inf input": (lambda r: ["validate", _config(r, npz="inf_x.npz")], "'x_test' holds 1 non-finite"),
    "data: shape": (lambda r: ["validate", _config(r, npz="shape.npz")], "expects (8, 8, 1)"),
    "data: labels above the classes": (lambda r: ["validate", _config(r, npz="labels.npz")], "0..9"),
    "data: negative labels": (lambda r: ["validate", _config(r, npz="negative.npz")], "the label -1"),
    "data: x and y lengths": (lambda r: ["validate", _config(r, npz="lengths.npz")], "as many in both"),
    "data: fractional labels": (
        lambda r: ["validate", _config(r, npz="fractional.npz")],
        "y_train holds 1 float target per sample; the output layer 'fc' has 10 units",
    ),
    "task: float targets for a softmax": (
        lambda r: ["validate", _config(r, "softmax.keras", "targets.npz")],
        "y_train holds float targets, but the output layer 'fc' is a softmax",
    ),
    "task: multi-hot rows for a softmax": (
        lambda r: ["validate", _config(r, "softmax.keras", "multi_hot.npz")],
        "rows hold several 1s (multi-label), but the output layer 'fc' is a softmax",
    ),
    "task: one-hot and integer splits": (
        lambda r: ["validate", _config(r, npz="mixed_forms.npz")],
        "y_train has shape (200,) and y_test (50, 10); give both splits labels",
    ),
    "task: a loss for another task": (
        lambda r: ["validate", _config(r, extra="training: {loss: mse}\n")],
        "training.loss 'mse' does not train a classification task",
    ),
    "task: regression with a softmax": (
        lambda r: ["validate", _config(r, "softmax.keras", extra="training: {task: regression}\n")],
        "training.task 'regression' needs a linear output",
    ),
    "data: a single .npy": (lambda r: ["validate", _config(r, npz="single.npz")], "single .npy"),
    "data: a directory": (lambda r: ["validate", _config(r, npz="dir.npz")], "is a directory"),
    "config: binary garbage": (lambda r: ["validate", str(r / "garbage.yaml")], "garbage.yaml"),
    "config: a list": (lambda r: ["validate", str(r / "list.yaml")], "list.yaml"),
    "config: a directory": (lambda r: ["validate", str(r / "configdir.yaml")], "configdir.yaml"),
    "run: --out is a file": (lambda r: ["run", _config(r), "--out", str(r / "good.npz")], "is a file"),
    "export: npz without x_test": (
        lambda r: ["export", str(r / "good.keras"), "--data", str(r / "no_x_test.npz"), "--out", str(r / "prj")],
        "no array 'x_test'",
    ),
    "cli: unknown option": (lambda r: ["validate", "--frobnicate"], "--frobnicate"),
}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("inputs")
    _make_files(root)
    return root


def _hashes(root: Path) -> dict:
    return {
        str(p): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.suffix != ".yaml"
    }


@pytest.fixture(scope="module")
def cli(tmp_path_factory):
    """The command lines of this module, run one after another in one process (tests/cli_host.py)."""
    host = CliHost(tmp_path_factory.mktemp("cli_host"), ENV)
    yield host
    host.close()


def _assert_one_line(result, expected: str):
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr[-2000:]
    assert "Traceback" not in result.stderr + result.stdout and expected in lines[0], lines


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_input_gets_one_line_and_leaves_the_files_alone(files, cli, case):
    arguments, expected = CASES[case]
    args = arguments(files)
    before = _hashes(files)
    _assert_one_line(cli.run(args), expected)
    assert _hashes(files) == before


@pytest.mark.parametrize("case", ["model: text in a .h5", "data: shape", "config: a list"])
def test_a_fresh_process_prints_the_one_line_alone(files, case):
    """What TensorFlow and the libraries print as a process starts is kept out of the one line."""
    arguments, expected = CASES[case]
    result = subprocess.run([str(FPGAPRUNE), *arguments(files)], capture_output=True, text=True, env=ENV, timeout=300)
    _assert_one_line(result, expected)


def test_debug_shows_the_traceback(files):
    result = subprocess.run(
        [str(FPGAPRUNE), "validate", _config(files, "text.h5"), "--debug"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )
    assert result.returncode == 2 and "Traceback" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("error: ")


@pytest.mark.skipif(sys.platform != "linux", reason="caps the address space with RLIMIT_AS (Linux)")
def test_data_larger_than_memory_is_one_line(tmp_path):
    """A well-formed .npz whose x_train (600 MiB of zeros, 0.6 MB on disk) exceeds a process capped at 500 MiB:
    one DataError line naming the array and its size, not a MemoryError."""
    from numpy.lib import format as npy

    samples = 600 * 2**20 // (64 * 4)
    with zipfile.ZipFile(tmp_path / "big.npz", "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("x_train.npy", "w", force_zip64=True) as member:
            npy.write_array_header_1_0(member, {"descr": "<f4", "fortran_order": False, "shape": (samples, 8, 8, 1)})
            for _ in range(samples // 4096):
                member.write(bytes(4096 * 64 * 4))
        for key, value in {
            "y_train": np.zeros(samples, np.int64),
            "x_test": np.zeros((2, 8, 8, 1), np.float32),
            "y_test": np.zeros(2, np.int64),
        }.items():
            with archive.open(f"{key}.npy", "w", force_zip64=True) as member:
                npy.write_array(member, value)
    code = (
        "import resource; resource.setrlimit(resource.RLIMIT_AS, (500 << 20, 500 << 20))\n"
        "from fpgaprune.data import load_npz\n"
        "from fpgaprune.errors import DataError\n"
        f"try:\n    load_npz({str(tmp_path / 'big.npz')!r})\nexcept DataError as error:\n    print(error)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={**ENV, "OPENBLAS_NUM_THREADS": "1"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert (
        result.stdout.strip() == f"{tmp_path / 'big.npz'}: array 'x_train' takes 0.6 GiB, more than this "
        "machine can allocate"
    )


def test_a_model_with_layers_that_act_only_in_training_validates(files):
    """RandomFlip, GaussianNoise and SpatialDropout2D are identities at inference, left out for hls4ml."""
    result = subprocess.run(
        [str(FPGAPRUNE), "validate", _config(files, "augmented.keras")],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]


def test_there_are_at_least_25_cases():
    assert len(CASES) >= 25
