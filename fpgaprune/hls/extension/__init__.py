"""fpgaprune's hls4ml extension: optimizer passes (and templates), registered idempotently into hls4ml."""

from fpgaprune.hls.extension.dead_channel_alpha import PASS_NAME as DEAD_CHANNEL_ALPHA
from fpgaprune.hls.extension.dead_channel_alpha import DeadChannelAlpha


def register() -> None:
    """Register the passes once and place them in hls4ml's flows (safe to call any number of times)."""
    from hls4ml.model.flow import get_flow
    from hls4ml.model.optimizer import get_available_passes, register_pass

    if DEAD_CHANNEL_ALPHA not in get_available_passes():
        register_pass(DEAD_CHANNEL_ALPHA, DeadChannelAlpha)
    convert = get_flow("convert").optimizers
    if DEAD_CHANNEL_ALPHA not in convert:
        convert.insert(convert.index("qkeras_factorize_alpha"), DEAD_CHANNEL_ALPHA)


__all__ = ["register"]
