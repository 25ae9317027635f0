"""The stages of a run. Each reads what earlier stages wrote and writes its own directory `out`.

A stage returns its metrics (a JSON-ready dict). Models travel between stages as `.keras` files saved
with `fp.save_model` (holds and QKeras quantizers included).
"""

import json
import shutil
from pathlib import Path

import numpy as np

import fpgaprune as fp
from fpgaprune import data
from fpgaprune.guards import StopOnNonFiniteLoss, check_data_fits_model, check_finite_weights
from fpgaprune.pipeline.progress import EpochBar, counted, elapsed
from fpgaprune.pipeline.records import STAGE_NAMES, SynthRecord

LOSS_FROM_LOGITS = True
# The polynomial schedule: sparsity ramps up over the first 70% of the pruning epochs' steps, so that the
# last 30% retrain at the target sparsity, in 20 mask updates (fewer are coarse, more retrace the step).
PRUNE_RAMP_FRACTION = 0.7
PRUNE_UPDATES = 20


def dataset_of(config):
    """The run's dataset (digits, Fashion-MNIST or an .npz)."""
    if config.data.dataset == "digits":
        return data.digits(seed=config.seed)
    if config.data.dataset == "fashion_mnist":
        return data.fashion_mnist()
    return data.load_npz(config.data.file)


def _fit(model, dataset, epochs, learning_rate, config, label, callbacks=()):
    from fpgaprune.tfk import keras

    optimizers = {"adam": keras.optimizers.Adam, "sgd": keras.optimizers.SGD, "rmsprop": keras.optimizers.RMSprop,
                  "adamw": keras.optimizers.AdamW}
    model.compile(optimizers[config.training.optimizer](learning_rate),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=LOSS_FROM_LOGITS))
    if epochs:
        model.fit(dataset.x_train, dataset.y_train, batch_size=config.training.batch_size, epochs=epochs, verbose=0,
                  callbacks=[StopOnNonFiniteLoss(label), EpochBar(epochs, label), *callbacks])
    return model


def accuracy(model, dataset) -> float:
    logits = model.predict(dataset.x_test, batch_size=256, verbose=0)
    return float(np.mean(np.argmax(logits, axis=1) == dataset.y_test))


def build_model(config, dataset):
    """The configured architecture, or the user's model file (checked: finite weights, fits the data)."""
    from fpgaprune.architectures import original_question_cnn, small_cnn

    if config.model.file:
        model = fp.load_model(config.model.file, trust_code=config.model.trust_code)
        check_finite_weights(model, str(config.model.file))
        check_data_fits_model(dataset, model, str(config.data.file or config.data.dataset))
        return model
    if config.model.architecture == "original_question_cnn":
        return original_question_cnn(dataset.x_train.shape[1:], dataset.classes)
    return small_cnn(dataset.x_train.shape[1:], tuple(config.model.filters), dataset.classes)


def train(config, run_dir: Path, out: Path) -> dict:
    from fpgaprune.tfk import keras

    keras.utils.set_random_seed(config.seed)
    dataset = dataset_of(config)
    model = build_model(config, dataset)
    if not config.model.file:
        _fit(model, dataset, config.training.epochs, config.training.learning_rate, config, "train")
    fp.save_model(model, out / "model.keras")
    return {"accuracy": accuracy(model, dataset), "trained": not config.model.file}


def _load(config, run_dir: Path, stage: str, name: str = "model.keras"):
    return fp.load_model(run_dir / stage / name, trust_code=config.model.trust_code)


def conv_kernel_sparsity(model) -> float:
    """Fraction of all Conv (ci, co) kernels whose weights are all zero."""
    pruned = total = 0
    for layer in model.layers:
        kernel = getattr(layer, "kernel", None)
        if kernel is not None and len(kernel.shape) >= 3:
            dead = ~np.asarray(kernel).reshape(-1, *kernel.shape[-2:]).any(axis=0)
            pruned, total = pruned + int(dead.sum()), total + dead.size
    return pruned / max(total, 1)


