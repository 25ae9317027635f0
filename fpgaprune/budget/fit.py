"""Pruning to a budget: price every prunable group as the hardware will, then keep the most important groups
that fit (a knapsack, `pruning/knapsack.py`). One shot, gradually during training, or as a repair after QAT.

Pruning comes before QAT, so the price of a float model is that of its weights after the run's quantizers;
`margin` keeps room for what QAT moves. After QAT, `repair` prices the quantized weights themselves.
"""

import math
from dataclasses import dataclass, field

import numpy as np

from fpgaprune.budget.spec import Budget, BudgetError
from fpgaprune.hls.backend import DEFAULT_BACKEND
from fpgaprune.pruning import Pruner
from fpgaprune.pruning.hybrid import FIRST_SHARE as HYBRID_FIRST_SHARE
from fpgaprune.pruning.hybrid import HybridPruner
from fpgaprune.pruning.knapsack import BudgetInfeasible
from fpgaprune.record import resolved
from fpgaprune.resources.entry_costs import EntryCosts, entry_costs, is_hardware_layer, layer_hardware
from fpgaprune.training.hooks import TrainingHook

DEFAULT_MARGIN = 0.05  # prune to 95% of each limit before QAT; the exported estimate must then fit
FINAL_AIM = "the limit less the margin"


class HardwareCosts:
    """Prices a model's kernel entries: a float model through its quantized twin with the run's quantizers, a
    quantized model as it is. Types (bits, accumulators, reuse) are derived from the weights priced, as the
    export does; each resource is priced as the export's fit verdict reads it (`entry_costs`): by the
    vendor-checked C-synthesis model of `backend`'s tool where one covers the layers in `io_type`, else by the
    rules (`sources`). `calibration`: inputs that set a twin's learned activation ranges (HGQ2), if any."""

    def __init__(
        self,
        spec: dict,
        hls_config: dict,
        input_fixed,
        board,
        batchnorm: str = "fold",
        backend: str = DEFAULT_BACKEND,
        io_type: str = "io_parallel",
        calibration=None,
    ):
        self.spec, self.hls_config, self.input_fixed, self.board, self.batchnorm = (
            spec,
            hls_config,
            input_fixed,
            board,
            batchnorm,
        )
        self.backend, self.io_type, self.calibration = backend, io_type, calibration
        self.types, self.notes, self.sources = None, [], {}

    def __call__(self, model) -> EntryCosts:
        bound = resolved(model)
        quantized = any(is_hardware_layer(layer) for layer in bound.record.layers.values())
        priced = bound if quantized else self._twin(bound)
        self.types, self.notes = layer_hardware(priced, self.hls_config, self.input_fixed, self.board, self.io_type)
        priced = entry_costs(priced.record, self.types, self.notes, self.backend)
        self.sources = priced.sources
        return priced

    def _twin(self, bound):
        """The float model's quantized twin, bound; its activation ranges set from `calibration` (inputs) where its
        quantizers learn them from data (HGQ2's `trace_minmax`), as the run's QAT will before export."""
        twin = bound.twin(self.spec, self.batchnorm)  # HGQ2's, of Keras 3
        if self.calibration is not None:
            twin.front.calibrate(twin.model, self.calibration)
        return twin


@dataclass
class BudgetStep:
    """One fit: the limits it aimed at and the estimate of what it kept, per constraint (board fractions)."""

    aimed: dict
    estimate: dict
    optimal: bool
    pruned_groups: int = 0


def fit_to_budget(
    pruner: Pruner,
    model,
    costs: HardwareCosts,
    budget: Budget,
    margin: float = DEFAULT_MARGIN,
    aim: np.ndarray | None = None,
    aimed: str = FINAL_AIM,
) -> tuple[dict, BudgetStep]:
    """(masks for `pruner.apply`, the step): the most important groups whose estimate fits `aim` (default: the
    budget's limits less `margin`). Raises one BudgetError line when the layers it may not prune exceed it;
    `aimed` says in it what the aim is."""
    priced = costs(model)
    aim = _less_rounding(budget, priced, budget.limits() * (1.0 - margin) if aim is None else aim)
    fixed = _fixed_layers(pruner, model, priced, budget, aim, aimed)
    try:
        masks, result = pruner.select_to_fit(model, _entry_rows(priced, budget), aim - fixed)
    except BudgetInfeasible as error:
        worst = int(np.argmax(fixed + error.floor - aim))
        raise BudgetError(
            f"pruning.budget: {budget.constraints[worst].describe(budget.board)} cannot be met: each "
            f"pruned layer keeps its strongest {pruner.min_kept:.0%} of groups "
            "(pruning.budget_min_kept), and with only those "
            f"the design still needs {_over(fixed[worst] + error.floor[worst], aim[worst])} "
            f"aimed at ({aimed})"
        ) from None
    estimate = dict(zip([c.name for c in budget.constraints], (fixed + result.cost).tolist()))
    pruned = int((~result.keep).sum())
    return masks, BudgetStep(
        dict(zip([c.name for c in budget.constraints], aim.tolist())), estimate, result.optimal, pruned
    )


