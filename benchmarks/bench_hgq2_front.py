"""fpgaprune + HGQ2 against HGQ2 alone at equal hardware, on Fashion-MNIST: accuracy against LUT and DSP.

Methods, from one float model per CNN and seed (pretrained in the HGQ2 environment; its weights are saved, and
the QKeras environment loads the same ones), each then trained the same `--epochs` on the same images:
- HGQ2 alone: its HGQ2 twin (HGQ2's default quantizers: 8-bit kbi weights, kif activations), QAT at HGQ2's
  recommended learning rate (5e-3) with a constant EBOPs penalty β swept over `--betas`;
- fpgaprune kernels + HGQ2: conv2's and conv3's kernels removed by L1 (`--sparsities`), held at 0 with their bit
  widths at 0, then the same HGQ2 QAT at `--pruned-betas`; and the same kernels named one by one as selections
  (the user's choice, as `fpgaprune inspect` shows them), at the largest sparsity: the same kernels, so the same
  results bit for bit, which checks that a hold by selection trains exactly as one by target;
- fpgaprune in every layer + HGQ2 (as PQuantML prunes): `--every-layer-sparsities` of conv2's and conv3's
  kernels and of conv1's and fc's single weights (their kinds' structures: conv1 has one input channel, so its
  kernels are its filters), each layer by L1 at that share, then the same HGQ2 QAT at `--every-layer-betas`;
- fpgaprune kernels by budget + HGQ2: conv2's and conv3's kernels pruned until the HGQ2 twin (its initial bits,
  activation ranges traced on training inputs) fits each budget of `--budgets` (`LUT@beta` or `LUT/DSP@beta`:
  counts) less the 5% margin, priced as a run's `pruning.budget` prices them (BitExact's types, this measure's
  preset and board); HGQ2 QAT at the level's β; after it the learned bits are priced again and repaired
  (pruned, without more training) where they no longer fit;
- fpgaprune kernels + QKeras (the reference, as today: 6-bit kernels, 8-bit biases, 6-bit ReLUs): run in the
  QKeras environment with `--library qkeras`, QAT at 1e-3;
- PQuantML (`pquant-ml` 0.1.0, the HGQ2 environment): PDP, Wanda and MDMM at `--pquant-sparsities`, with its
  fixed-point quantizers and with its HGQ ones (`--pquant-quantizers`), the same epochs split over its phases in
  each method's default proportions, and each method once more at twice the epochs (`--pquant-double`); carried
  into hls4ml as an HGQ2 copy checked equal to its own forward on the test set (`pquant_points.py`,
  `pquant_route.py`);
- the cheap end, with no DSP (`--every-layer-budgets`, `--every-layer-no-dsp`, and their `-2x` at twice the
  epochs): every layer's groups pruned to a budget `LUT/DSP@beta`, where a DSP limit of 0 builds every product
  from LUTs (`Multipliers: fabric`, priced as such by the budget and by the estimate of the export); or pruned by
  target and exported with no DSP the same way. A level's optional third field (`0.9@1e-06@4`) starts the
  datalanes at that many fraction bits (`quantization.hgq2.activation_bits`; 8 where absent, as every earlier
  point; `--every-layer-lanes` sweeps it for the target points). `--report` adds the verdict at equal epochs
  against each PQuantML point (`cheap_end_verdicts`: ahead, level within the larger seed standard deviation, or
  behind);
- HGQ2's low-cost end (`--low-end-*`): HGQ2 alone, kernels removed by target and by budget, at larger β, all
  trained `--low-end-epochs` (16). At the common 6 epochs β beyond 1e-6 buys little: Adam moves each bit width by
  about its learning rate per step, so 6 epochs (942 steps at 5e-3) take at most about 4.7 bits off, whatever β,
  and HGQ2 alone stays near 12M EBOPs from β 3e-6 to 1e-4. Those points compare with each other only.

One measure for all: each point is exported with fpgaprune's `latency_parallel` preset (io_parallel, Latency,
reuse factor 1) for the ZCU102 and priced by `fp.estimate` on that export (fpgaprune's stated rules; the
C-synthesis model checked against vendor results where one covers the layers, which the record says per point).
Why there: at reuse factor 1 in the Latency strategy every weight is a constant of its own product, so each
weight's own value decides its cost (a zero none, a power of two a shift, otherwise one adder per nonzero CSD
digit of a LUT multiplier, or DSPs for wide operands): HGQ2's per-weight bits count. In the Resource strategy at
reuse > 1 (`bench_budget_front`'s pricing) one `weight_t` per array sizes the shared multipliers, and per-weight
widths narrow nothing. HGQ2's EBOPs are recorded beside each HGQ2 point; they are not the measure.

A second price, where the DA circuit is cheap enough to trace (`--da`, on the saved models: `hgq2_front_da.py`):
each point's kernel layers as the distributed-arithmetic circuits hls4ml's `distributed_arithmetic` strategy
builds (no multipliers: each weight's digits and each input's own type decide the adders), da4ml's cost x the
calibration recorded against yosys; `--measure-da LAYER` has yosys measure that layer's circuit of a sample of
points (`DA_SAMPLE`) and states the calibrated estimate's error on it.

The float models are trained first; the points then run on a local Ray of `--workers` processes (one TensorFlow
thread each). Every finished point is appended to `<out>/points.jsonl` (a re-run skips it). `--report` prints the
table, the verdicts (at or under each HGQ2-alone point's LUT, fpgaprune + HGQ2's best accuracy) and writes
`front.png`.
"""

import argparse
import json
import os
import tempfile
from pathlib import Path

import numpy as np

