"""fpgaprune's kernel-sparse code for hls4ml's Catapult backend: the generated tables (`sparse_cpp.py`), the
templates (`templates.py`) and the static header (`cpp/`), in ac_types and C++11 as hls4ml's Catapult code is.

The pass runs in Catapult's 'specific_types' flow after its resource-strategy transposes, as the Vivado
family's does; the templates join Catapult's own 'apply_templates' flow after its stock ones. A Transpose before
a Flatten into a Dense is folded into the Dense's weights in io_stream too (`stream_flatten.py`).
"""

from pathlib import Path

from fpgaprune.hls.extension.backends import BackendExtension
from fpgaprune.hls.extension.catapult import stream_flatten
from fpgaprune.hls.extension.catapult.sparse_cpp import table_class_source
from fpgaprune.hls.extension.catapult.templates import CODES, TEMPLATES
from fpgaprune.hls.extension.sparse_kernels import SparseKernels

CPP_DIR = Path(__file__).parent / "cpp"


class CatapultSparseKernels(SparseKernels):
    source = staticmethod(table_class_source)
    codes = CODES


CATAPULT = BackendExtension(
    backend="catapult",
    sparse_pass=CatapultSparseKernels,
    pass_flow="catapult:specific_types",
    pass_after="catapult:apply_resource_strategy",
    templates=TEMPLATES,
    headers=(CPP_DIR / "nnet_fpgaprune_sparse.h",),
    convert_passes=((stream_flatten.PASS_NAME, stream_flatten.StreamTransposeBeforeFlatten, stream_flatten.AFTER),),
)
