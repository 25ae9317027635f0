"""QKeras' fused layers as a published, tfmot-pruned QKeras LeNet-5 has them (QConv2DBatchnorm with 27% exact
zeros in every kernel, quantized_tanh with stochastic rounding in training, QDense with a BatchNormalization
after it), saved as Keras 2.14 saves a `.keras` file. Its zeros are held through fine-tuning (the raw kernel's
zeros are the folded kernel's), a kernel of a fused layer is named and removed, the export is kernel-sparse and
C-simulated within its stated bound (the fused layers bit-exact, a tanh read from hls4ml's table judged by the
table's bound); QDepthwiseConv2DBatchnorm, which hls4ml cannot parse, is one line at validate and named in a
note."""

import io
import json
import os
import subprocess
import sys
import zipfile

import h5py
import numpy as np
import pytest
import yaml
from sklearn.datasets import load_digits

import fpgaprune as fp
from fpgaprune.errors import ModelFileError
from fpgaprune.framework import front_end_of
from fpgaprune.frontends.qkeras.files import model_objects
from fpgaprune.masking.input_zeros import input_zeros, unheld_zeros
from fpgaprune.record import record_of
from fpgaprune.tfk import keras

qkeras = pytest.importorskip("qkeras")

Q = "quantized_bits(8,3,alpha=1)"


def _digits():
    data = load_digits()
    x = (np.minimum(data.images, 15) / 16).astype(np.float32)[..., None]
    return x, data.target.astype(np.int64)


def _lenet(seed=0):
    """The published LeNet-5's layers, at the size of 8x8 digits."""
    keras.utils.set_random_seed(seed)
    return keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            qkeras.QConv2DBatchnorm(6, 3, padding="same", kernel_quantizer=Q, bias_quantizer=Q, name="qconvbn1"),
            qkeras.QActivation("quantized_tanh(8,use_stochastic_rounding=True)", name="qtanh1"),
            keras.layers.MaxPooling2D(2, name="qmaxpool1"),
            qkeras.QConv2DBatchnorm(16, 3, kernel_quantizer=Q, bias_quantizer=Q, name="qconvbn2"),
            keras.layers.Activation("tanh", name="tanh2"),  # hls4ml's table
            keras.layers.Flatten(name="qflatten"),
            qkeras.QDense(16, kernel_quantizer=Q, bias_quantizer=Q, name="qdense1"),
            keras.layers.BatchNormalization(name="bn1"),
            qkeras.QActivation("quantized_tanh(8)", name="qtanh3"),
            qkeras.QDense(10, kernel_quantizer=Q, bias_quantizer=Q, name="qoutput"),
            keras.layers.Activation("softmax", name="softmax"),
        ]
    )