BOARD, PRESET = "zcu102", "latency_parallel"
PQUANT_NAMES = {"pdp": "PDP", "wanda": "Wanda", "mdmm": "MDMM"}
HGQ2_ALONE, PRUNED, SELECTED, BUDGETED, QKERAS = (
    "HGQ2 alone, beta",
    "fpgaprune kernels + HGQ2, sparsity@beta",
    "fpgaprune selected kernels + HGQ2, sparsity@beta",
    "fpgaprune kernels by budget + HGQ2, LUT@beta",
    "fpgaprune kernels + QKeras 6-bit, sparsity",
)
# fpgaprune's removal in every layer, as PQuantML prunes: conv2's and conv3's kernels, conv1's and fc's weights
PRUNED_EVERY = "fpgaprune kernels + HGQ2, every layer, sparsity@beta"
EVERY_LAYER = {"conv1": "element", "conv2": "kernel", "conv3": "kernel", "fc": "element"}
# the same groups of every layer, pruned to a budget (`LUT/DSP@beta`: a DSP cap of 0 builds every product from LUTs)
BUDGETED_EVERY = "fpgaprune by budget + HGQ2, every layer, LUT/DSP@beta"
# the same removal by target, exported with every product built from LUTs (`Multipliers: fabric`): no DSP
PRUNED_EVERY_FABRIC = "fpgaprune kernels + HGQ2, every layer, no DSP, sparsity@beta"
OURS = (PRUNED, SELECTED, BUDGETED, PRUNED_EVERY, BUDGETED_EVERY, PRUNED_EVERY_FABRIC)
# the cheap end's methods at twice the epochs (against PQuantML's twice-the-epochs points)
PRUNED_EVERY_2X, BUDGETED_EVERY_2X, PRUNED_EVERY_FABRIC_2X = (
    "fpgaprune kernels + HGQ2, every layer, 2x epochs, sparsity@beta",
    "fpgaprune by budget + HGQ2, every layer, 2x epochs, LUT/DSP@beta",
    "fpgaprune kernels + HGQ2, every layer, no DSP, 2x epochs, sparsity@beta",
)
TWICE = {PRUNED_EVERY_2X: PRUNED_EVERY, BUDGETED_EVERY_2X: BUDGETED_EVERY, PRUNED_EVERY_FABRIC_2X: PRUNED_EVERY_FABRIC}
# a level's optional third field: the datalanes' initial fraction bits (HGQ2's f0); every earlier point ran at 8
DEFAULT_LANES = 8
# HGQ2's low-cost end: the same methods at large beta, trained `--low-end-epochs` (every one of them alike)
HGQ2_LONG, PRUNED_LONG, BUDGETED_LONG = (
    "HGQ2 alone, long QAT, beta",
    "fpgaprune kernels + HGQ2, long QAT, sparsity@beta",
    "fpgaprune kernels by budget + HGQ2, long QAT, LUT@beta",
)
LONG = {HGQ2_LONG: HGQ2_ALONE, PRUNED_LONG: PRUNED, BUDGETED_LONG: BUDGETED}
# PQuantML's runs, label -> (method, its quantizers, epochs factor): with its fixed-point or its HGQ quantizers,
# at the common epochs and at twice them
PQUANT_QUANTIZERS = {"fixed": "fixed point", "hgq": "HGQ"}
PQUANT_RUNS = {
    f"PQuantML {name} + {text}{', 2x epochs' if factor == 2 else ''}, sparsity": (method, quantizers, factor)
    for quantizers, text in PQUANT_QUANTIZERS.items()
    for factor in (1, 2)
    for method, name in PQUANT_NAMES.items()
}
# each peer's points against fpgaprune's points of the same QAT epochs (PQuantML's twice-the-epochs points
# against the common epochs': does the budget decide the verdict?)
COMPARED = {HGQ2_ALONE: OURS, **{label: OURS for label in PQUANT_RUNS}}
COMPARED[HGQ2_LONG] = (PRUNED_LONG, BUDGETED_LONG)
PEERS = tuple(COMPARED)
# the points of seed 0 whose DA circuit of one layer yosys measures (`--measure-da`): the cheapest and costliest
# HGQ2-alone points, the sparsest fpgaprune + HGQ2 point at the largest beta, and the QKeras reference's
DA_SAMPLE = [(HGQ2_ALONE, "1e-08"), (HGQ2_ALONE, "1e-06"), (PRUNED, "0.75@1e-06"), (QKERAS, "0.75")]
CALIBRATION_SAMPLES = 2048  # as a run's budget: the twin's activation ranges traced on these training inputs
QKERAS_SPEC = {
    "default": {
        "kernel": "quantized_bits(6,0,alpha=1)",
        "bias": "quantized_bits(8,3,alpha=1)",
        "activation": "quantized_relu(6,2)",
    }
}


def dataset(args):
    import dataclasses

    from fpgaprune import data

    full = data.fashion_mnist()
    keep = np.random.default_rng(0).permutation(len(full.x_train))[: args.train_images]
    return dataclasses.replace(full, x_train=full.x_train[keep], y_train=full.y_train[keep])


def cnn(keras, widths, shape):
    L = keras.layers
    return keras.Sequential(
        [
            keras.Input(shape),
            L.Conv2D(widths[0], 3, activation="relu", name="conv1"),
            L.MaxPooling2D(name="pool1"),
            L.Conv2D(widths[1], 3, activation="relu", name="conv2"),
            L.MaxPooling2D(name="pool2"),
            L.Conv2D(widths[2], 3, activation="relu", name="conv3"),
            L.Flatten(name="flatten"),
            L.Dense(10, name="fc"),
        ]
    )


def _fit(keras, model, data, epochs, lr, optimizer=None):
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(optimizer or keras.optimizers.Adam(lr), loss, metrics=["accuracy"])
    model.fit(data.x_train, data.y_train, batch_size=64, epochs=epochs, verbose=0)
    return model


def pretrained(keras, args, widths, seed, data):
    """The float CNN of this seed: trained in the HGQ2 environment and saved; loaded in the QKeras one."""
    path = args.out / f"pretrained-{'-'.join(map(str, widths))}-seed{seed}.npz"
    keras.utils.set_random_seed(seed)
    model = cnn(keras, widths, data.x_train.shape[1:])
    if path.exists():
        saved = np.load(path)
        model.set_weights([saved[f"w{i}"] for i in range(len(saved.files))])
        return model
    if args.library == "qkeras":
        raise SystemExit(f"{path}: run the HGQ2 environment's points first (it pretrains the float models)")
    _fit(keras, model, data, args.pretrain_epochs, 1e-3)
    np.savez(path, **{f"w{i}": w for i, w in enumerate(model.get_weights())})
    return model


def _kernel_selections(model, sparsity) -> list[str]:
    """conv2's and conv3's lowest-L1 kernels at `sparsity`, as selection strings."""
    found = []
    for name in ("conv2", "conv3"):
        norms = np.abs(model.get_layer(name).get_weights()[0]).sum(axis=(0, 1))
        order = np.argsort(norms, axis=None)[: int(sparsity * norms.size)]
        found += [f"{name}[:, :, {i}, {o}]" for i, o in zip(*np.unravel_index(order, norms.shape))]
    return found


def pruned_model(model, sparsity, how: str = "target"):
    """`model` held with `sparsity` of conv2's and conv3's kernels removed by L1 ("target"), the same kernels
    named one by one ("selected"), or `sparsity` of each layer's groups of `EVERY_LAYER` ("every")."""
    import fpgaprune as fp

    if sparsity == 0:
        return fp.hold(model)
    if how == "selected":
        return fp.hold(model, prune=_kernel_selections(model, sparsity))
    if how == "every":
        return fp.prune(model, sparsity, structure=EVERY_LAYER, layers=list(EVERY_LAYER))
    return fp.prune(model, sparsity, structure="kernel", layers=["conv2", "conv3"])


