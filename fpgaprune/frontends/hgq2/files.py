"""HGQ2 model files: Keras 3's allow-list (`frontends/keras3/files.py`) plus HGQ2's own serializable classes
(registered as "hgq>QConv2D", ...), then Keras 3's safe load, holds and their bit widths included."""

from dataclasses import replace
from functools import lru_cache

from fpgaprune.frontends.keras3 import files as keras3_files
from fpgaprune.model.files import check_model_configs, check_model_file

save_model = keras3_files.save_model
model_objects = keras3_files.model_objects


@lru_cache(maxsize=1)
def hgq2_classes() -> frozenset:
    """The class names HGQ2 registers with Keras (its layers, quantizers, constraints, regularizers)."""
    import hgq  # noqa: F401  (registers them)
    import keras

    return frozenset(name.partition(">")[2] for name in keras.saving.get_custom_objects() if name.startswith("hgq>"))


def _registered(name: str) -> bool:
    package, _, plain = name.rpartition(">")
    return (package == "hgq" and plain in hgq2_classes()) or keras3_files.POLICY.registered(name)


POLICY = replace(
    keras3_files.POLICY,
    framework="Keras 3 + HGQ2",
    classes=lambda: keras3_files.allowed_classes() | hgq2_classes(),
    modules=(*keras3_files.POLICY.modules, "hgq"),
    registered=_registered,
)


def load_model(path, compile: bool = True, trust_code: bool = False):
    """Load a Keras 3 or HGQ2 model file after its configs passed the allow-list; its holds, and the held
    weights' bit widths, enforced."""
    from fpgaprune.frontends.hgq2.holds import hold_bits

    path = check_model_file(path)
    check_model_configs(path, POLICY)
    model = keras3_files.load_keras3(path, compile=compile)
    hold_bits(model)
    return model


def model_from_json(path, text: str, weights, trust_code: bool = False):
    from fpgaprune.frontends.hgq2.holds import hold_bits

    model = keras3_files.model_from_json(path, text, weights, trust_code=trust_code)
    hold_bits(model)
    return model
