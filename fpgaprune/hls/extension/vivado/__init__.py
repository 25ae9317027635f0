"""fpgaprune's kernel-sparse code for hls4ml's Vivado family (Vivado and Vitis): the product classes
(`sparse_cpp.py`), the templates (`templates.py`) and the static header (`cpp/`).

The pass and templates are registered with the Vivado backend: the Vitis backend runs Vivado's
'specific_types' and 'apply_templates' flows after its own, so they apply to both (templates registered for
Vitis alone would be overwritten by Vivado's stock ones). The static header goes to both.
"""

from pathlib import Path

from fpgaprune.hls.extension.backends import BackendExtension
from fpgaprune.hls.extension.sparse_kernels import SparseKernels
from fpgaprune.hls.extension.vivado.sparse_cpp import FABRIC_PRAGMAS, product_class_source
from fpgaprune.hls.extension.vivado.templates import CODES, TEMPLATES

CPP_DIR = Path(__file__).parent / "cpp"


class VivadoSparseKernels(SparseKernels):
    source = staticmethod(product_class_source)
    codes = CODES
    fabric_pragmas = FABRIC_PRAGMAS


VIVADO = BackendExtension(
    backend="vivado",
    sparse_pass=VivadoSparseKernels,
    pass_flow="vivado:specific_types",
    pass_after="vivado:generate_unrolled_dense_resource",
    templates=TEMPLATES,
    headers=(CPP_DIR / "nnet_fpgaprune_sparse.h",),
    header_backends=("vivado", "vitis"),
)
