"""The hls4ml pass of kernel-sparse code generation for Dense, Conv1D and Conv2D, for any backend.

The pass (in the backend's 'specific_types' flow, after hls4ml's own weight transposes) reads each layer's live
weights, keeps only those in the weight variable (so the header holds only them), and attaches the product
class that the backend's code generator writes for them. The backend's templates (`vivado/templates.py`
today) then point the layer at that class. A backend subclasses `SparseKernels` with its own `source`.

It is enabled by `KernelSparse: true` in the HLSConfig's `Model` section (fpgaprune's export sets it),
and can be turned off per layer with `KernelSparse: false` under `LayerName`.
"""

import numpy as np
from hls4ml.model.optimizer import OptimizerPass
from hls4ml.model.types import Source

from fpgaprune.errors import HlsConfigError
from fpgaprune.hls.attribute_keys import FABRIC, PLAN, SPARSE_SOURCE
from fpgaprune.hls.live_weights import live_plan
from fpgaprune.hls.multipliers import is_fabric
from fpgaprune.model.layer_kinds import kind_of_node

PASS_NAME = "fpgaprune_sparse_kernels"
STRATEGIES = ("latency", "resource", "resource_unrolled")


def sparse_enabled(node) -> bool:
    """Whether the model's config asks for kernel-sparse code for this node."""
    hls_config = node.model.config.config.get("HLSConfig", {})
    default = bool(hls_config.get("Model", {}).get("KernelSparse", False))
    return bool(node.model.config.get_layer_config(node).get("KernelSparse", default))


def supported(node, codes=None) -> bool:
    """A node of a kernel-sparse kind in the layer table (Dense, Conv1D and Conv2D, incl. hls4ml's pointwise and
    Conv2DBatchnorm nodes) whose code the backend writes (`codes`; None: any), with a strategy the pass
    handles, channels-last."""
    kind = kind_of_node(node)
    return (
        kind is not None
        and kind.kernel_sparse
        and (codes is None or kind.sparse_code in codes)
        and str(node.get_attr("strategy", "latency")).lower() in STRATEGIES
        and node.get_attr("data_format", "channels_last") == "channels_last"
    )


def is_sparse(node) -> bool:
    """Whether the pass made this node kernel-sparse."""
    return node.get_attr(PLAN) is not None


class SparseKernels(OptimizerPass):
    """Keep only the live weights in the node's weight variable and attach the backend's product class."""

    codes: tuple = ()  # the kinds' `sparse_code`s whose C++ the backend's templates write: no other is trimmed

    # hls4ml backend name -> the pragma that binds the product variable `prod` to LUTs (`Multipliers: fabric`);
    # a backend not named here cannot build its products in fabric and refuses the setting
    fabric_pragmas: dict = {}

    @staticmethod
    def source(plan, node_name: str, index: int, fabric_pragma: str = "") -> str:
        """The backend's C++ product class for `plan` (each product bound to LUTs by `fabric_pragma`, if any).
        Abstract: each backend's subclass says which."""
        raise NotImplementedError

    def fabric_pragma(self, model, node) -> str:
        """The pragma of a layer whose products are built in fabric (`hls/multipliers.py`); "" otherwise."""
        if not is_fabric(model.config.config.get("HLSConfig", {}), node.name):
            return ""
        backend = model.config.backend.name
        if backend not in self.fabric_pragmas:
            raise HlsConfigError(
                f"hls config: Multipliers: fabric ({node.name}) is not written for {backend}: its own library "
                f"chooses each operator; use {' or '.join(self.fabric_pragmas) or 'Vivado or Vitis'}, or the RTL "
                "backend (its products are adders)"
            )
        return self.fabric_pragmas[backend]

    def match(self, node):
        return node.get_attr(PLAN) is None and supported(node, self.codes) and sparse_enabled(node)

    def transform(self, model, node):
        origin = model.config.get_layer_config(node).get("KernelOrigin")
        plan = live_plan(node, origin)
        variable = node.weights["weight"]
        values = plan.values if plan.n_live else np.zeros(1)  # C++ has no zero-length arrays
        variable.data = values.astype(np.float64)
        variable.shape, variable.data_length = [len(values)], len(values)
        variable.nonzeros, variable.nzeros = plan.n_live, len(values) - plan.n_live
        variable.min, variable.max = float(np.min(values)), float(np.max(values))
        pragma = self.fabric_pragma(model, node)
        node.set_attr(PLAN, plan)
        node.set_attr(FABRIC, bool(pragma))
        node.set_attr(SPARSE_SOURCE, Source(self.source(plan, node.name, node.index, pragma)))
        return False
