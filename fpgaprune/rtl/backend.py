"""The RTL backend object (`fpgaprune.backends` entry point "RTL"): `export` writes the network as pipelined Verilog
(da4ml's code generator) from the model's record, `simulator` builds that Verilog with Verilator in a scratch copy
and runs it. No hls4ml, no model framework: the record is all it reads."""

import json
import shutil
import tempfile
import uuid
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fpgaprune.errors import ExportError
from fpgaprune.hls.backend import XILINX_FAMILIES, Backend
from fpgaprune.hls.boards import load_board
from fpgaprune.hls.exporter import MANIFEST, Export
from fpgaprune.quantize.fixed_types import input_type
from fpgaprune.rtl.emulation import check_against_emulation
from fpgaprune.rtl.logic import network_logic
from fpgaprune.rtl.verilator import on_path
from fpgaprune.support.atomic import replace_directory
from fpgaprune.support.tools import cores

LATENCY_CUTOFF = 5  # da4ml's pipelining: the most adder delays between two registers (its `latency_cutoff`)


@dataclass(frozen=True)
class RtlDesign:
    """What the export holds in memory of its design (`Export.hls_model`): da4ml's logic and how it is piped."""

    logic: object  # da4ml's CombLogic of the whole network
    project_name: str
    latency_cutoff: float
    clock_period_ns: float
    record: object  # the model's record it was written from (`record.ModelRecord`)
    input_fixed: object  # the input's `FixedType`

    def verilog_model(self, path: Path):
        """da4ml's Verilog model of the design, written under `path`."""
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
    """The network as RTL: Dense layers unrolled, each product by distributed arithmetic of its live weights."""

    def export(self, bound, hls_config, board, output_dir, *, x, overwrite=False, input_fixed=None, **options):
        board, output_dir = load_board(board), Path(output_dir)
        self.check_board(board)
        if output_dir.exists() and not overwrite:
            raise ExportError(f"{output_dir}: already exists; pass overwrite=True to replace it")
        fixed = input_fixed or input_type(x)
        name = options.get("project_name", "myproject")
        cutoff = float(options.get("latency_cutoff", LATENCY_CUTOFF))
        logic = network_logic(bound.record, fixed)
        design = RtlDesign(logic, name, cutoff, board.clock_period_ns, bound.record, fixed)
        output_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = output_dir.with_name(f".{output_dir.name}.tmp-{uuid.uuid4().hex[:8]}")
        try:
            design.verilog_model(tmp).write()
            manifest = _manifest(self.name, design, fixed, board)
            (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1))
            replace_directory(tmp, output_dir)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return Export(output_dir, design, manifest, {"Model": {}, "LayerName": {}}, fixed, board)

    def simulator(self, exported, bound, x):
        """The exported Verilog, built with Verilator in a scratch copy (the project stays as written), run on
        the hardware inputs: `run(xq) -> (outputs, {})`. Each pass is checked bit for bit against the record's
        fixed-point emulation, and da4ml's own emulation against it (`emulation.RtlMismatch`: where it starts)."""
        design = exported.hls_model
        if not isinstance(design, RtlDesign):
            raise ExportError(f"{exported.path}: a reloaded RTL export has no design in memory; export it again")
        scratch = Path(tempfile.mkdtemp(prefix="fpgaprune-rtl-"))
        model = design.verilog_model(scratch)
        weakref.finalize(model, shutil.rmtree, scratch, True)  # the build goes with the model that loaded it
        with on_path():
            try:
                model.compile(nproc=cores())
            except RuntimeError as error:
                raise ExportError(f"Verilator could not build {exported.path}'s Verilog: {error}") from None

        def run(xq):
            xq = np.ascontiguousarray(np.asarray(xq, np.float64).reshape(len(xq), -1))
            outputs = np.asarray(model.predict(xq), np.float64)
            check_against_emulation(design.record, design.input_fixed, xq, outputs, exported.path, design.logic)
            return outputs, {}

        return run


def _manifest(backend: str, design: RtlDesign, fixed, board) -> dict:
    """The project's manifest: its backend, input type, board, and da4ml's cost and latency of the design."""
    logic = design.logic
    return {
        "backend": backend,
        "project_name": design.project_name,
        "input_type": fixed.hls(),
        "board": board.key,
        "part": board.part,
        "names": {},
        "hls_nodes": {},
        "outputs": int(logic.shape[1]),
        "da4ml_cost": float(logic.cost),
        "latency_cutoff": design.latency_cutoff,
    }


# `fpgaprune run` does not take it yet: its simulation and place-and-route stages come in the next step
RTL = RtlBackend("RTL", kernel_sparse=True, families=XILINX_FAMILIES, listed_order=50, in_runs=False)
