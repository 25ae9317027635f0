"""Errors that fpgaprune raises for bad input. Each message is one line naming what was wrong."""


def first_line(error) -> str:
    """The first non-empty line of an error (or a message), for a one-line report; the type name if empty."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


class FpgapruneError(ValueError):
    """Base class: bad input to fpgaprune (a selection, a model, a file)."""


class SelectionError(FpgapruneError):
    """A selection names no layer, no variable, or entries outside the variable's shape."""


class UnsupportedLayerError(FpgapruneError):
    """A layer class that fpgaprune cannot mask."""


class ModelTypeError(FpgapruneError):
    """A model that is not a tf_keras model (for example one built with Keras 3)."""


class ManifestError(FpgapruneError):
    """A mask manifest that is malformed or does not fit the model."""


class QuantizerZeroError(FpgapruneError):
    """A quantizer of a pruned weight does not map 0 to 0 (binary, quantized_bits(1,0), quantized_po2, ...)."""


class QuantizationConfigError(FpgapruneError):
    """A quantization setting that is malformed or names an unknown quantizer, layer or key."""


class HlsConfigError(FpgapruneError):
    """An hls4ml preset, config file, board or export option that is malformed or unknown."""


class ExportError(FpgapruneError):
    """An export that cannot proceed (for example an existing output directory without overwrite=True)."""


class ModelFileError(FpgapruneError):
    """A model file that cannot be read, or that would run code while loading (without the opt-in)."""


class DataError(FpgapruneError):
    """A data file or array that does not fit the model: missing keys, shapes, labels, non-finite values."""


class NonFiniteError(FpgapruneError):
    """A NaN or Inf in a loss, a weight or an input."""


class FpgapruneNote(UserWarning):
    """Something fpgaprune changed that the user should know, in one line (a quantizer converted, say): a warning,
    which the CLI prints as `note: ...`."""
