"""Make `tf.keras` tf_keras (Keras 2) before anything imports it, for QKeras and hls4ml's Keras-2 converter.

QKeras imports `tensorflow.keras` (a module path) and calls `tf.keras` (an attribute) as it runs, so the
quantizing front end needs both to be tf_keras. TensorFlow decides them at two moments: the attribute when it is
first touched, from `TF_USE_LEGACY_KERAS`; the module path when TensorFlow is imported (it puts Keras 3's or
tf_keras' API first on `tensorflow.__path__`). `import keras` imports TensorFlow (its backend) but touches
neither, so importing fpgaprune after it sets the variable and puts tf_keras' API first on the path, as
TensorFlow would have: Keras 3 and tf_keras then live side by side, whichever was imported first.

If `tf.keras` was already resolved to Keras 3 when fpgaprune is imported (`tf.keras` or `tensorflow.keras`
touched first), nothing can rebind it: holds and pruning still work (on Keras 3 and tf_keras models alike),
and the QKeras stages (quantization, export) raise one line with the fix when they are reached.

The quantizer libraries live in separate environments: QKeras 0.9.0 (the base install) or HGQ2
(`requirements/hgq2.txt`). hgq2 installs a top-level `qkeras` package of its own that breaks QKeras in either
install order, so an environment holding both is refused at import (`check_quantizer_environment`), and
`qkeras_installed` asks the package metadata, not `import qkeras` (which finds hgq2's shim).
"""

import importlib.util
import os
import sys
from functools import lru_cache
from importlib import metadata

from fpgaprune.errors import ModelTypeError

LEGACY_KERAS_VARIABLE = "TF_USE_LEGACY_KERAS"

FIX = (
    "import fpgaprune before anything touches tf.keras, or set TF_USE_LEGACY_KERAS=1 before TensorFlow is "
    "imported (`export TF_USE_LEGACY_KERAS=1`); `import keras` itself is fine"
)


def set_legacy_keras() -> None:
    """Set TF_USE_LEGACY_KERAS=1 without importing TensorFlow; if TensorFlow is already imported (by `import
    keras`) and `tensorflow.keras` not yet, put tf_keras' API first on its path, as TensorFlow does at import."""
    os.environ[LEGACY_KERAS_VARIABLE] = "1"
    tensorflow = sys.modules.get("tensorflow")
    if tensorflow is None or "tensorflow.keras" in sys.modules or not hasattr(tensorflow, "__path__"):
        return
    loader = vars(tensorflow).get("keras")  # TensorFlow's lazy loader, until `tf.keras` is first touched
    if loader is not None and (type(loader).__name__ != "KerasLazyLoader" or vars(loader).get("_tfll_initialized")):
        return
    spec = importlib.util.find_spec("tf_keras")
    if spec is None or not spec.submodule_search_locations:
        return
    api = os.path.join(list(spec.submodule_search_locations)[0], "api", "_v2")
    if os.path.isdir(os.path.join(api, "keras")) and api not in tensorflow.__path__:
        tensorflow.__path__.insert(0, api)


HGQ2_ENVIRONMENT = "requirements/hgq2.txt, docs/hgq2.md"


@lru_cache(maxsize=None)
def installed(distribution: str) -> str | None:
    """The installed version of `distribution` (from its metadata, importing nothing), or None."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def clash_line() -> str | None:
    """One line saying what to do when this environment holds both QKeras and hgq2, else None."""
    qkeras, hgq2 = installed("QKeras"), installed("hgq2")
    if not (qkeras and hgq2):
        return None
    return (
        f"this Python environment holds both QKeras {qkeras} and hgq2 {hgq2}; hgq2 installs a `qkeras` package of "
        "its own over QKeras' and breaks it, so each needs its own venv: uninstall both, then `pip install -e .` "
        f"for QKeras, or build the HGQ2 venv ({HGQ2_ENVIRONMENT})"
    )


def check_quantizer_environment() -> None:
    """Refuse, at import, an environment where QKeras and hgq2 overwrite each other's files (one line)."""
    line = clash_line()
    if line:
        raise ImportError(f"fpgaprune: {line}")


def qkeras_installed() -> bool:
    """Whether QKeras itself is installed (hgq2's `qkeras` shim is not QKeras)."""
    return installed("QKeras") is not None


_RESOLVED: list = []  # [whether tf.keras is tf_keras], once resolved: it cannot change after


def legacy_keras() -> bool:
    """Whether `tf.keras` and `tensorflow.keras` are tf_keras in this process (resolving them now, after
    `set_legacy_keras`), and QKeras, if already imported, bound to them."""
    if not _RESOLVED and not qkeras_installed():
        return False  # no QKeras to bind: nothing asks tf.keras then (tf_keras models use `tf_keras` itself)
    if not _RESOLVED:
        set_legacy_keras()
        import tensorflow as tf
        import tf_keras

        module = importlib.import_module("tensorflow.keras")
        qkeras = sys.modules.get("qkeras")
        bound = qkeras is None or issubclass(getattr(qkeras, "QDense", tf_keras.layers.Dense), tf_keras.layers.Dense)
        _RESOLVED.append(tf.keras.Model is tf_keras.Model and module.Model is tf_keras.Model and bound)
    return _RESOLVED[0]


def require_legacy_keras(what: str) -> None:
    """Raise one line with the fix unless QKeras is installed and `tf.keras` is tf_keras (QKeras needs it)."""
    if not qkeras_installed():
        raise ModelTypeError(
            f"{what} needs QKeras, which this environment does not hold (an HGQ2 environment: set "
            "`quantization.library: hgq2`, or run in the QKeras venv, `pip install -e .`)"
        )
    if not legacy_keras():
        found = getattr(sys.modules.get("keras"), "__version__", "3")
        raise ModelTypeError(
            f"{what} needs QKeras, which needs tf.keras to be tf_keras, but this process resolved "
            f"tf.keras to Keras {found} before fpgaprune was imported; {FIX}"
        )
