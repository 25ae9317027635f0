"""fpgaprune's hls4ml extension: optimizer passes, templates and C++ sources, registered idempotently.

Names all start with `fpgaprune_`, so nothing collides with hls4ml's own. The kernel-sparse pass
(`sparse_kernels.py`) is backend-independent; each backend family registers it with its own code generator,
templates and headers through `backends.py` (`vivado/` and `catapult/`). Passes that fix one converter's IR belong to
that converter's front end (the QKeras ones: `frontends/qkeras/hls_passes.py`).
"""

from fpgaprune.hls.extension.backends import EXTENSIONS, BackendExtension, register_backend_extension
from fpgaprune.hls.extension.catapult import CATAPULT
from fpgaprune.hls.extension.vivado import VIVADO


def register() -> None:
    """Register everything once (safe to call any number of times)."""
    for built_in in (VIVADO, CATAPULT):
        EXTENSIONS.setdefault(built_in.backend, built_in)
    for extension in list(EXTENSIONS.values()):  # the built-in ones, and any a caller registered
        register_backend_extension(extension)


__all__ = ["BackendExtension", "EXTENSIONS", "register", "register_backend_extension"]
