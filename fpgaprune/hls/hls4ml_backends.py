"""hls4ml's C++ backends: Vitis, Vivado and VivadoAccelerator (the Vivado family: ap_types, Vivado HLS / Vitis HLS
models) and Catapult (ac_types, rules only), each with fpgaprune's kernel-sparse code (`hls/extension/`, the codegen
seam these build on). hls4ml's own backend writes the project (`exporter.write_project`); its C-sim is the project
built with g++ and bridged (`hls4ml_bridge.py`), the shipped project's check is `shipped.py`, its products are
counted by an instrumented build (`product_count.py`). Declared as `fpgaprune.backends` entry points."""

import contextlib
import io
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from fpgaprune.errors import ExportError
from fpgaprune.hls import product_count, shipped
from fpgaprune.hls.backend import Backend
from fpgaprune.hls.cost_models import BUILT_IN
from fpgaprune.hls.exporter import write_project
from fpgaprune.hls.hls4ml_bridge import library_run

# g++ flags of a shipped project: the types and C++ standard of each family's code
AP_TYPES_FLAGS = ("-std=c++17", "-Ifirmware/ap_types", "-Ifirmware")
AC_TYPES_FLAGS = (
    "-std=c++11",
    *(f"-Ifirmware/{types}/include" for types in ("ac_types", "ac_math", "ac_simutils")),
    "-Ifirmware/nnet_utils",
    "-Ifirmware",
)
# hls4ml's build options: C-synthesis only (no C-sim: fpgaprune's own C-sim builds the same files with g++).
SYNTH_ONLY = {"reset": 0, "csim": 0, "synth": 1, "cosim": 0, "validation": 0, "export": 0, "vsynth": 0, "fifo_opt": 0}


@dataclass(frozen=True)
class Hls4mlBackend(Backend):
    """An hls4ml backend: hls4ml writes its project from the IR, g++ builds its C-sim and shipped project."""

    # g++ of the shipped project (`hls/shipped.py`): its language standard and include directories, and the
    # headers its synthesis branch reads before `__SYNTHESIS__` is defined (the types the tool brings itself)
    compile_flags: tuple = AP_TYPES_FLAGS
    synthesis_headers: tuple = ("ap_fixed.h", "ap_int.h", "hls_stream.h")
    # activations it computes by a method whose error fpgaprune bounds nowhere ({function: how}): an export with
    # one is refused in one line, since its C-sim could be judged by no bound (the Vivado family's tables: none)
    unbounded_activations: dict = field(default_factory=dict)

    def export(self, bound, hls_config, board, output_dir, *, x, **options):
        return write_project(bound, hls_config, board, output_dir, x=x, backend=self.name, checked=self, **options)

    def simulator(self, exported, bound, x):
        if exported.hls_model is None:
            raise ExportError(
                f"{exported.path}: a reloaded export has no hls4ml model to build; C-simulate it as shipped"
            )
        return library_run(exported.hls_model, bound, x, exported.manifest.get("names", {}))

    def build_shipped(self, project: Path, scratch: Path, project_name: str = "myproject"):
        return shipped.build_shipped(project, scratch, project_name, self)

    def count_products(self, exported, x) -> dict:
        return product_count.count_products(exported.hls_model, x)

    def check_activations(self, record) -> None:
        """One line naming the first layer of `record` (a ModelRecord) whose activation it computes unbounded."""
        for layer in record.layers.values():
            computed = (
                layer.activation.name if layer.activation is not None else "",  # Dense(..., activation=...)
                layer.applies.table or "" if layer.applies is not None else "",  # a quantizer read from a table
                layer.class_name.lower(),  # a Softmax layer
            )
            function = next((name for name in computed if name in self.unbounded_activations), None)
            if function is not None:
                raise ExportError(
                    f"layer '{layer.name}': {self.name} computes {function} {self.unbounded_activations[function]}, "
                    f"whose error fpgaprune does not bound, so its C-sim could not be judged; export to Vitis or "
                    f"Vivado, or end the model before the {function}"
                )


def _quiet_report(reader, project: Path) -> dict:
    """hls4ml's report reader of `project`, its prints (why it found nothing) silenced; {} where it finds none."""
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            return reader(str(project)) or {}
        except (OSError, StopIteration, ValueError, IndexError, KeyError, TypeError, yaml.YAMLError):  # partial
            return {}


def _counts(report: dict, keys: dict) -> dict:
    """{our resource name: count} of the report's {their name: "count"} entries that are counts."""
    return {
        name: int(str(report[key]).strip()) for name, key in keys.items() if str(report.get(key, "")).strip().isdigit()
    }


