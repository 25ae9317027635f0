"""Pruning: which groups of weights to remove (scores)."""

from fpgaprune.pruning.scores import kernel_scores, weakest_kernels

__all__ = ["kernel_scores", "weakest_kernels"]
