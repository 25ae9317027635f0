"""The stages of a run. Each reads what earlier stages wrote, calls the library, and writes its own directory
`out`; it returns its metrics (a JSON-ready dict). Models travel between stages as files saved with
`fp.save_model` (holds and quantizers included): `.keras`, or `.pt` in a PyTorch run. Training, the pruning
policy, the config's meaning for the library and the measurements live beside this file.
"""

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import fpgaprune as fp
from fpgaprune.framework import seed_frameworks
from fpgaprune.hls import csynth, find_hls_tool
from fpgaprune.hls.backend import backend_of_project
from fpgaprune.hls.csim import compare_with_qkeras, logits_tolerance_of, simulated_subset
from fpgaprune.hls.names import map_keys, original_name
from fpgaprune.hls.tolerance import export_layer_tolerances, node_types
from fpgaprune.masking import MaskManifest
from fpgaprune.masking.input_zeros import input_zeros
from fpgaprune.pipeline import rtl_stages
from fpgaprune.pipeline.measurements import (
    budget_rows,
    measurements,
    saturation_lines,
    shipped_export,
    yosys_measurements,
)
from fpgaprune.pipeline.progress import elapsed
from fpgaprune.pipeline.pruning_policy import budgeted, repaired, scheduled
from fpgaprune.pipeline.records import STAGE_NAMES, SynthRecord, stage_metrics, stage_score
from fpgaprune.pipeline.settings import hls_preset, quantization_spec
from fpgaprune.pipeline.training import (
    build_model,
    calibrated,
    dataset_of,
    fit_model,
    scores,
    stage_file,
    stage_model,
    task_of,
)
from fpgaprune.quantize import quantization_report
from fpgaprune.quantize.profile import Profile, ProfileCollector
from fpgaprune.report import write_report
from fpgaprune.report.inspection import format_table, pruned_fractions, sparsity_table
from fpgaprune.report.rtl_page import write_rtl_report
from fpgaprune.resources import estimate_resources
from fpgaprune.resources.vendor import vendor_report
from fpgaprune.resources.yosys import compiled_tracer, find_yosys, yosys_available
from fpgaprune.strip import strip
from fpgaprune.support.tools import ToolError
from fpgaprune.training.guards import check_finite_weights


def train(config, run_dir: Path, out: Path) -> dict:
    seed_frameworks(config.seed)  # the model's framework, whichever it is, as it loads
    dataset = dataset_of(config)
    model = build_model(config, dataset)  # bound, once: every later stage reads its file through its front end
    if not config.model.given():
        epochs, rate = config.training.epochs, config.training.learning_rate
        fit_model(model, dataset, epochs, rate, config, "train")
    fp.save_model(model, out / stage_file(config))
    return {
        **scores(config, model, dataset),
        "task": task_of(config, model, dataset).describe(),
        "trained": not config.model.given(),
    }


def prune(config, run_dir: Path, out: Path) -> dict:
    dataset = dataset_of(config)
    start = stage_model(config, run_dir, "train")
    zeros, found = kept_zeros(config, start)
    held = start.made(fp.hold(start, zeros, prune=list(config.pruning.selections)))
    budget = None
    if config.pruning.budget:
        pruned, budget = budgeted(config, held, dataset)
    else:
        pruned = scheduled(config, held, dataset)
    held = held.made(pruned)
    metrics = {
        **scores(config, held, dataset),
        **pruned_fractions(held),
        **({"budget": budget} if budget else {}),
    }
    if found is not None:
        metrics["input_zeros"] = {**found.to_json(), "line": found.line()}
    (out / "sparsity.txt").write_text(format_table(sparsity_table(held)) + "\n")
    index_map = {}
    if config.pruning.strip:
        result = strip(held)
        held, index_map = (
            held.made(result.model),
            {k: {a: [int(i) for i in v] for a, v in m.items()} for k, m in result.index_map.items()},
        )
        metrics["strip_notes"] = result.notes
    (out / "index_map.json").write_text(json.dumps(index_map))
    fp.save_model(held, out / stage_file(config))
    fp.manifest_of(held).save(out / "masks.json")
    return metrics


def kept_zeros(config, model):
    """(the holds of the exact zeros the user's model came with, what was found) under
    `pruning.keep_input_zeros`; (no holds, None) for a built-in architecture, which the run trains itself."""
    if not (config.model.given() and config.pruning.keep_input_zeros):
        return MaskManifest(), None
    return input_zeros(model)


