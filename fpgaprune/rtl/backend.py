"""The RTL backend object (`fpgaprune.backends` entry point "RTL"): `export` writes the network as pipelined Verilog
(da4ml's code generator) from the model's record, `simulator` builds that Verilog with Verilator in a scratch copy
and runs it. No hls4ml, no model framework: the record is all it reads."""

import importlib.util
import json
import shutil
import tempfile
import uuid
import weakref
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from fpgaprune.errors import ExportError
from fpgaprune.hls.backend import XILINX_FAMILIES, Backend
from fpgaprune.hls.boards import load_board
from fpgaprune.hls.exporter import MANIFEST, Export
from fpgaprune.hls.manifest import FORMAT
from fpgaprune.hls.presets import load_preset
from fpgaprune.quantize.fixed_types import input_type
from fpgaprune.rtl.emulation import check_against_emulation, check_stages
from fpgaprune.rtl.harness import HARNESS, build, harness_source, simulate
from fpgaprune.rtl.logic import input_map, network_logic
from fpgaprune.rtl.stream import stream_stages
from fpgaprune.rtl.verilator import on_path
from fpgaprune.rtl.verilog import inline_tables, stream_verilog, width
from fpgaprune.support.atomic import replace_directory
from fpgaprune.support.text_table import format_rows
from fpgaprune.support.tools import cores

# da4ml's pipelining: the most adder delays between two registers (its `latency_cutoff`), by board family. Measured
# on the digits stream, LFE5U-85F, nextpnr-ecp5 0.11 against 100 MHz: 100.5 MHz at 2 (CHANGELOG 12-07, third
# session; `benchmarks/bench_rtl_clock.py`); with the stall enable it had then, 57 MHz at 5.
LATENCY_CUTOFF = {"ECP5": 2.0}
DEFAULT_LATENCY_CUTOFF = 5.0
STATIC = "src/static"  # da4ml's own modules (its adders, negation, multiplexer), copied beside the design


@dataclass(frozen=True)
class RtlDesign:
    """What the export holds in memory of its design (`Export.hls_model`): the stream's stages (one circuit per
    window layer, reused over its positions) or, unrolled, da4ml's logic of the whole network."""

    layout: str  # "stream" or "unrolled"
    project_name: str
    latency_cutoff: float
    clock_period_ns: float
    record: object  # the model's record it was written from (`record.ModelRecord`)
    input_fixed: object  # the input's `FixedType`
    input_shape: tuple = ()  # the input map's (height, width, channels)
    stages: tuple = ()  # the stream's `stream.Stage`s
    logic: object = None  # unrolled: da4ml's CombLogic of the whole network

    @property
    def cost(self) -> float:
        """da4ml's cost of the design's circuits (about one LUT per adder bit)."""
        if self.logic is not None:
            return float(self.logic.cost)
        return float(sum(stage.logic.cost for stage in self.stages if stage.logic is not None))

    def write(self, path: Path, trace: bool = False) -> list:
        """The design's Verilog under `path` (its sources, relative to it, in the order they are read)."""
        static = Path(importlib.util.find_spec("da4ml.codegen.rtl").origin).parent / "verilog" / "source"
        if self.layout == "unrolled":
            self.verilog_model(path).write()
            names = sorted(p.name for p in (path / "src").glob(f"{self.project_name}*.v"))
            names = [n for n in names if not n.endswith("_wrapper.v")]
            sources = [f"src/{n}" for n in names] + _inlined_tables(path / "src", names)
        else:
            (path / "src").mkdir(parents=True, exist_ok=True)
            modules = stream_verilog(self.stages, self.project_name, self.latency_cutoff, trace)
            for module, text in modules.items():
                (path / "src" / f"{module}.v").write_text(text)
            sources = [f"src/{module}.v" for module in modules]
        (path / STATIC).mkdir(parents=True, exist_ok=True)
        for source in sorted(static.glob("*.v")):
            if source.name != "lookup_table.v":  # it reads a `.mem` file; the tables are inlined
                shutil.copy(source, path / STATIC / source.name)
                sources.append(f"{STATIC}/{source.name}")
        return sources

    def verilog_model(self, path: Path):
        """da4ml's Verilog model of the unrolled design, written under `path`."""
        from da4ml.codegen import VerilogModel

        return VerilogModel(
            self.logic,
            self.project_name,
            path,
            latency_cutoff=self.latency_cutoff,
            print_latency=False,
            clock_period=self.clock_period_ns,
        )