def _pruner(config):
    from fpgaprune.pruning import Pruner

    return Pruner(structure=config.pruning.structure, score=config.pruning.score, scope=config.pruning.scope,
                  layers=list(config.pruning.targets) or None, do_not_prune=config.pruning.do_not_prune)


def _scheduled(config, held, dataset):
    """Pruning by the configured schedule: each layer to its target, or all to one under a global scope."""
    from fpgaprune.pruning import GradualPruning, LotteryTicket

    pruner, targets = _pruner(config), config.pruning.targets
    if not targets:
        return held
    sparsity = dict(targets) if config.pruning.scope == "layer" else next(iter(targets.values()))
    if config.pruning.lottery_rounds:
        train = lambda model, callbacks: _fit(model, dataset, config.pruning.epochs or 1,  # noqa: E731
                                              config.finetune.learning_rate, config, "lottery round", callbacks)
        return LotteryTicket.reaching(pruner, config.pruning.lottery_rounds, sparsity).run(held, train)
    if config.pruning.schedule == "one_shot":
        return pruner.prune(held, sparsity=sparsity)
    attached = pruner.attach(held)
    return _fit(attached, dataset, config.pruning.epochs, config.finetune.learning_rate, config, "prune",
                [GradualPruning(pruner, _polynomial(config, dataset, 0.0, sparsity))])


