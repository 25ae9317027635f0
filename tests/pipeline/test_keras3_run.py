"""A Keras 3 `.keras` CNN, as a user saves it today, through `fpgaprune run`: pruned, retrained, quantized (QAT on
its tf_keras/QKeras twin), exported and C-simulated bit-exactly; the run's `finetune/pruned.keras` then loads in
plain Keras 3, without fpgaprune, with its pruned kernels exactly 0; its quantized model exports to Catapult."""

import json
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
import yaml
from user_cases import ENV, FPGAPRUNE

import fpgaprune as fp
from fpgaprune import data
from fpgaprune.hls import count_products
from fpgaprune.hls.manifest import quantized_kernel
from fpgaprune.record import record_of

PLAIN_KERAS = """
import sys
import keras, numpy as np
model = keras.saving.load_model(sys.argv[1])
assert not any(name.startswith("fpgaprune") for name in sys.modules), "fpgaprune was imported"
np.savez(sys.argv[2], **{f"{layer.name}/{i}": w for layer in model.layers for i, w in enumerate(layer.get_weights())})
print(type(model).__module__.split(".")[0], [type(layer).__name__ for layer in model.layers])
"""


@pytest.fixture(scope="module")
def keras3_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("keras3")
    digits = data.digits()
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            keras.layers.Conv2D(8, 3, activation="relu", name="conv1"),
            keras.layers.Conv2D(8, 3, activation="relu", name="conv2"),
            keras.layers.Flatten(name="flatten"),
            keras.layers.Dense(10, activation="softmax", name="fc"),
        ]
    )
    model.compile(keras.optimizers.Adam(3e-3), "sparse_categorical_crossentropy")
    model.fit(digits.x_train, digits.y_train, epochs=4, batch_size=32, verbose=0)
    model.save(root / "cnn.keras")
    np.savez(
        root / "digits.npz", x_train=digits.x_train, y_train=digits.y_train, x_test=digits.x_test, y_test=digits.y_test
    )
    config = {
        "name": "keras3",
        "model": {"file": str(root / "cnn.keras")},
        "data": {"dataset": "npz", "file": str(root / "digits.npz")},
        "pruning": {"structure": "kernel", "targets": {"conv2": 0.5}},
        "finetune": {"epochs": 1},
        "quantization": {"qat_epochs": 1},
        "outputs": {"dir": str(root / "run"), "tb_samples": 20, "synthesize_layers": False},
    }
    (root / "run.yaml").write_text(yaml.safe_dump(config))
    result = subprocess.run(
        [*FPGAPRUNE, "run", str(root / "run.yaml")], capture_output=True, text=True, env=ENV, timeout=900
    )
    return root, result


def test_a_keras3_cnn_runs_end_to_end_and_csim_is_bit_exact(keras3_run):
    root, result = keras3_run
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    metrics = {
        stage: json.loads((root / "run" / stage / "stage.json").read_text())["metrics"]
        for stage in ("train", "prune", "finetune", "quantize", "csim")
    }
    assert metrics["csim"]["bit_exact"] and metrics["csim"]["mismatches"] == 0
    assert metrics["finetune"]["accuracy"] > 0.5 and metrics["quantize"]["accuracy"] > 0.5
    assert "trust" not in result.stdout + result.stderr
    quantized = fp.load_model(root / "run" / "quantize" / "model.keras")
    kernel = quantized.get_layer("conv2").kernel.numpy()
    pruned = fp.MaskManifest.load(root / "run" / "prune" / "masks.json")
    for entry in pruned:
        if entry.layer == "conv2" and entry.variable == "kernel":
            assert not kernel[entry.mask(kernel.shape)].any()


def test_plain_keras3_loads_the_pruned_model_with_its_zeros(keras3_run):
    root, result = keras3_run
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    out = root / "weights.npz"
    loaded = subprocess.run(
        [sys.executable, "-c", PLAIN_KERAS, str(root / "run" / "finetune" / "pruned.keras"), str(out)],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    assert loaded.stdout.split()[0] == "keras"
    weights = np.load(out)
    held = fp.load_model(root / "run" / "finetune" / "model.keras")
    manifest = fp.manifest_of(held)
    assert len(manifest) > 0
    kernel = weights["conv2/0"]
    removed = np.zeros(kernel.shape, bool)
    for entry in manifest:
        if entry.layer == "conv2" and entry.variable == "kernel":
            removed |= entry.mask(kernel.shape)
    assert removed.any() and not kernel[removed].any()
    assert np.array_equal(kernel, held.get_layer("conv2").kernel.numpy())  # the same model, plain
    assert Path(root / "run" / "finetune" / "pruned.keras").stat().st_size > 0


@pytest.mark.csim
def test_the_runs_keras3_model_exports_to_catapult_kernel_sparse_and_bit_exact(keras3_run, tmp_path):
    root, result = keras3_run
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    quantized = fp.load_model(root / "run" / "quantize" / "model.keras")
    x_test = np.load(root / "digits.npz")["x_test"]
    with pytest.raises(fp.ExportError) as refused:  # its softmax: AC Math's piecewise-linear one, bounded nowhere
        fp.export(quantized, "latency_stream", "pynq-z2", tmp_path / "softmax", x=x_test[:20], backend="Catapult")
    assert str(refused.value).startswith("layer 'fc': Catapult computes softmax by AC Math's piecewise-linear")
    assert str(refused.value).endswith("export to Vitis or Vivado, or end the model before the softmax")
    assert not (tmp_path / "softmax").exists()
    logits = fp.load_model(root / "run" / "quantize" / "model.keras")
    logits.get_layer("fc").activation = keras.activations.linear  # the same model, ending at its logits
    exported = fp.export(logits, "latency_stream", "pynq-z2", tmp_path / "prj", x=x_test[:20], backend="Catapult")
    check = fp.csim(exported, logits, x_test)
    assert check.bit_exact and check.samples == len(x_test), check.format()
    live = {
        name: int(np.count_nonzero(quantized_kernel(record_of(logits).layers[name]))) * positions
        for name, positions in {"conv1": 36, "conv2": 16, "fc": 1}.items()
    }
    assert live["conv2"] < 8 * 8 * 9 * 16  # half of conv2's kernels removed: their products are not run
    assert count_products(exported.hls_model, x_test[:3]) == live


@pytest.mark.csim
def test_the_runs_keras3_model_streams_as_rtl_bit_exactly(keras3_run, tmp_path):
    """The RTL backend reads the quantized Keras 3 model's record (its QKeras twin) as any other: the softmax is
    one line naming the layer; at its logits, the stream is bit-exact against QKeras."""
    root, result = keras3_run
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    x_test = np.load(root / "digits.npz")["x_test"]
    softmax = fp.load_model(root / "run" / "quantize" / "model.keras")
    with pytest.raises(fp.ExportError, match="layer 'fc': the RTL backend computes no softmax yet"):
        fp.export(softmax, "latency_parallel", "ulx3s-85f", tmp_path / "softmax", x=x_test[:20], backend="RTL")
    logits = fp.load_model(root / "run" / "quantize" / "model.keras")
    logits.get_layer("fc").activation = keras.activations.linear
    exported = fp.export(logits, "latency_parallel", "ulx3s-85f", tmp_path / "rtl", x=x_test[:20], backend="RTL")
    assert [s["layers"] for s in exported.manifest["stages"]][-2:] == [["flatten"], ["fc"]]
    check = fp.csim(exported, logits, x_test[:200])
    assert check.bit_exact, check.format()
