"""The backend an export was made for, as one object the stages after the export ask: which C-synthesis tools
build its projects and how (`synthesis_command`, `read_report`), the checked cost models that may judge its
designs (`cost_models`, fitted to `model_tool`'s reports; none: the rules only, never another's), the resource
names its reports use, the board families it knows, and whether fpgaprune writes kernel-sparse code for it.
hls4ml's own backend does the export; `hls/extension/` adds fpgaprune's code to it (`BackendExtension`, the
codegen seam this builds on).

Built in: Vitis and Vivado (the Vivado family: ap_types, Vivado HLS / Vitis HLS models) and Catapult (ac_types,
rules only), each with fpgaprune's kernel-sparse code and how g++ builds its shipped projects. Backends come in
through the `fpgaprune.backends` entry point group, as front ends do (the built-in ones are declared in
pyproject.toml), so a CLI process sees a user's package's; `register_backend` adds one at run time.
"""

import contextlib
import io
import json
import shutil
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path

import yaml

from fpgaprune.errors import ExportError, HlsConfigError
from fpgaprune.hls.cost_models import BUILT_IN

DEFAULT_BACKEND = "Vitis"
XILINX_RESOURCES = {"dsp": "DSP48", "lut": "LUT", "ff": "FF", "bram": "BRAM_18K"}
XILINX_FAMILIES = ("7-series", "UltraScale+")
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
ENTRY_POINTS = "fpgaprune.backends"  # each names a module's `Backend` object
_BACKENDS: dict = {}  # {lower-case name: backend}: the entry points', then those registered at run time
_LOADED: list = []  # [True] once the entry points are read


@dataclass(frozen=True)
class Backend:
    """One hls4ml backend, as fpgaprune's stages after the export ask it."""

    name: str  # hls4ml's name: "Vitis", "Vivado", "Catapult"
    synthesis_tools: tuple  # the C-synthesis commands that build its projects, the first on PATH runs
    model_tool: str | None  # the tool whose C-synthesis results its cost models were fitted to; None: rules only
    kernel_sparse: bool  # fpgaprune writes one product per live weight for it (else hls4ml's stock code)
    # its checked C-synthesis models (`hls/cost_models.py`): the only ones that may judge its designs
    cost_models: tuple = ()
    families: tuple = XILINX_FAMILIES  # the board families its designs are judged on
    resource_names: dict = field(default_factory=lambda: dict(XILINX_RESOURCES))
    # g++ of the shipped project (`hls/shipped.py`): its language standard and include directories, and the
    # headers its synthesis branch reads before `__SYNTHESIS__` is defined (the types the tool brings itself)
    compile_flags: tuple = AP_TYPES_FLAGS
    synthesis_headers: tuple = ("ap_fixed.h", "ap_int.h", "hls_stream.h")
    # activations it computes by a method whose error fpgaprune bounds nowhere ({function: how}): an export with
    # one is refused in one line, since its C-sim could be judged by no bound (the Vivado family's tables: none)
    unbounded_activations: dict = field(default_factory=dict)

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

    def check_board(self, board) -> None:
        """One line unless `board` (a `boards.Board`) is of a family its designs are judged on."""
        if board.family not in self.families:
            raise HlsConfigError(
                f"board '{board.key}' is a {board.family} part; {self.name} designs are judged on "
                f"{' or '.join(self.families)} boards"
            )

    def judged_by(self) -> str:
        """What judges a resource figure of its designs: a tool's checked C-synthesis model, or the rules."""
        return f"{self.model_tool}'s checked C-synthesis model" if self.cost_models else "rules only"

    def synthesis_tool(self) -> str | None:
        """The first of its C-synthesis tools on PATH, or None."""
        return next((tool for tool in self.synthesis_tools if shutil.which(tool)), None)

    def not_found(self) -> str:
        tools = self.synthesis_tools
        others = f" (nor {', '.join(tools[1:])})" if len(tools) > 1 else ""
        return f"skipped: {tools[0]} not found{others} on PATH"

    def synthesis_command(self, project: Path, tool: str) -> list:
        """The command that runs C-synthesis of `project` with `tool`, in the project's directory. Abstract: each
        backend's class gives its tool's (a backend registered without one has no synthesis to run)."""
        raise NotImplementedError(f"{self.name}: no synthesis command")

    def read_report(self, project: Path) -> dict:
        """The C-synthesis report of `project`, parsed ({} when there is none)."""
        return {}

    def testbench_arguments(self, project: Path) -> list:
        """The command-line arguments of the project's own test bench, run in `project`."""
        return []

    def synthesis_figures(self, project: Path) -> dict | None:
        """{resource: count, and "latency_cycles"/"ii_cycles" where its tool reports them, "source"} of a project
        its tool synthesized, read from the tool's own report; None where there is none."""
        return None


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


