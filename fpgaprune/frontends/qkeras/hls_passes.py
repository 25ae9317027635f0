"""The QKeras converter's own fixes to hls4ml 1.3's IR, as passes in its backend-independent 'convert' flow,
registered idempotently before the converter runs: QLSTM/QGRU weights through their quantizers
(`recurrent_quantizers.py`) and per-channel scales made factorable (`alpha_scale.py`)."""

from fpgaprune.frontends.qkeras.alpha_scale import PASS_NAME as ALPHA_SCALE
from fpgaprune.frontends.qkeras.alpha_scale import AlphaScale
from fpgaprune.frontends.qkeras.recurrent_quantizers import PASS_NAME as RECURRENT_QUANTIZERS
from fpgaprune.frontends.qkeras.recurrent_quantizers import RecurrentQuantizers


def register_convert_passes() -> None:
    from hls4ml.model.flow import get_flow
    from hls4ml.model.optimizer import get_available_passes, register_pass

    convert = get_flow("convert").optimizers
    for name, cls in ((RECURRENT_QUANTIZERS, RecurrentQuantizers), (ALPHA_SCALE, AlphaScale)):
        if name not in get_available_passes():
            register_pass(name, cls)
        if name not in convert:
            convert.insert(convert.index("qkeras_factorize_alpha"), name)
