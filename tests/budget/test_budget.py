"""Pruning to a resource budget: the knapsack, the pricing, and budget runs through the pipeline."""

import itertools

import numpy as np
import pytest
import quantizer_specs
import yaml
from hls_helpers import SPEC8

import fpgaprune as fp
from fpgaprune import data
from fpgaprune.budget import BudgetError, HardwareCosts, fit_to_budget, parse_budget
from fpgaprune.cli import DEFAULT_CONFIG, entry
from fpgaprune.hls import load_board, load_preset
from fpgaprune.pipeline.checks import check_config
from fpgaprune.pipeline.runner import run
from fpgaprune.pipeline.schema import ConfigError, parse_config
from fpgaprune.pruning import Pruner
from fpgaprune.pruning.knapsack import BudgetInfeasible, solve
from fpgaprune.pruning.pruner import _GroupView
from fpgaprune.pruning.scores import lamp_scores
from fpgaprune.quantize.fixed_types import input_type
from fpgaprune.tfk import keras

SPEC = {**SPEC8, "layers": {}}


def _brute_force(values, costs, capacity, must_keep, must_remove):
    best = None
    for keep in itertools.product((False, True), repeat=len(values)):
        keep = np.array(keep, bool)
        if np.any(keep & must_remove) or np.any(must_keep & ~keep) or np.any(costs @ keep > capacity + 1e-9):
            continue
        if best is None or values[keep].sum() > best:
            best = values[keep].sum()
    return best