def price(model, data, save_to: Path | None = None, overrides: dict | None = None) -> dict:
    """LUT and DSP of the model's `latency_parallel` export on the ZCU102 (with the hls config's `overrides`;
    `fp.estimate`), and their source; the model saved to `save_to` (for a later price, such as the DA
    circuit's)."""
    import fpgaprune as fp

    if save_to is not None:
        fp.save_model(model, save_to)
    with tempfile.TemporaryDirectory(prefix="hgq2-front-") as scratch:
        exported = fp.export(
            model, PRESET, BOARD, Path(scratch) / "prj", x=data.x_test[:100], tb_samples=10, overrides=overrides
        )
        estimate = fp.estimate(exported)
        total = estimate.total("pruned")
        verdicts = [verdict.text() for verdict in estimate.fit_verdicts()]
    return {"LUT": float(total.lut), "DSP": float(total.dsp), "fit": verdicts}


def dsp_free_overrides() -> dict:
    from fpgaprune.hls.multipliers import dsp_free_overrides

    return dsp_free_overrides()


def budget_overrides(limits: dict | None) -> dict | None:
    """The hls config a budget's export takes: with a DSP limit of 0, every product built from LUTs (fabric)."""
    return dsp_free_overrides() if limits and limits.get("DSP") == 0 else None


def hardware_costs(spec: dict, data, overrides: dict | None = None):
    """A budget's pricing of kernels (`fpgaprune.budget.HardwareCosts`) with this benchmark's measure: the
    `latency_parallel` preset on the ZCU102 (with `overrides`), the twin's activation ranges traced on training
    inputs."""
    from fpgaprune.budget import HardwareCosts
    from fpgaprune.hls import load_board, load_preset
    from fpgaprune.hls.config import merge_config
    from fpgaprune.quantize import input_type

    preset = load_preset(PRESET)
    return HardwareCosts(
        spec,
        merge_config(preset["HLSConfig"], overrides or {}),
        input_type(data.x_test),
        load_board(BOARD),
        io_type=preset.get("IOType", "io_parallel"),
        calibration=data.x_train[:CALIBRATION_SAMPLES],
    )


def budgeted_model(model, spec: dict, data, limits: dict, how: str = "target"):
    """conv2's and conv3's kernels (`how` "every": the groups of `EVERY_LAYER`) pruned (held, bit widths at 0)
    until the HGQ2 twin fits `limits` ({resource: count}) less the budget's margin, as a run's `pruning.budget`
    does (a DSP limit of 0 builds every product from LUTs, `budget_overrides`); returns (held model, its pruner,
    its pricing, the budget)."""
    import fpgaprune as fp
    from fpgaprune.budget import BudgetFit, parse_budget
    from fpgaprune.hls import load_board
    from fpgaprune.pruning import Pruner

    costs = hardware_costs(spec, data, budget_overrides(limits))
    budget = parse_budget(limits, load_board(BOARD), where="--budgets")
    pruner = (
        Pruner(structure=EVERY_LAYER, layers=list(EVERY_LAYER))
        if how == "every"
        else Pruner(structure="kernel", layers=["conv2", "conv3"])
    )
    fitting = BudgetFit((pruner,), costs, budget)
    held = fitting.attach(fp.hold(model))
    fitting(held)
    return held, fitting.pruners[0], costs, budget


def hgq2_point(
    keras, model, data, args, sparsity, beta, how, epochs, limits=None, save_to=None, lanes=DEFAULT_LANES, fabric=False
) -> dict:
    """HGQ2 QAT of `model` (held where pruned: by `sparsity`, or to a budget of `limits`, repaired after QAT as a
    run does; its datalanes starting at `lanes` fraction bits), `trace_minmax`, then accuracy, EBOPs and price (every
    product from LUTs with `fabric`, or a budget of no DSP)."""
    import fpgaprune as fp
    from fpgaprune.framework import front_end_of

    spec = {"library": "hgq2", "hgq2": {"beta0": beta, "activation_bits": lanes}}
    if limits is None:
        held = pruned_model(model, sparsity, how)
    else:
        held, pruner, costs, budget = budgeted_model(model, spec, data, limits, how)
    quantized = fp.quantized_twin(held, spec)
    optimizer = keras.optimizers.Adam(args.hgq2_lr)
    _fit(keras, quantized, data, epochs, args.hgq2_lr, optimizer)
    front = front_end_of(quantized)
    front.calibrate(quantized, data.x_train)
    repaired = {} if limits is None else _repaired(quantized, pruner, costs, budget, data)
    accuracy = float(quantized.evaluate(data.x_test, data.y_test, verbose=0)[1])
    conv = [quantized.get_layer(name) for name in ("conv2", "conv3")]
    dead = [float(np.mean(np.abs(np.asarray(q.kq(q.kernel, training=False))).sum(axis=(0, 1)) == 0)) for q in conv]
    ebops = front.ebops(quantized)
    point = {"accuracy": accuracy, "ebops": sum(ebops.values()), "dead_kernels": dead, **repaired}
    overrides = dsp_free_overrides() if fabric else budget_overrides(limits)
    return {**point, **price(quantized, data, save_to, overrides)}


def _repaired(quantized, pruner, costs, budget, data) -> dict:
    """After QAT, as a run's budget: price the learned bits; where they no longer fit, prune, `trace_minmax`, and a
    last repair. Unlike a run, no epoch of QAT follows the repair: every method trains the same epochs."""
    from fpgaprune.budget import repair
    from fpgaprune.framework import front_end_of

    first = repair(pruner, quantized, costs, budget)
    last = first
    if first.repaired:
        front_end_of(quantized).calibrate(quantized, data.x_train)
        last = repair(pruner, quantized, costs, budget)
    return {"budget_after_qat": first.before["LUT"], "repaired_groups": first.groups + last.groups}


def qkeras_point(keras, model, data, args, sparsity, save_to=None) -> dict:
    import fpgaprune as fp

    quantized = fp.quantized_twin(pruned_model(model, sparsity), QKERAS_SPEC)
    _fit(keras, quantized, data, args.epochs, 1e-3)
    accuracy = float(quantized.evaluate(data.x_test, data.y_test, verbose=0)[1])
    return {"accuracy": accuracy, **price(quantized, data, save_to)}