def _polynomial(config, dataset, initial, target):
    """The polynomial schedule over the pruning epochs' steps (ramp, then retrain at the target)."""
    from fpgaprune.pruning import PolynomialDecay

    steps = config.pruning.epochs * int(np.ceil(len(dataset.x_train) / config.training.batch_size))
    end = max(1, int(PRUNE_RAMP_FRACTION * steps))
    return PolynomialDecay(initial, target, 0, end, frequency=max(1, end // PRUNE_UPDATES))


def _budget(config):
    from fpgaprune.budget import parse_budget
    from fpgaprune.hls import load_board

    return parse_budget(config.pruning.budget, load_board(config.board))


def hardware_costs(config, dataset):
    """The run's pricing of kernel entries: its quantizers, hls config (preset + inline), input type and board."""
    from fpgaprune.budget import HardwareCosts
    from fpgaprune.hls import load_board, merge_config
    from fpgaprune.quantize import input_type

    hls_config = merge_config(hls_preset(config).get("HLSConfig", {}), config.hls.config)
    return HardwareCosts(quantization_spec(config), hls_config, input_type(dataset.x_test), load_board(config.board),
                         config.quantization.batchnorm)


def _budget_fit(config, dataset):
    """How the run fits its budget: its pruner (or, for structure `hybrid`, kernels then elements)."""
    from fpgaprune.budget import BudgetFit, hybrid_pruners

    if config.pruning.structure == "hybrid":
        pruners = hybrid_pruners(score=config.pruning.score, do_not_prune=config.pruning.do_not_prune)
    else:
        pruners = (_pruner(config),)
    return BudgetFit(pruners, hardware_costs(config, dataset), _budget(config), config.pruning.budget_margin)


def _budgeted(config, held, dataset):
    """Pruning to the budget: one knapsack fit, or fits that move toward it over the pruning epochs."""
    from fpgaprune.budget import BudgetPruning

    fit = _budget_fit(config, dataset)
    budget, costs, attached = fit.budget, fit.costs, fit.attach(held)
    if config.pruning.schedule == "one_shot":
        step = fit(attached)
    else:
        callback = BudgetPruning(fit, _polynomial(config, dataset, 0.0, 1.0))
        _fit(attached, dataset, config.pruning.epochs, config.finetune.learning_rate, config, "prune", [callback])
        step = callback.history[-1]
    estimate = dict(zip([c.name for c in budget.constraints], budget.fractions(costs(attached).total()).tolist()))
    return attached, {"limits": {c.name: c.limit for c in budget.constraints}, "aimed": step.aimed,
                      "estimate": estimate, "optimal": step.optimal, "notes": costs.notes}


def prune(config, run_dir: Path, out: Path) -> dict:
    from fpgaprune.inspection import format_table, sparsity_table
    from fpgaprune.strip import strip

    dataset = dataset_of(config)
    held = fp.hold(_load(config, run_dir, "train"), prune=list(config.pruning.selections))
    budget = None
    if config.pruning.budget:
        held, budget = _budgeted(config, held, dataset)
    else:
        held = _scheduled(config, held, dataset)
    metrics = {"accuracy": accuracy(held, dataset), "conv_kernels_pruned": conv_kernel_sparsity(held),
               **({"budget": budget} if budget else {})}
    (out / "sparsity.txt").write_text(format_table(sparsity_table(held)) + "\n")
    index_map = {}
    if config.pruning.strip:
        result = strip(held)
        held, index_map = result.model, {k: {a: [int(i) for i in v] for a, v in m.items()}
                                         for k, m in result.index_map.items()}
        metrics["strip_notes"] = result.notes
    (out / "index_map.json").write_text(json.dumps(index_map))
    fp.save_model(held, out / "model.keras")
    fp.manifest_of(held).save(out / "masks.json")
    return metrics


def finetune(config, run_dir: Path, out: Path) -> dict:
    dataset = dataset_of(config)
    model = _load(config, run_dir, "prune")
    _fit(model, dataset, config.finetune.epochs, config.finetune.learning_rate, config, "finetune")
    fp.save_model(model, out / "model.keras")
    return {"accuracy": accuracy(model, dataset), "conv_kernels_pruned": conv_kernel_sparsity(model)}


def dense_reference(quantized, trained, spec, batchnorm="fold"):
    """The reference for "what pruning saved": the final quantized weights, with every pruned entry (exactly
    0 in the shadow weights) given back its value from before pruning. A stripped model's shapes differ
    from the trained one; it is compared with the trained weights as they are."""
    from fpgaprune.quantize import to_qkeras

    dense = to_qkeras(fp.hold(trained), spec, batchnorm=batchnorm)
    for layer in dense.layers:
        source = quantized.get_layer(layer.name) if layer.name in [q.name for q in quantized.layers] else None
        if source is None or [w.shape for w in source.get_weights()] != [w.shape for w in layer.get_weights()]:
            continue
        values = source.get_weights()
        if getattr(layer, "kernel", None) is not None:
            before = layer.get_weights()[0]  # pre-pruning, BatchNormalization folded as in `quantized`
            values[0] = np.where(values[0] == 0, before, values[0])
        layer.set_weights(values)
    return dense


def quantization_spec(config) -> dict:
    return {"default": config.quantization.default, "layers": config.quantization.layers}


def _repaired(config, quantized, dataset) -> dict:
    """After QAT, the budget checked on the quantized weights; if it no longer fits, the least important groups
    are pruned, one epoch of QAT follows, and a last repair (without training) makes it fit."""
    from fpgaprune.budget import repair

    fit = _budget_fit(config, dataset)
    pruner = fit.pruners[-1]
    first = repair(pruner, quantized, fit.costs, fit.budget)
    last = first
    if first.repaired:
        _fit(quantized, dataset, 1, config.quantization.learning_rate, config, "QAT (repair)")
        last = repair(pruner, quantized, fit.costs, fit.budget)
    return {"after_qat": first.before, "final": last.after, "repaired": first.repaired or last.repaired,
            "repaired_groups": first.groups + last.groups, "notes": first.notes + last.notes}


def quantize(config, run_dir: Path, out: Path) -> dict:
    from fpgaprune.quantize import quantization_report, to_qkeras

    dataset = dataset_of(config)
    spec, batchnorm = quantization_spec(config), config.quantization.batchnorm
    finetuned = _load(config, run_dir, "finetune")
    check_finite_weights(finetuned, "quantize")
    quantized = to_qkeras(finetuned, spec, batchnorm=batchnorm)
    _fit(quantized, dataset, config.quantization.qat_epochs, config.quantization.learning_rate, config, "QAT")
    budget = _repaired(config, quantized, dataset) if config.pruning.budget else None
    fp.save_model(quantized, out / "model.keras")
    fp.save_model(dense_reference(quantized, _load(config, run_dir, "train"), spec, batchnorm), out / "dense.keras")
    report = quantization_report(quantized, finetuned, dataset.x_test, dataset.y_test)
    (out / "quantization.txt").write_text(report.format() + "\n")
    return {"accuracy": accuracy(quantized, dataset), "conv_kernels_pruned": conv_kernel_sparsity(quantized),
            **({"budget": budget} if budget else {})}


def hls_preset(config) -> dict:
    """The preset with the config's io_type, strategy and reuse factor written over it."""
    from fpgaprune.hls import load_preset

    preset = load_preset(config.hls.preset)
    model = preset.setdefault("HLSConfig", {}).setdefault("Model", {})
    if config.hls.io_type:
        preset["IOType"] = config.hls.io_type
    if config.hls.strategy:
        model["Strategy"] = config.hls.strategy.capitalize()
    if config.hls.reuse_factor:
        model["ReuseFactor"] = config.hls.reuse_factor
    return preset


def hls(config, run_dir: Path, out: Path) -> dict:
    dataset = dataset_of(config)
    index_map = json.loads((run_dir / "prune" / "index_map.json").read_text())
    exported = fp.export(_load(config, run_dir, "quantize"), hls_preset(config), config.board, out / "project",
                         x=dataset.x_test, overrides=config.hls.config, strip=index_map or None,
                         backend=config.hls.backend, tb_samples=config.outputs.tb_samples)
    (out / "summary.txt").write_text(exported.summary() + "\n")
    nodes = exported.manifest["hls_nodes"].values()
    return {"live_weights": sum(n.get("live_weights", 0) for n in nodes),
            "weights": sum(n.get("weights", 0) for n in nodes), "notes": exported.notes}


def _shipped(run_dir: Path):
    """The export of the hls stage, reloaded from `hls/project`'s manifest: nothing is converted again."""
    from fpgaprune.hls import load_export

    return load_export(run_dir / "hls" / "project")


def _tracer(config, run_dir: Path, scratch: Path):
    """`trace(xq)` from a tracing conversion in `scratch`, with the shipped project's recorded config: the one
    conversion after the hls stage, as the shipped code has no trace calls. Only used for the logits before a
    table activation and for the per-layer diff of a disagreement."""
    def trace(xq):
        from fpgaprune.hls import convert_model
        from fpgaprune.hls.csim import compile_library

        exported = _shipped(run_dir)
        hls_model = convert_model(_load(config, run_dir, "quantize"), exported.config, scratch,
                                  io_type=exported.manifest["io_type"], backend=exported.manifest["backend"],
                                  part=exported.board.part, clock_period=exported.board.clock_period_ns)
        with elapsed("g++ build of a tracing copy (per-layer outputs)"):
            compile_library(hls_model)
        return hls_model.trace(xq)[1]

    return trace


class CsimMismatch(fp.FpgapruneError):
    """C-sim of the shipped project differs from QKeras where float32 is exact."""


def csim(config, run_dir: Path, out: Path) -> dict:
    """C-simulate `hls/project` itself (built in a scratch copy), with the weights synthesis reads."""
    from fpgaprune.hls import shipped
    from fpgaprune.hls.csim import compare_with_qkeras, hardware_input, layer_diff, logits_layer

    exported = _shipped(run_dir)
    project, manifest, fixed = exported.path, exported.manifest, exported.input_type
    owners = {array: node for node, entry in manifest["hls_nodes"].items()
              for array in entry.get("weight_headers_sha256", {})}
    weight_problems = shipped.check_weight_files(project, owners)
    with elapsed("g++ build of hls/project (one object: the C-sim library and the test bench)"):
        build = shipped.build_shipped(project, out / "scratch", project_name=manifest.get("project_name", "myproject"))
    shipped.simulate_synthesized_weights(build)
    with elapsed("g++ -fsyntax-only of the __SYNTHESIS__ branch"):
        shipped.check_synthesis_branch(build)
    quantized, dataset = _load(config, run_dir, "quantize"), dataset_of(config)
    simulate = shipped.simulator(build, quantized)
    tracer = _tracer(config, run_dir, out / "scratch" / "traced")
    if logits_layer(quantized)[1]:  # a table activation follows the logits: only a trace shows them
        result = compare_with_qkeras(simulate, quantized, dataset.x_test, fixed, tracer)
    else:
        result = compare_with_qkeras(simulate, quantized, dataset.x_test, fixed)
        if not result.bit_exact:
            result.diff = layer_diff(tracer(hardware_input(dataset.x_test, fixed)), quantized,
                                     hardware_input(dataset.x_test, fixed))
    bench = shipped.run_testbench(build)
    shutil.rmtree(out / "scratch", ignore_errors=True)
    lines = [result.format(), f"the project's test bench over tb_data/ ({bench.samples} samples, 6 significant "
             f"digits): argmax agreement {bench.argmax_agreement:.4f}, max |diff| {bench.max_abs_diff:g}",
             "the __SYNTHESIS__ branch: g++ -fsyntax-only passed",
             *(["weights/*.h and weights/*.txt hold the same values"] if not weight_problems else weight_problems)]
    (out / "csim.txt").write_text("\n".join(lines) + "\n")
    if not result.bit_exact and result.float32_exact:
        where = weight_problems[0] if weight_problems else "; ".join(result.diff[2:3]) or result.layer
        raise CsimMismatch(f"C-sim of hls/project differs from QKeras at the logits ({result.layer}: "
                           f"{result.mismatches} values) although float32 is exact there: {where}")
    return {"bit_exact": result.bit_exact, "argmax_agreement": result.argmax_agreement,
            "mismatches": result.mismatches, "max_abs_diff": result.max_abs_diff, "logits_layer": result.layer,
            "testbench_argmax_agreement": bench.argmax_agreement, "testbench_max_abs_diff": bench.max_abs_diff,
            "synthesis_branch_compiles": True, "weight_files_agree": not weight_problems}


def _kernel_removal(exported, dense, estimate, family: str):
    """yosys on the conv layer of the largest kernel saving, with that kernel restored and as exported; None
    when no conv kernel was removed, or its channels were stripped."""
    from dataclasses import asdict

    from fpgaprune.resources.measure import kernel_removal

    records = {record.plan.origin.layer: record for record in exported.nodes.values()}
    for saving in estimate.savings():
        record = records[saving.layer]
        if record.plan.kind != "conv2d":
            continue
        try:
            with elapsed(f"yosys: {saving.name} restored, and as exported"):
                removal = kernel_removal(record, dense.get_layer(saving.layer), *saving.group, family)
        except ValueError:  # its channel was stripped
            continue
        return {"layer": removal.layer, "kernel": removal.kernel, "with": asdict(removal.with_kernel),
                "without": asdict(removal.without_kernel)}
    return None


def _yosys_measurements(config, run_dir: Path) -> dict:
    from dataclasses import asdict

    from fpgaprune.resources import estimate_resources
    from fpgaprune.resources.calibration import fit, held_out_errors
    from fpgaprune.resources.measure import measure_node

    exported = _shipped(run_dir)
    family, records = exported.board.family, list(exported.nodes.values())
    layers = {record.name: measure_node(record, family)
              for record in counted(records, "yosys: each layer's DA circuit", "layer")}
    record = {"layers": {name: asdict(s) for name, s in layers.items()}}
    dense = _load(config, run_dir, "quantize", "dense.keras")
    removal = _kernel_removal(exported, dense, estimate_resources(exported, dense), family)
    if removal:
        record["removal"] = removal
    names = list(layers)
    if len(names) >= 2:
        calibration = held_out_errors(fit({n: layers[n] for n in names[::2]}), {n: layers[n] for n in names[1::2]})
        record["calibration"] = {"scale": calibration.scale, "fit": calibration.calibration_layers,
                                 "held_out": calibration.held_out, "text": calibration.format()}
    return record


def synth(config, run_dir: Path, out: Path) -> dict:
    """The vendor's C-synthesis of a copy of `hls/project` where vitis_hls exists; else yosys on each layer's DA
    circuit, from the project's manifest."""
    from fpgaprune.hls import csynth, find_hls_tool
    from fpgaprune.resources.vendor import vendor_report
    from fpgaprune.resources.yosys import find_yosys, yosys_available

    tool = find_hls_tool()
    if tool is not None:
        shutil.copytree(run_dir / "hls" / "project", out / "project")
        with elapsed(f"{tool} C-synthesis of a copy of hls/project"):
            csynth(out / "project")
        record = SynthRecord(ran=tool, vendor=vendor_report(out / "project"))
    elif yosys_available() and config.outputs.synthesize_layers:
        yosys = find_yosys()
        record = SynthRecord(ran="yosys", yosys=yosys.describe(), yosys_first_call_seconds=yosys.first_call_seconds,
                             **_yosys_measurements(config, run_dir))
    else:
        record = SynthRecord(ran="none", reason="skipped: vitis_hls not found, and yosys is not installed or disabled")
    (out / "synth.json").write_text(record.text())
    return {"ran": record.ran, **({"yosys": record.yosys} if record.yosys else {})}


def _measurements(run_dir: Path):
    from fpgaprune.report import Measurements
    from fpgaprune.resources.calibration import Calibration
    from fpgaprune.resources.measure import KernelRemoval
    from fpgaprune.resources.yosys import Synthesis

    record = SynthRecord.read(run_dir / "synth" / "synth.json")
    measured = Measurements(vendor=record.vendor)
    measured.yosys = {name: Synthesis(**s) for name, s in record.layers.items()}
    if record.removal:
        r = record.removal
        measured.removals = [KernelRemoval(r["layer"], r["kernel"], Synthesis(**r["with"]), Synthesis(**r["without"]))]
    if record.calibration:
        c = record.calibration
        measured.calibration = Calibration(c["scale"], c["fit"], {k: tuple(v) for k, v in c["held_out"].items()})
    return measured


def report(config, run_dir: Path, out: Path) -> dict:
    from fpgaprune.report import write_report
    from fpgaprune.resources import estimate_resources

    exported, quantized = _shipped(run_dir), _load(config, run_dir, "quantize")
    dense = _load(config, run_dir, "quantize", "dense.keras")
    estimate = estimate_resources(exported, dense)
    accuracies = {stage: json.loads((run_dir / stage / "stage.json").read_text())["metrics"]["accuracy"]
                  for stage in ("train", "finetune", "quantize")}
    accuracies = {"dense": accuracies["train"], "pruned": accuracies["finetune"], "quantized": accuracies["quantize"]}
    csim_metrics = json.loads((run_dir / "csim" / "stage.json").read_text())["metrics"]
    budget = _budget_rows(config, run_dir, estimate) if config.pruning.budget else None
    write_report(out, exported, estimate, quantized, dense_model=dense, accuracies=accuracies,
                 measurements=_measurements(run_dir), title=f"fpgaprune report: {config.name}", csim=csim_metrics,
                 budget=budget)
    dense_total, pruned_total = estimate.total("dense"), estimate.total("pruned")
    return {"report": str(run_dir / "report" / "report.html"), "fits": estimate.fits(),
            "products": [dense_total.products, pruned_total.products], "dsp": [dense_total.dsp, pruned_total.dsp],
            "lut": [dense_total.lut, pruned_total.lut], "kernel_savings": len(estimate.savings()),
            **({"budget": budget} if budget else {})}


def _budget_rows(config, run_dir: Path, estimate) -> list:
    """Per constraint: the budget, the estimates at pruning, after QAT and after repair, and the exported estimate."""
    budget = _budget(config)
    metrics = {stage: json.loads((run_dir / stage / "stage.json").read_text())["metrics"]["budget"]
               for stage in ("prune", "quantize")}
    pruned = estimate.total("pruned")
    achieved = budget.fractions({"LUT": pruned.lut, "DSP": pruned.dsp})
    return [{"constraint": c.name, "describe": c.describe(budget.board), "budget": c.limit,
             "pruning": metrics["prune"]["estimate"][c.name], "after_qat": metrics["quantize"]["after_qat"][c.name],
             "final": metrics["quantize"]["final"][c.name], "achieved": float(a), "fits": bool(a <= c.limit + 1e-9)}
            for c, a in zip(budget.constraints, achieved)]


STAGES = {name: globals()[name] for name in STAGE_NAMES}  # each stage is the function of its name