def cheapest_floor(pruner: Pruner, model, priced: EntryCosts, costs: HardwareCosts, budget: Budget) -> dict:
    """The estimate ({resource: count}) of the cheapest design a fit of `pruner` can reach from `model` (priced
    as `priced`): each pruned layer at its cheapest floor (`Pruner.floor`), priced with that design's types."""
    floor = pruner.attach(model)
    pruner.apply(floor, pruner.floor(floor, _entry_rows(priced, budget)))
    return costs(floor).total()


def _less_rounding(budget: Budget, priced: EntryCosts, aim) -> np.ndarray:
    """The aim less one unit of each resource per layer: the exported estimate rounds each layer's total up."""
    return np.maximum(np.asarray(aim, np.float64) - budget.rounding(len(priced.dsp)), 0.0)


def _fixed_layers(
    pruner: Pruner, model, priced: EntryCosts, budget: Budget, aim: np.ndarray, aimed: str = FINAL_AIM
) -> np.ndarray:
    """Per constraint, the board fraction of the layers `pruner` does not prune; one BudgetError line if over."""
    targets = {t.layer for t in pruner.targets(model)}
    fixed = budget.fractions(priced.total([name for name in priced.dsp if name not in targets]))
    for constraint, floor, limit in zip(budget.constraints, fixed, aim):
        if floor > limit:
            kept = sorted(set(priced.dsp) - targets) or ["none"]
            raise BudgetError(
                f"pruning.budget: {constraint.describe(budget.board)} cannot be met: the layers that "
                f"are not pruned ({', '.join(kept)}) alone need {_over(floor, limit)} aimed at "
                f"({aimed})"
            )
    return fixed


def _entry_rows(priced: EntryCosts, budget: Budget):
    """target -> each entry's cost per constraint, shape (constraints, *weight shape)."""

    def entry_rows(target):
        if target.layer not in priced.dsp:  # not a layer the export generates products for
            return np.zeros((len(budget.constraints), *target.record.shape))
        return budget.rows({"DSP": priced.dsp[target.layer], "LUT": priced.lut[target.layer]})

    return entry_rows


def way(progress: float) -> str:
    """A ramp's progress as a whole percentage, rounded down: 99.6% of the way is not yet the final aim."""
    return f"{math.floor(round(progress * 100, 9))}%"  # round first: 0.29 * 100 is 28.999999999999996


def _over(need: float, limit: float) -> str:
    """'need, over the limit' as percentages, with as many decimals as it takes to tell them apart."""
    for digits in range(1, 5):
        if f"{need:.{digits}%}" != f"{limit:.{digits}%}":
            break
    return f"{need:.{digits}%}, over the {limit:.{digits}%}"