def as_keras_214(path, target):
    """`path` (a .keras archive tf_keras 2.21 wrote) as Keras 2.14 wrote such files: its layers' weights under
    `_layer_checkpoint_dependencies/` in model.weights.h5, and 2.14.0 in metadata.json."""
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(target, "w") as archive:
        for member in source.namelist():
            data = source.read(member)
            if member == "model.weights.h5":
                buffer = io.BytesIO(data)
                with h5py.File(buffer, "r+") as weights:
                    weights.move("layers", "_layer_checkpoint_dependencies")
                data = buffer.getvalue()
            elif member == "metadata.json":
                data = json.dumps({**json.loads(data), "keras_version": "2.14.0"}).encode()
            archive.writestr(member, data)
    return target


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """The LeNet-5 trained briefly, 27% of each kernel's smallest weights set to exactly 0 (as tfmot leaves
    them), saved as a Keras 2.14 `.keras` file: (its path, the model)."""
    root = tmp_path_factory.mktemp("published")
    x, y = _digits()
    model = _lenet()
    model.compile(keras.optimizers.Adam(3e-3), "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x[:1400], y[:1400], epochs=4, batch_size=64, verbose=0)
    for layer in model.layers:
        if hasattr(layer, "kernel"):
            kernel = layer.kernel.numpy()
            layer.kernel.assign(np.where(np.abs(kernel) <= np.quantile(np.abs(kernel), 0.27), 0.0, kernel))
    model.save(root / "tf221.keras")
    return as_keras_214(root / "tf221.keras", root / "lenet5.keras"), model


def test_a_keras_2_14_file_loads_and_a_2_13_one_is_one_line(published, tmp_path):
    path, original = published
    with pytest.raises(ValueError, match="expected 3 variables, but received 0"):  # what tf_keras 2.21 says
        keras.models.load_model(path, custom_objects=model_objects(), compile=False)
    before = path.read_bytes()
    model = fp.load_model(path, compile=False)
    assert path.read_bytes() == before
    assert all(np.array_equal(a, b) for a, b in zip(model.get_weights(), original.get_weights(), strict=True))
    older = tmp_path / "older.keras"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(older, "w") as archive:
        for member in source.namelist():
            data = source.read(member)
            archive.writestr(member, b'{"keras_version": "2.13.1"}' if member == "metadata.json" else data)
    with pytest.raises(ModelFileError) as error:
        fp.load_model(older, compile=False)
    assert "written by Keras 2.13.1" in str(error.value) and "save it as .h5" in str(error.value)


def test_fused_zeros_are_held_through_fine_tuning_and_a_fused_kernel_is_removed(published):
    path, _ = published
    model = fp.load_model(path, compile=False)
    manifest, found = input_zeros(model)
    assert "qconvbn1/kernel 28%" in found.line() and "qconvbn2/kernel 27%" in found.line() and not found.left
    held = fp.hold(model, manifest, prune=["qconvbn2[:, :, 2, 5]"])  # a kernel of a fused layer, by name
    zero = {layer.name: layer.kernel.numpy() == 0 for layer in held.layers if hasattr(layer, "kernel")}
    x, y = _digits()
    held.compile(keras.optimizers.Adam(1e-2), "sparse_categorical_crossentropy")
    held.fit(x[:1400], y[:1400], epochs=1, batch_size=64, verbose=0)  # the batch statistics move too
    front = front_end_of(held)
    for layer in held.layers:
        if not hasattr(layer, "kernel"):
            continue
        assert np.all(layer.kernel.numpy()[zero[layer.name]] == 0.0), layer.name
        computed = front.quantized(layer, "kernel", layer.kernel)  # the folded kernel, quantized
        assert np.all(computed[zero[layer.name]] == 0.0), layer.name
    conv = held.get_layer("qconvbn2")
    folded = np.asarray(conv.kernel_quantizer_internal(conv.get_folded_weights()[0]))
    assert np.array_equal(front.quantized(conv, "kernel", conv.kernel), folded)  # what QKeras computes, bit for bit
    assert np.all(folded[:, :, 2, 5] == 0.0) and np.count_nonzero(folded) < folded.size * 0.75


@pytest.mark.parametrize("bits", [3, 6, 8])
@pytest.mark.parametrize("seed", [0, 1])
def test_pruned_entries_of_a_fused_kernel_are_zero_after_quantization_through_qat(bits, seed):
    """The property over bits, optimizers and seeds: a pruned raw entry stays 0.0, and so does the folded,
    quantized entry the layer computes with, while the batch statistics it folds move."""
    from models import OPTIMIZERS

    keras.utils.set_random_seed(seed)
    quantizer = f"quantized_bits({bits},{1 if bits > 2 else 0},alpha=1)"
    fused = qkeras.QConv2DBatchnorm(4, 3, kernel_quantizer=quantizer, bias_quantizer=Q, name="layer")
    model = keras.Sequential([keras.Input((5, 5, 2)), fused, keras.layers.Flatten(), keras.layers.Dense(3)])
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(32, 5, 5, 2)).astype(np.float32), rng.integers(0, 3, 32)
    pruned = rng.random(fused.kernel.shape) < 0.4
    held = fp.hold(model, fp.MaskManifest().prune("layer/kernel", where=pruned))
    held.compile(OPTIMIZERS[["Adam", "AdamW", "SGD-momentum"][bits % 3]](), "sparse_categorical_crossentropy")
    statistics = held.get_layer("layer").batchnorm.moving_variance.numpy().copy()
    held.fit(x, y, batch_size=8, epochs=2, verbose=0)
    fused = held.get_layer("layer")
    assert not np.array_equal(statistics, fused.batchnorm.moving_variance.numpy())
    assert np.count_nonzero(fused.kernel.numpy()[pruned]) == 0
    computed = front_end_of(held).quantized(fused, "kernel", fused.kernel)
    assert np.count_nonzero(computed[pruned]) == 0 and np.count_nonzero(computed[~pruned]) > 0


