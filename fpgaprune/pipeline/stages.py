"""The stages of a run. Each reads what earlier stages wrote, calls the library, and writes its own directory
`out`; it returns its metrics (a JSON-ready dict). Models travel between stages as `.keras` files saved with
`fp.save_model` (holds and QKeras quantizers included). Training, the pruning policy, the config's meaning
for the library and the measurements live beside this file.
"""

import json
import shutil
from pathlib import Path

import fpgaprune as fp
from fpgaprune.guards import check_finite_weights
from fpgaprune.pipeline.measurements import budget_rows, measurements, shipped_export, yosys_measurements
from fpgaprune.pipeline.progress import elapsed
from fpgaprune.pipeline.pruning_policy import budgeted, conv_kernel_sparsity, repaired, scheduled
from fpgaprune.pipeline.records import STAGE_NAMES, SynthRecord, stage_metrics
from fpgaprune.pipeline.settings import hls_preset, quantization_spec
from fpgaprune.pipeline.training import accuracy, build_model, dataset_of, fit_model, stage_model
from fpgaprune.quantize.reference import dense_reference


def train(config, run_dir: Path, out: Path) -> dict:
    from fpgaprune.tfk import keras

    keras.utils.set_random_seed(config.seed)
    dataset = dataset_of(config)
    model = build_model(config, dataset)
    if not config.model.file:
        fit_model(model, dataset, config.training.epochs, config.training.learning_rate, config, "train")
    fp.save_model(model, out / "model.keras")
    return {"accuracy": accuracy(model, dataset), "trained": not config.model.file}


def prune(config, run_dir: Path, out: Path) -> dict:
    from fpgaprune.inspection import format_table, sparsity_table
    from fpgaprune.strip import strip

    dataset = dataset_of(config)
    held = fp.hold(stage_model(config, run_dir, "train"), prune=list(config.pruning.selections))
    budget = None
    if config.pruning.budget:
        held, budget = budgeted(config, held, dataset)
    else:
        held = scheduled(config, held, dataset)
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
    model = stage_model(config, run_dir, "prune")
    fit_model(model, dataset, config.finetune.epochs, config.finetune.learning_rate, config, "finetune")
    fp.save_model(model, out / "model.keras")
    return {"accuracy": accuracy(model, dataset), "conv_kernels_pruned": conv_kernel_sparsity(model)}


def quantize(config, run_dir: Path, out: Path) -> dict:
    from fpgaprune.quantize import quantization_report, to_qkeras

    dataset = dataset_of(config)
    spec, batchnorm = quantization_spec(config), config.quantization.batchnorm
    finetuned = stage_model(config, run_dir, "finetune")
    check_finite_weights(finetuned, "quantize")
    quantized = to_qkeras(finetuned, spec, batchnorm=batchnorm)
    fit_model(quantized, dataset, config.quantization.qat_epochs, config.quantization.learning_rate, config, "QAT")
    budget = repaired(config, quantized, dataset) if config.pruning.budget else None
    fp.save_model(quantized, out / "model.keras")
    trained = stage_model(config, run_dir, "train")
    fp.save_model(dense_reference(quantized, trained, spec, batchnorm), out / "dense.keras")
    report = quantization_report(quantized, finetuned, dataset.x_test, dataset.y_test)
    (out / "quantization.txt").write_text(report.format() + "\n")
    return {"accuracy": accuracy(quantized, dataset), "conv_kernels_pruned": conv_kernel_sparsity(quantized),
            **({"budget": budget} if budget else {})}


def hls(config, run_dir: Path, out: Path) -> dict:
    dataset = dataset_of(config)
    index_map = json.loads((run_dir / "prune" / "index_map.json").read_text())
    exported = fp.export(stage_model(config, run_dir, "quantize"), hls_preset(config), config.board, out / "project",
                         x=dataset.x_test, overrides=config.hls.config, strip=index_map or None,
                         backend=config.hls.backend, tb_samples=config.outputs.tb_samples)
    (out / "summary.txt").write_text(exported.summary() + "\n")
    nodes = exported.manifest["hls_nodes"].values()
    return {"live_weights": sum(n.get("live_weights", 0) for n in nodes),
            "weights": sum(n.get("weights", 0) for n in nodes), "notes": exported.notes}


