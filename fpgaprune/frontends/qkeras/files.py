"""Save and load held models (`.keras` or `.h5`) so that their holds keep working in further training."""

import os
from pathlib import Path

from fpgaprune.atomic import atomic_target
from fpgaprune.errors import FpgapruneError
from fpgaprune.masking.hold_constraint import HoldConstraint
from fpgaprune.errors import ModelFileError, first_line
from fpgaprune.model_files import FORMATS, check_model_file
from fpgaprune.tfk import keras, qkeras_objects


def model_objects() -> dict:
    """The custom objects a held QKeras model's config names (QKeras' and the hold constraint)."""
    return {**qkeras_objects(), "HoldConstraint": HoldConstraint, "fpgaprune>HoldConstraint": HoldConstraint}


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


def load_model(path, compile: bool = True, trust_code: bool = False):
    """Load a tf_keras or QKeras model saved by `save_model` (or by Keras), holds included.

    The file's config is checked against an allow-list first (`fpgaprune.model_files`): a `Lambda` or a foreign
    module is refused with one line unless `trust_code=True`. Any failure to load is one ModelFileError line.
    """
    path = check_model_file(path, trust_code)
    try:
        return keras.models.load_model(path, custom_objects=model_objects(), compile=compile, safe_mode=not trust_code)
    except Exception as error:  # noqa: BLE001 - Keras raises many types for a bad file; the user gets one line.
        raise ModelFileError(f"{path}: could not load the model ({type(error).__name__}: "
                             f"{first_line(error)})") from error
