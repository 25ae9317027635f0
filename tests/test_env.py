"""Importing fpgaprune makes tf.keras tf_keras, or fails loudly with the fix when that is no longer possible."""

import os
import subprocess
import sys


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


def test_import_after_keras3_tensorflow_fails_with_the_fix():
    result = run_python("import tensorflow as tf\ntf.keras.layers.Dense\nimport fpgaprune")
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: TensorFlow was imported before fpgaprune and tf.keras is Keras 3")
    assert "TF_USE_LEGACY_KERAS=1" in last


def test_import_after_untouched_tensorflow_still_works():
    result = run_python("import tensorflow as tf\nimport fpgaprune, tf_keras\nassert tf.keras.Model is tf_keras.Model")
    assert result.returncode == 0, result.stderr[-2000:]
