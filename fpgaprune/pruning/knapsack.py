"""The knapsack: which groups to keep so that their summed costs fit, keeping the most importance.

A 0/1 integer program solved exactly by scipy's HiGHS: maximise the kept groups' values subject to one row
per constraint (cost of the kept groups <= capacity). Groups that must stay removed (already pruned) or kept
(frozen) are fixed by their bounds. On a time-out HiGHS returns its best feasible choice, marked not optimal.
"""

from dataclasses import dataclass

import numpy as np

from fpgaprune.errors import FpgapruneError

TIME_LIMIT_S = 30.0


class BudgetInfeasible(FpgapruneError):
    """No choice of groups fits: the groups that must stay already cost more than the capacity."""

    def __init__(self, message: str, floor=None):
        super().__init__(message)
        self.floor = floor  # per constraint, the cost of the groups that must stay


@dataclass
class KnapsackResult:
    keep: np.ndarray  # bool per group
    value: float  # the kept groups' summed value
    cost: np.ndarray  # the kept groups' summed cost, per constraint
    optimal: bool


def minimum_cost(costs: np.ndarray, must_keep: np.ndarray) -> np.ndarray:
    """Per constraint, the cost of keeping only the groups that must stay."""
    return np.asarray(costs, np.float64) @ np.asarray(must_keep, np.float64)


def solve(values, costs, capacity, must_keep=None, must_remove=None, time_limit=TIME_LIMIT_S) -> KnapsackResult:
    """values (n,) >= 0; costs (m, n) >= 0; capacity (m,). Keeps the most value whose cost fits every row."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    values = np.asarray(values, np.float64)
    costs = np.atleast_2d(np.asarray(costs, np.float64))
    capacity = np.atleast_1d(np.asarray(capacity, np.float64))
    n = values.size
    must_keep = np.zeros(n, bool) if must_keep is None else np.asarray(must_keep, bool)
    must_remove = np.zeros(n, bool) if must_remove is None else np.asarray(must_remove, bool) & ~must_keep
    floor = minimum_cost(costs, must_keep)
    if np.any(floor > capacity + 1e-9):
        raise BudgetInfeasible(f"the groups that must stay cost {floor.tolist()}, over the capacity {capacity.tolist()}",
                               floor)
    if n == 0:
        return KnapsackResult(np.zeros(0, bool), 0.0, np.zeros(capacity.size), True)
    result = milp(-values, integrality=np.ones(n), bounds=Bounds(must_keep.astype(float), (~must_remove).astype(float)),
                  constraints=LinearConstraint(costs, -np.inf, capacity),
                  options={"time_limit": time_limit, "mip_rel_gap": 1e-9})
    if result.x is None:  # no feasible point found in time: keep only what must stay, then add greedily
        keep = _greedy_fill(values, costs, capacity, must_keep, must_remove)
        return KnapsackResult(keep, float(values[keep].sum()), costs @ keep, False)
    keep = np.round(result.x).astype(bool)
    return KnapsackResult(keep, float(values[keep].sum()), costs @ keep, result.status == 0)


def _greedy_fill(values, costs, capacity, must_keep, must_remove) -> np.ndarray:
    """Keep what must stay, then the best value per unit of (capacity-normalised) cost while it fits."""
    keep = must_keep.copy()
    used = costs @ keep
    density = values / np.maximum((costs / np.maximum(capacity, 1e-12)[:, None]).sum(axis=0), 1e-12)
    for group in np.argsort(-density, kind="stable"):
        if keep[group] or must_remove[group]:
            continue
        if np.all(used + costs[:, group] <= capacity + 1e-9):
            keep[group] = True
            used = used + costs[:, group]
    return keep
