"""Pruning: which groups of weights to remove (structures, scores, pruner) and when (schedules, callbacks)."""

from fpgaprune.pruning.callbacks import GradualPruning
from fpgaprune.pruning.hybrid import HybridPruner
from fpgaprune.pruning.lottery import LotteryTicket
from fpgaprune.pruning.pruner import Pruner
from fpgaprune.pruning.schedules import OneShot, PolynomialDecay, PruningSchedule
from fpgaprune.pruning.scores import group_scores, kernel_scores, weakest_kernels
from fpgaprune.pruning.structures import Structure, parse_structure, structure_for

__all__ = [
    "GradualPruning",
    "HybridPruner",
    "LotteryTicket",
    "OneShot",
    "PolynomialDecay",
    "Pruner",
    "PruningSchedule",
    "Structure",
    "group_scores",
    "kernel_scores",
    "parse_structure",
    "structure_for",
    "weakest_kernels",
]
