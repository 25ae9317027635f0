"""fpgaprune: remove exactly the kernels you choose, retrain around them, and carry the zeros into hardware.

Importing fpgaprune sets TF_USE_LEGACY_KERAS=1 (so `tf.keras` is tf_keras, which QKeras and hls4ml's Keras-2
converter need) and fails with the fix if TensorFlow was already imported with Keras 3.
"""

from fpgaprune._env import ensure_legacy_keras

ensure_legacy_keras()

from fpgaprune.errors import (  # noqa: E402
    ExportError,
    FpgapruneError,
    HlsConfigError,
    ManifestError,
    ModelTypeError,
    QuantizationConfigError,
    QuantizerZeroError,
    SelectionError,
    UnsupportedLayerError,
)
from fpgaprune.masking import (  # noqa: E402
    HoldConstraint,
    HoldEntry,
    MaskManifest,
    enforce,
    finalize,
    hold,
    manifest_of,
)
from fpgaprune.masking.saving import load_model, save_model  # noqa: E402



def export(*args, **kwargs):
    """`fpgaprune.hls.export`: a complete hls4ml project for a quantized model (imports hls4ml on first use)."""
    from fpgaprune.hls import export as _export

    return _export(*args, **kwargs)


def boards() -> list:
    """The FPGA boards fpgaprune ships (`fpgaprune.hls.boards`)."""
    from fpgaprune.hls import boards as _boards

    return _boards()


__version__ = "0.1.0"

__all__ = [
    "ExportError",
    "FpgapruneError",
    "HlsConfigError",
    "HoldConstraint",
    "HoldEntry",
    "ManifestError",
    "MaskManifest",
    "ModelTypeError",
    "QuantizationConfigError",
    "QuantizerZeroError",
    "SelectionError",
    "UnsupportedLayerError",
    "boards",
    "enforce",
    "export",
    "finalize",
    "hold",
    "load_model",
    "manifest_of",
    "save_model",
]
