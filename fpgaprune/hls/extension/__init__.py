"""fpgaprune's hls4ml extension: optimizer passes, templates and C++ sources, registered idempotently.

Names all start with `fpgaprune_`, so nothing collides with hls4ml's own. The model-level passes
(`alpha_scale.py`, `recurrent_quantizers.py`) join hls4ml's backend-independent 'convert' flow. The
kernel-sparse pass (`sparse_kernels.py`) is backend-independent too; each backend family registers it with
its own code generator, templates and headers through `backends.py` (`vivado/` today).
"""

from fpgaprune.hls.extension.alpha_scale import PASS_NAME as ALPHA_SCALE
from fpgaprune.hls.extension.alpha_scale import AlphaScale
from fpgaprune.hls.extension.backends import EXTENSIONS, BackendExtension, register_backend_extension
from fpgaprune.hls.extension.recurrent_quantizers import PASS_NAME as RECURRENT_QUANTIZERS
from fpgaprune.hls.extension.recurrent_quantizers import RecurrentQuantizers
from fpgaprune.hls.extension.vivado import VIVADO


def _register_convert_passes() -> None:
    from hls4ml.model.flow import get_flow
    from hls4ml.model.optimizer import get_available_passes, register_pass

    convert = get_flow("convert").optimizers
    for name, cls in ((RECURRENT_QUANTIZERS, RecurrentQuantizers), (ALPHA_SCALE, AlphaScale)):
        if name not in get_available_passes():
            register_pass(name, cls)
        if name not in convert:
            convert.insert(convert.index("qkeras_factorize_alpha"), name)


def register() -> None:
    """Register everything once and place the passes in hls4ml's flows (safe to call any number of times)."""
    _register_convert_passes()
    EXTENSIONS.setdefault(VIVADO.backend, VIVADO)
    for extension in list(EXTENSIONS.values()):  # the Vivado family's, and any a caller registered
        register_backend_extension(extension)


__all__ = ["BackendExtension", "EXTENSIONS", "register", "register_backend_extension"]
