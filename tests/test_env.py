"""The process's Keras (`fpgaprune/support/environment.py`): importing fpgaprune makes tf.keras tf_keras for QKeras,
whichever of `import keras` and `import fpgaprune` comes first; where tf.keras was already resolved to Keras 3,
holds still work and quantization says, in one line, what to change."""

import os
import subprocess
import sys

KERAS3_MODEL = (
    "import numpy as np\n"
    "m = keras.Sequential([keras.Input((6,)), keras.layers.Dense(5, name='h', activation='relu'),"
    " keras.layers.Dense(3, name='out')])\n"
    "held = fp.prune(m, selections=['h[0, :]'])\n"
    "held.compile(keras.optimizers.AdamW(0.05, weight_decay=0.5), 'mse')\n"
    "held.fit(np.ones((16, 6)), np.ones((16, 3)), verbose=0, epochs=2)\n"
    "assert not held.get_layer('h').kernel.numpy()[0].any()\n"
    "print('held')\n"
)
QUANTIZE = (
    "q = fp.to_qkeras(held, {'default': {'kernel': 'quantized_bits(8,0,alpha=1)', "
    "'bias': 'quantized_bits(8,0,alpha=1)', 'activation': 'quantized_relu(8,3)'}})\n"
    "assert not q.get_layer('h').kernel.numpy()[0].any()\n"
    "print('quantized', type(q).__module__.split('.')[0], type(q.get_layer('h')).__name__)\n"
)


def run_python(code: str):
    env = {k: v for k, v in os.environ.items() if k != "TF_USE_LEGACY_KERAS"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)


def test_import_sets_legacy_keras_before_tensorflow():
    result = run_python(
        "import fpgaprune, os, tensorflow as tf, tf_keras, qkeras\n"
        "assert os.environ['TF_USE_LEGACY_KERAS'] == '1'\n"
        "assert tf.keras.Model is tf_keras.Model\n"
        "assert issubclass(qkeras.QDense, tf_keras.layers.Dense)\n"
        "print('ok')"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "ok"


def test_import_keras_first_then_fpgaprune_quantizes_a_keras3_model():
    """`import keras` imports TensorFlow without touching tf.keras: QKeras still binds to tf_keras."""
    result = run_python(
        "import keras\nimport fpgaprune as fp\nimport qkeras, tf_keras\n"
        "assert issubclass(qkeras.QDense, tf_keras.layers.Dense)\n" + KERAS3_MODEL + QUANTIZE
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["held", "quantized", "tf_keras", "QDense"]


def test_import_fpgaprune_first_then_keras_quantizes_a_keras3_model():
    result = run_python("import fpgaprune as fp\nimport keras\n" + KERAS3_MODEL + QUANTIZE)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["held", "quantized", "tf_keras", "QDense"]


def test_tf_keras_resolved_to_keras3_first_holds_work_and_quantization_is_one_line():
    result = run_python(
        "import tensorflow as tf\ntf.keras.layers.Dense\nimport fpgaprune as fp\nimport keras\n"
        "assert tf.keras.Model is keras.Model  # the user's tf.keras is left as it was\n" + KERAS3_MODEL + QUANTIZE
    )
    assert result.returncode != 0
    assert "held" in result.stdout.split()
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("fpgaprune.errors.ModelTypeError: quantization and export needs QKeras"), last
    assert "TF_USE_LEGACY_KERAS=1" in last and "import fpgaprune before anything touches tf.keras" in last


def test_import_after_untouched_tensorflow_still_works():
    result = run_python("import tensorflow as tf\nimport fpgaprune, tf_keras\nassert tf.keras.Model is tf_keras.Model")
    assert result.returncode == 0, result.stderr[-2000:]


def test_a_keras3_model_on_another_backend_is_one_line(monkeypatch):
    """Holds are TensorFlow variables: Keras 3's JAX and torch backends are refused (neither is installed here,
    so the backend Keras reports is set)."""
    import keras
    import pytest

    import fpgaprune as fp

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, name="d")])
    monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    with pytest.raises(fp.ModelTypeError, match=r"runs on Keras 3's jax backend; .*KERAS_BACKEND=tensorflow"):
        fp.hold(model, prune=["d[0, 0]"])
