"""A Keras model written to its file atomically (the tf_keras and Keras 3 front ends' `save`)."""

import os
from pathlib import Path

from fpgaprune.errors import FpgapruneError
from fpgaprune.model.files import FORMATS
from fpgaprune.support.atomic import atomic_target


def write_model_file(model, path) -> Path:
    """`model.save` to a `.keras` or `.h5` file, atomically (each front end's `save`)."""
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
