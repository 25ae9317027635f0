"""The pruner: which groups of which weights to remove, by score, to a per-layer or global target.

Groups that are already pruned stay pruned (the mask only grows); groups holding a frozen entry are never
chosen. The pruner's own decisions live in one `where` prune entry per weight, so they save with the model.
"""

from dataclasses import dataclass
from typing import Optional, Sequence, Union

import numpy as np

from fpgaprune.errors import FpgapruneError
from fpgaprune.masking import PRUNE, HoldEntry, MaskManifest, check_quantizers_keep_zero, hold
from fpgaprune.pruning.costs import output_positions
from fpgaprune.pruning.knapsack import KnapsackResult, solve
from fpgaprune.pruning.scores import NORMS, group_scores, lamp_scores
from fpgaprune.pruning.structures import Structure, parse_structure, prunable, structure_for
from fpgaprune.record import resolved
from fpgaprune.selection import parse_selector, resolve

MIN_KEPT_FRACTION = 0.1  # by default a budget fit keeps at least this share of each layer's groups (its strongest)


@dataclass
class PruneTarget:
    layer: str
    weight: str
    record: object  # the weight's record (`record.WeightRecord`)
    structure: Structure
    owner: object = None  # the layer's record

    @property
    def held(self) -> tuple:
        """The entries of the weight's hold (none where it has none)."""
        return self.record.entries

    def values(self) -> np.ndarray:
        return np.asarray(self.record.values, np.float32)  # as the framework holds them (float32)