@dataclass
class BudgetFit:
    """Fits a model to `budget` in place: with one pruner, or with two (hybrid: kernels first, then elements
    inside the kept kernels), the first taking `first_share` of the saving."""

    pruners: tuple
    costs: HardwareCosts
    budget: Budget
    margin: float = DEFAULT_MARGIN
    first_share: float = HYBRID_FIRST_SHARE

    def __post_init__(self):
        if not 0 <= self.first_share <= 1:
            raise BudgetError(f"pruning.hybrid_first_share: found {self.first_share!r}, expected a fraction in [0, 1]")

    def attach(self, model):
        return self.pruners[0].attach(model)

    def final_aim(self) -> np.ndarray:
        return self.budget.limits() * (1.0 - self.margin)

    def check(self, model) -> None:
        """Raise the one-line BudgetError now if even the cheapest design a fit can reach misses the final aim:
        each pruned layer at its cheapest floor (`Pruner.floor`), priced with the types derived from that design
        (pruning narrows accumulators). A gradual run can end at any floor, so a dearer one refuses budgets that
        it meets; what passes here may still be refused by the last fit."""
        pruner, budget = self.pruners[-1], self.budget
        priced = self.costs(model)
        aim = _less_rounding(budget, priced, self.final_aim())
        _fixed_layers(pruner, model, priced, budget, aim)
        need = budget.fractions(cheapest_floor(pruner, model, priced, self.costs, budget))
        worst = int(np.argmax(need - aim))
        if need[worst] > aim[worst]:
            raise BudgetError(
                f"pruning.budget: {budget.constraints[worst].describe(budget.board)} cannot be met: "
                f"even if each pruned layer kept only its cheapest {pruner.min_kept:.0%} of groups "
                f"(pruning.budget_min_kept), the design would need {_over(need[worst], aim[worst])} "
                f"aimed at ({FINAL_AIM})"
            )

    def __call__(self, model, aim=None, aimed: str = FINAL_AIM) -> BudgetStep:
        aim = self.final_aim() if aim is None else np.asarray(aim, np.float64)
        if len(self.pruners) > 1:
            start = self.budget.fractions(self.costs(model).total())
            first = np.maximum(aim, np.minimum(start, start - self.first_share * (start - aim)))
            self._apply(
                self.pruners[0], model, first, f"the {self.pruners[0].structure} step's share of the way to {aimed}"
            )
        return self._apply(self.pruners[-1], model, aim, aimed)

    def _apply(self, pruner: Pruner, model, aim, aimed: str) -> BudgetStep:
        masks, step = fit_to_budget(pruner, model, self.costs, self.budget, aim=aim, aimed=aimed)
        pruner.apply(model, masks)
        return step


def hybrid_pruners(**options) -> tuple:
    """Kernels first (conv layers; Dense layers by element), then elements inside the kept kernels."""
    return HybridPruner(**options).pruners


class BudgetPruning(TrainingHook):
    """During training: at each update step of `schedule` (a PolynomialDecay from 0 to 1, read as progress), prune
    toward the budget: the aim moves from the model's estimate at the start to the limits less the margin."""

    def __init__(self, fit: BudgetFit, schedule):
        super().__init__()
        self.fit, self.schedule = fit, schedule
        self.start: np.ndarray | None = None
        self.history: list[BudgetStep] = []

    def begin(self, run):
        self.start = self.fit.budget.fractions(self.fit.costs(run.model).total())
        self.fit.check(run.model)  # an impossible budget is one line now, not epochs into training

    def step_begin(self, run, batch):
        step = run.step
        update, progress = self.schedule(step)
        if update:
            final, progress = self.fit.final_aim(), float(progress)
            aimed = FINAL_AIM if progress >= 1 else f"step {step}'s, {way(progress)} of the way to {FINAL_AIM}"
            self.history.append(
                self.fit(run.model, np.minimum(self.start, self.start + progress * (final - self.start)), aimed)
            )


@dataclass
class Repair:
    """The check after QAT: the estimate of the quantized weights, and what was pruned to fit again."""

    before: dict
    after: dict
    repaired: bool
    groups: int = 0
    notes: list = field(default_factory=list)


def repair(pruner: Pruner, qmodel, costs: HardwareCosts, budget: Budget) -> Repair:
    """Price the quantized model; if it no longer fits, prune the least important groups until it does (no
    margin: nothing trains after the last repair)."""
    names = [c.name for c in budget.constraints]
    usage = costs(qmodel).total()
    before = dict(zip(names, budget.fractions(usage).tolist()))
    if budget.fits(usage):
        return Repair(before, before, False)
    already = pruner.sparsity(qmodel)
    masks, step = fit_to_budget(pruner, qmodel, costs, budget, margin=0.0)
    pruner.apply(qmodel, masks)
    after = dict(zip(names, budget.fractions(costs(qmodel).total()).tolist()))
    return Repair(
        before,
        after,
        True,
        step.pruned_groups,
        [f"sparsity {already:.1%} -> {pruner.sparsity(qmodel):.1%} of the pruned layers' entries"],
    )