def finetune(config, run_dir: Path, out: Path) -> dict:
    dataset = dataset_of(config)
    model = stage_model(config, run_dir, "prune")
    fit_model(model, dataset, config.finetune.epochs, config.finetune.learning_rate, config, "finetune")
    fp.save_model(model, out / stage_file(config))
    fp.save_model(
        model.made(fp.finalize(model)[0]), out / stage_file(config, "pruned")
    )  # plain Keras (the model's own), zeros in place
    return {**scores(config, model, dataset), **pruned_fractions(model)}


def quantize(config, run_dir: Path, out: Path) -> dict:
    dataset = dataset_of(config)
    spec, batchnorm = quantization_spec(config), config.quantization.batchnorm
    finetuned = stage_model(config, run_dir, "finetune")
    check_finite_weights(finetuned, "quantize")
    quantized = finetuned.twin(spec, batchnorm)  # bound to the twin's front end: HGQ2's for an HGQ2 run
    front = quantized.front
    sources = front.quantizer_sources(finetuned.model, spec, config.quantization.default is not None)
    epochs, rate = config.quantization.qat_epochs, config.quantization.learning_rate
    fit_model(quantized, dataset, epochs, rate, config, "QAT")
    calibrated(quantized, dataset)
    budget = repaired(config, quantized, dataset) if config.pruning.budget else None
    fp.save_model(quantized, out / stage_file(config))
    trained = stage_model(config, run_dir, "train").model
    dense = front.dense_reference(quantized.model, trained, spec, batchnorm)
    fp.save_model(quantized.made(dense), out / stage_file(config, "dense"))
    report = quantization_report(
        quantized, finetuned, dataset.x_test, dataset.y_test, task_of(config, quantized, dataset)
    )
    (out / "quantization.txt").write_text(report.format() + "\n")
    ebops = front.ebops(quantized.model)  # HGQ2's own cost, per layer
    return {
        **scores(config, quantized, dataset),
        **pruned_fractions(quantized),
        **({"budget": budget} if budget else {}),
        **({"ebops": ebops} if ebops is not None else {}),
        "quantizers": sources,
    }


def hls(config, run_dir: Path, out: Path) -> dict:
    dataset = dataset_of(config)
    index_map = json.loads((run_dir / "prune" / "index_map.json").read_text())
    exported = fp.export(
        stage_model(config, run_dir, "quantize"),
        hls_preset(config),
        config.board,
        out / "project",
        x=dataset.x_test,
        overrides=config.hls.config,
        strip=index_map or None,
        backend=config.hls.backend,
        tb_samples=config.outputs.tb_samples,
    )
    summary = backend_of_project(exported.path).summary(exported, run_dir / "hls" / "project")
    (out / "summary.txt").write_text(summary + "\n")
    nodes = exported.manifest["hls_nodes"].values()
    return {
        "live_weights": exported.manifest.get("live_weights", sum(n.get("live_weights", 0) for n in nodes)),
        "weights": exported.manifest.get("weights", sum(n.get("weights", 0) for n in nodes)),
        "notes": exported.notes,
    }


class CsimMismatch(fp.FpgapruneError):
    """C-sim of the shipped project differs from QKeras at a layer beyond the tolerance its types give (or where
    they give none)."""


def csim(config, run_dir: Path, out: Path) -> dict:
    """C-simulate `hls/project` itself (built in a scratch copy), with the weights synthesis reads; profile the
    values against their types from the same pass. An RTL project: its Verilator simulation (`rtl_stages`)."""
    if config.hls.backend == RTL_BACKEND:
        return rtl_stages.csim(config, run_dir, out, CsimMismatch)
    exported = shipped_export(run_dir)
    project, manifest = exported.path, exported.manifest
    owners = {
        array: original_name(node, manifest)
        for node, entry in manifest["hls_nodes"].items()
        for array in entry.get("weight_headers_sha256", {})
    }
    with elapsed("g++ build of hls/project (one object: the C-sim library and the test bench)"):
        build = backend_of_project(project).build_shipped(
            project, out / "scratch", project_name=manifest.get("project_name", "myproject")
        )
    weight_problems = build.weight_problems(owners)
    build.simulate_synthesized_weights()
    with ThreadPoolExecutor(max_workers=1) as side:  # the __SYNTHESIS__ branch compiles beside the simulation
        syntax = side.submit(build.check_synthesis_branch)
        quantized, dataset = stage_model(config, run_dir, "quantize"), dataset_of(config)
        with elapsed(
            f"C-sim of hls/project against {quantized.front.quantizer_library} over the held-out set "
            f"(outputs.csim_samples: {config.outputs.csim_samples})"
        ):
            result = simulated(
                config, quantized, dataset, exported, build.runner(quantized, manifest["traced_outputs"])
            )
        syntax.result()
    bench = build.run_testbench()
    shutil.rmtree(out / "scratch", ignore_errors=True)
    argmax = result.agreement == "argmax agreement"  # other tasks: no argmax to compare
    bench_argmax = bench.argmax_agreement if argmax else None
    lines = [
        result.format(),
        f"the project's test bench over tb_data/ ({bench.samples} samples, 6 significant "
        f"digits): {f'argmax agreement {bench_argmax:.4f}, ' if argmax else ''}max |diff| {bench.max_abs_diff:g}",
        "the __SYNTHESIS__ branch: g++ -fsyntax-only passed",
        *(["weights/*.h and weights/*.txt hold the same values"] if not weight_problems else weight_problems),
    ]
    (out / "csim.txt").write_text("\n".join(lines) + "\n")
    (out / "profile.json").write_text(json.dumps(result.profile.to_json(), indent=1))
    if not result.passed:
        raise CsimMismatch(_mismatch(result, weight_problems))
    return {
        **result.metrics(),
        "testbench_argmax_agreement": bench_argmax,
        "testbench_max_abs_diff": bench.max_abs_diff,
        "synthesis_branch_compiles": True,
        "weight_files_agree": not weight_problems,
        "saturation": saturation_lines(config, result.profile, dataset),
    }


