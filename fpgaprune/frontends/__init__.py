"""Front ends: the model frameworks and quantization libraries fpgaprune reads, one package each.

- `qkeras`: tf_keras (Keras 2) models and their QKeras twins: the front end that quantizes (QAT) and that
  hls4ml's Keras-2 converter takes.
- `keras3`: Keras 3 models (`import keras`, or `tf.keras` since TensorFlow 2.16): held and pruned as they are,
  quantized and exported through their tf_keras twin.

Each front end answers the same small protocol (`base.FrontEnd`): a layer's kind, its weights and their
quantizers, building the quantized twin, whether a quantizer keeps 0, a quantizer's fixed-point type, and
loading and saving a model file. Nothing outside a front end's package reads its framework's names. A third
front end (HGQ2, PyTorch) is one more package here, listed in FRONT_ENDS.
"""

import importlib
from functools import lru_cache

FRONT_ENDS = ("fpgaprune.frontends.qkeras", "fpgaprune.frontends.keras3")
QUANTIZING_FRONT_END = "fpgaprune.frontends.qkeras"  # QAT and hls4ml's export run on its twin of any model
_BOUND: list = []


def bind_all() -> None:
    """Every front end binds its layer classes to the kinds (`layer_kinds.bind`), once."""
    if _BOUND:
        return
    _BOUND.append(True)
    for package in FRONT_ENDS:
        try:
            importlib.import_module(f"{package}.layers")
        except ImportError:  # a front end whose framework is not installed binds nothing
            continue


@lru_cache(maxsize=1)
def front_ends() -> tuple:
    """The front-end objects (`base.FrontEnd`) of the installed frameworks."""
    found = []
    for package in FRONT_ENDS:
        try:
            found.append(importlib.import_module(f"{package}.front_end").FRONT_END)
        except ImportError:
            continue
    return tuple(found)


def front_end_of(model_or_layer):
    """The front end whose framework built `model_or_layer` (a model, a layer, or a class)."""
    for front_end in front_ends():
        if front_end.owns(model_or_layer):
            return front_end
    from fpgaprune.errors import ModelTypeError

    cls = model_or_layer if isinstance(model_or_layer, type) else type(model_or_layer)
    frameworks = " or ".join(front_end.name for front_end in front_ends())
    raise ModelTypeError(
        f"{cls.__module__}.{cls.__name__} is not a {frameworks} object; fpgaprune takes Keras "
        "models (Sequential or functional)"
    )


def quantizing():
    """The front end that quantizes (QAT) and whose models hls4ml exports: QKeras on tf_keras. Other front ends
    hand it their model's twin (`quantized_twin`). One line with the fix where QKeras cannot run
    (`fpgaprune._env`)."""
    from fpgaprune._env import require_legacy_keras

    require_legacy_keras("quantization and export")
    return importlib.import_module(f"{QUANTIZING_FRONT_END}.front_end").FRONT_END


def default_quantizers() -> dict:
    """The quantizer texts a run uses unless its config names others (`quantization.default`); no TensorFlow."""
    return dict(importlib.import_module(f"{QUANTIZING_FRONT_END}.spec").DEFAULT_QUANTIZERS)


def with_width(text: str, bits: int) -> str | None:
    """A quantizer text with its width set to `bits` (a sweep's `bits` axis); None when it has no width."""
    return importlib.import_module(f"{QUANTIZING_FRONT_END}.spec").with_width(text, bits)


class _Quantizing:
    """`QUANTIZING.x` is `quantizing().x`, resolved on use (the hls and quantize modules read it)."""

    def __getattr__(self, name):
        return getattr(quantizing(), name)


QUANTIZING = _Quantizing()