@pytest.mark.parametrize("seed", range(40))
def test_knapsack_finds_the_brute_force_optimum(seed):
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(1, 11)), int(rng.integers(1, 4))
    values = rng.uniform(0, 5, n) * (rng.random(n) > 0.1)
    costs = rng.uniform(0, 10, (m, n)) * (rng.random((m, n)) > 0.2)  # some groups cost nothing (shifts)
    capacity = rng.uniform(0, 0.7, m) * costs.sum(axis=1)
    must_keep, must_remove = rng.random(n) < 0.15, rng.random(n) < 0.15
    best = _brute_force(values, costs, capacity, must_keep, must_remove & ~must_keep)
    if best is None:
        with pytest.raises(BudgetInfeasible):
            solve(values, costs, capacity, must_keep, must_remove)
        return
    result = solve(values, costs, capacity, must_keep, must_remove)
    assert result.optimal
    assert np.all(costs @ result.keep <= capacity + 1e-9)
    assert not np.any(result.keep & must_remove & ~must_keep) and np.all(result.keep[must_keep])
    assert result.value == pytest.approx(best, abs=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_a_large_knapsack_comes_within_m_groups_of_the_lp_bound(seed):
    """Above EXACT_MAX_GROUPS groups: the LP relaxation rounded down and filled greedily fits, respects the fixed
    groups, and loses at most the m largest values against the LP bound (which bounds the optimum)."""
    from fpgaprune.pruning.knapsack import EXACT_MAX_GROUPS, _greedy_fill

    rng = np.random.default_rng(seed)
    n, m = EXACT_MAX_GROUPS * 3, 2
    values = rng.gamma(2.0, 1.0, n) * (rng.random(n) > 0.05)
    costs = np.stack([rng.integers(20, 60, n) * (rng.random(n) > 0.1), rng.random(n) < 0.2]).astype(float)
    capacity = costs.sum(axis=1) * rng.uniform(0.2, 0.6, m)
    must_keep, must_remove = rng.random(n) < 0.02, rng.random(n) < 0.05
    result = solve(values, costs, capacity, must_keep, must_remove)
    assert not result.optimal and result.bound is not None
    assert np.all(costs @ result.keep <= capacity + 1e-9) and np.all(result.keep[must_keep])
    assert not np.any(result.keep & must_remove & ~must_keep)
    assert result.bound - np.sort(values)[-m:].sum() <= result.value <= result.bound + 1e-6
    greedy = _greedy_fill(values, costs, capacity, must_keep, must_remove & ~must_keep)
    assert result.value >= values[greedy].sum() - 1e-9  # never worse than the greedy fill alone


def _random_knapsack(seed, n, m=2):
    rng = np.random.default_rng(seed)
    values = rng.gamma(2.0, 1.0, n) * (rng.random(n) > 0.05)
    costs = np.stack([rng.integers(20, 60, n) * (rng.random(n) > 0.1), rng.random(n) < 0.2]).astype(float)[:m]
    capacity = costs.sum(axis=1) * rng.uniform(0.2, 0.6, m)
    return values, costs, capacity, rng.random(n) < 0.03, rng.random(n) < 0.05


def _lp_bound(values, costs, capacity, must_keep, must_remove):
    from scipy.optimize import linprog

    bounds = np.column_stack([must_keep, ~must_remove | must_keep]).astype(float)
    return -linprog(-values, A_ub=costs, b_ub=capacity, bounds=bounds, method="highs").fun


def test_a_trivial_incumbent_at_the_time_limit_is_replaced_by_the_lp_rounding():
    """Under load HiGHS hit its time limit holding only its trivial heuristic's choice (keep what must stay): a
    budget run of the front benchmark was pruned to the floor (0.114 of the board at a 0.3 budget, 81% accuracy).
    An early stop now returns the better of that choice and the LP rounding."""
    from fpgaprune.pruning.knapsack import _early_stop

    values, costs, capacity, must_keep, must_remove = _random_knapsack(0, 400)
    trivial = _early_stop(must_keep.copy(), values, costs, capacity, must_keep, must_remove & ~must_keep)
    bound = _lp_bound(values, costs, capacity, must_keep, must_remove & ~must_keep)
    assert not trivial.optimal and trivial.bound == pytest.approx(bound)
    assert trivial.value >= bound - np.sort(values)[-2:].sum() > 10 * values[must_keep].sum()
    good = solve(values, costs, capacity, must_keep, must_remove)
    kept = _early_stop(good.keep, values, costs, capacity, must_keep, must_remove & ~must_keep)
    assert kept.value >= good.value and not kept.optimal  # never below the incumbent


@pytest.mark.parametrize("time_limit", [0.0, 0.05, 0.2, 0.5])
def test_a_knapsack_stopped_at_any_time_limit_stays_within_m_groups_of_the_lp_bound(time_limit):
    """Whatever HiGHS holds when its time runs out (nothing, a trivial or a good choice), the result fits and
    loses at most the m largest values against the LP bound."""
    values, costs, capacity, must_keep, must_remove = _random_knapsack(1, 3000)
    result = solve(values, costs, capacity, must_keep, must_remove, time_limit=time_limit)
    bound = _lp_bound(values, costs, capacity, must_keep, must_remove & ~must_keep)
    assert np.all(costs @ result.keep <= capacity + 1e-9) and np.all(result.keep[must_keep])
    assert not np.any(result.keep & must_remove & ~must_keep)
    assert bound - np.sort(values)[-2:].sum() <= result.value <= bound + 1e-6


def test_a_real_fit_stops_at_the_node_limit_with_the_same_choice_whatever_the_time_limit():
    """A gradual step of the Fashion-MNIST 16-32-32 CNN's kernel fit (4,432 groups, captured from the front
    benchmark): HiGHS ends its search at NODE_LIMIT, not at a time limit, so two time limits give the same
    groups, within 1e-5 of the LP bound (3e-6 here)."""
    from pathlib import Path

    with np.load(Path(__file__).parent / "data" / "knapsack-fashion-cnn-step.npz") as instance:
        values, costs, capacity, must_keep, must_remove = (
            instance[key] for key in ("values", "costs", "capacity", "must_keep", "must_remove")
        )
    first = solve(values, costs, capacity, must_keep, must_remove, time_limit=60.0)
    second = solve(values, costs, capacity, must_keep, must_remove, time_limit=40.0)
    assert not first.optimal and np.array_equal(first.keep, second.keep)
    assert np.all(costs @ first.keep <= capacity + 1e-9) and np.all(first.keep[must_keep])
    assert not np.any(first.keep & must_remove)
    bound = _lp_bound(values, costs, capacity, must_keep, must_remove & ~must_keep)
    assert bound * (1 - 1e-5) <= first.value <= bound + 1e-9


def _magnitude_only(values, costs, capacity):
    """Remove the lowest values first until the rest fits (a sparsity-driven pruner reaching the budget)."""
    keep = np.ones(values.size, bool)
    for group in np.argsort(values, kind="stable"):
        if np.all(costs @ keep <= capacity):
            break
        keep[group] = False
    return keep


def test_cost_aware_choice_keeps_more_than_magnitude_only():
    # The weakest groups are shifts (±2^k: an adder, no multiplier); the next are costly multipliers.
    values = np.array([1.0, 1.1, 1.2, 2.0, 2.1, 5.0, 6.0])
    costs = np.array([[1.0, 1.0, 1.0, 9.0, 9.0, 9.0, 9.0]])
    capacity = np.array([30.0])
    cheap = _magnitude_only(values, costs, capacity)
    aware = solve(values, costs, capacity).keep
    assert np.all(costs @ aware <= capacity) and np.all(costs @ cheap <= capacity)
    assert values[aware].sum() > values[cheap].sum()
    assert aware[:3].all() and not cheap[:3].any()  # it keeps the cheap shifts that magnitude-only removes


@pytest.fixture(scope="module")
def trained():
    from fpgaprune.model.architectures import small_cnn

    dataset = data.digits(seed=0)
    keras.utils.set_random_seed(1)
    model = small_cnn(dataset.x_train.shape[1:], (4, 8), dataset.classes)
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(dataset.x_train, dataset.y_train, epochs=1, verbose=0)
    return model, dataset


def _costs(dataset, preset="latency_parallel"):
    return HardwareCosts(SPEC, load_preset(preset)["HLSConfig"], input_type(dataset.x_test), load_board("pynq-z2"))


@pytest.mark.parametrize(
    "structure,limit", [("kernel", {"LUT": 0.05}), ("element", {"LUT": 0.04}), ("filter", {"LUT+DSP": 0.06})]
)
def test_a_fit_meets_the_budget_and_keeps_more_value_than_magnitude_only(trained, structure, limit):
    model, dataset = trained
    pruner, costs = Pruner(structure=structure), _costs(dataset)
    budget = parse_budget(limit, load_board("pynq-z2"))
    attached = pruner.attach(fp.hold(model))
    prices = costs(attached)  # the prices the knapsack sees: before pruning narrows any accumulator
    masks, step = fit_to_budget(pruner, attached, costs, budget, margin=0.1)
    pruner.apply(attached, masks)
    aim = budget.limits()[0] * 0.9 - budget.rounding(len(prices.lut))[0]
    assert step.aimed[budget.constraints[0].name] == pytest.approx(aim)
    # re-priced after pruning, narrower accumulators cost no more than the knapsack counted
    achieved = budget.fractions(costs(attached).total())[0]
    assert achieved <= list(step.estimate.values())[0] + 1e-12 <= aim + 1e-9

    views = {target.layer: _GroupView(target, pruner.score) for target in pruner.targets(model)}
    lamp = {name: lamp_scores(view.scores, np.ones(view.scores.size, bool)) for name, view in views.items()}

    def kept_value_and_cost(pruned):
        """The kept groups' LAMP value (what the knapsack maximises) and their price."""
        kept = {name: pruned.get_layer(name).kernel.numpy() != 0 for name in prices.lut}
        value = sum(
            lamp[n][np.bincount(views[n].labels.ravel(), kept[n].ravel(), lamp[n].size) > 0].sum() for n in kept
        )
        return value, budget.fractions(
            {
                "LUT": sum((prices.lut[n] * kept[n]).sum() for n in kept),
                "DSP": sum((prices.dsp[n] * kept[n]).sum() for n in kept),
            }
        )[0]

    # magnitude-only: the lowest sparsity whose kept weights fit the same aim at the same prices
    for sparsity in np.linspace(0, 1, 101):
        plain = pruner.prune(fp.hold(model), sparsity=float(sparsity))
        plain_value, plain_cost = kept_value_and_cost(plain)
        if plain_cost <= aim:
            break
    value, cost = kept_value_and_cost(attached)
    assert cost <= aim + 1e-9 and plain_cost <= aim
    assert value >= plain_value - 1e-6, (value, plain_value, sparsity)


def test_an_impossible_budget_is_one_line_naming_the_limit(trained):
    model, dataset = trained
    pruner = Pruner(structure="kernel")
    with pytest.raises(BudgetError, match=r"^pruning.budget: LUT <= 0.1% of PYNQ-Z2 \(53\) cannot be met") as error:
        fit_to_budget(
            pruner, pruner.attach(fp.hold(model)), _costs(dataset), parse_budget({"LUT": 0.001}, load_board("pynq-z2"))
        )
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("structure", ["kernel", "hybrid"])
def test_an_impossible_budget_under_a_gradual_schedule_stops_before_the_first_batch(trained, structure):
    """The schedule's aim reaches the floor only epochs into training; the callback tries the last fit first."""
    from fpgaprune.budget import BudgetFit, BudgetPruning, hybrid_pruners
    from fpgaprune.pruning import PolynomialDecay

    model, dataset = trained
    pruners = hybrid_pruners() if structure == "hybrid" else (Pruner(structure=structure),)
    fit = BudgetFit(pruners, _costs(dataset), parse_budget({"LUT": 0.001}, load_board("pynq-z2")))
    attached = fit.attach(fp.hold(model))
    attached.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    batches = []
    counter = keras.callbacks.LambdaCallback(on_train_batch_begin=lambda batch, logs: batches.append(batch))
    before = [w.copy() for w in attached.get_weights()]
    with pytest.raises(BudgetError, match=r"^pruning.budget: LUT <= 0.1% of PYNQ-Z2 \(53\) cannot be met") as error:
        attached.fit(
            dataset.x_train,
            dataset.y_train,
            epochs=2,
            verbose=0,
            callbacks=[counter, BudgetPruning(fit, PolynomialDecay(0.0, 1.0, 0, 20, frequency=5))],
        )
    assert batches == [] and "\n" not in str(error.value)
    assert all(np.array_equal(a, b) for a, b in zip(before, attached.get_weights()))


@pytest.mark.parametrize("structure", ["kernel", "element"])
@pytest.mark.parametrize("min_kept,seed", [(0.1, 0), (0.3, 1), (0.5, 2)])
def test_the_floor_keeps_each_layers_cheapest_share_protected_groups_and_nothing_pruned(
    trained, structure, min_kept, seed
):
    model, _ = trained
    rng = np.random.default_rng(seed)
    pruner = Pruner(structure=structure, min_kept=min_kept)
    attached = pruner.prune(fp.hold(model, freeze="conv2[:, :, 0, 0]"), sparsity=0.5)
    prices = {t.layer: rng.integers(0, 50, (2, *t.record.shape)).astype(float) for t in pruner.targets(model)}
    floor = pruner.floor(attached, lambda target: prices[target.layer])
    for view in (_GroupView(t, "l1") for t in pruner.targets(attached)):
        mask = floor[(view.target.layer, view.target.weight)]
        assert np.all(mask[view.pruned])  # pruned already: stays pruned
        assert view.protected.any() == (view.target.layer == "conv2")
        assert not np.any(mask & np.isin(view.labels, np.flatnonzero(view.protected)))  # frozen groups stay
        cost = np.bincount(view.labels.ravel(), prices[view.target.layer].sum(axis=0).ravel(), view.scores.size)
        kept = (np.bincount(view.labels.ravel(), ~mask.ravel(), view.scores.size) > 0) & ~view.protected
        live = ~view.already & ~view.protected
        count = min((~view.already).sum(), max(1, int(np.ceil(min_kept * view.scores.size))))
        assert kept.sum() == count - (view.protected & ~view.already & view.strongest(min_kept, -cost)).sum()
        assert cost[kept].max(initial=-1) <= cost[live & ~kept].min(initial=np.inf), view.target.layer


@pytest.mark.parametrize("structure", ["kernel", "element", "hybrid"])
def test_the_check_refuses_only_what_the_cheapest_floor_misses(trained, structure):
    """Pruning narrows accumulators: the strongest floor (what a fit from the dense model keeps at least) costs
    less at its own types than at the dense model's. A budget between the two is refused by a fit from the dense
    model, passes the check, and the gradual run's last fit meets it. Just below the cheapest floor's own cost
    the check refuses, before the first batch, in one line; just above it passes."""
    from fpgaprune.budget import BudgetFit, BudgetPruning, hybrid_pruners
    from fpgaprune.budget.fit import _entry_rows, cheapest_floor
    from fpgaprune.pruning import PolynomialDecay

    model, dataset = trained
    costs, board = _costs(dataset), load_board("pynq-z2")
    pruners = hybrid_pruners() if structure == "hybrid" else (Pruner(structure=structure),)
    attached, last = pruners[0].attach(fp.hold(model)), pruners[-1]
    priced, lut = costs(attached), parse_budget({"LUT": 1.0}, board)
    layers, rows = len(priced.dsp), _entry_rows(priced, lut)
    with pytest.raises(BudgetInfeasible) as error:
        last.select_to_fit(attached, rows, [0.0])
    at_dense_types = float(error.value.floor[0]) * board.resources["LUT"]

    def priced_as_it_is(masks):
        design = last.attach(attached)
        last.apply(design, masks)
        return costs(design).total()["LUT"]

    strongest = priced_as_it_is(last.select_to_fit(attached, rows, error.value.floor)[0])
    cheapest = cheapest_floor(last, attached, priced, costs, lut)["LUT"]
    assert cheapest <= strongest < at_dense_types

    def fit_at(lut):  # margin 0: the final aim is the limit less the rounding of each layer's total
        return BudgetFit(pruners, costs, parse_budget({"LUT": (lut + layers) / board.resources["LUT"]}, board), 0.0)

    between = fit_at((strongest + at_dense_types) / 2)
    with pytest.raises(BudgetError, match="keeps its strongest 10% of groups"):
        fit_to_budget(last, attached, costs, between.budget, margin=0.0)  # the check before 11-25
    between.check(attached)
    attached.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    gradual = BudgetPruning(between, PolynomialDecay(0.0, 1.0, 0, 40, frequency=5))
    attached.fit(dataset.x_train, dataset.y_train, epochs=1, verbose=0, callbacks=[gradual])
    step = gradual.history[-1]
    assert step.estimate["LUT"] <= step.aimed["LUT"] + 1e-12
    assert step.aimed == pytest.approx({"LUT": (strongest + at_dense_types) / 2 / board.resources["LUT"]})
    with pytest.raises(
        BudgetError,
        match=r"cannot be met: even if each pruned layer kept only its cheapest 10% "
        r"of groups \(pruning.budget_min_kept\)",
    ) as error:
        fit_at(cheapest * 0.99).check(pruners[0].attach(fp.hold(model)))
    assert "\n" not in str(error.value)
    fit_at(cheapest * 1.001).check(pruners[0].attach(fp.hold(model)))


def test_a_step_of_the_ramp_that_cannot_be_met_names_its_own_aim(trained):
    """Just above the cheapest floor the check passes, but a fit keeps the strongest share: a step of the ramp
    fails first, and its line names that step's aim and progress, not the final one."""
    from fpgaprune.budget import BudgetFit, BudgetPruning
    from fpgaprune.budget.fit import cheapest_floor, way
    from fpgaprune.pruning import PolynomialDecay

    model, dataset = trained
    costs, board, pruner = _costs(dataset), load_board("pynq-z2"), Pruner(structure="kernel")
    attached = pruner.attach(fp.hold(model))
    cheapest = cheapest_floor(pruner, attached, costs(attached), costs, parse_budget({"LUT": 1.0}, board))["LUT"]
    lut = (cheapest * 1.01 + len(costs.types)) / board.resources["LUT"]
    fit = BudgetFit((pruner,), costs, parse_budget({"LUT": lut}, board), 0.0)
    fit.check(attached)
    attached.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    gradual = BudgetPruning(fit, PolynomialDecay(0.0, 1.0, 0, 40, frequency=5))
    with pytest.raises(BudgetError) as error:
        attached.fit(dataset.x_train, dataset.y_train, epochs=1, verbose=0, callbacks=[gradual])
    failed = len(gradual.history)  # updates at steps 0, 5, ..., 40: the one after the last recorded failed
    progress = float(PolynomialDecay(0.0, 1.0, 0, 40, frequency=5)(failed * 5)[1])
    assert 0 < progress < 1, "the ramp failed at its last step: pick a budget nearer the cheapest floor"
    assert f"aimed at (step {failed * 5}'s, {way(progress)} of the way to the limit less the margin)" in str(
        error.value
    ) and "\n" not in str(error.value)
    aim = gradual.start + progress * (fit.final_aim() - gradual.start) - len(costs.types) / board.resources["LUT"]
    assert f"over the {aim[0]:.1%}" in str(error.value) or f"over the {aim[0]:.2%}" in str(error.value)


def test_each_layer_keeps_its_strongest_min_kept_share_and_a_lower_share_reaches_lower_budgets(trained):
    """The per-layer floor is a setting: at the floor's own cost a fit keeps exactly each layer's strongest
    `min_kept` share of groups (at least one); below it the fit is infeasible, and a lower share fits there."""
    model, _ = trained
    ones = lambda target: np.ones((1, *target.record.shape))  # noqa: E731  every entry costs 1
    floors = {}
    for min_kept in (0.02, 0.1, 0.5):
        pruner = Pruner(structure="kernel", min_kept=min_kept)
        attached = pruner.attach(fp.hold(model))
        with pytest.raises(BudgetInfeasible) as error:
            pruner.select_to_fit(attached, ones, [0.0])
        floors[min_kept] = float(error.value.floor[0])
        masks, result = pruner.select_to_fit(attached, ones, [floors[min_kept]])
        for view in (_GroupView(t, "l1") for t in pruner.targets(attached)):
            kept_groups = (
                np.bincount(view.labels.ravel(), ~masks[(view.target.layer, "kernel")].ravel(), view.scores.size) > 0
            )
            strongest = view.strongest(min_kept)
            assert kept_groups.sum() == max(1, int(np.ceil(min_kept * view.scores.size)))
            assert np.array_equal(kept_groups, strongest), (min_kept, view.target.layer)
    assert floors[0.02] < floors[0.1] < floors[0.5]
    between = (floors[0.02] + floors[0.5]) / 2
    Pruner(structure="kernel", min_kept=0.02).select_to_fit(model, ones, [between])
    with pytest.raises(BudgetInfeasible):
        Pruner(structure="kernel", min_kept=0.5).select_to_fit(model, ones, [between])
    with pytest.raises(fp.FpgapruneError, match="min_kept 0 is not a fraction"):
        Pruner(min_kept=0)


def test_the_min_kept_setting_reaches_the_fit_and_its_error(trained, tmp_path):
    from fpgaprune.pipeline.pruning_policy import pruner_of

    model, dataset = trained
    raw = _budget_config(tmp_path, {"LUT": 0.001}, "one_shot", "kernel")
    raw["pruning"]["budget_min_kept"] = 0.25
    pruner = pruner_of(parse_config(yaml.safe_dump(raw))[0])
    assert pruner.min_kept == 0.25
    with pytest.raises(BudgetError, match=r"keeps its strongest 25% of groups \(pruning.budget_min_kept\)"):
        fit_to_budget(
            pruner, pruner.attach(fp.hold(model)), _costs(dataset), parse_budget({"LUT": 0.001}, load_board("pynq-z2"))
        )


def test_an_infeasible_fit_tells_need_and_aim_apart():
    from fpgaprune.budget.fit import _over

    assert _over(0.10512, 0.10498) == "10.51%, over the 10.50%"  # at one decimal both read 10.5%
    assert _over(0.34, 0.2) == "34.0%, over the 20.0%"


@pytest.mark.parametrize(
    "budget,message",
    [
        ({"BRAM": 0.5}, "a budget limits LUT, DSP or their sum"),
        ({"LUT+DSP": 300}, "a sum of resources takes a sum of fractions"),
        ({"LUT": 0}, "expected a fraction of the board"),
        ({"LUT": "half"}, "expected a fraction of the board"),
    ],
)
def test_bad_budgets_are_one_line_config_errors(budget, message):
    config = yaml.safe_load(DEFAULT_CONFIG.read_text())
    config["pruning"].update(targets={}, budget=budget)
    if budget == {"LUT": "half"}:
        with pytest.raises(ConfigError, match="pruning.budget.LUT"):
            parse_config(yaml.safe_dump(config))
        return
    parsed, at = parse_config(yaml.safe_dump(config), "run.yaml")
    with pytest.raises(ConfigError, match=f"run.yaml:[0-9]+: pruning.budget.*{message}"):
        check_config(parsed, at)


def test_a_budget_replaces_targets():
    config = yaml.safe_load(DEFAULT_CONFIG.read_text())
    config["pruning"]["budget"] = {"LUT": 0.5}
    parsed, at = parse_config(yaml.safe_dump(config), "run.yaml")
    with pytest.raises(ConfigError, match="pruning.targets .* or pruning.budget, not both"):
        check_config(parsed, at)


def _budget_config(tmp_path, budget, schedule="polynomial", structure="hybrid") -> dict:
    config = yaml.safe_load(DEFAULT_CONFIG.read_text())
    config["training"]["epochs"] = 2
    config["model"]["filters"] = [4, 8]
    config["pruning"].update(targets={}, budget=budget, schedule=schedule, epochs=1, structure=structure)
    config["finetune"]["epochs"] = 1
    config["quantization"]["qat_epochs"] = 1
    config["outputs"] = {"dir": str(tmp_path / "run"), "tb_samples": 20, "synthesize_layers": False}
    return config


def test_a_budget_run_fits_and_reports_budget_estimate_and_achieved(tmp_path):
    config = parse_config(yaml.safe_dump(_budget_config(tmp_path, {"LUT": 0.1, "DSP": 0.5})))[0]
    records = run(config, tmp_path / "run", echo=lambda line: None)
    rows = records["report"]["metrics"]["budget"]
    assert sorted(row["constraint"] for row in rows) == ["DSP", "LUT"]
    rows = sorted(rows, key=lambda row: row["constraint"] != "LUT")
    for row in rows:
        assert row["fits"] and row["achieved"] <= row["budget"]
        assert row["pruning"] <= row["budget"]  # aimed at 95% (the margin), then retrained at that mask
        # the pre-export pricing and the exported project's estimate agree up to each layer's rounding
        assert abs(row["achieved"] - row["final"]) * 53200 <= 3 + 1e-6
        assert "rule estimate; no vendor-checked model" in row["priced_by"]  # none covers io_parallel convolutions
    aimed = records["prune"]["metrics"]["budget"]["aimed"]
    assert aimed["LUT"] == pytest.approx(0.095, abs=1e-4) and aimed["DSP"] == 0.0  # 6-bit: no DSPs to start with
    assert records["report"]["metrics"]["fits"]
    html = (tmp_path / "run" / "report" / "report.html").read_text()
    md = (tmp_path / "run" / "report" / "report.md").read_text()
    assert "<h2>Budget</h2>" in html and "## Budget" in md
    lut = rows[0]
    assert f"{100 * lut['achieved']:.1f}%" in html and f"{100 * lut['budget']:.1f}%" in md
    assert records["csim"]["metrics"]["bit_exact"]
    _synth_and_report_read_the_shipped_project(config, tmp_path / "run", records)
    _a_failing_yosys_says_how_to_go_on(config, tmp_path / "run", tmp_path)


def _a_failing_yosys_says_how_to_go_on(config, run_dir, tmp_path):
    """yosys failing (or past its time limit) on a layer stops the synth stage with one line that names the
    setting which skips the measurement."""
    from fpgaprune.pipeline.runner import StageFailed
    from fpgaprune.resources import yosys

    failing = tmp_path / "yosys"
    failing.write_text("#!/bin/sh\necho 'ERROR: out of memory' >&2\nexit 3\n")
    failing.chmod(0o755)
    measuring = config.model_copy(update={"outputs": config.outputs.model_copy(update={"synthesize_layers": True})})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(yosys, "find_yosys", lambda: yosys.YosysTool(str(failing), "Yosys 0.1", "test", 0.0))
        with pytest.raises(StageFailed) as raised:
            run(measuring, run_dir, from_stage="synth", echo=lambda line: None)
    message = str(raised.value)
    assert "\n" not in message and "exit code 3: ERROR: out of memory" in message
    assert message.endswith("(outputs.synthesize_layers: false skips this measurement; a re-run resumes here)")


def _synth_and_report_read_the_shipped_project(config, run_dir, records):
    """Export once: re-run from synth with hls4ml's converter broken; the report comes out the same."""
    import hls4ml

    def no_conversion(*args, **kwargs):
        raise AssertionError("a stage after hls converted the model again")

    converter = hls4ml.converters.convert_from_keras_model
    hls4ml.converters.convert_from_keras_model = no_conversion
    try:
        again = run(config, run_dir, from_stage="synth", echo=lambda line: None)
    finally:
        hls4ml.converters.convert_from_keras_model = converter
    assert again["report"]["metrics"] == records["report"]["metrics"]


def test_an_impossible_budget_stops_the_run_with_one_line(tmp_path, capsys):
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(_budget_config(tmp_path, {"LUT": 0.002}, "one_shot", "kernel")))
    code = entry(["run", str(path)])
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 1 and "Traceback" not in err
    assert len(errors) == 1 and "stage prune failed: pruning.budget: LUT <= 0.2%" in errors[0], err
    assert "cannot be met" in errors[0] and "still needs" in errors[0]
    assert not (tmp_path / "run" / "prune").exists()


