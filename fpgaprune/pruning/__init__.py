"""Pruning: which groups of weights to remove (structures, scores, pruner) and when (schedules, callbacks)."""

from fpgaprune.support.lazy import exports

_MODULES = {
    "GradualPruning": "callbacks",
    "HybridPruner": "hybrid",
    "LotteryTicket": "lottery",
    "Pruner": "pruner",
    "OneShot": "schedules",
    "PolynomialDecay": "schedules",
    "PruningSchedule": "schedules",
    "group_scores": "scores",
    "kernel_scores": "scores",
    "weakest_kernels": "scores",
    "Structure": "structures",
    "parse_structure": "structures",
    "structure_for": "structures",
}
__getattr__ = exports(__name__, _MODULES)
__all__ = sorted(_MODULES)