def plan(args) -> list:
    """(method, level) of every point of this environment's library."""
    if args.library == "qkeras":
        return [(QKERAS, s) for s in args.sparsities]
    points = [(HGQ2_ALONE, b) for b in args.betas]
    points += [(PRUNED, f"{s}@{b}") for s in args.sparsities if s > 0 for b in args.pruned_betas]
    largest = max(s for s in args.sparsities if s > 0)
    points += [] if args.skip_selected else [(SELECTED, f"{largest}@{b}") for b in args.selected_betas]
    points += [
        (PRUNED_EVERY, with_lanes(f"{s}@{b}", lanes))
        for lanes in args.every_layer_lanes
        for s in args.every_layer_sparsities
        for b in args.every_layer_betas
    ]
    points += [(BUDGETED_EVERY, level) for level in args.every_layer_budgets]
    points += [(PRUNED_EVERY_FABRIC, level) for level in args.every_layer_no_dsp]
    points += [(PRUNED_EVERY_2X, level) for level in args.every_layer_2x]
    points += [(BUDGETED_EVERY_2X, level) for level in args.every_layer_budgets_2x]
    points += [(PRUNED_EVERY_FABRIC_2X, level) for level in args.every_layer_no_dsp_2x]
    points += _pquant_plan(args)
    points += [(BUDGETED, level) for level in args.budgets]
    points += [(HGQ2_LONG, b) for b in args.low_end_betas]
    points += [(PRUNED_LONG, f"{s}@{b}") for s in args.low_end_sparsities for b in args.low_end_pruned_betas]
    return points + [(BUDGETED_LONG, level) for level in args.low_end_budgets]


def with_lanes(level: str, lanes: int) -> str:
    """`level` with the datalanes' initial fraction bits, left out at `DEFAULT_LANES` (every earlier point's)."""
    return level if lanes == DEFAULT_LANES else f"{level}@{lanes}"


def _pquant_plan(args) -> list:
    """PQuantML's points: each method and quantizers at each sparsity, and once more at twice the epochs."""
    points = []
    for label, (method, quantizers, factor) in PQUANT_RUNS.items():
        if method in args.pquant_methods and quantizers in args.pquant_quantizers:
            levels = args.pquant_sparsities if factor == 1 else [args.pquant_double] if args.pquant_double else []
            points += [(label, s) for s in levels]
    return points


def model_file(models: Path, widths, seed: int, method: str, level) -> Path:
    """Where a point's quantized model is saved (`--models`)."""
    slug = {HGQ2_ALONE: "hgq2", PRUNED: "pruned", SELECTED: "selected", BUDGETED: "budget", QKERAS: "qkeras"}
    slug.update({PRUNED_EVERY: "pruned-every", BUDGETED_EVERY: "budget-every"})
    slug.update({PRUNED_EVERY_2X: "pruned-every-2x", BUDGETED_EVERY_2X: "budget-every-2x"})
    slug.update({PRUNED_EVERY_FABRIC: "pruned-every-fabric", PRUNED_EVERY_FABRIC_2X: "pruned-every-fabric-2x"})
    slug.update({HGQ2_LONG: "hgq2-long", PRUNED_LONG: "pruned-long", BUDGETED_LONG: "budget-long"})
    for label, (name, quantizers, factor) in PQUANT_RUNS.items():
        slug[label] = f"pquant-{name}" + ("-hgq" if quantizers == "hgq" else "") + ("-2x" if factor == 2 else "")
    return models / f"{'-'.join(map(str, widths))}-seed{seed}-{slug[method]}-{str(level).replace('/', '_')}.keras"


def _saved(models: Path, record: dict) -> Path:
    return model_file(models, record["cnn"].split(","), record["seed"], record["method"], record["level"])


def run_point(keras, args, widths, seed, data, method, level) -> dict:
    save_to = model_file(args.models, widths, seed, method, level) if args.models else None
    model = pretrained(keras, args, widths, seed, data)
    keras.utils.set_random_seed(seed)
    if method == QKERAS:
        return qkeras_point(keras, model, data, args, float(level), save_to)
    epochs = epochs_of(args, method)
    method = LONG.get(method, TWICE.get(method, method))
    if method == HGQ2_ALONE:
        return hgq2_point(keras, model, data, args, 0.0, float(level), "target", epochs, save_to=save_to)
    if method in PQUANT_RUNS:
        from pquant_points import pquant_point

        name, quantizers, _ = PQUANT_RUNS[method]
        data_kif = tuple(float(v) for v in args.pquant_data.split(","))
        settings = (name, quantizers, float(level), epochs, data_kif)
        return pquant_point(keras, model, data, settings, lambda m: price(m, data, save_to))
    first, beta, lanes = level_parts(level)
    every = (PRUNED_EVERY, BUDGETED_EVERY, PRUNED_EVERY_FABRIC)
    how = "selected" if method == SELECTED else "every" if method in every else "target"
    if method in (BUDGETED, BUDGETED_EVERY):
        limits = dict(zip(("LUT", "DSP"), map(float, first.split("/"))))
        return hgq2_point(keras, model, data, args, 0.0, beta, how, epochs, limits, save_to, lanes)
    fabric = method == PRUNED_EVERY_FABRIC
    return hgq2_point(keras, model, data, args, float(first), beta, how, epochs, None, save_to, lanes, fabric)


def level_parts(level) -> tuple[str, float, int]:
    """(sparsity or budget, β, the datalanes' initial fraction bits) of a level `first@beta[@lanes]`."""
    first, beta, *lanes = str(level).split("@")
    return first, float(beta), int(lanes[0]) if lanes else DEFAULT_LANES


def epochs_of(args, method: str) -> int:
    """The QAT epochs of a method's points: `--epochs`; twice them for PQuantML's second run; `--low-end-epochs`
    at HGQ2's low-cost end."""
    if method in LONG:
        return args.low_end_epochs
    return args.epochs * (PQUANT_RUNS[method][2] if method in PQUANT_RUNS else 2 if method in TWICE else 1)


def point_record(args, widths: str, seed: int, method: str, level: str) -> dict:
    """One point, from its float model to its price (in a Ray worker, or here); a budget that cannot be met is
    recorded with fpgaprune's one line instead, and any other failure with its type and message."""
    from fpgaprune.budget import BudgetError

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    keras = _keras(args.library)
    data = dataset(args)
    try:
        point = run_point(keras, args, tuple(int(w) for w in widths.split(",")), seed, data, method, level)
    except BudgetError as error:
        point = {"infeasible": str(error)}
    except Exception as error:  # recorded and reported, so that one point's failure does not end the record
        point = {"failed": f"{type(error).__name__}: {error}"}
    record = {"cnn": widths, "seed": seed, "method": method, "level": str(level), **point}
    return {**record, "epochs": epochs_of(args, method), "train_images": len(data.x_train)}