def test_budget_stage_keys_include_the_hardware_sections():
    from fpgaprune.pipeline.runner import stage_keys

    config = yaml.safe_load(DEFAULT_CONFIG.read_text())
    plain = stage_keys(parse_config(yaml.safe_dump(config))[0])
    config["hls"]["preset"] = "resource_stream"
    assert stage_keys(parse_config(yaml.safe_dump(config))[0])["prune"] == plain["prune"]
    config["pruning"].update(targets={}, budget={"LUT": 0.5})
    budgeted = stage_keys(parse_config(yaml.safe_dump(config))[0])
    config["hls"]["preset"] = "latency_parallel"
    assert stage_keys(parse_config(yaml.safe_dump(config))[0])["prune"] != budgeted["prune"]


def test_repair_after_qat_prunes_until_the_quantized_weights_fit(trained):
    from fpgaprune.budget import repair
    from fpgaprune.quantize import to_qkeras

    model, dataset = trained
    pruner, costs = Pruner(structure="kernel"), _costs(dataset)
    quantized = to_qkeras(pruner.attach(fp.hold(model)), SPEC)
    before = costs(quantized).total()["LUT"] / 53200
    budget = parse_budget({"LUT": round(before * 0.8, 4)}, load_board("pynq-z2"))
    fixed = repair(pruner, quantized, costs, budget)
    assert fixed.repaired and fixed.groups > 0
    assert fixed.before["LUT"] == pytest.approx(before)
    assert fixed.after["LUT"] <= budget.limits()[0] == pytest.approx(round(before * 0.8, 4))
    assert costs(quantized).total()["LUT"] / 53200 == pytest.approx(fixed.after["LUT"])
    again = repair(pruner, quantized, costs, budget)
    assert not again.repaired and again.after == again.before  # it fits now: nothing more is pruned