def simulated(config, quantized, dataset, exported, run):
    """C-sim through `run` against the bound quantized model over the held-out set (a seeded sample of
    `outputs.csim_samples` of it when larger): its task's decisions, the tolerance its types give, and the
    profile of the same pass."""
    hls_config, names = exported.manifest["hls_config"], exported.manifest.get("names", {})
    tolerances = export_layer_tolerances(quantized, hls_config, names, exported.input_type)
    collector = ProfileCollector(quantized, map_keys(node_types(hls_config), names), exported.input_type)
    run.names = names
    ids = simulated_subset(len(dataset.x_test), config.outputs.csim_samples, config.seed)
    x = dataset.x_test if ids is None else dataset.x_test[ids]
    result = compare_with_qkeras(
        run,
        quantized,
        x,
        exported.input_type,
        task=task_of(config, quantized, dataset),
        tolerance=logits_tolerance_of(quantized.record, tolerances),
        collector=collector,
        ids=ids,
        tolerances=tolerances,
    )
    result.held_out = len(dataset.x_test)
    return result


def _mismatch(result, weight_problems: list) -> str:
    """The csim stage's one line: where C-sim and QKeras part, and why that is a failure."""
    if result.beyond and not weight_problems:
        return f"C-sim of hls/project differs from {result.reference} before the logits: {result.beyond}"
    found = f"({result.layer}: {result.mismatches} values, max |diff| {result.max_abs_diff:.3g})"
    why = (
        f"beyond its tolerance {result.tolerance_bound:.3g} ({result.tolerance.reason})"
        if result.tolerance
        else "where no tolerance follows from the types (it must be bit-exact)"
    )
    where = weight_problems[0] if weight_problems else result.first_difference or f"at {result.layer}"
    return f"C-sim of hls/project differs from {result.reference} at the logits {found} {why}: {where}"


def synth(config, run_dir: Path, out: Path, cancel=None) -> dict:
    """The vendor's C-synthesis of a copy of `hls/project` where vitis_hls exists; else yosys on the layers' DA
    circuits (a sample, or all; `outputs.measure`) within the stage's budgets, from the project's manifest.
    `cancel` (an event): the stage runs beside others (no progress bar), and stops when it is set. An RTL project:
    placed and routed (or synthesized, for a Xilinx board) dense and pruned (`rtl_stages`)."""
    if config.hls.backend == RTL_BACKEND:
        return rtl_stages.synth(config, run_dir, out)
    tool = find_hls_tool(config.hls.backend)
    if tool is not None:
        shutil.copytree(run_dir / "hls" / "project", out / "project")
        with elapsed(f"{tool} C-synthesis of a copy of hls/project"):
            csynth(out / "project")
        record = SynthRecord(ran=tool, vendor=vendor_report(out / "project"))
    elif config.outputs.synthesize_layers and yosys_available():
        yosys = find_yosys()
        try:
            measured = yosys_measurements(config, run_dir, cancel, progress=cancel is None)
        except ToolError as error:
            raise ToolError(
                f"{error} (outputs.synthesize_layers: false skips this measurement; a re-run resumes here)"
            ) from None
        record = SynthRecord(
            ran="yosys",
            yosys=yosys.describe(),
            yosys_first_call_seconds=yosys.first_call_seconds,
            tracer_first_call_seconds=compiled_tracer(),
            **measured,
        )
    else:
        record = SynthRecord(ran="none", reason="skipped: vitis_hls not found, and yosys is not installed or disabled")
    (out / "synth.json").write_text(record.text())
    return {"ran": record.ran, **(_measured_metrics(record) if record.yosys else {})}


