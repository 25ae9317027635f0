"""Measured LUTs of exported layers (as their DA circuit) and of one kernel's removal, with yosys."""

from dataclasses import dataclass

import numpy as np

from fpgaprune.hls.manifest import quantized_kernel
from fpgaprune.resources.yosys import Synthesis, fixed_kif, layer_parts, synthesize


@dataclass
class KernelRemoval:
    """A layer synthesized with one pruned kernel put back, and as exported (without it)."""

    layer: str
    kernel: str
    with_kernel: Synthesis
    without_kernel: Synthesis
    where: str = ""  # the circuit measured: the layer's DA circuit, or one output column's

    @property
    def lut_difference(self) -> int:
        return self.without_kernel.luts - self.with_kernel.luts


def live_matrix(record) -> np.ndarray:
    """The node's live weights (its `NodeRecord`) as a (window, outputs) matrix in its current (possibly stripped)
    indices."""
    plan = record.plan
    matrix = np.zeros((plan.n_in, plan.n_out))
    matrix[plan.rows, plan.cols] = plan.values
    return matrix


def measure_node(record, family: str) -> Synthesis:
    """yosys figures of the node's layer (one output pixel for a conv) as da4ml's adder graph, its bias added."""
    return synthesize(live_matrix(record), fixed_kif(record.input), family, bias=record.bias)


def restored_kernel(record, dense_layer, ci: int, co: int) -> tuple[str, np.ndarray]:
    """The kernel's name and the node's live matrix with the original kernel (ci, co) of `dense_layer` put back."""
    plan = record.plan
    inputs, outputs = list(plan.origin.inputs), list(plan.origin.outputs)
    if ci not in inputs or co not in outputs:
        raise ValueError(f"{plan.origin.layer}: kernel ({ci}, {co}) was stripped; its channels are not in the layer")
    restored = live_matrix(record).reshape(*plan.window, plan.n_out)
    kernel = quantized_kernel(dense_layer)
    dense = kernel.reshape(*plan.window[:2], -1, kernel.shape[-1])
    restored[:, :, inputs.index(ci), outputs.index(co)] = dense[:, :, ci, co]
    name = plan.origin.named(":", ":", ci, co) if plan.kind == "conv2d" else plan.origin.named(ci, co)
    return name, restored.reshape(plan.n_in, plan.n_out)


def kernel_removal(record, dense_layer, ci: int, co: int, family: str) -> KernelRemoval:
    """Synthesize the layer with the original kernel (ci, co) of `dense_layer` (the dense model's record of the
    layer: `record_of(dense).layers[name]`) restored, and without it."""
    name, restored = restored_kernel(record, dense_layer, ci, co)
    matrix, kif = live_matrix(record), fixed_kif(record.input)
    parts = layer_parts(matrix, kif)  # both in the same parts, when the layer is large
    return KernelRemoval(
        record.name,
        name,
        synthesize(restored, kif, family, parts=parts, bias=record.bias),
        synthesize(matrix, kif, family, parts=parts, bias=record.bias),
        f"the DA circuit of {record.name}",
    )
