"""A resource budget: limits on LUT, DSP or their sum, as fractions of a board or absolute counts.

`{LUT: 0.5, DSP: 200}` means at most half of the board's LUTs and at most 200 DSPs. A key joined by `+`
(`LUT+DSP: 0.6`) limits the sum of the board fractions of its resources. A value up to the number of summed
resources (1 for one resource) is a fraction; a larger one is an absolute count (one resource only). `DSP: 0`
asks for a design without DSPs: its export builds every product from LUTs (`Multipliers: fabric`,
`hls/multipliers.py`), priced as such, so the budget's knapsack prices each removal in LUTs.
"""

from dataclasses import dataclass

import numpy as np

from fpgaprune.errors import FpgapruneError

BUDGET_RESOURCES = ("LUT", "DSP")  # what the per-weight estimate prices (FF and BRAM are not linear in weights)


class BudgetError(FpgapruneError):
    """A budget that names an unknown resource, has a bad value, or cannot be met."""


@dataclass(frozen=True)
class Constraint:
    name: str
    resources: tuple
    limit: float  # in fractions of the board (summed over `resources`)

    def fraction(self, usage: dict, board) -> float:
        """`usage` ({resource: count}) as this constraint counts it: the sum of the board fractions."""
        return float(sum(usage.get(r, 0.0) / board.resources[r] for r in self.resources))

    def describe(self, board) -> str:
        if len(self.resources) == 1:
            count = self.limit * board.resources[self.resources[0]]
            return f"{self.name} <= {self.limit:.1%} of {board.name} ({count:,.0f})"
        return f"{self.name} <= {self.limit:.3g} (sum of the fractions of {board.name})"


@dataclass(frozen=True)
class Budget:
    constraints: tuple
    board: object

    def fractions(self, usage: dict) -> np.ndarray:
        return np.array([c.fraction(usage, self.board) for c in self.constraints])

    def limits(self) -> np.ndarray:
        return np.array([c.limit for c in self.constraints])

    def rounding(self, layers: int) -> np.ndarray:
        """Per constraint, one unit of each resource per layer: the exported estimate rounds each layer's total up."""
        return np.array([sum(layers / self.board.resources[r] for r in c.resources) for c in self.constraints])

    @property
    def dsp_free(self) -> bool:
        """A DSP limit of 0: the export builds every product from LUTs (`hls/multipliers.py`)."""
        return any(c.resources == ("DSP",) and c.limit == 0 for c in self.constraints)

    def fits(self, usage: dict) -> bool:
        return bool(np.all(self.fractions(usage) <= self.limits() + 1e-9))

    def rows(self, per_resource: dict) -> np.ndarray:
        """Per constraint, the board fraction of `per_resource` ({resource: array}), element by element."""
        return np.stack(
            [
                sum(np.asarray(per_resource[r], np.float64) / self.board.resources[r] for r in c.resources)
                for c in self.constraints
            ]
        )

    def table(self, **columns) -> list:
        """Rows {constraint, budget, <column>: fraction} for the report; each column is {name: fraction}."""
        return [
            {"constraint": c.name, "budget": c.limit, **{k: v.get(c.name) for k, v in columns.items()}}
            for c in self.constraints
        ]


def parse_budget(spec: dict, board, where: str = "pruning.budget") -> Budget:
    """A Budget from `{LUT: 0.5, DSP: 200, "LUT+DSP": 0.6}` for `board`; one-line BudgetError otherwise."""
    if not spec:
        raise BudgetError(f"{where}: empty; give at least one of {', '.join(BUDGET_RESOURCES)} (e.g. {{LUT: 0.5}})")
    constraints = []
    for key, value in spec.items():
        resources = tuple(part.strip().upper() for part in str(key).split("+"))
        unknown = [r for r in resources if r not in BUDGET_RESOURCES]
        if unknown or len(set(resources)) != len(resources):
            raise BudgetError(
                f"{where}.{key}: found {key!r}; a budget limits {', '.join(BUDGET_RESOURCES)} or their sum (LUT+DSP)"
            )
        missing = [r for r in resources if not board.resources.get(r)]
        if missing:
            raise BudgetError(f"{where}.{key}: board {board.name} has no {', '.join(missing)}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value < 0:
            raise BudgetError(
                f"{where}.{key}: found {value!r}; expected a fraction of the board (0 < f <= "
                f"{len(resources)}) or a count"
            )
        if value == 0 and resources != ("DSP",):
            raise BudgetError(
                f"{where}.{key}: found 0; only DSP may be 0 (every product built from LUTs); expected a fraction "
                f"of the board (0 < f <= {len(resources)}) or a count"
            )
        if value > len(resources) and len(resources) > 1:
            raise BudgetError(
                f"{where}.{key}: found {value!r}; a sum of resources takes a sum of fractions "
                f"(at most {len(resources)}), not a count"
            )
        limit = float(value) if value <= len(resources) else float(value) / board.resources[resources[0]]
        constraints.append(Constraint("+".join(resources), resources, limit))
    return Budget(tuple(constraints), board)
