"""QKeras' quantizers from fpgaprune's quantizer texts (`quantize/spec.py`, which checks them with `ast`): built
by QKeras' own parser."""

from fpgaprune.errors import QuantizationConfigError
from fpgaprune.quantize.spec import (  # noqa: F401 - the texts' names, where this front end's users find them
    DEFAULT_QUANTIZERS,
    QUANTIZERS,
    ROLES,
    WEIGHT_ROLES,
    QuantizationSpec,
    check_quantizer_text,
    with_width,
)


def build_quantizer(text: str, where: str):
    """The QKeras quantizer object for a checked string."""
    from qkeras import get_quantizer

    try:
        return get_quantizer(check_quantizer_text(text, where))
    except QuantizationConfigError:
        raise
    except Exception as exc:  # QKeras reports bad arguments with assorted exception types
        raise QuantizationConfigError(f"{where}: QKeras rejects {text!r} ({exc})") from None
