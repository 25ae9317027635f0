"""Accuracy against estimated hardware cost (LUT + DSP fractions of the board) on Fashion-MNIST: fpgaprune's
structures by sparsity and by budget, tfmot's unstructured pruning, and hls4ml's Optimization API.

For each CNN (`--widths`, default 16-32-32 and 64-128-128) and seed, one pretrained model; then every method
trains the same `--epochs` more epochs (gradual schedules ramp over the first 60%), is quantized with the same
QKeras spec and `--qat-epochs` of QAT, and is priced by fpgaprune's rules on its quantized weights
(`resources/entry_costs.py`) on a ZCU102 in the Resource strategy, at the smallest power-of-two reuse factor at
which each CNN's dense design fits the board (what a user would pick for a design that size; the 16-32-32 CNN
takes 6.5 boards of DSPs fully parallel). Methods:
- fpgaprune kernel / element / hybrid, each by budget (`--budgets`: fractions of the dense design's LUT + DSP
  estimate; a budget that cannot be met is recorded as infeasible), with a repair
  after QAT; and each by uniform sparsity (`--sparsities`; the hybrid's kernels make half of it);
- tfmot unstructured (`prune_low_magnitude`) by uniform sparsity, priced twice: as fpgaprune's export builds
  it (tfmot's zeros become removed products there too), and as stock hls4ml's Resource strategy builds it (every
  weight read from ROM and multiplied, zeros included: the dense design's cost);
- hls4ml's `dsp_aware_pruning` at `--rtols` (see bench_budget_peer.py for how it is run with tf_keras).

Every finished point is appended to `<out>/points.jsonl`; a re-run skips them, so the hours this takes on
2 cores may be spread over several runs, and over machines: the default `<out>` is in `benchmarks/results/`, which
is in git with the pretrained models, so a fresh clone resumes where the last commit stopped. Prints, per budget,
fpgaprune's best point against every peer point of equal or higher cost (mean over the same seeds), and writes
`front.png`. `--quick` runs a small digits version.
"""

import argparse
import copy
import json
from pathlib import Path

import numpy as np
from bench_budget_peer import SPEC, _zeros, hls4ml_optimized  # 12 bits: hls4ml's DSP model counts DSPs there
from bench_pareto import cnn, tfmot_run

import fpgaprune as fp
from fpgaprune import data
from fpgaprune.support.text_table import format_rows
from fpgaprune.tfk import keras

BOARD, PRESET = "zcu102", "resource_parallel"
MAX_REUSE = 4096
TFMOT = "tfmot unstructured, sparsity"
# tfmot's model exported by stock hls4ml in the Resource strategy: every weight, zero or not, is read from ROM and
# multiplied, so the design costs what the dense one does (the CNN's dense cost, the same bits and reuse factor)
TFMOT_STOCK = "tfmot unstructured, sparsity, stock hls4ml"
LOSS = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def _train(model, dataset, epochs, callbacks=(), lr=1e-3):
    model.compile(keras.optimizers.Adam(lr), LOSS, metrics=["accuracy"])
    if epochs:
        model.fit(dataset.x_train, dataset.y_train, batch_size=128, epochs=epochs, verbose=0, callbacks=list(callbacks))
    return model