class RtlBackend(Backend):
    """The network as RTL: a stream whose window layers reuse one circuit over their positions (or, where the
    config's `RTL` section says `Unroll: true`, every position's products at once); each product by distributed
    arithmetic of its live weights."""

    def export(self, bound, hls_config, board, output_dir, *, x, overwrite=False, input_fixed=None, **options):
        board, output_dir = load_board(board), Path(output_dir)
        self.check_board(board)
        if output_dir.exists() and not overwrite:
            raise ExportError(f"{output_dir}: already exists; pass overwrite=True to replace it")
        settings = {**load_preset(hls_config).get("RTL", {}), **options}
        hardware = np.asarray(bound.front.hardware_layout(bound.model, np.asarray(x[:1])))
        shape = input_map(bound.record, hardware.shape)
        design = _design(bound.record, input_fixed or input_type(x), board, settings, shape)
        output_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = output_dir.with_name(f".{output_dir.name}.tmp-{uuid.uuid4().hex[:8]}")
        try:
            sources = design.write(tmp)
            if board.family in XILINX_FAMILIES:
                (tmp / VIVADO_SCRIPT).write_text(vivado_script(design.project_name, sources, board))
            manifest = _manifest(self.name, design, board, sources)
            (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1))
            replace_directory(tmp, output_dir)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return Export(output_dir, design, manifest, {"Model": {}, "LayerName": {}}, design.input_fixed, board)

    def summary(self, exported, shown_path=None) -> str:
        manifest = exported.manifest
        head = f"RTL project {shown_path or exported.path} ({manifest['layout']}) for {exported.board.name}"
        rows = format_rows(("layers", "kind", "output", "window", "da4ml cost"), _summary_rows(manifest))
        return "\n".join([f"{head} ({exported.board.part}); da4ml cost {manifest['da4ml_cost']:g}", *rows])

    def simulator(self, exported, bound, x):
        """The exported Verilog, built with Verilator in a scratch directory (the project stays as written), run on
        the hardware inputs: `run(xq) -> (outputs, {})`. Each pass is checked bit for bit against the record's
        fixed-point emulation (a stream: stage by stage, naming the layer where they part; unrolled: da4ml's
        own emulation too), `emulation.RtlMismatch`."""
        design = exported.hls_model
        if not isinstance(design, RtlDesign):  # reloaded from its manifest: the same design, from the record
            design = rebuilt(exported, bound)
        scratch = Path(tempfile.mkdtemp(prefix="fpgaprune-rtl-"))
        if design.layout == "unrolled":
            return _unrolled_run(design, scratch, exported.path)
        try:
            sources = design.write(scratch, trace=True)
            (scratch / HARNESS).write_text(harness_source(design.project_name, design.stages))
            simulator = build(scratch, design.project_name, [scratch / s for s in sources], cores())
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        first = design.stages[0].fed_shape

        def run(xq):
            xq = np.asarray(xq, np.float64).reshape(len(xq), first[0] * first[1], first[2])
            traced = simulate(simulator, design.stages, xq)
            check_stages(design.record, design.input_fixed, xq, traced, design.stages, exported.path)
            return traced[-1].reshape(len(xq), -1), {}

        weakref.finalize(run, shutil.rmtree, scratch, True)  # the build goes with the run that uses it
        return run


def _inlined_tables(src: Path, names: list) -> list:
    """da4ml's table files of an unrolled design written into modules of their own (`verilog.inline_tables`): the
    sources it adds."""
    memfiles = {p.name: p.read_text() for p in sorted((src / "memfiles").glob("*.mem"))}
    shutil.rmtree(src / "memfiles", ignore_errors=True)
    tables = {}
    for name in names:
        text, found = inline_tables((src / name).read_text(), memfiles)
        (src / name).write_text(text)
        tables.update(found)
    for module, text in tables.items():
        (src / f"{module}.v").write_text(text)
    return [f"src/{module}.v" for module in sorted(tables)]


def _summary_rows(manifest) -> list:
    return [
        (", ".join(s["layers"]), s["kind"], "x".join(map(str, s["output"])), "x".join(map(str, s["window"])),
         f"{s['da4ml_cost']:g}")
        for s in manifest.get("stages", [])
    ]  # fmt: skip


def rebuilt(exported, bound) -> RtlDesign:
    """The design of a reloaded export, made again from the model's record with the settings its manifest keeps,
    and checked to write the very files the project holds (one line where the model is not the one exported)."""
    manifest = exported.manifest
    settings = {
        "project_name": manifest["project_name"],
        "LatencyCutoff": manifest["latency_cutoff"],
        "Unroll": manifest["layout"] == "unrolled",
    }
    design = _design(bound.record, exported.input_type, exported.board, settings, tuple(manifest["input_shape"]))
    with tempfile.TemporaryDirectory(prefix="fpgaprune-rtl-check-") as scratch:
        for source in design.write(Path(scratch)):
            if (Path(scratch) / source).read_bytes() != (Path(exported.path) / source).read_bytes():
                raise ExportError(
                    f"{exported.path}: {source} is not what this model's record writes; simulate the model it was "
                    "exported from, or export again"
                )
    return design


VIVADO_SCRIPT = "build_vivado.tcl"


def vivado_script(top: str, sources: list, board) -> str:
    """Vivado's non-project flow for a Xilinx board (`vivado -mode batch -source build_vivado.tcl`): synthesis out
    of context, placement and routing against the board's clock, utilization and timing reports beside it."""
    files = " ".join(f"$root/{source}" for source in sources)
    return "\n".join(
        [
            f"# fpgaprune: {top} for {board.name} ({board.part}) at {board.clock_period_ns:g} ns",
            "set root [file normalize [file dirname [info script]]]",
            f"read_verilog [list {files}]",
            f"synth_design -top {top} -part {board.part} -mode out_of_context",
            f"create_clock -period {board.clock_period_ns:g} -name clk [get_ports clk]",
            "opt_design",
            "place_design",
            "route_design",
            "report_utilization -file $root/vivado_utilization.rpt",
            "report_timing_summary -file $root/vivado_timing.rpt",
            "",
        ]
    )