def test_a_dsp_count_budget_at_widths_that_use_dsps(trained):
    model, dataset = trained
    wide = {
        "default": {
            "kernel": "quantized_bits(12,1,alpha=1)",
            "bias": "quantized_bits(12,3,alpha=1)",
            "activation": "quantized_relu(12,4)",
        },
        "layers": {},
    }
    costs = HardwareCosts(
        wide, load_preset("latency_parallel")["HLSConfig"], input_type(dataset.x_test), load_board("pynq-z2")
    )
    dense_dsp = costs(model).total()["DSP"]
    assert dense_dsp > 220  # more than the board has: conv2 and fc read 12-bit activations, 12-bit products: DSPs
    pruner = Pruner(structure="kernel")
    budget = parse_budget({"DSP": 150}, load_board("pynq-z2"))  # a count: 150 of the board's 220
    attached = pruner.attach(fp.hold(model))
    masks, step = fit_to_budget(pruner, attached, costs, budget, margin=0.0)
    pruner.apply(attached, masks)
    assert 140 <= costs(attached).total()["DSP"] <= step.estimate["DSP"] * 220 + 1e-9 <= 150  # it spends what it may


def test_hybrid_removes_whole_kernels_then_elements_inside_the_kept_ones(trained):
    from fpgaprune.budget import BudgetFit, hybrid_pruners

    model, dataset = trained
    costs = _costs(dataset)
    fit = BudgetFit(hybrid_pruners(), costs, parse_budget({"LUT": 0.05}, load_board("pynq-z2")), margin=0.0)
    attached = fit.attach(fp.hold(model))
    step = fit(attached)
    assert costs(attached).total()["LUT"] / 53200 <= step.estimate["LUT"] + 1e-12 <= 0.05
    kernel = attached.get_layer("conv2").kernel.numpy()
    zeros = (kernel == 0).reshape(-1, *kernel.shape[-2:]).sum(axis=0)  # zeros per (ci, co) kernel of 9 taps
    assert np.any(zeros == 9) and np.any((zeros > 0) & (zeros < 9))  # whole kernels, and taps of kept ones