class VivadoFamily(Backend):
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


class CatapultBackend(Backend):
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


def register_backend(backend: Backend) -> None:
    """Add `backend` (or replace the one of its name)."""
    _backends()[backend.name.lower()] = backend


def _backends() -> dict:
    """{lower-case name: backend}: the built-in ones, each `fpgaprune.backends` entry point's (read once; one whose
    package fails to import is left out), and those registered since."""
    if not _LOADED:
        _LOADED.append(True)
        for backend in BUILT_IN_BACKENDS:
            _BACKENDS.setdefault(backend.name.lower(), backend)
        for entry in entry_points(group=ENTRY_POINTS):
            try:
                backend = entry.load()
            except ImportError:
                continue
            if isinstance(backend, Backend):
                _BACKENDS.setdefault(backend.name.lower(), backend)
    return _BACKENDS


def backend_names() -> list:
    """The names of every backend fpgaprune knows (built in, installed, registered)."""
    return [backend.name for backend in _backends().values()]


def registered_cost_models() -> list:
    """The built-in cost models, then each other registered backend's, each once."""
    found = list(BUILT_IN.values())
    for backend in _backends().values():
        found += [model for model in backend.cost_models if not any(model is seen for seen in found)]
    return found


def known_backend(name: str) -> Backend | None:
    """The backend hls4ml calls `name` (any case), or None where fpgaprune knows none of that name."""
    return _backends().get(str(name).lower())


def backend_named(name: str) -> Backend:
    """The backend hls4ml calls `name` (any case); one line naming the known ones otherwise."""
    found = known_backend(name)
    if found is None:
        known = ", ".join(backend_names())
        raise HlsConfigError(f"hls backend {name!r}: fpgaprune knows {known}")
    return found


def backend_of_project(project) -> Backend:
    """The backend an exported project was made for (its manifest's)."""
    manifest = json.loads((Path(project) / "fpgaprune_manifest.json").read_text())
    return backend_named(manifest["backend"])


VITIS_MODELS = (BUILT_IN["vitis 2024.1"],)
VIVADO_MODELS = (BUILT_IN["vivado_hls 2019.2"], BUILT_IN["vivado_hls 2020.1 io_stream"])
VITIS = VivadoFamily("Vitis", ("vitis_hls", "vivado_hls"), "Vitis HLS", True, VITIS_MODELS)
VIVADO = VivadoFamily("Vivado", ("vivado_hls", "vitis_hls"), "Vivado HLS", True, VIVADO_MODELS)
VIVADO_ACCELERATOR = VivadoFamily("VivadoAccelerator", ("vivado_hls", "vitis_hls"), "Vivado HLS", True, VIVADO_MODELS)
CATAPULT = CatapultBackend(
    "Catapult",
    ("catapult",),
    None,
    kernel_sparse=True,
    compile_flags=AC_TYPES_FLAGS,
    synthesis_headers=("ac_fixed.h", "ac_int.h", "ac_channel.h"),
    unbounded_activations={
        function: "by AC Math's piecewise-linear approximation (hls4ml's USE_AC_MATH)"
        for function in ("softmax", "sigmoid", "tanh")
    },
)
BUILT_IN_BACKENDS = (VITIS, VIVADO, VIVADO_ACCELERATOR, CATAPULT)  # also declared as entry points (pyproject.toml)
