"""A run's stages after the export where the backend is RTL (`hls.backend: RTL`): the RTL simulation of
`hls/project` itself with Verilator, and its measurement with open tools (placed and routed for an ECP5 board,
synthesized for a Xilinx one), dense and pruned, within `outputs.place_route_time_limit_s`. A measurement past its
limit, or a design larger than the board, is one line in the console and in `synth/measured.json`; the run keeps
its other results."""

import json
from pathlib import Path

import fpgaprune as fp
from fpgaprune.hls.backend import backend_of_project
from fpgaprune.hls.csim import compare_with_qkeras, simulated_subset
from fpgaprune.pipeline.measurements import shipped_export
from fpgaprune.pipeline.progress import elapsed
from fpgaprune.pipeline.settings import hls_preset
from fpgaprune.pipeline.training import dataset_of, stage_model, task_of
from fpgaprune.resources.calibration import rtl_rule
from fpgaprune.rtl.place_route import clock_text, measure
from fpgaprune.support.tools import ToolError

MEASURED = "measured.json"


def csim(config, run_dir: Path, out: Path, mismatch) -> dict:
    """The RTL of `hls/project` (its own files, rebuilt from the record and checked equal) simulated with Verilator
    over the held-out set, stage by stage against the record's emulation and at the logits against the quantized
    model (bit-exact). `mismatch`: the error class of a difference."""
    exported, quantized, dataset = shipped_export(run_dir), stage_model(config, run_dir, "quantize"), dataset_of(config)
    with elapsed("Verilator build of hls/project (its stages, a tracing top and the test bench)"):
        run = backend_of_project(exported.path).simulator(exported, quantized, dataset.x_test)
    ids = simulated_subset(len(dataset.x_test), config.outputs.csim_samples, config.seed)
    x = dataset.x_test if ids is None else dataset.x_test[ids]
    with elapsed(f"RTL simulation of hls/project against {quantized.front.quantizer_library} (Verilator)"):
        result = compare_with_qkeras(
            run, quantized, x, exported.input_type, task=task_of(config, quantized, dataset), ids=ids
        )
    result.held_out = len(dataset.x_test)
    (out / "csim.txt").write_text(result.format().replace("C-sim", "RTL simulation", 1) + "\n")
    if not result.passed:
        raise mismatch(f"the RTL simulation of hls/project differs from {result.reference}: {result.format()}")
    return result.metrics()


def synth(config, run_dir: Path, out: Path) -> dict:
    """The pruned design (`hls/project`) and the dense one (exported here from the dense quantized model) measured
    on the run's board with open tools; their difference is the removal's measured saving."""
    exported, dataset = shipped_export(run_dir), dataset_of(config)
    dense = fp.export(
        stage_model(config, run_dir, "quantize", "dense"),
        hls_preset(config),
        config.board,
        out / "dense_project",
        x=dataset.x_test,
        backend=config.hls.backend,
        input_fixed=exported.input_type,
        overwrite=True,
    )
    limit = config.outputs.place_route_time_limit_s
    record = {"board": config.board, "time_limit_s": limit}
    rule = rtl_rule(exported.board.family)
    for label, design in (("pruned", exported), ("dense", dense)):
        with elapsed(f"yosys and nextpnr on the {label} design ({design.path.name}; at most {limit:g} s each)") as note:
            record[label] = _measured(design.path, limit, note)
        if rule is not None:  # what the estimate before place and route said, beside what was measured
            measured = record[label].get("used", {}).get(rule.unit)
            record[label]["estimate"] = rule.statement(design.manifest["da4ml_cost"], measured)
    (out / MEASURED).write_text(json.dumps(record, indent=1))
    labels = ("dense", "pruned")
    return {
        "ran": "yosys and nextpnr" if exported.board.family == "ECP5" else "yosys (synthesis only)",
        "designs": {label: record[label]["line"] for label in labels if "line" in record[label]},
        "unmeasured": {label: record[label]["stopped"] for label in labels if "stopped" in record[label]},
    }


def _measured(project: Path, limit: float, progress) -> dict:
    try:
        found = measure(project, timeout_s=limit, progress=progress)
    except ToolError as error:
        return {"stopped": f"{error} (outputs.place_route_time_limit_s: {limit:g} s)"}
    entry = found.as_dict()
    if not found.fits:
        entry["stopped"] = f"does not fit {found.part}: {found.line()}"
    return entry


def headline(run_dir: Path) -> str | None:
    """The report's headline of a measured run: tool and version, device, LUT dense -> pruned, and the clock
    achieved against the target. None where the synth stage measured nothing."""
    path = run_dir / "synth" / MEASURED
    if not path.exists():
        return None
    record = json.loads(path.read_text())
    pruned, dense = record.get("pruned", {}), record.get("dense", {})
    if "used" not in pruned:
        return f"not measured: {pruned.get('stopped', 'no design')}"
    lut = next(iter(pruned["used"]))
    before = dense.get("used", {}).get(lut)
    how = "after place and route" if pruned["placed"] else "by synthesis only, not placed"
    clocked = pruned["fmax_mhz"] is not None
    clock = clock_text(pruned["fmax_mhz"], pruned["target_mhz"]) if clocked else "no clock (not placed)"
    change = (
        f"{before} -> {pruned['used'][lut]}" if before is not None else f"{pruned['used'][lut]} (dense: not measured)"
    )
    return f"measured {how} ({pruned['tools']}) on {pruned['part']}: {lut} dense -> pruned {change}; {clock}"