def test_the_hybrid_budget_fit_takes_its_kernel_share_from_the_config(trained):
    """`pruning.hybrid_first_share` reaches the budget fit: at 1 every zero of conv2 lies in a whole dead kernel,
    at 0 fewer whole kernels go; both meet the budget. A share outside [0, 1] is one line."""
    from fpgaprune.budget import BudgetFit, hybrid_pruners
    from fpgaprune.pipeline.pruning_policy import budget_fit

    model, dataset = trained
    raw = yaml.safe_load(DEFAULT_CONFIG.read_text())
    raw["pruning"].update(structure="hybrid", targets={}, budget={"LUT": 0.05}, hybrid_first_share=0.8)
    assert budget_fit(parse_config(yaml.safe_dump(raw), "run.yaml")[0], dataset).first_share == 0.8
    costs, budget = _costs(dataset), parse_budget({"LUT": 0.05}, load_board("pynq-z2"))
    dead, partial = {}, {}
    for share in (0.0, 1.0):
        fit = BudgetFit(hybrid_pruners(), costs, budget, margin=0.0, first_share=share)
        attached = fit.attach(fp.hold(model))
        assert fit(attached).estimate["LUT"] <= 0.05
        zeros = (attached.get_layer("conv2").kernel.numpy() == 0).reshape(-1, 8 * 4).sum(axis=0)
        dead[share], partial[share] = int(np.sum(zeros == 9)), int(np.sum((zeros > 0) & (zeros < 9)))
    assert partial[1.0] == 0 and dead[0.0] < dead[1.0] and partial[0.0] > 0
    with pytest.raises(BudgetError, match=r"^pruning.hybrid_first_share: found 1.5, expected a fraction in \[0, 1\]$"):
        BudgetFit(hybrid_pruners(), costs, budget, first_share=1.5)


