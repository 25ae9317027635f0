"""Measured LUTs of exported layers (as their DA circuit) and of one kernel's removal, with yosys."""

from dataclasses import dataclass

import numpy as np

from fpgaprune.hls.extension.sparse_kernels import PLAN
from fpgaprune.hls.manifest import quantized_kernel
from fpgaprune.resources.yosys import Synthesis, fixed_kif, synthesize


@dataclass
class KernelRemoval:
    """A layer synthesized with one pruned kernel put back, and as exported (without it)."""

    layer: str
    kernel: str
    with_kernel: Synthesis
    without_kernel: Synthesis

    @property
    def lut_difference(self) -> int:
        return self.without_kernel.luts - self.with_kernel.luts


def live_matrix(node) -> np.ndarray:
    """The node's live weights as a (window, outputs) matrix in its current (possibly stripped) indices."""
    plan = node.get_attr(PLAN)
    matrix = np.zeros((plan.n_in, plan.n_out))
    matrix[plan.rows, plan.cols] = plan.values
    return matrix


def measure_node(node, family: str) -> Synthesis:
    """yosys figures of the node's layer (one output pixel for a conv) as da4ml's adder graph."""
    return synthesize(live_matrix(node), fixed_kif(node.get_input_variable().type.precision), family)


def kernel_removal(node, dense_layer, ci: int, co: int, family: str) -> KernelRemoval:
    """Synthesize the layer with the original kernel (ci, co) of `dense_layer` restored, and without it."""
    plan = node.get_attr(PLAN)
    inputs, outputs = list(plan.origin.inputs), list(plan.origin.outputs)
    if ci not in inputs or co not in outputs:
        raise ValueError(f"{plan.origin.layer}: kernel ({ci}, {co}) was stripped; its channels are not in the layer")
    restored = live_matrix(node).reshape(*plan.window, plan.n_out)
    dense = quantized_kernel(dense_layer).reshape(*plan.window[:2], -1, dense_layer.kernel.shape[-1])
    restored[:, :, inputs.index(ci), outputs.index(co)] = dense[:, :, ci, co]
    kif = fixed_kif(node.get_input_variable().type.precision)
    name = f"{plan.origin.layer}[:, :, {ci}, {co}]" if plan.kind == "conv2d" else f"{plan.origin.layer}[{ci}, {co}]"
    return KernelRemoval(node.name, name, synthesize(restored.reshape(plan.n_in, plan.n_out), kif, family),
                         measure_node(node, family))