def _measured_metrics(record) -> dict:
    """What the console says of a yosys measurement: its tool, scope, layers, removal and what was stopped."""
    removal = record.removal
    samples = {name: s["luts"] for name, s in record.samples.items()} if not removal else {}
    return {
        "yosys": record.yosys,
        "scope": record.scope,
        "measured_layers": len(record.layers),
        "unmeasured": record.unmeasured,
        **({"samples": samples} if samples else {}),
        **(
            {
                "removal": {
                    "kernel": removal["kernel"],
                    "where": removal["where"],
                    "luts": removal["without"]["luts"] - removal["with"]["luts"],
                }
            }
            if removal
            else {}
        ),
    }


def report(config, run_dir: Path, out: Path) -> dict:
    if config.hls.backend == RTL_BACKEND:
        return _rtl_report(config, run_dir, out)
    exported, quantized = shipped_export(run_dir), stage_model(config, run_dir, "quantize")
    dense = stage_model(config, run_dir, "quantize", "dense").record
    estimate = estimate_resources(exported, dense)
    scores = {
        label: stage_score(stage_metrics(run_dir, stage))
        for label, stage in (("dense", "train"), ("pruned", "finetune"), ("quantized", "quantize"))
    }
    csim_metrics = stage_metrics(run_dir, "csim")
    budget = budget_rows(config, run_dir, estimate) if config.pruning.budget else None
    write_report(
        out,
        exported,
        estimate,
        quantized.record,
        dense_model=dense,
        measurements=measurements(run_dir),
        accuracies={label: value for label, (_, value) in scores.items()},
        metric=scores["quantized"][0],
        task=task_of(config, quantized, dataset_of(config)),
        title=f"fpgaprune report: {config.name}",
        csim=csim_metrics,
        budget=budget,
        saturation=csim_metrics.get("saturation", []),
        profile=_profile(run_dir),
        saturation_threshold=config.outputs.saturation_threshold,
        quantizer_sources=stage_metrics(run_dir, "quantize").get("quantizers"),
        ebops=stage_metrics(run_dir, "quantize").get("ebops"),
    )
    dense_total, pruned_total = estimate.total("dense"), estimate.total("pruned")
    return {
        "report": str(run_dir / "report" / "report.html"),
        "fits": estimate.fits(),
        "verdict": estimate.verdict(),
        "fit_checked": [v.text() for v in estimate.fit_verdicts() if v.error is not None],
        "products": [dense_total.per_inference, pruned_total.per_inference],
        "live_weights": [dense_total.products, pruned_total.products],
        "dsp": [dense_total.dsp, pruned_total.dsp],
        "lut": [dense_total.lut, pruned_total.lut],
        "groups_removed": estimate.removed_groups(),
        "kernel_savings": len(estimate.savings()),
        "layers": len(estimate.layers),
        **({"budget": budget} if budget else {}),
    }


def _rtl_report(config, run_dir: Path, out: Path) -> dict:
    """An RTL run's report: the measurement first (`rtl_stages.headline`)."""
    exported = shipped_export(run_dir)
    scores = {
        label: stage_score(stage_metrics(run_dir, stage))[1]
        for label, stage in (("dense", "train"), ("pruned", "finetune"), ("quantized", "quantize"))
    }
    measured_file = run_dir / "synth" / rtl_stages.MEASURED
    measured = json.loads(measured_file.read_text()) if measured_file.exists() else None
    headline = rtl_stages.headline(run_dir)
    csim_text = (run_dir / "csim" / "csim.txt").read_text()
    title = f"fpgaprune report: {config.name}"
    write_rtl_report(out, title, headline, scores, csim_text, exported.manifest, measured)
    return {"report": str(run_dir / "report" / "report.html"), "headline": headline}


def _profile(run_dir: Path):
    """The csim stage's numerical profile (None for a run directory from before profiles)."""
    path = run_dir / "csim" / "profile.json"
    return Profile.from_json(json.loads(path.read_text())) if path.exists() else None


RTL_BACKEND = "RTL"  # `hls.backend` of a run measured with open tools (`rtl_stages`)
STAGES = {name: globals()[name] for name in STAGE_NAMES}  # each stage is the function of its name