def test_a_ramp_step_short_of_the_end_never_reads_as_the_whole_way():
    """Seen in a run: 99.6% of the way printed as "100%" beside an aim above the final one."""
    from fpgaprune.budget.fit import way

    assert [way(p) for p in (0.0, 0.004, 0.29, 0.57, 0.8, 0.996, 0.9999)] == [
        "0%",
        "0%",
        "29%",
        "57%",
        "80%",
        "99%",
        "99%",
    ]


SPEC12 = {**quantizer_specs.SPEC12, "layers": {}}


def test_a_budget_of_no_dsp_builds_every_product_from_luts_and_fits_the_export(trained, tmp_path):
    """DSP: 0 is a budget (only DSP may be 0): priced with every product in LUTs, the knapsack's choice meets it,
    and the export with the same setting spends no DSP and fits the LUT limit."""
    from fpgaprune.hls.config import merge_config
    from fpgaprune.hls.multipliers import dsp_free_overrides

    model, dataset = trained
    board = load_board("pynq-z2")
    budget = parse_budget({"LUT": 0.5, "DSP": 0}, board)
    assert budget.dsp_free and not parse_budget({"LUT": 0.5, "DSP": 1}, board).dsp_free
    preset = load_preset("latency_parallel")["HLSConfig"]
    auto = HardwareCosts(SPEC12, preset, input_type(dataset.x_test), board)
    fabric = HardwareCosts(SPEC12, merge_config(preset, dsp_free_overrides()), input_type(dataset.x_test), board)
    pruner = Pruner(structure="kernel")
    attached = pruner.attach(fp.hold(model))
    assert auto(attached).total()["DSP"] > 0 and fabric(attached).total()["DSP"] == 0
    with pytest.raises(BudgetError, match="DSP"):  # under "auto" the same limit prunes every DSP product away
        fit_to_budget(pruner, attached, auto, parse_budget({"LUT": 0.5, "DSP": 0}, board))
    masks, step = fit_to_budget(pruner, attached, fabric, budget)
    pruner.apply(attached, masks)
    assert step.estimate["DSP"] == 0
    exported = fp.export(
        fp.quantized_twin(attached, SPEC12),
        "latency_parallel",
        "pynq-z2",
        tmp_path / "prj",
        x=dataset.x_test,
        overrides=dsp_free_overrides(),
        tb_samples=4,
    )
    estimate = fp.estimate(exported)
    assert estimate.total("pruned").dsp == 0
    assert estimate.total("pruned").lut / board.resources["LUT"] <= 0.5


def test_a_budget_of_no_dsp_sets_fabric_and_a_backend_without_it_is_one_line():
    from fpgaprune.pipeline.settings import hls_preset

    config = yaml.safe_load(DEFAULT_CONFIG.read_text())
    config["pruning"].update(targets={}, budget={"LUT": 0.5, "DSP": 0})
    parsed, at = parse_config(yaml.safe_dump(config), "run.yaml")
    check_config(parsed, at)
    assert hls_preset(parsed)["HLSConfig"]["Model"]["Multipliers"] == "fabric"
    config["hls"]["backend"] = "Catapult"
    parsed, at = parse_config(yaml.safe_dump(config), "run.yaml")
    with pytest.raises(ConfigError, match=r"run.yaml:[0-9]+: pruning.budget.*DSP: 0 .* Catapult backend") as error:
        check_config(parsed, at)
    assert "\n" not in str(error.value) and "Vitis" in str(error.value)
