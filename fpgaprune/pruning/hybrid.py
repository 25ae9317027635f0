"""The hybrid structure: whole kernels first, then single weights inside the kept kernels.

At a sparsity x, whole kernels of the conv layers make FIRST_SHARE of x, single weights the rest (Dense layers
have no kernels: there the two steps rank the same weights, so they prune by element to x). A HybridPruner
stands wherever a Pruner does: one shot, GradualPruning, a lottery ticket. To a budget, the two pruners fit in
turn (`budget.BudgetFit`), the first taking FIRST_SHARE of the saving.
"""

from dataclasses import dataclass
from typing import Optional, Sequence, Union

from fpgaprune.errors import FpgapruneError
from fpgaprune.pruning.pruner import MIN_KEPT_FRACTION, Pruner

FIRST_SHARE = 0.5  # kernels make half of the sparsity (or of a budget's saving), single weights the rest


@dataclass
class HybridPruner:
    """Kernels, then elements inside the kept kernels; the options are those of Pruner."""

    score: str = "l1"
    scope: str = "layer"
    layers: Optional[Sequence[str]] = None
    do_not_prune: Sequence[str] = ()
    min_kept: float = MIN_KEPT_FRACTION
    first_share: float = FIRST_SHARE

    def __post_init__(self):
        if not 0 <= self.first_share <= 1:
            raise FpgapruneError(f"hybrid first_share {self.first_share!r} is not a fraction in [0, 1]")
        options = dict(
            score=self.score,
            scope=self.scope,
            layers=self.layers,
            do_not_prune=self.do_not_prune,
            min_kept=self.min_kept,
        )
        self.pruners = (Pruner(structure="kernel", **options), Pruner(structure="element", **options))

    def targets(self, model):
        return self.pruners[-1].targets(model)

    def attach(self, model):
        return self.pruners[-1].attach(model)

    def apply(self, model, masks: dict) -> None:
        self.pruners[-1].apply(model, masks)

    def sparsity(self, model, per_layer: bool = False):
        return self.pruners[-1].sparsity(model, per_layer)

    def select(self, model, sparsity: Union[float, dict, None] = None, threshold: Optional[float] = None) -> dict:
        """{(layer, weight): mask}: the kernels that make `first_share` of `sparsity`, then the weakest single
        weights of the kept kernels up to `sparsity` of all entries."""
        if sparsity is None or threshold is not None:
            raise FpgapruneError("hybrid pruning takes a sparsity, not a threshold")
        share = (
            {layer: self.first_share * s for layer, s in sparsity.items()}
            if isinstance(sparsity, dict)
            else self.first_share * sparsity
        )
        kernels, elements = self.pruners
        return elements.select(model, sparsity, pruned=kernels.select(model, share))

    def prune(self, model, sparsity=None, threshold=None):
        """One-shot: a held copy of `model` pruned to `sparsity`."""
        attached = self.attach(model)
        self.apply(attached, self.select(attached, sparsity, threshold))
        return attached
