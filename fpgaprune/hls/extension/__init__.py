"""fpgaprune's hls4ml extension: optimizer passes, templates and C++ sources, registered idempotently.

Names all start with `fpgaprune_`, so nothing collides with hls4ml's own. Passes and templates are
registered with the Vivado backend: the Vitis backend runs Vivado's 'specific_types' and
'apply_templates' flows after its own, so they apply to both (templates registered for Vitis alone would
be overwritten by Vivado's stock ones). The static C++ header is registered with both backends.
"""

from pathlib import Path

from fpgaprune.hls.extension.alpha_scale import PASS_NAME as ALPHA_SCALE
from fpgaprune.hls.extension.alpha_scale import AlphaScale
from fpgaprune.hls.extension.recurrent_quantizers import PASS_NAME as RECURRENT_QUANTIZERS
from fpgaprune.hls.extension.recurrent_quantizers import RecurrentQuantizers
from fpgaprune.hls.extension.sparse_kernels import PASS_NAME as SPARSE_KERNELS
from fpgaprune.hls.extension.sparse_kernels import TEMPLATES, SparseKernels

CPP_DIR = Path(__file__).parent / "cpp"


def _register_convert_passes() -> None:
    from hls4ml.model.flow import get_flow
    from hls4ml.model.optimizer import get_available_passes, register_pass

    convert = get_flow("convert").optimizers
    for name, cls in ((RECURRENT_QUANTIZERS, RecurrentQuantizers), (ALPHA_SCALE, AlphaScale)):
        if name not in get_available_passes():
            register_pass(name, cls)
        if name not in convert:
            convert.insert(convert.index("qkeras_factorize_alpha"), name)


def _register_sparse_kernels() -> None:
    from hls4ml.backends import get_backend
    from hls4ml.model.flow import get_flow
    from hls4ml.model.optimizer import get_available_passes

    vivado = get_backend("vivado")
    available = get_available_passes()
    if f"vivado:{SPARSE_KERNELS}" not in available:
        vivado.register_pass(SPARSE_KERNELS, SparseKernels)
    flow = get_flow("vivado:specific_types").optimizers
    if f"vivado:{SPARSE_KERNELS}" not in flow:
        flow.insert(flow.index("vivado:generate_unrolled_dense_resource") + 1, f"vivado:{SPARSE_KERNELS}")
    for template in TEMPLATES:
        if f"vivado:{template().get_name()}" not in available:
            vivado.register_template(template)
    for backend in ("vivado", "vitis"):
        get_backend(backend).register_source(CPP_DIR / "nnet_fpgaprune_sparse.h")


def register() -> None:
    """Register everything once and place the passes in hls4ml's flows (safe to call any number of times)."""
    _register_convert_passes()
    _register_sparse_kernels()


__all__ = ["register"]