@dataclass
class Pruner:
    """structure: one for all layers, or {layer: structure}; score: l1 | l2 | max; scope: layer | global;
    cost: what a sparsity counts, "weights" or "multipliers" (weights x output positions, so that a global
    target spends its budget where the hardware does); min_kept: the share of each layer's groups (its strongest)
    that a budget fit keeps."""

    structure: Union[str, Structure, dict, None] = None
    score: str = "l1"
    scope: str = "layer"
    layers: Optional[Sequence[str]] = None
    do_not_prune: Sequence[str] = ()
    cost: str = "weights"
    min_kept: float = MIN_KEPT_FRACTION

    def __post_init__(self):
        if self.cost not in ("weights", "multipliers"):
            raise FpgapruneError(f"pruning cost {self.cost!r} is not 'weights' or 'multipliers'")
        if self.score not in NORMS:
            raise FpgapruneError(f"pruning score {self.score!r} is not one of {NORMS}")
        if not isinstance(self.structure, dict):
            parse_structure(self.structure)  # a typo fails here, not at the first training step
        if self.scope not in ("layer", "global"):
            raise FpgapruneError(f"pruning scope {self.scope!r} is not 'layer' or 'global'")
        if not 0 < self.min_kept <= 1:
            raise FpgapruneError(f"pruning min_kept {self.min_kept!r} is not a fraction in (0, 1]")

    def targets(self, model) -> list[PruneTarget]:
        """The weights this pruner prunes, with their structures, read from the record of `model` (or of a bound
        model, `record.resolved`); unknown names are one-line errors."""
        record = resolved(model).record
        names = self.layers
        if names is None:
            names = [name for name, layer in record.layers.items() if prunable(layer)]
        for name in self.do_not_prune:
            resolve(record, parse_selector(name.split("/")[0]))  # the name must exist
        targets = []
        for name in names:
            if name.split("/")[0] in self.do_not_prune:
                continue
            found = resolve(record, parse_selector(name))
            structure = self._structure_for(found.layer)
            targets.append(PruneTarget(found.layer.name, found.weight.name, found.record, structure, found.layer))
        return targets

    def select(
        self,
        model,
        sparsity: Union[float, dict, None] = None,
        threshold: Optional[float] = None,
        pruned: Optional[dict] = None,
    ) -> dict:
        """{(layer, weight): boolean mask of the entries to prune}, including those pruned already, and those of
        `pruned` ({(layer, weight): mask}, counted as pruned already: another pruner's choice not yet applied)."""
        if (sparsity is None) == (threshold is None):
            raise FpgapruneError("give exactly one of sparsity and threshold")
        pruned = pruned or {}
        groups = [
            _GroupView(target, self.score, self._cost(target), pruned.get((target.layer, target.weight)))
            for target in self.targets(model)
        ]
        if self.scope == "global":
            if isinstance(sparsity, dict):
                raise FpgapruneError("a global pruning scope takes one sparsity, not a per-layer dict")
            _choose(groups, sparsity, threshold, normalise=True)
        else:
            unknown = set(sparsity) - {v.target.layer for v in groups} if isinstance(sparsity, dict) else set()
            if unknown:
                raise FpgapruneError(
                    f"sparsity names {sorted(unknown)}, which this pruner does not prune; it prunes "
                    f"{sorted({v.target.layer for v in groups})}"
                )
            for view in groups:
                layer_sparsity = sparsity.get(view.target.layer) if isinstance(sparsity, dict) else sparsity
                if layer_sparsity is not None or threshold is not None:
                    _choose([view], layer_sparsity, threshold, normalise=False)
        return {(v.target.layer, v.target.weight): v.mask() for v in groups}

    def select_to_fit(self, model, entry_costs, capacity) -> tuple[dict, KnapsackResult]:
        """({(layer, weight): mask}, the knapsack's result): keep the groups worth the most whose summed costs
        fit `capacity` (one value per constraint). A group is worth its LAMP score (`scores.lamp_scores`): at
        equal prices the knapsack keeps what LAMP's global ranking keeps, so a narrow first layer's few kernels
        outweigh a wide layer's weak tail. Each layer keeps its strongest `min_kept` share of groups (at least
        one): a layer pruned to nothing would cut the network.

        `entry_costs(target)` gives each entry's cost per constraint, shape (constraints, *weight shape); a
        group costs the sum over its entries. Pruned groups stay pruned and frozen ones stay kept."""
        views = [_GroupView(target, self.score) for target in self.targets(model)]
        capacity = np.atleast_1d(np.asarray(capacity, np.float64))
        costs = [
            np.stack(
                [
                    np.bincount(v.labels.ravel(), np.asarray(row, np.float64).ravel(), v.scores.size)
                    for row in np.reshape(entry_costs(v.target), (capacity.size, -1))
                ]
            )
            for v in views
        ]
        result = solve(
            np.concatenate([lamp_scores(v.scores, ~v.already) for v in views] or [np.zeros(0)]),
            np.concatenate(costs, axis=1) if costs else np.zeros((capacity.size, 0)),
            capacity,
            must_keep=np.concatenate(
                [(v.protected | v.strongest(self.min_kept)) & ~v.already for v in views] or [np.zeros(0, bool)]
            ),
            must_remove=np.concatenate([v.already for v in views] or [np.zeros(0, bool)]),
        )
        start = 0
        for view in views:
            view.chosen = ~result.keep[start : start + view.scores.size]
            start += view.scores.size
        return {(v.target.layer, v.target.weight): v.mask() for v in views}, result

    def floor(self, model, entry_costs) -> dict:
        """{(layer, weight): mask} of the cheapest design a fit may reach: each layer keeps only its cheapest
        `min_kept` share of groups (at least one; `entry_costs` as in `select_to_fit`, summed over constraints)
        and its protected groups; groups pruned already stay pruned. A fit keeps the strongest share of the
        groups still live, and a gradual run may have pruned the strong, costly ones before: any share can end
        up kept."""
        views = [_GroupView(target, self.score) for target in self.targets(model)]
        for view in views:
            rows = np.reshape(entry_costs(view.target), (-1, view.labels.size)).sum(axis=0)
            cost = np.bincount(view.labels.ravel(), np.asarray(rows, np.float64), view.scores.size)
            view.chosen = view.already | ~(view.protected | view.strongest(self.min_kept, order=-cost))
        return {(v.target.layer, v.target.weight): v.mask() for v in views}

    def _structure_for(self, layer) -> Structure:
        """A per-layer entry must fit its layer; one structure for all applies where it fits, else the default."""
        if isinstance(self.structure, dict):
            return structure_for(self.structure.get(layer.name), layer.name, layer)
        return structure_for(self.structure, layer.name, layer, strict=False)

    def _cost(self, target: PruneTarget) -> int:
        """Multipliers per weight: how many output positions use it (1 when counting weights)."""
        return output_positions(target.owner) if self.cost == "multipliers" else 1

    def attach(self, model):
        """A copy of `model` with an (empty) hold on every target weight, ready for `apply` and the callbacks."""
        manifest = MaskManifest()
        for target in self.targets(model):
            manifest.prune(f"{target.layer}/{target.weight}", where=np.zeros(target.record.shape, bool))
        return hold(model, manifest)

    def apply(self, model, masks: dict) -> None:
        """Set the pruned entries of an attached model in place (weights zeroed now and held from then on)."""
        bound = resolved(model)
        targets = self.targets(bound)
        for target in targets:
            if target.record.held is None:
                raise FpgapruneError(f"layer '{target.layer}' is not attached: call pruner.attach(model) first")
            mask = masks.get((target.layer, target.weight))
            if mask is None:
                continue
            kept = [e for e in target.held if not (e.mode == PRUNE and e.where is not None)]
            entries = kept + [HoldEntry(target.layer, target.weight, PRUNE, where=mask)]
            bound.front.set_hold_entries(bound.model, target.layer, target.weight, entries)
        if targets:
            bound.front.enforce(bound.model)
            check_quantizers_keep_zero(bound.forget().record)  # pruning during QAT: zeros must stay zeros

    def prune(self, model, sparsity=None, threshold=None):
        """One-shot: a held copy of `model` with the lowest-scoring groups pruned."""
        attached = self.attach(model)
        self.apply(attached, self.select(attached, sparsity, threshold))
        return attached

    def sparsity(self, model, per_layer: bool = False) -> Union[float, dict]:
        """Fraction of the target weights' entries that are pruned now: overall, or {layer: fraction}."""
        views = [_GroupView(target, self.score) for target in self.targets(model)]  # fraction of entries
        if not per_layer:
            return float(sum(v.pruned.sum() for v in views) / max(sum(v.pruned.size for v in views), 1))
        counts = {}
        for view in views:
            pruned, total = counts.get(view.target.layer, (0, 0))
            counts[view.target.layer] = (pruned + int(view.pruned.sum()), total + view.pruned.size)
        return {layer: pruned / max(total, 1) for layer, (pruned, total) in counts.items()}