def _schedule(dataset, epochs, target):
    from fpgaprune.pruning import PolynomialDecay

    end = max(1, int(0.6 * epochs * int(np.ceil(len(dataset.x_train) / 128))))
    return PolynomialDecay(0.0, target, 0, end, frequency=max(1, end // 20))


def by_sparsity(pretrained, dataset, epochs, structure, sparsity):
    from fpgaprune.pruning import GradualPruning, HybridPruner, Pruner

    pruner = (
        HybridPruner(do_not_prune=["conv1"])
        if structure == "hybrid"
        else Pruner(structure=structure, do_not_prune=["conv1"])
    )
    model = pruner.attach(fp.hold(pretrained))
    return _train(model, dataset, epochs, [GradualPruning(pruner, _schedule(dataset, epochs, sparsity))]), pruner


def by_budget(pretrained, dataset, epochs, structure, budget, costs):
    from fpgaprune.budget import BudgetFit, BudgetPruning, hybrid_pruners
    from fpgaprune.pruning import Pruner

    pruners = hybrid_pruners() if structure == "hybrid" else (Pruner(structure=structure),)
    fit = BudgetFit(pruners, costs, budget)
    model = fit.attach(fp.hold(pretrained))
    return _train(model, dataset, epochs, [BudgetPruning(fit, _schedule(dataset, epochs, 1.0))]), pruners[-1]


def quantized_point(model, dataset, qat_epochs, costs, budget=None, pruner=None) -> dict:
    """QAT with pruned weights held; a budget run is repaired after QAT; accuracy and board fractions."""
    from fpgaprune.budget import repair
    from fpgaprune.quantize import to_qkeras

    held = model if any(getattr(w, "constraint", None) for w in model.weights) else fp.hold(model, _zeros(model))
    quantized = _train(to_qkeras(held, SPEC), dataset, qat_epochs)
    if budget is not None:
        repair(pruner, quantized, costs, budget)
    usage = costs(quantized).total()
    board = costs.board.resources
    return {
        "accuracy": float(quantized.evaluate(dataset.x_test, dataset.y_test, verbose=0)[1]),
        "LUT": usage["LUT"],
        "DSP": usage["DSP"],
        "cost": usage["LUT"] / board["LUT"] + usage["DSP"] / board["DSP"],
    }


def points_for(args) -> list:
    """(method, level) of every point, per CNN and seed."""
    plan = [(f"fpgaprune {s}, budget", b) for s in ("kernel", "element", "hybrid") for b in args.budgets]
    plan += [(f"fpgaprune {s}, sparsity", x) for s in ("kernel", "element", "hybrid") for x in args.sparsities]
    plan += [(TFMOT, x) for x in args.sparsities]
    return plan + [("hls4ml dsp_aware_pruning, rtol", r) for r in args.rtols]


def fitting_costs(pretrained, dataset):
    """(HardwareCosts, reuse factor): the run's pricing at the smallest power-of-two reuse factor at which the
    dense design's DSP and LUT estimates fit the board."""
    from fpgaprune.budget import HardwareCosts
    from fpgaprune.hls import load_board, load_preset
    from fpgaprune.quantize import input_type

    reuse = 1
    while True:
        config = copy.deepcopy(load_preset(PRESET)["HLSConfig"])
        config["Model"]["ReuseFactor"] = reuse
        costs = HardwareCosts(SPEC, config, input_type(dataset.x_test), load_board(BOARD))
        usage, board = costs(pretrained).total(), costs.board.resources
        if (usage["DSP"] <= board["DSP"] and usage["LUT"] <= board["LUT"]) or reuse >= MAX_REUSE:
            return costs, reuse
        reuse *= 2


def dense_cost(pretrained, costs) -> float:
    """LUT + DSP fractions of the board that the unpruned, quantized model would take (the rules' estimate)."""
    usage, board = costs(pretrained).total(), costs.board.resources
    return usage["LUT"] / board["LUT"] + usage["DSP"] / board["DSP"]


def run_point(method, level, pretrained, dataset, args, costs) -> dict:
    """One point; a budget is `level` times the dense design's LUT + DSP, and one that cannot be met is recorded
    as such (accuracy None) with the fit's message."""
    from fpgaprune.budget import BudgetError, parse_budget

    if method.endswith(", budget"):
        budget = parse_budget({"LUT+DSP": level * dense_cost(pretrained, costs)}, costs.board)
        try:
            model, pruner = by_budget(pretrained, dataset, args.epochs, method.split()[1].rstrip(","), budget, costs)
        except BudgetError as error:
            return {"accuracy": None, "cost": None, "infeasible": str(error)}
        return quantized_point(model, dataset, args.qat_epochs, costs, budget, pruner)
    if method.startswith("fpgaprune"):
        model, _ = by_sparsity(pretrained, dataset, args.epochs, method.split()[1].rstrip(","), level)
    elif method.startswith("tfmot"):
        model = tfmot_run(
            pretrained,
            dataset,
            level,
            args.epochs,
            int(np.ceil(len(dataset.x_train) / 128)),
            layers=[layer.name for layer in pretrained.layers if layer.name != "conv1" and layer.get_weights()],
        )
    else:
        model = hls4ml_optimized(pretrained, dataset, args.epochs, level)[0]
    return quantized_point(model, dataset, args.qat_epochs, costs)


def pretrained_path(out: Path, widths: str, seed: int) -> Path:
    return out / f"pretrained-{widths.replace(',', '-')}-seed{seed}.keras"


def pretrained_model(args, widths, seed, dataset, out: Path):
    """The shared starting point of every method for one CNN and seed (saved, so a re-run does not retrain)."""
    from fpgaprune.model.architectures import small_cnn

    path = pretrained_path(out, ",".join(map(str, widths)), seed)
    if path.exists():
        return fp.load_model(path)
    keras.utils.set_random_seed(seed)
    model = small_cnn(dataset.x_train.shape[1:], widths, dataset.classes) if args.quick else cnn(seed, widths)
    _train(model, dataset, args.pretrain_epochs, lr=3e-3)
    # saved uncompiled (a third of the size in git): every method compiles its own optimizer
    uncompiled = keras.models.clone_model(model)
    uncompiled.set_weights(model.get_weights())
    fp.save_model(uncompiled, path)
    return fp.load_model(path)


def summary(records: list) -> list:
    """Mean over seeds per (cnn, method, level): accuracy and cost."""
    groups = {}
    for r in records:
        groups.setdefault((r["cnn"], r["method"], r["level"]), []).append(r)
        if "stock_cost" in r and r["accuracy"] is not None:
            groups.setdefault((r["cnn"], TFMOT_STOCK, r["level"]), []).append({**r, "cost": r["stock_cost"]})
    return [
        {
            "cnn": cnn_name,
            "method": method,
            "level": level,
            "seeds": tuple(sorted(r["seed"] for r in rs)),
            "accuracy": float(np.mean([r["accuracy"] for r in rs])),
            "cost": float(np.mean([r["cost"] for r in rs])),
        }
        for (cnn_name, method, level), rs in sorted(groups.items())
        if all(r["accuracy"] is not None for r in rs)
    ]


def verdicts(rows: list) -> list:
    """Per peer point: fpgaprune's most accurate point of equal or lower cost over the same seeds (a run still under
    way has points with fewer seeds), and whether it is as accurate."""
    lines = []
    for peer in (r for r in rows if not r["method"].startswith("fpgaprune")):
        ours = [
            r
            for r in rows
            if (r["cnn"], r["seeds"]) == (peer["cnn"], peer["seeds"])
            and r["method"].startswith("fpgaprune")
            and r["cost"] <= peer["cost"] + 1e-12
        ]
        best = max(ours, key=lambda r: r["accuracy"], default=None)
        lines.append(
            (
                peer["cnn"],
                _seeds(peer),
                f"{peer['method']} {peer['level']}",
                f"{peer['cost']:.3f}",
                f"{peer['accuracy']:.4f}",
                f"{best['method']} {best['level']}" if best else "none at <= cost",
                f"{best['cost']:.3f}" if best else "-",
                f"{best['accuracy']:.4f}" if best else "-",
                "yes" if best and best["accuracy"] >= peer["accuracy"] else "NO",
            )
        )
    return lines


def _seeds(row) -> str:
    return ",".join(map(str, row["seeds"]))


def plot(rows: list, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cnns, methods = sorted({r["cnn"] for r in rows}), sorted({r["method"] for r in rows})
    colors = dict(zip(methods, plt.rcParams["axes.prop_cycle"].by_key()["color"] * 3))  # the same in every panel
    fig, axes = plt.subplots(1, len(cnns), figsize=(6 * len(cnns), 4.5), layout="constrained", squeeze=False)
    handles = {}
    for axis, name in zip(axes[0], cnns):
        mine = [r for r in rows if r["cnn"] == name]
        for method in sorted({r["method"] for r in mine}):
            points = sorted((r["cost"], r["accuracy"]) for r in mine if r["method"] == method)
            one_cost = len({cost for cost, _ in points}) == 1  # stock hls4ml: every point at the dense cost
            (handles[method],) = axis.plot(
                *zip(*points), marker="o", ms=4, lw=0 if one_cost else 1, color=colors[method], label=method
            )
        seeds = sorted({seed for r in mine for seed in r["seeds"]})
        partial = any(len(r["seeds"]) < len(seeds) for r in mine)
        label = f"seed {seeds[0]}" if len(seeds) == 1 else f"mean of seeds {', '.join(map(str, seeds))}"
        axis.set_title(
            f"CNN {name}: {label}" + (" (a run under way: some points have fewer)" if partial else ""), fontsize=10
        )
        axis.set_xlabel("LUT + DSP (sum of board fractions, estimate)")
        axis.set_ylabel("accuracy after QAT")
        axis.grid(alpha=0.3)
    fig.legend([handles[m] for m in methods], methods, loc="outside lower center", ncols=2 * len(cnns), fontsize=8)
    fig.savefig(path, dpi=110)


def run_points(args, widths: str, dataset, records: list, log: Path) -> list:
    """Every missing point of one CNN (all seeds), appended to `log` as it finishes; returns the records, those of
    this CNN priced otherwise (an earlier pricing) left out."""
    costs = reuse = None
    for seed in range(args.seeds):
        if args.report and not pretrained_path(args.out, widths, seed).exists():
            continue
        pretrained = pretrained_model(args, tuple(map(int, widths.split(","))), seed, dataset, args.out)
        if costs is None:  # one pricing per CNN, from its first seed
            costs, reuse = fitting_costs(pretrained, dataset)
            print(f"CNN {widths}: {PRESET}, reuse factor {reuse}", flush=True)
        pricing = f"{PRESET} R{reuse}"
        done = {
            (r["method"], r["level"])
            for r in records
            if (r["cnn"], r["seed"], r.get("pricing")) == (widths, seed, pricing)
        }
        for method, level in points_for(args):
            if (method, level) in done or args.report:
                continue
            keras.utils.set_random_seed(seed)
            point = run_point(method, level, pretrained, dataset, args, costs)
            record = {"cnn": widths, "seed": seed, "method": method, "level": level, "pricing": pricing, **point}
            with log.open("a") as handle:
                handle.write(json.dumps(record) + "\n")
            records.append(record)
            print(
                f"{widths} seed {seed} {method} {level}: "
                + (
                    f"accuracy {point['accuracy']:.4f}, LUT+DSP {point['cost']:.3f}"
                    if point["accuracy"] is not None
                    else f"infeasible: {point['infeasible']}"
                ),
                flush=True,
            )
        stock = dense_cost(pretrained, costs)
        for record in records:
            if (record["cnn"], record["seed"], record["method"]) == (widths, seed, TFMOT):
                record["stock_cost"] = stock
    return [r for r in records if r["cnn"] != widths or r.get("pricing") == f"{PRESET} R{reuse}"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", nargs="+", default=["16,32,32", "64,128,128"])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--pretrain-epochs", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--qat-epochs", type=int, default=2)
    parser.add_argument(
        "--budgets",
        type=float,
        nargs="+",
        default=[0.1, 0.15, 0.3, 0.5],
        help="LUT + DSP budgets as fractions of the dense (unpruned, quantized) design's estimate",
    )
    parser.add_argument("--sparsities", type=float, nargs="+", default=[0.5, 0.7, 0.9, 0.93])
    parser.add_argument("--rtols", type=float, nargs="+", default=[0.99, 0.97])
    parser.add_argument(
        "--out",
        type=Path,
        help="default benchmarks/results/budget_front, in git: records, "
        "pretrained models and plot, so a fresh clone resumes (--quick: benchmarks/out/, ignored)",
    )
    parser.add_argument("--quick", action="store_true", help="digits, one small CNN, one seed, few points")
    parser.add_argument("--report", action="store_true", help="run nothing: the tables and plot of the records")
    args = parser.parse_args(argv)
    if args.quick:
        args.widths, args.seeds, args.pretrain_epochs, args.epochs, args.qat_epochs = ["4,8"], 1, 4, 2, 1
        args.budgets, args.sparsities, args.rtols = [0.4], [0.6], [0.97]
    here = Path(__file__).parent
    args.out = args.out or (here / "out" / "budget_front_quick" if args.quick else here / "results" / "budget_front")
    args.out.mkdir(parents=True, exist_ok=True)
    log = args.out / "points.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    dataset = data.digits(seed=0) if args.quick else data.fashion_mnist()
    for widths in args.widths:
        records = run_points(args, widths, dataset, records, log)
    others = sorted({r["cnn"] for r in records} - set(args.widths))  # recorded, not run now: priced for the plot
    for widths in others:
        records = run_points(argparse.Namespace(**{**vars(args), "report": True}), widths, dataset, records, log)
    rows = summary(records)
    print(
        "\n".join(
            format_rows(
                ("cnn", "method", "level", "seeds", "LUT+DSP", "accuracy"),
                [
                    (r["cnn"], r["method"], r["level"], _seeds(r), f"{r['cost']:.3f}", f"{r['accuracy']:.4f}")
                    for r in rows
                ],
            )
        )
    )
    print(
        "\n".join(
            format_rows(
                (
                    "cnn",
                    "seeds",
                    "peer point",
                    "cost",
                    "accuracy",
                    "fpgaprune's best at <= cost",
                    "cost",
                    "accuracy",
                    "as accurate",
                ),
                verdicts(rows),
            )
        )
    )
    if not rows:
        print(f"no finished points in {log} yet: no plot")
        return
    plot(rows, args.out / "front.png")
    print(f"wrote {args.out / 'front.png'}")


if __name__ == "__main__":
    main()