def _design(record, fixed, board, settings, shape) -> RtlDesign:
    """The design `settings` ask for (the preset's `RTL` section: Unroll, LatencyCutoff; the export's options),
    from an input map of `shape`."""
    name = settings.get("project_name", "myproject")
    cutoff = float(settings.get("LatencyCutoff") or LATENCY_CUTOFF.get(board.family, DEFAULT_LATENCY_CUTOFF))
    common = dict(project_name=name, latency_cutoff=cutoff, clock_period_ns=board.clock_period_ns, record=record)
    common.update(input_fixed=fixed, input_shape=tuple(shape))
    if settings.get("Unroll"):
        return RtlDesign("unrolled", logic=network_logic(record, fixed, shape), **common)
    return RtlDesign("stream", stages=tuple(stream_stages(record, fixed, shape)), **common)


def _unrolled_run(design: RtlDesign, scratch: Path, where):
    model = design.verilog_model(scratch)
    weakref.finalize(model, shutil.rmtree, scratch, True)  # the build goes with the model that loaded it
    with on_path():
        try:
            model.compile(nproc=cores())
        except RuntimeError as error:
            raise ExportError(f"Verilator could not build {where}'s Verilog: {error}") from None

    def run(xq):
        xq = np.ascontiguousarray(np.asarray(xq, np.float64).reshape(len(xq), -1))
        outputs = np.asarray(model.predict(xq), np.float64)
        check_against_emulation(design.record, design.input_fixed, xq, outputs, where, design.logic, design.input_shape)
        return outputs, {}

    return run


def _manifest(backend: str, design: RtlDesign, board, sources: list) -> dict:
    """The project's manifest: its backend, layout, input type, board, sources, and da4ml's cost; a stream's
    interface and its stages."""
    manifest = {
        "format": FORMAT,
        "backend": backend,
        "project_name": design.project_name,
        "layout": design.layout,
        "input_type": design.input_fixed.hls(),
        "board": board.key,
        "part": board.part,
        "board_spec": asdict(board),
        "hls_config": {"Model": {}, "LayerName": {}},
        "notes": [],
        "names": {},
        "hls_nodes": {},
        "sources": sources,
        "da4ml_cost": design.cost,
        "latency_cutoff": design.latency_cutoff,
        "input_shape": list(design.input_shape),
        **_weight_counts(design.record),
    }
    if design.layout == "unrolled":
        return {**manifest, "outputs": int(design.logic.shape[1])}
    last = design.stages[-1]
    manifest["outputs"] = int(last.out_shape[2])
    manifest["interface"] = INTERFACE
    manifest["stages"] = [_stage_entry(stage, design.record) for stage in design.stages]
    return manifest


def _weight_counts(record, names=None) -> dict:
    """The kernels' weights (of the layers `names`, else all) and those left after pruning and quantization (a
    removed one makes no logic)."""
    layers = [layer for name, layer in record.layers.items() if names is None or name in names]
    kernels = [w.quantized for layer in layers for w in layer.weights.values() if w.role != "bias"]
    return {
        "weights": int(sum(k.size for k in kernels)),
        "live_weights": int(sum(np.count_nonzero(k) for k in kernels)),
    }


def _stage_entry(stage, record) -> dict:
    return {
        **_weight_counts(record, stage.layers),
        "layers": list(stage.layers),
        "kind": stage.kind,
        "input": list(stage.in_shape),
        "output": list(stage.out_shape),
        "window": list(stage.size),
        "strides": list(stage.strides),
        "pad": list(stage.pad),  # zeros around its input (top, left, bottom, right): the top's, or a pad stage's
        "pixel_bits": width(stage.in_kifs),
        "beat_bits": width(stage.out_kifs),
        "da4ml_cost": float(stage.logic.cost) if stage.logic is not None else 0.0,
    }


INTERFACE = (
    "clk; rst (synchronous, high); in_valid/in_ready/in_data: one input pixel per beat, all its channels, a "
    "sample's pixels in raster order, samples back to back; out_valid/out_ready/out_data: one output position per "
    "beat, from a FIFO (the pipeline never stalls; in_ready holds pixels back while the FIFO lacks room for the "
    "outputs on their way; with a pad or merge stage, it holds a sample's first pixel back until the sample before "
    "is out of the stages). Values packed the first at the lowest bits, each in two's complement of its stage's "
    "width."
)


RTL = RtlBackend(
    "RTL",
    kernel_sparse=True,
    families=(*XILINX_FAMILIES, "ECP5"),
    listed_order=50,
    lut_products="always: each product is a shift-and-add graph of its constant (da4ml), never a DSP",
)