def run(args, records: list, log: Path) -> list:
    """Every point of the plan not yet in `records`; the float models first (one per CNN and seed), then the
    points on a local Ray of `--workers` processes (one CPU and one TensorFlow thread pool each)."""
    done = {(r["cnn"], r["seed"], r["method"], str(r["level"])) for r in records}
    pending = [
        (widths, seed, method, str(level))
        for widths in args.widths
        for seed in range(args.seeds)
        for method, level in plan(args)
        if (widths, seed, method, str(level)) not in done
    ]
    keras, data = _keras(args.library), dataset(args)
    for widths, seed in sorted({(w, s) for w, s, _, _ in pending}):
        pretrained(keras, args, tuple(int(w) for w in widths.split(",")), seed, data)
    for record in _points(args, pending):
        records.append(record)
        with log.open("a") as out:
            out.write(json.dumps(record) + "\n")
        print(f"{record['cnn']} seed {record['seed']} {record['method']} {record['level']}: {_outcome(record)}")
    return records


def _unpriced(record: dict) -> bool:
    """A budget that could not be met, or a point that failed."""
    return "infeasible" in record or "failed" in record


def _outcome(record: dict) -> str:
    if _unpriced(record):
        return record.get("infeasible") or f"failed: {record['failed']}"
    return f"accuracy {record['accuracy']:.4f}, LUT {record['LUT']:.0f}, DSP {record['DSP']:.0f}"


def _points(args, pending: list):
    """The pending points' records as they finish (`_parallel`)."""
    yield from _parallel(args.workers, point_record, [(args, *key) for key in pending])