class VivadoFamily(Hls4mlBackend):
    """Vitis and Vivado: hls4ml's `build_prj.tcl`, Vitis reading build_opt.tcl and Vivado its arguments."""

    def synthesis_command(self, project: Path, tool: str) -> list:
        if tool == "vivado_hls":
            return ["vivado_hls", "-f", "build_prj.tcl", " ".join(f"{k}={v}" for k, v in SYNTH_ONLY.items())]
        (project / "build_opt.tcl").write_text(
            "array set opt {\n" + "".join(f"    {k} {v}\n" for k, v in SYNTH_ONLY.items()) + "}\n"
        )
        if shutil.which("vitis-run"):
            return ["vitis-run", "--tcl", "build_prj.tcl", "--mode", "hls"]
        return [tool, "-f", "build_prj.tcl"]

    def read_report(self, project: Path) -> dict:
        from hls4ml.report import parse_vivado_report

        return _quiet_report(parse_vivado_report, project) if (Path(project) / "project.tcl").exists() else {}

    def synthesis_figures(self, project: Path) -> dict | None:
        synth = self.read_report(project).get("CSynthesisReport")
        if not synth:
            return None
        keys = {name: name for name in ("DSP", "LUT", "FF", "BRAM_18K", "URAM")}
        latency = {"latency_cycles": int(synth["WorstLatency"]), "ii_cycles": int(synth["IntervalMax"])}
        return {**_counts(synth, keys), **latency, "source": "vendor: Vivado/Vitis HLS C-synthesis report"}


class CatapultBackend(Hls4mlBackend):
    """Siemens Catapult: hls4ml's `build_prj.tcl` in `catapult -shell`, as hls4ml's `build()` runs it."""

    def synthesis_command(self, project: Path, tool: str) -> list:
        arguments = " ".join(f"{k}={v}" for k, v in {**SYNTH_ONLY, "bitfile": 0}.items())
        return [tool, "-product", "ultra", "-shell", "-f", "build_prj.tcl", "-eval", f'set ::argv "{arguments}"']

    def read_report(self, project: Path) -> dict:
        from hls4ml.report.catapult_report import parse_catapult_report

        return _quiet_report(parse_catapult_report, project) if (Path(project) / "build_prj.tcl").exists() else {}

    def synthesis_figures(self, project: Path) -> dict | None:
        """Catapult's RTL as Vivado synthesizes it in hls4ml's flow (`vivado_concat_v/utilization_synth.rpt` of
        the design's solution); Catapult reports no latency there. Read here: hls4ml's reader `safe_load`s the
        project's config, which holds the pickled model."""
        script = Path(project) / "build_prj.tcl"
        settings = {}
        for line in script.read_text().splitlines() if script.exists() else ():
            words = line.split()
            if words[:2] in (["project", "new"], ["set", "design_top"]):
                settings[words[1]] = words[-1]
        if len(settings) < 2:
            return None
        reports = sorted(
            (Path(project) / settings["new"]).glob(f"*{settings['design_top']}*/vivado_concat_v/utilization_synth.rpt")
        )
        if not reports:
            return None
        used = _utilization_rows(reports[0].read_text())
        return {**used, "source": "vendor: Catapult RTL, Vivado synthesis utilization report"} if used else None

    def testbench_arguments(self, project: Path) -> list:
        data = Path(project) / "tb_data"
        weights = Path(project) / "firmware" / "weights"
        return [str(weights), str(data / "tb_input_features.dat"), str(data / "tb_output_predictions.dat")]


def _utilization_rows(report: str) -> dict:
    """{resource: used} from a Vivado utilization report's tables: the first row of each site type."""
    sites = {"CLB LUTs": "LUT", "CLB Registers": "FF", "RAMB18": "BRAM_18K", "DSPs": "DSP", "URAM": "URAM"}
    found = {}
    for line in report.splitlines():
        cells = [cell.strip() for cell in line.split("|")]
        if len(cells) < 3 or not cells[2].isdigit():
            continue
        site = next((name for prefix, name in sites.items() if cells[1].rstrip("*").strip() == prefix), None)
        if site is not None and site not in found:
            found[site] = int(cells[2])
    return found


VITIS_MODELS = (BUILT_IN["vitis 2024.1"],)
VIVADO_MODELS = (BUILT_IN["vivado_hls 2019.2"], BUILT_IN["vivado_hls 2020.1 io_stream"])
BIND_OP, MUL_LUT = "each product's BIND_OP op=mul impl=fabric", "each product's RESOURCE core=Mul_LUT"
VITIS = VivadoFamily(
    "Vitis", ("vitis_hls", "vivado_hls"), "Vitis HLS", True, VITIS_MODELS, listed_order=10, lut_products=BIND_OP
)
VIVADO = VivadoFamily(
    "Vivado", ("vivado_hls", "vitis_hls"), "Vivado HLS", True, VIVADO_MODELS, listed_order=20, lut_products=MUL_LUT
)
VIVADO_ACCELERATOR = VivadoFamily(
    "VivadoAccelerator",
    ("vivado_hls", "vitis_hls"),
    "Vivado HLS",
    True,
    VIVADO_MODELS,
    listed_order=30,
    lut_products=MUL_LUT,
)
CATAPULT = CatapultBackend(
    "Catapult",
    ("catapult",),
    None,
    kernel_sparse=True,
    listed_order=40,
    compile_flags=AC_TYPES_FLAGS,
    synthesis_headers=("ac_fixed.h", "ac_int.h", "ac_channel.h"),
    unbounded_activations={
        function: "by AC Math's piecewise-linear approximation (hls4ml's USE_AC_MATH)"
        for function in ("softmax", "sigmoid", "tanh")
    },
)
