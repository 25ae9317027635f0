"""The knapsack: which groups to keep so that their summed costs fit, keeping the most importance.

A 0/1 integer program solved by scipy's HiGHS to within MIP_GAP of the optimum: maximise the kept groups'
values subject to one row per constraint (cost of the kept groups <= capacity). Groups that must stay removed
(already pruned) or kept (frozen) are fixed by their bounds. HiGHS stops after NODE_LIMIT branch-and-bound
nodes, a limit of work, so the same fit chooses the same groups on a busy machine and an idle one; the time
limit is only a safety net. Stopped by either, HiGHS returns its best choice so far, which under a time limit
on a busy machine was its trivial one (keep only what must stay: a budget fit pruned to the floor). So a choice
not proven optimal is compared with the LP rounding below, and the better one returned.

Above `EXACT_MAX_GROUPS` groups (element pruning of a real CNN has tens of thousands) the exact program takes
HiGHS its whole time limit at every step of a gradual schedule. There the LP relaxation is solved instead: a
vertex of it has at most one fractional group per constraint, so rounding it down and filling greedily loses
at most the values of m groups against the optimum (`bound`, the LP's value, says how close it came).
"""

from dataclasses import dataclass

import numpy as np

from fpgaprune.errors import FpgapruneError

NODE_LIMIT = 100  # a gradual step of a Fashion-MNIST CNN: 1.9 s, 2e-7 below what 30 s of search kept
TIME_LIMIT_S = 60.0
EXACT_MAX_GROUPS = 5000
MIP_GAP = 1e-6  # relative; at 1e-9 HiGHS ran on toward its limit at the gradual steps of a Fashion-MNIST CNN


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
    bound: float | None = None  # the LP relaxation's value, an upper bound on the optimum (large problems only)


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
        raise BudgetInfeasible(
            f"the groups that must stay cost {floor.tolist()}, over the capacity {capacity.tolist()}", floor
        )
    if n == 0:
        return KnapsackResult(np.zeros(0, bool), 0.0, np.zeros(capacity.size), True)
    if n > EXACT_MAX_GROUPS:
        return _relaxed(values, costs, capacity, must_keep, must_remove)
    result = milp(
        -values,
        integrality=np.ones(n),
        bounds=Bounds(must_keep.astype(float), (~must_remove).astype(float)),
        constraints=LinearConstraint(costs, -np.inf, capacity),
        options={"node_limit": NODE_LIMIT, "time_limit": time_limit, "mip_rel_gap": MIP_GAP},
    )
    keep = None if result.x is None else np.round(result.x).astype(bool)
    if keep is not None and result.status == 0:
        return KnapsackResult(keep, float(values[keep].sum()), costs @ keep, True)
    return _early_stop(keep, values, costs, capacity, must_keep, must_remove)


def _early_stop(incumbent, values, costs, capacity, must_keep, must_remove) -> KnapsackResult:
    """HiGHS stopped before proving its choice (`incumbent`, or None) optimal: that choice or the LP rounding,
    whichever keeps more value (the rounding is within m groups of the optimum; the incumbent may be trivial)."""
    rounded = _relaxed(values, costs, capacity, must_keep, must_remove)
    if incumbent is None or np.any(costs @ incumbent > capacity + 1e-9) or values[incumbent].sum() <= rounded.value:
        return rounded
    return KnapsackResult(incumbent, float(values[incumbent].sum()), costs @ incumbent, False, rounded.bound)


def _relaxed(values, costs, capacity, must_keep, must_remove) -> KnapsackResult:
    """The LP relaxation rounded down (the groups it keeps whole), then filled greedily by value per unit cost;
    or the greedy fill alone, where that keeps more."""
    from scipy.optimize import linprog

    bounds = np.column_stack([must_keep.astype(float), (~must_remove).astype(float)])
    relaxed = linprog(-values, A_ub=costs, b_ub=capacity, bounds=bounds, method="highs")
    start = must_keep.copy()
    if relaxed.status == 0:
        start |= (relaxed.x > 1 - 1e-9) & ~must_remove
        if np.any(costs @ start > capacity + 1e-9):  # rounding noise: start from what must stay
            start = must_keep.copy()
    keep = max(
        _greedy_fill(values, costs, capacity, start, must_remove),
        _greedy_fill(values, costs, capacity, must_keep, must_remove),
        key=lambda k: values[k].sum(),
    )
    bound = float(-relaxed.fun) if relaxed.status == 0 else None
    return KnapsackResult(keep, float(values[keep].sum()), costs @ keep, False, bound)


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