def _parallel(workers: int, function, calls: list):
    """`function(*call)` of each call, yielded as they finish: on a local Ray of `workers` processes (one CPU and
    one TensorFlow thread pool each), or here one after another when `workers` is 1."""
    if workers <= 1 or not calls:
        yield from (function(*call) for call in calls)
        return
    import ray

    threads = {"TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    here = str(Path(__file__).parent)
    ray.init(
        num_cpus=workers,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={
            "env_vars": {**threads, "PYTHONPATH": os.pathsep.join(filter(None, (here, os.environ.get("PYTHONPATH"))))}
        },
    )
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(function)
        refs = [remote.remote(*call) for call in calls]
        while refs:
            (ready,), refs = ray.wait(refs, num_returns=1)
            yield ray.get(ready)
    finally:
        ray.shutdown()


def _keras(library: str):
    if library == "qkeras":
        from fpgaprune.tfk import keras

        return keras
    import keras

    return keras


def summary(records: list) -> list:
    """Per (cnn, method, level): the mean over its seeds of accuracy, LUT, DSP (and EBOPs where recorded)."""
    groups: dict = {}
    for r in records:
        groups.setdefault((r["cnn"], r["method"], r["level"]), []).append(r)
    rows = []
    for (cnn_name, method, level), found in sorted(groups.items()):
        row = {"cnn": cnn_name, "method": method, "level": level, "seeds": sorted(r["seed"] for r in found)}
        for key in ("accuracy", "LUT", "DSP", "ebops", "DA_LUT"):
            if all(key in r for r in found):
                row[key] = float(np.mean([r[key] for r in found]))
        rows.append(row)
    return rows


def board_cost(row) -> float:
    """LUT and DSP as fractions of the ZCU102's, summed (`bench_budget_front`'s cost)."""
    from fpgaprune.hls import load_board

    resources = load_board(BOARD).resources
    return row["LUT"] / resources["LUT"] + row["DSP"] / resources["DSP"]


def _at_or_under(row, peer, measure: str) -> bool:
    if measure == "board":
        return board_cost(row) <= board_cost(peer)
    if measure == "DA":
        return row["DA_LUT"] <= peer["DA_LUT"]
    return row["LUT"] <= peer["LUT"] and row["DSP"] <= peer["DSP"]


def verdicts(records: list, measure: str) -> list:
    """Per peer point (HGQ2 alone, PQuantML; the mean over its seeds): fpgaprune's best point of the same QAT
    epochs (`COMPARED`) whose mean over the same seeds is at or under its cost, by `measure`: "LUT and DSP" (each
    at or under), "board" (LUT + DSP as fractions of the board, summed) or "DA"; with each seed's difference in
    accuracy and their spread (largest - smallest)."""
    accuracy = {(r["cnn"], r["method"], r["level"], r["seed"]): r["accuracy"] for r in records}
    found = []
    for peer in (r for r in summary(records) if r["method"] in PEERS):
        seeds = peer["seeds"]
        same = [
            r
            for r in records
            if r["cnn"] == peer["cnn"] and r["method"] in COMPARED[peer["method"]] and r["seed"] in seeds
        ]
        ours = [r for r in summary(same) if r["seeds"] == seeds and _at_or_under(r, peer, measure)]
        best = max(ours, key=lambda r: r["accuracy"], default=None)
        found.append(_verdict_row(peer, best, accuracy, measure))
    return found


def _verdict_row(peer: dict, best: dict | None, accuracy: dict, measure: str) -> tuple:
    first, second = ("DA_LUT", "LUT") if measure == "DA" else ("LUT", "DSP")
    board = measure == "board"
    shown = (lambda r: f"{board_cost(r):.1%}") if board else (lambda r: f"{r[second]:.0f}")
    row = (peer["cnn"], _peer_name(peer), f"{peer[first]:.0f}", shown(peer), f"{peer['accuracy']:.4f}")
    if best is None:
        return (*row, "none at or under its cost", "-", "-", "-", "-", "-")
    key = (peer["cnn"], best["method"], best["level"])
    differences = [
        accuracy[(*key, s)] - accuracy[(peer["cnn"], peer["method"], peer["level"], s)] for s in peer["seeds"]
    ]
    return (
        *row,
        f"{best['method'].split(',')[0]} {best['level']}",
        f"{best[first]:.0f}",
        shown(best),
        f"{best['accuracy']:.4f}",
        f"{best['accuracy'] - peer['accuracy']:+.4f}",
        " ".join(f"{d:+.4f}" for d in differences)
        + (f" ({max(differences) - min(differences):.4f})" if len(differences) > 1 else ""),
    )


def _by_seed(records: list) -> dict:
    """{(cnn, method, level): {seed: record}} of the priced points."""
    found: dict = {}
    for r in records:
        found.setdefault((r["cnn"], r["method"], r["level"]), {})[r["seed"]] = r
    return found


def _mean(points: dict, seeds, key: str) -> float:
    return float(np.mean([points[s][key] for s in seeds]))


def cheap_end_verdicts(records: list) -> list:
    """Per PQuantML point (the mean over its seeds): fpgaprune's most accurate point of the same QAT epochs whose
    seeds include the peer's and whose mean LUT and DSP over them are each at or under the peer's; the difference
    per seed, and the verdict: "level" where the mean difference is within the larger of the two points' seed
    standard deviations (population), "ahead" or "behind" beyond it; "none" where no point is at or under."""
    groups = _by_seed(records)
    ours = {key: points for key, points in groups.items() if key[1] not in PEERS}
    found = []
    for (cnn_name, method, level), peer in sorted(groups.items()):
        if method not in PQUANT_RUNS:
            continue
        seeds, epochs = sorted(peer), next(iter(peer.values()))["epochs"]
        cost = {key: _mean(peer, seeds, key) for key in ("LUT", "DSP", "accuracy")}
        candidates = [
            (key, points)
            for key, points in ours.items()
            if key[0] == cnn_name
            and set(seeds) <= set(points)
            and all(points[s]["epochs"] == epochs for s in seeds)
            and _mean(points, seeds, "LUT") <= cost["LUT"]
            and _mean(points, seeds, "DSP") <= cost["DSP"]
        ]
        best = max(candidates, key=lambda c: _mean(c[1], seeds, "accuracy"), default=None)
        found.append(_cheap_end_row((cnn_name, method, level, epochs, seeds), peer, cost, best))
    return found


def _cheap_end_row(head: tuple, peer: dict, cost: dict, best) -> dict:
    cnn_name, method, level, epochs, seeds = head
    row = {"cnn": cnn_name, "peer": f"{method.rsplit(', ', 1)[0]} {level}", "epochs": epochs, "seeds": len(seeds)}
    row.update(LUT=cost["LUT"], DSP=cost["DSP"], accuracy=cost["accuracy"])
    row["std"] = float(np.std([peer[s]["accuracy"] for s in seeds]))
    if best is None:
        return {**row, "verdict": "none"}
    (_, ours_method, ours_level), points = best
    differences = [points[s]["accuracy"] - peer[s]["accuracy"] for s in seeds]
    ours_std = float(np.std([points[s]["accuracy"] for s in seeds]))
    difference, spread = float(np.mean(differences)), max(row["std"], ours_std)
    verdict = verdict_of(difference, spread)
    return {
        **row,
        "ours": f"{ours_method.rsplit(', ', 1)[0]} {ours_level}",
        "ours_LUT": _mean(points, seeds, "LUT"),
        "ours_DSP": _mean(points, seeds, "DSP"),
        "ours_accuracy": _mean(points, seeds, "accuracy"),
        "ours_std": ours_std,
        "difference": difference,
        "per_seed": differences,
        "verdict": verdict,
    }


def verdict_of(difference: float, spread: float) -> str:
    """ "level" where an accuracy difference is within `spread` (the larger seed standard deviation), else "ahead"
    or "behind"."""
    return "level" if abs(difference) <= spread else "ahead" if difference > 0 else "behind"


def cheap_end_report(records: list) -> None:
    """The table of `cheap_end_verdicts` and its count."""
    from fpgaprune.support.text_table import format_rows

    rows = cheap_end_verdicts(records)
    table = [
        (
            r["peer"],
            r["epochs"],
            r["seeds"],
            f"{r['LUT']:.0f}",
            f"{r['DSP']:.0f}",
            f"{r['accuracy']:.4f} ± {r['std']:.4f}",
            r.get("ours", "none at or under its cost"),
            f"{r['ours_LUT']:.0f}" if "ours" in r else "-",
            f"{r['ours_DSP']:.0f}" if "ours" in r else "-",
            f"{r['ours_accuracy']:.4f} ± {r['ours_std']:.4f}" if "ours" in r else "-",
            f"{r['difference']:+.4f}" if "ours" in r else "-",
            " ".join(f"{d:+.4f}" for d in r.get("per_seed", [])) or "-",
            r["verdict"],
        )
        for r in rows
    ]
    header = ("PQuantML point", "epochs", "seeds", "LUT", "DSP", "accuracy ± std", "fpgaprune's best")
    header += ("LUT", "DSP", "accuracy ± std", "difference", "per seed", "verdict")
    print("\nat or under each PQuantML point's LUT and DSP, at equal epochs, on its seeds (level: within the larger")
    print("seed standard deviation of the two points):")
    print("\n".join(format_rows(header, table)))
    counts = {v: sum(r["verdict"] == v for r in rows) for v in ("ahead", "level", "behind", "none")}
    print(f"{len(rows)} PQuantML points: " + ", ".join(f"{n} {v}" for v, n in counts.items()))


def _peer_name(peer: dict) -> str:
    if peer["method"] == HGQ2_ALONE:
        return f"HGQ2 beta {peer['level']}"
    return f"{peer['method'].rsplit(', ', 1)[0]} {peer['level']}"


STYLES = {HGQ2_ALONE: "o", PRUNED: "s", SELECTED: "D", BUDGETED: "v", QKERAS: "^"}
STYLES.update({label: marker for label, marker in zip(PQUANT_RUNS, "PX*pxhdH+123")})
STYLES.update({HGQ2_LONG: "8", PRUNED_LONG: "<", BUDGETED_LONG: ">", PRUNED_EVERY: "4"})
STYLES.update({BUDGETED_EVERY: "3", PRUNED_EVERY_2X: "|", BUDGETED_EVERY_2X: "_"})
STYLES.update({PRUNED_EVERY_FABRIC: "$f$", PRUNED_EVERY_FABRIC_2X: "$F$"})


def _draw(axis, rows: list, x_key: str) -> None:
    """Accuracy against `x_key` of `rows` (one CNN's), a marker per method; the swept methods joined by a line."""
    import matplotlib

    colors = [*matplotlib.colormaps["tab20"].colors, *matplotlib.colormaps["tab20b"].colors]  # one per method
    for color, (method, marker) in enumerate(STYLES.items()):
        points = sorted((r[x_key], r["accuracy"]) for r in rows if r["method"] == method)
        if points:
            line = "" if method in (SELECTED, BUDGETED, BUDGETED_LONG) else "-"
            axis.plot(*zip(*points), marker=marker, linestyle=line, label=method, color=colors[color])
    axis.set_ylabel("test accuracy")
    axis.grid(alpha=0.3)


def _figure(rows_of_axes: int, columns: int, width: float):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(rows_of_axes, columns, figsize=(width * columns, 4 * rows_of_axes), squeeze=False)


def plot(rows: list, path: Path) -> None:
    cnns = sorted({r["cnn"] for r in rows})
    figure, axes = _figure(len(cnns), 2, 5.5)
    for row_axes, cnn_name in zip(axes, cnns):
        mine = [r for r in rows if r["cnn"] == cnn_name]
        seeds = {r["method"]: max(len(s["seeds"]) for s in mine if s["method"] == r["method"]) for r in mine}
        drawn = [r for r in mine if len(r["seeds"]) == seeds[r["method"]]]  # a level some seeds missed: not drawn
        for axis, resource in zip(row_axes, ("LUT", "DSP")):
            _draw(axis, drawn, resource)
            axis.set_xscale("log" if resource == "LUT" else "linear")
            axis.set_xlabel(f"{resource} (fp.estimate, {PRESET}, reuse 1)")
            axis.set_title(f"CNN {cnn_name}")
        row_axes[1].legend(fontsize=6, loc="center right")  # the DSP axis: its points lie at 0 and at the top
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def plot_da(rows: list, path: Path) -> None:
    from fpgaprune.resources.calibration import recorded

    cnns = sorted({r["cnn"] for r in rows})
    figure, axes = _figure(1, len(cnns), 6)
    for axis, cnn_name in zip(axes[0], cnns):
        drawn = [r for r in rows if r["cnn"] == cnn_name]
        _draw(axis, drawn, "DA_LUT")
        seeds = sorted({s for r in drawn for s in r["seeds"]})
        axis.set_xlabel(f"LUT of the DA circuits ({recorded().scale:.3f} x da4ml cost, calibrated on yosys)")
        axis.set_title(f"CNN {cnn_name}, seed(s) {', '.join(map(str, seeds))}")
        axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def report(records: list, out: Path) -> None:
    from fpgaprune.support.text_table import format_rows

    for record in (r for r in records if _unpriced(r)):
        print(f"not met: {record['cnn']} seed {record['seed']} {record['method']} {record['level']}: ", end="")
        print(_outcome(record))
    rows = summary([r for r in records if not _unpriced(r)])
    table = [
        (
            r["cnn"],
            r["method"],
            r["level"],
            len(r["seeds"]),
            f"{r['LUT']:.0f}",
            f"{r['DSP']:.0f}",
            f"{r['ebops']:.0f}" if "ebops" in r else "-",
            f"{r['accuracy']:.4f}",
        )
        for r in rows
    ]
    print("\n".join(format_rows(("cnn", "method", "level", "seeds", "LUT", "DSP", "EBOPs", "accuracy"), table)))
    priced = [r for r in records if not _unpriced(r)]
    for measure, label in (("LUT and DSP", "LUT and DSP each"), ("board", "LUT/board + DSP/board")):
        second = "board" if measure == "board" else "DSP"
        header = ("cnn", "peer point", "LUT", second, "accuracy", "fpgaprune's best", "LUT", second, "accuracy")
        print(f"\nat or under the cost of each peer point, HGQ2 alone and PQuantML ({label}):")
        print("\n".join(format_rows((*header, "difference", "per seed (spread)"), verdicts(priced, measure))))
    cheap_end_report(priced)
    da_report(records, out)
    fits = sorted({text for r in records for text in r.get("fit", [])})[:6]
    print("\nfit verdicts of the points (which model priced them; a sample):\n" + "\n".join(fits))
    if rows:
        plot(rows, out / "front.png")
        print(f"wrote {out / 'front.png'}")


def da_report(records: list, out: Path) -> None:
    """The points priced as DA circuits (`--da`): their table, the verdicts by DA LUTs, and yosys' checks."""
    from hgq2_front_da import load

    from fpgaprune.support.text_table import format_rows

    priced = {_key(r): r for r in load(out / "da.jsonl")}
    records = [{**r, "DA_LUT": priced[_key(r)]["DA_LUT"]} for r in records if _key(r) in priced]
    if not records:
        return
    print(f"\nDA price ({next(iter(priced.values()))['da_source']}):")
    rows = summary(records)
    table = [
        (r["cnn"], r["method"], r["level"], len(r["seeds"]), f"{r['DA_LUT']:.0f}", f"{r['LUT']:.0f}") for r in rows
    ]
    print("\n".join(format_rows(("cnn", "method", "level", "seeds", "DA LUT", "latency LUT"), table)))
    header = ("cnn", "HGQ2 alone", "DA LUT", "LUT", "accuracy", "fpgaprune + HGQ2's best", "DA LUT", "LUT", "accuracy")
    print("\nat or under the DA LUTs of each HGQ2-alone point (LUT: the latency_parallel price, for reference):")
    print("\n".join(format_rows((*header, "difference", "per seed (spread)"), verdicts(records, "DA"))))
    plot_da(rows, out / "front_da.png")
    print(f"wrote {out / 'front_da.png'}")
    for check in load(out / "da_yosys.jsonl"):
        for layer, found in check["layers"].items():
            print(
                f"yosys: {check['cnn']} seed {check['seed']} {check['method']} {check['level']} {layer}: "
                f"{found['yosys_LUT']} LUT in {found['parts']} part(s); the calibrated estimate {found['error']:+.1%}"
            )


def _key(record: dict) -> tuple:
    return record["cnn"], record["seed"], record["method"], str(record["level"])


def _key_dict(record: dict) -> dict:
    return dict(zip(("cnn", "seed", "method", "level"), _key(record)))


def _this_library(args, records: list) -> list:
    """The points this environment can load: QKeras' in the QKeras one, the others in the HGQ2 one."""
    return [r for r in records if (r["method"] == QKERAS) == (args.library == "qkeras")]


def price_da(args, records: list) -> None:
    """`--da`: every saved point not yet priced as DA circuits, on a local Ray of `--workers` processes."""
    from hgq2_front_da import append, load

    done = {_key(r) for r in load(args.out / "da.jsonl")}
    pending = [
        (_saved(args.models, r), _key_dict(r))
        for r in _this_library(args, records)
        if not _unpriced(r) and _key(r) not in done and _saved(args.models, r).exists()
    ]
    for record in _parallel(args.workers, _da_point, pending):
        append(args.out / "da.jsonl", record)
        print(f"DA: {' '.join(map(str, _key(record)))}: {record['DA_LUT']:.0f} LUT ({record['seconds']} s)")


def _da_point(path, key) -> dict:
    from hgq2_front_da import da_record

    from fpgaprune import data

    return da_record(path, key, data.fashion_mnist().x_test)


def measure_da(args, records: list) -> None:
    """`--measure-da LAYER`: yosys on that layer's DA circuit of `DA_SAMPLE`'s points of seed 0 (this
    environment's library's)."""
    from hgq2_front_da import append, measured_record

    from fpgaprune import data

    x = data.fashion_mnist().x_test
    for record in _this_library(args, records):
        if record["seed"] == 0 and (record["method"], str(record["level"])) in DA_SAMPLE:
            path = _saved(args.models, record)
            found = measured_record(path, _key_dict(record), x, args.workers, args.measure_da)
            append(args.out / "da_yosys.jsonl", found)
            print(f"yosys: {' '.join(map(str, _key(found)))}: {found['layers']}")


def _quick(args) -> None:
    """`--quick`: a small CNN on 1000 images, one seed, a point or two of each method."""
    args.widths, args.seeds, args.pretrain_epochs, args.epochs = ["4,8,8"], 1, 2, 1
    args.betas, args.pruned_betas, args.sparsities, args.train_images = [1e-7, 1e-6], [1e-6], [0.0, 0.5], 1000
    args.selected_betas, args.low_end_epochs, args.low_end_betas = [1e-6], 2, [1e-5]
    args.low_end_pruned_betas, args.low_end_sparsities, args.low_end_budgets = [1e-5], [0.5], []
    args.budgets = ["35000@1e-06"]
    args.pquant_methods, args.pquant_sparsities, args.pquant_double = ["pdp"], [0.5], 0.0
    args.pquant_quantizers = list(PQUANT_QUANTIZERS)
    args.every_layer_sparsities, args.every_layer_betas = [0.5], [1e-6]
    # the cheap end's route: narrow datalanes, a budget of no DSP, twice the epochs
    args.every_layer_lanes, args.every_layer_budgets, args.every_layer_2x = [8, 4], ["30000/0@1e-06"], ["0.5@1e-06@4"]
    args.every_layer_budgets_2x, args.every_layer_no_dsp, args.every_layer_no_dsp_2x = [], ["0.5@1e-06"], []


def arguments() -> argparse.ArgumentParser:
    """The benchmark's options (another benchmark takes its defaults: `arguments().parse_args([])`)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", choices=["hgq2", "qkeras"], default="hgq2", help="this environment's points")
    parser.add_argument("--widths", nargs="+", default=["16,32,32"])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--train-images", type=int, default=10000)
    parser.add_argument("--pretrain-epochs", type=int, default=6)
    parser.add_argument("--epochs", type=int, default=6, help="QAT epochs of every method")
    parser.add_argument("--hgq2-lr", type=float, default=5e-3, help="HGQ2's recommended learning rate")
    parser.add_argument(
        "--betas", type=float, nargs="+", default=[1e-8, 3e-8, 1e-7, 3e-7, 1e-6, 3e-6, 1e-5, 3e-5, 1e-4]
    )
    parser.add_argument("--pruned-betas", type=float, nargs="+", default=[1e-8, 1e-7, 1e-6, 1e-5, 1e-4])
    parser.add_argument(
        "--selected-betas", type=float, nargs="*", default=[1e-8, 1e-7, 1e-6], help="the selection check's betas"
    )
    parser.add_argument("--sparsities", type=float, nargs="+", default=[0.0, 0.5, 0.75])
    parser.add_argument("--every-layer-sparsities", type=float, nargs="*", default=[0.75, 0.9])
    parser.add_argument("--every-layer-betas", type=float, nargs="*", default=[1e-7, 1e-6, 1e-5])
    parser.add_argument(
        "--every-layer-lanes", type=int, nargs="+", default=[DEFAULT_LANES], help="the datalanes' initial f bits"
    )
    parser.add_argument(
        "--every-layer-budgets", nargs="*", default=[], help="LUT/DSP@beta[@lanes], every layer's groups by budget"
    )
    parser.add_argument("--every-layer-no-dsp", nargs="*", default=[], help="sparsity@beta[@lanes], no DSP")
    parser.add_argument("--every-layer-2x", nargs="*", default=[], help="sparsity@beta[@lanes] at twice the epochs")
    parser.add_argument("--every-layer-no-dsp-2x", nargs="*", default=[], help="the same, no DSP, 2x epochs")
    parser.add_argument("--every-layer-budgets-2x", nargs="*", default=[], help="LUT/DSP@beta[@lanes], 2x epochs")
    parser.add_argument(
        "--budgets",
        nargs="*",
        default=["400000@1e-07", "300000@1e-07", "200000@1e-07", "435000@1e-08", "435000/1800@1e-08"],
        help="LUT@beta or LUT/DSP@beta (counts on the ZCU102)",
    )
    parser.add_argument("--pquant-methods", nargs="*", default=list(PQUANT_NAMES), choices=list(PQUANT_NAMES))
    parser.add_argument("--pquant-sparsities", type=float, nargs="+", default=[0.5, 0.7, 0.8, 0.9])
    parser.add_argument(
        "--pquant-quantizers", nargs="*", default=list(PQUANT_QUANTIZERS), choices=list(PQUANT_QUANTIZERS)
    )
    parser.add_argument("--pquant-double", type=float, default=0.8, help="the sparsity run at twice the epochs")
    parser.add_argument(
        "--pquant-data", default="0,2,4", help="PQuantML's data lanes: keep negatives, integer bits, fractional bits"
    )
    parser.add_argument("--low-end-epochs", type=int, default=16, help="QAT epochs at HGQ2's low-cost end")
    parser.add_argument("--low-end-betas", type=float, nargs="*", default=[3e-7, 1e-6, 3e-6, 1e-5, 1e-4])
    parser.add_argument("--low-end-sparsities", type=float, nargs="*", default=[0.75, 0.9])
    parser.add_argument("--low-end-pruned-betas", type=float, nargs="*", default=[1e-6])
    parser.add_argument("--low-end-budgets", nargs="*", default=["100000@1e-06", "150000@1e-06"])
    parser.add_argument("--workers", type=int, default=2, help="Ray worker processes (1: no Ray)")
    parser.add_argument("--skip-selected", action="store_true", help="no selection points (the check, done once)")
    parser.add_argument("--models", type=Path, help="where each point's quantized model is saved (default: out/)")
    parser.add_argument("--out", type=Path, help="default benchmarks/results/hgq2_front (in git; --quick: out/)")
    parser.add_argument("--quick", action="store_true", help="a small CNN on 1000 images, one seed, few points")
    parser.add_argument("--report", action="store_true", help="run nothing: the table, verdicts and plot")
    parser.add_argument("--da", action="store_true", help="price the saved points as DA circuits (out/da.jsonl)")
    parser.add_argument("--measure-da", metavar="LAYER", help="yosys on LAYER's DA circuit of DA_SAMPLE's points")
    return parser


def main(argv=None):
    args = arguments().parse_args(argv)
    if args.quick:
        _quick(args)
    here = Path(__file__).parent
    args.out = args.out or (here / "out" / "hgq2_front_quick" if args.quick else here / "results" / "hgq2_front")
    args.out.mkdir(parents=True, exist_ok=True)
    args.models = args.models or here / "out" / f"{args.out.name}_models"
    args.models.mkdir(parents=True, exist_ok=True)
    log = args.out / "points.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if args.da:
        price_da(args, records)
    elif args.measure_da:
        measure_da(args, records)
    elif not args.report:
        records = run(args, records, log)
    report(records, args.out)


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from record import run_recorded

    run_recorded(main, __file__)