class CsimMismatch(fp.FpgapruneError):
    """C-sim of the shipped project differs from QKeras where float32 is exact."""


def csim(config, run_dir: Path, out: Path) -> dict:
    """C-simulate `hls/project` itself (built in a scratch copy), with the weights synthesis reads."""
    from fpgaprune.hls import shipped
    from fpgaprune.hls.csim import compare_with_qkeras, hardware_input, layer_diff, logits_layer

    exported = shipped_export(run_dir)
    project, manifest, fixed = exported.path, exported.manifest, exported.input_type
    owners = {array: node for node, entry in manifest["hls_nodes"].items()
              for array in entry.get("weight_headers_sha256", {})}
    weight_problems = shipped.check_weight_files(project, owners)
    with elapsed("g++ build of hls/project (one object: the C-sim library and the test bench)"):
        build = shipped.build_shipped(project, out / "scratch", project_name=manifest.get("project_name", "myproject"))
    shipped.simulate_synthesized_weights(build)
    with elapsed("g++ -fsyntax-only of the __SYNTHESIS__ branch"):
        shipped.check_synthesis_branch(build)
    quantized, dataset = stage_model(config, run_dir, "quantize"), dataset_of(config)
    simulate = shipped.simulator(build, quantized)
    tracer = shipped.tracer(build, quantized, manifest["traced_outputs"])
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


def synth(config, run_dir: Path, out: Path) -> dict:
    """The vendor's C-synthesis of a copy of `hls/project` where vitis_hls exists; else yosys on each layer's DA
    circuit, from the project's manifest."""
    from fpgaprune.hls import csynth, find_hls_tool
    from fpgaprune.resources.vendor import vendor_report
    from fpgaprune.resources.yosys import find_yosys, yosys_available
    from fpgaprune.tools import ToolError

    tool = find_hls_tool()
    if tool is not None:
        shutil.copytree(run_dir / "hls" / "project", out / "project")
        with elapsed(f"{tool} C-synthesis of a copy of hls/project"):
            csynth(out / "project")
        record = SynthRecord(ran=tool, vendor=vendor_report(out / "project"))
    elif yosys_available() and config.outputs.synthesize_layers:
        yosys = find_yosys()
        try:
            measured = yosys_measurements(config, run_dir)
        except ToolError as error:  # a layer too large for yosys' time limit: say how to go on without it
            raise ToolError(f"{error} (outputs.synthesize_layers: false skips this measurement; a re-run resumes "
                            "here)") from None
        record = SynthRecord(ran="yosys", yosys=yosys.describe(), yosys_first_call_seconds=yosys.first_call_seconds,
                             **measured)
    else:
        record = SynthRecord(ran="none", reason="skipped: vitis_hls not found, and yosys is not installed or disabled")
    (out / "synth.json").write_text(record.text())
    return {"ran": record.ran, **({"yosys": record.yosys} if record.yosys else {})}


def report(config, run_dir: Path, out: Path) -> dict:
    from fpgaprune.report import write_report
    from fpgaprune.resources import estimate_resources

    exported, quantized = shipped_export(run_dir), stage_model(config, run_dir, "quantize")
    dense = stage_model(config, run_dir, "quantize", "dense.keras")
    estimate = estimate_resources(exported, dense)
    accuracies = {label: stage_metrics(run_dir, stage)["accuracy"]
                  for label, stage in (("dense", "train"), ("pruned", "finetune"), ("quantized", "quantize"))}
    csim_metrics = stage_metrics(run_dir, "csim")
    budget = budget_rows(config, run_dir, estimate) if config.pruning.budget else None
    write_report(out, exported, estimate, quantized, dense_model=dense, accuracies=accuracies,
                 measurements=measurements(run_dir), title=f"fpgaprune report: {config.name}", csim=csim_metrics,
                 budget=budget)
    dense_total, pruned_total = estimate.total("dense"), estimate.total("pruned")
    return {"report": str(run_dir / "report" / "report.html"), "fits": estimate.fits(),
            "products": [dense_total.products, pruned_total.products], "dsp": [dense_total.dsp, pruned_total.dsp],
            "lut": [dense_total.lut, pruned_total.lut], "kernel_savings": len(estimate.savings()),
            **({"budget": budget} if budget else {})}


STAGES = {name: globals()[name] for name in STAGE_NAMES}  # each stage is the function of its name
