"""How a run prunes: by its schedule to its targets, or to its budget (and the repair after QAT).

The polynomial schedule ramps the sparsity up over the first PRUNE_RAMP_FRACTION of the pruning epochs'
steps, so that the rest retrain at the target, in PRUNE_UPDATES mask updates (fewer are coarse, more retrace
the step).
"""

import numpy as np

from fpgaprune.budget import BudgetFit, BudgetPruning, HardwareCosts, repair
from fpgaprune.hls import load_board, merge_config
from fpgaprune.pipeline.settings import budget_of, hls_preset, quantization_spec
from fpgaprune.pipeline.training import calibrated, fit_model
from fpgaprune.pruning import GradualPruning, HybridPruner, LotteryTicket, PolynomialDecay, Pruner
from fpgaprune.quantize import input_type

PRUNE_RAMP_FRACTION = 0.7
PRUNE_UPDATES = 20
CALIBRATION_SAMPLES = 2048  # training inputs that set a twin's learned activation ranges before QAT (HGQ2)


def pruner_of(config):
    """The run's Pruner (a HybridPruner for structure `hybrid`): its score, scope, target layers and exclusions."""
    options = dict(
        score=config.pruning.score,
        scope=config.pruning.scope,
        layers=list(config.pruning.targets) or None,
        do_not_prune=config.pruning.do_not_prune,
        min_kept=config.pruning.budget_min_kept,
    )
    if config.pruning.structure == "hybrid":
        return HybridPruner(**options, first_share=config.pruning.hybrid_first_share)
    return Pruner(structure=config.pruning.structure, **options)


def scheduled(config, held, dataset):
    """Pruning by the configured schedule: each layer to its target, or all to one under a global scope (`held`:
    the bound held model; the pruned model comes back)."""
    pruner, targets = pruner_of(config), config.pruning.targets
    if not targets:
        return held.model
    sparsity = dict(targets) if config.pruning.scope == "layer" else next(iter(targets.values()))
    if config.pruning.lottery_rounds:

        def train(model, callbacks):
            epochs = config.pruning.epochs or 1
            rate = config.finetune.learning_rate
            return fit_model(held.made(model), dataset, epochs, rate, config, "lottery round", callbacks).model

        return LotteryTicket.reaching(pruner, config.pruning.lottery_rounds, sparsity).run(held.model, train)
    if config.pruning.schedule == "one_shot":
        return pruner.prune(held.model, sparsity=sparsity)
    attached = pruner.attach(held.model)
    return fit_model(
        held.made(attached),
        dataset,
        config.pruning.epochs,
        config.finetune.learning_rate,
        config,
        "prune",
        [GradualPruning(pruner, polynomial(config, dataset, 0.0, sparsity))],
    ).model


def polynomial(config, dataset, initial, target):
    """The polynomial schedule over the pruning epochs' steps (ramp, then retrain at the target)."""
    steps = config.pruning.epochs * int(np.ceil(len(dataset.x_train) / config.training.batch_size))
    end = max(1, int(PRUNE_RAMP_FRACTION * steps))
    return PolynomialDecay(initial, target, 0, end, frequency=max(1, end // PRUNE_UPDATES))


def hardware_costs(config, dataset):
    """The run's pricing of kernel entries: its quantizers, hls config (preset + inline), input type and board."""
    preset = hls_preset(config)
    hls_config = merge_config(preset.get("HLSConfig", {}), config.hls.config)
    return HardwareCosts(
        quantization_spec(config),
        hls_config,
        input_type(dataset.x_test),
        load_board(config.board),
        config.quantization.batchnorm,
        config.hls.backend,
        preset.get("IOType", "io_parallel"),
        dataset.x_train[:CALIBRATION_SAMPLES],
    )


def budget_fit(config, dataset):
    """How the run fits its budget: its pruner (or, for structure `hybrid`, kernels then elements)."""
    pruner = pruner_of(config)
    return BudgetFit(
        getattr(pruner, "pruners", (pruner,)),
        hardware_costs(config, dataset),
        budget_of(config),
        config.pruning.budget_margin,
        config.pruning.hybrid_first_share,
    )


def budgeted(config, held, dataset):
    """Pruning to the budget (`held`: the bound held model): one knapsack fit, or fits that move toward it over
    the pruning epochs."""
    fitting = budget_fit(config, dataset)
    budget, costs, attached = fitting.budget, fitting.costs, fitting.attach(held.model)
    if config.pruning.schedule == "one_shot":
        step = fitting(attached)
    else:
        callback = BudgetPruning(fitting, polynomial(config, dataset, 0.0, 1.0))
        epochs, rate = config.pruning.epochs, config.finetune.learning_rate
        fit_model(held.made(attached), dataset, epochs, rate, config, "prune", [callback])
        step = callback.history[-1]
    estimate = dict(zip([c.name for c in budget.constraints], budget.fractions(costs(attached).total()).tolist()))
    return attached, {
        "limits": {c.name: c.limit for c in budget.constraints},
        "aimed": step.aimed,
        "estimate": estimate,
        "optimal": step.optimal,
        "notes": costs.notes,
        "priced_by": costs.sources,
    }


def repaired(config, quantized, dataset) -> dict:
    """After QAT, the budget checked on the quantized weights; if it no longer fits, the least important groups
    are pruned, one epoch of QAT follows (the learned ranges traced again), and a last repair (without training)
    makes it fit."""
    fitting = budget_fit(config, dataset)
    pruner = fitting.pruners[-1]
    first = repair(pruner, quantized, fitting.costs, fitting.budget)
    last = first
    if first.repaired:
        fit_model(quantized, dataset, 1, config.quantization.learning_rate, config, "QAT (repair)")
        last = repair(pruner, calibrated(quantized, dataset), fitting.costs, fitting.budget)
    return {
        "after_qat": first.before,
        "final": last.after,
        "repaired": first.repaired or last.repaired,
        "repaired_groups": first.groups + last.groups,
        "notes": first.notes + last.notes,
    }
