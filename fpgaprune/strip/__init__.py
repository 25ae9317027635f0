"""Strip: physically remove dead channels, folding constant channels into the next layer's bias. The rebuild is
the model's front end's (`FrontEnd.strip`: Keras models); a PyTorch module keeps its dead channels."""

from fpgaprune.record import resolved
from fpgaprune.strip.result import STRIP_KERAS_ONLY, StripError, StripResult

__all__ = ["STRIP_KERAS_ONLY", "StripError", "StripResult", "strip"]


def strip(model, on_unsafe: str = "raise") -> StripResult:
    """Remove dead channels of `model` (or of a bound model's, `record.resolved`); `on_unsafe="keep"` leaves
    channels at a disagreeing merge instead of refusing."""
    bound = resolved(model)
    bound.front.check_model(bound.model)
    return bound.front.strip(bound.model, on_unsafe)