@pytest.mark.csim
def test_the_fused_lenet_exports_kernel_sparse_within_its_stated_bound(published, tmp_path):
    path, _ = published
    model = fp.load_model(path, compile=False)
    held = fp.hold(model, input_zeros(model)[0], prune=["qconvbn2[:, :, 2, 5]"])
    x, _ = _digits()
    exported = fp.export(held, "latency_stream", "pynq-z2", tmp_path / "prj", x=x[1400:])
    nodes = exported.manifest["hls_nodes"]
    front = front_end_of(held)
    for name in ("qconvbn1", "qconvbn2"):
        live = int(np.count_nonzero(front.quantized(held.get_layer(name), "kernel", held.get_layer(name).kernel)))
        assert nodes[name]["live_weights"] == live and nodes[name]["code"].startswith("kernel-sparse"), nodes[name]
    assert not any("not derived" in note or "no fixed type" in note for note in exported.notes), exported.notes
    check = fp.csim(exported, held, x[1400:])
    assert check.passed, check.format()
    judged = " ".join(check.judged)
    assert "qconvbn1" not in judged and "qconvbn2" not in judged  # the fused layers are bit-exact
    assert "hls4ml reads tanh 'tanh2' from a 4096-entry table" in check.tolerance.reason  # the table, stated


def test_a_fused_depthwise_layer_is_one_line_at_validate_and_its_zeros_are_named(tmp_path):
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            qkeras.QDepthwiseConv2DBatchnorm(3, depthwise_quantizer=Q, name="qdwbn"),
            keras.layers.Flatten(name="flatten"),
            qkeras.QDense(10, kernel_quantizer=Q, bias_quantizer=Q, name="fc"),
        ]
    )
    kernel = model.get_layer("qdwbn").depthwise_kernel
    kernel.assign(np.where(np.arange(9).reshape(3, 3, 1, 1) < 3, 0.0, kernel.numpy()))
    found = unheld_zeros(record_of(model))
    line = found[("qdwbn", "depthwise_kernel")]
    assert "QDepthwiseConv2DBatchnorm, which fpgaprune cannot hold: 3 exact zeros (33%)" in line
    assert "qdwbn/depthwise_kernel (QDepthwiseConv2DBatchnorm" in input_zeros(model)[1].line()
    model.save(tmp_path / "dw.keras")
    config = {"name": "dw", "model": {"file": str(tmp_path / "dw.keras")}, "data": {"dataset": "digits"}}
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(config))
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(
        [sys.executable, "-m", "fpgaprune.cli", "validate", str(tmp_path / "run.yaml")],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    lines = [line for line in done.stderr.strip().splitlines() if line.startswith(("note:", "error:"))]
    assert done.returncode == 2, done.stderr[-2000:]
    assert lines[0].startswith("note: qdwbn/depthwise_kernel: QDepthwiseConv2DBatchnorm, which fpgaprune cannot")
    assert "'qdwbn' is a QDepthwiseConv2DBatchnorm, which hls4ml 1.3.0 cannot convert" in lines[-1]
    assert "a QDepthwiseConv2D and a BatchNormalization" in lines[-1]


def test_a_fused_layer_hls4ml_would_get_wrong_is_one_line():
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            qkeras.QConv2DBatchnorm(4, 3, use_bias=False, kernel_quantizer=Q, name="qconvbn"),
            keras.layers.Flatten(name="flatten"),
            qkeras.QDense(10, kernel_quantizer=Q, bias_quantizer=Q, name="fc"),
        ]
    )
    problem = front_end_of(model).conversion_problem(model)
    assert problem.startswith("layer 'qconvbn' (QConv2DBatchnorm) has use_bias=False") and "\n" not in problem
