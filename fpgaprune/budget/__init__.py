"""Budgets: prune to fit a board's LUTs and DSPs (spec.py: the limits; fit.py: pricing, the knapsack fit,
the gradual callback and the repair after QAT)."""

from fpgaprune.budget.fit import (
    DEFAULT_MARGIN,
    BudgetFit,
    BudgetPruning,
    BudgetStep,
    HardwareCosts,
    Repair,
    fit_to_budget,
    hybrid_pruners,
    repair,
)
from fpgaprune.budget.spec import BUDGET_RESOURCES, Budget, BudgetError, Constraint, parse_budget

__all__ = [
    "BUDGET_RESOURCES",
    "DEFAULT_MARGIN",
    "Budget",
    "BudgetError",
    "BudgetFit",
    "BudgetPruning",
    "BudgetStep",
    "Constraint",
    "HardwareCosts",
    "Repair",
    "fit_to_budget",
    "hybrid_pruners",
    "parse_budget",
    "repair",
]
