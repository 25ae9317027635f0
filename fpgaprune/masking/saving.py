"""Save and load held models (`.keras` or `.h5`) so that their holds keep working in further training."""

import os
from pathlib import Path

from fpgaprune.atomic import atomic_target
from fpgaprune.errors import FpgapruneError
from fpgaprune.masking.hold_constraint import HoldConstraint
from fpgaprune.tfk import keras, qkeras_objects

FORMATS = (".keras", ".h5")


def save_model(model, path) -> Path:
    """Save `model` (with optimizer state when compiled) to a `.keras` or `.h5` file, atomically."""
    path = Path(path)
    if path.suffix not in FORMATS:
        raise FpgapruneError(f"{path}: model files must end in {' or '.join(FORMATS)}")
    tmp, final = atomic_target(path)
    try:
        model.save(tmp)
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)
    return final


def load_model(path, compile: bool = True):
    """Load a tf_keras or QKeras model saved by `save_model` (or by Keras), holds included."""
    path = Path(path)
    if not path.exists():
        raise FpgapruneError(f"{path}: no such model file")
    if path.suffix not in FORMATS:
        raise FpgapruneError(f"{path}: model files must end in {' or '.join(FORMATS)}")
    objects = {**qkeras_objects(), "HoldConstraint": HoldConstraint, "fpgaprune>HoldConstraint": HoldConstraint}
    return keras.models.load_model(path, custom_objects=objects, compile=compile)