class _GroupView:
    """One target weight seen as groups: sizes, scores, already-pruned and protected groups, the choice."""

    def __init__(self, target: PruneTarget, norm: str, cost: int = 1, pruned: Optional[np.ndarray] = None):
        self.target = target
        weights = target.values()
        self.pruned, frozen = _held_state(target.held, weights.shape)
        if pruned is not None:
            self.pruned = self.pruned | np.asarray(pruned, bool)
        self.labels, count = target.structure.labels(weights.shape)
        flat = self.labels.ravel()
        entries = np.bincount(flat, minlength=count)
        self.already = np.bincount(flat, self.pruned.ravel(), count) == entries
        self.sizes = entries * cost
        self.protected = np.bincount(flat, frozen.ravel(), count) > 0
        pooled = target.structure.pooling if target.structure.name == "block" else norm
        self.scores = group_scores(weights, self.labels, count, pooled)
        self.chosen = self.already.copy()

    def normalised_scores(self) -> np.ndarray:
        live = self.scores[~self.already]
        scale = live.mean() if live.size and live.mean() > 0 else 1.0
        return self.scores / scale

    def strongest(self, fraction: float, order: Optional[np.ndarray] = None) -> np.ndarray:
        """The top `fraction` of the live groups by score, or by `order` (ties by score), at least one while any
        is live."""
        live = np.flatnonzero(~self.already)
        count = min(live.size, max(1, int(np.ceil(fraction * self.scores.size))))
        keys = (-self.scores[live],) if order is None else (-self.scores[live], -np.asarray(order)[live])
        chosen = np.zeros(self.scores.size, bool)
        chosen[live[np.lexsort(keys)[:count]]] = True
        return chosen

    def mask(self) -> np.ndarray:
        return self.chosen[self.labels] | self.pruned


def _held_state(held, shape: tuple) -> tuple[np.ndarray, np.ndarray]:
    """(entries held at 0 by prune entries, entries held by freeze entries), later entries winning."""
    pruned = np.zeros(shape, bool)
    frozen = np.zeros(shape, bool)
    for entry in held:
        selected = entry.mask(tuple(shape))
        if entry.mode == PRUNE:
            pruned |= selected
            frozen &= ~selected
        else:
            frozen |= selected
            pruned &= ~selected
    return pruned, frozen


def _choose(views: list, sparsity, threshold, normalise: bool) -> None:
    """Mark groups to prune: by threshold, or lowest scores first until `sparsity` of the entries is reached."""
    scores = np.concatenate([v.normalised_scores() if normalise else v.scores for v in views])
    sizes = np.concatenate([v.sizes for v in views])
    already = np.concatenate([v.already for v in views])
    protected = np.concatenate([v.protected for v in views])
    if threshold is not None:
        chosen = already | ((scores < threshold) & ~protected)
    else:
        if not 0.0 <= sparsity <= 1.0:
            raise FpgapruneError(f"sparsity must lie in [0, 1], got {sparsity}")
        order = np.lexsort((scores, ~already))  # already-pruned groups first, then by score
        order = order[~protected[order]]
        cumulative = np.cumsum(sizes[order])
        take = order[cumulative - sizes[order] / 2.0 < sparsity * sizes.sum()]
        chosen = already.copy()
        chosen[take] = True
    start = 0
    for view in views:
        view.chosen = chosen[start : start + view.sizes.size]
        start += view.sizes.size
