"""Budgets: prune to fit a board's LUTs and DSPs (spec.py: the limits; fit.py: pricing, the knapsack fit,
the gradual hook and the repair after QAT)."""

from fpgaprune.support.lazy import exports

_MODULES = {
    "DEFAULT_MARGIN": "fit",
    "BudgetFit": "fit",
    "BudgetPruning": "fit",
    "BudgetStep": "fit",
    "HardwareCosts": "fit",
    "Repair": "fit",
    "fit_to_budget": "fit",
    "hybrid_pruners": "fit",
    "repair": "fit",
    "BUDGET_RESOURCES": "spec",
    "Budget": "spec",
    "BudgetError": "spec",
    "Constraint": "spec",
    "parse_budget": "spec",
}
__getattr__ = exports(__name__, _MODULES)
__all__ = sorted(_MODULES)
