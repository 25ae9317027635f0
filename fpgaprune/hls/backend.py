"""The backend an export is made for, as one object that the export and every stage after it ask: the project
it writes (`export`), the build of its simulation and the bridge that runs it (`simulator`), the check of the
project as shipped (`build_shipped`), the products it executes (`count_products`), which tools synthesize its
projects and how (`synthesis_command`, `read_report`, `synthesis_figures`), the checked cost models that may judge
its designs (`cost_models`, fitted to `model_tool`'s reports; none: the rules only, never another's), the resource
names its reports use (the report's resource columns) and the board families it knows.

Built in (`hls/hls4ml_backends.py`): Vitis, Vivado and VivadoAccelerator (ap_types) and Catapult (ac_types), each
hls4ml's C++ with fpgaprune's kernel-sparse code. Every backend, built-in or a user's, comes in through the
`fpgaprune.backends` entry point group (the built-in ones are declared in pyproject.toml), as front ends do, so a
CLI process sees a user's package's; `register_backend` adds one at run time. A backend is a `Backend` subclass:
it need not be hls4ml's (tests/hls/test_toy_backend.py is one that is not).
"""

import json
import shutil
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path

from fpgaprune.errors import ExportError, HlsConfigError
from fpgaprune.hls.cost_models import BUILT_IN

DEFAULT_BACKEND = "Vitis"
# The report's resource columns: {the rule estimate's field (`resources.estimator.Cost`): the name its reports use}
XILINX_RESOURCES = {"dsp": "DSP", "lut": "LUT", "ff": "FF", "bram_18k": "BRAM_18K"}
XILINX_FAMILIES = ("7-series", "UltraScale+")
ENTRY_POINTS = "fpgaprune.backends"  # each names a module's `Backend` object
_BACKENDS: dict = {}  # {lower-case name: backend}: the entry points', then those registered at run time
_LOADED: list = []  # [True] once the entry points are read


@dataclass(frozen=True)
class Backend:
    """One backend, as the export and the stages after it ask it. Subclasses give `export` and `simulator` (a
    backend registered without them names tools and cost models only)."""

    name: str  # as the run config and the manifest name it: "Vitis", "Vivado", "Catapult"
    synthesis_tools: tuple = ()  # the synthesis commands that build its projects, the first on PATH runs
    model_tool: str | None = None  # the tool whose synthesis results its cost models were fitted to; None: rules
    kernel_sparse: bool = False  # its code has one product per live weight (else a dense design's)
    # its checked synthesis models (`hls/cost_models.py`): the only ones that may judge its designs
    cost_models: tuple = ()
    families: tuple = XILINX_FAMILIES  # the board families its designs are judged on
    resource_names: dict = field(default_factory=lambda: dict(XILINX_RESOURCES))
    listed_order: int = 100  # where `backend_names` lists it (built-in: 10-50; a user's: 100)
    # how its designs build products from LUTs when asked (`Multipliers: fabric`, a budget of 0 DSP); "": it cannot
    lut_products: str = ""

    # -- the export and what follows it
    def export(self, bound, hls_config, board, output_dir, *, x, **options):
        """Write the project of a bound model (`record.Bound`) for `board` (a `boards.Board`) into `output_dir`,
        atomically, and give its `exporter.Export`. `hls_config`: a preset name, YAML path or dict; `x`: held-out
        inputs (input type, test-bench vectors)."""
        raise ExportError(f"backend {self.name!r} writes no project (it names tools and cost models only)")

    def simulator(self, exported, bound, x):
        """`run(xq) -> (outputs, {traced layer: outputs})`: the built simulation of a fresh export, for hardware
        inputs `xq` (`csim.compare_with_qkeras`), with a `map(chunks, workers)` where it spreads over processes."""
        raise ExportError(f"backend {self.name!r} simulates no project")

    def build_shipped(self, project: Path, scratch: Path, project_name: str = "myproject"):
        """The project as shipped, built in `scratch` (the project stays byte-identical): its `runner`, test bench
        and checks (`hls/shipped.py`'s `ShippedBuild` for hls4ml's projects)."""
        raise ExportError(f"backend {self.name!r}: no build of a shipped project")

    def count_products(self, exported, x) -> dict:
        """{node: products executed per inference} of a fresh export, measured on inputs `x`."""
        raise ExportError(f"backend {self.name!r} counts no products")

    def check_activations(self, record) -> None:
        """One line naming the first layer of `record` (a ModelRecord) whose activation it computes by a method
        whose error fpgaprune bounds nowhere (none here)."""

    def summary(self, exported, shown_path=None) -> str:
        """The export's summary for the console and `hls/summary.txt` (hls4ml's: its nodes' code and weights)."""
        return exported.summary(shown_path)

    def check_board(self, board) -> None:
        """One line unless `board` (a `boards.Board`) is of a family its designs are judged on."""
        if board.family not in self.families:
            raise HlsConfigError(
                f"board '{board.key}' has a {board.family} part; {self.name} designs are judged on "
                f"{' or '.join(self.families)} boards"
            )

    # -- synthesis and what judges its figures
    def judged_by(self) -> str:
        """What judges a resource figure of its designs: a tool's checked synthesis model, or the rules."""
        return f"{self.model_tool}'s checked C-synthesis model" if self.cost_models else "rules only"

    def resource_columns(self) -> tuple:
        """((the name its reports use, the rule estimate's field), ...): the report's resource columns."""
        return tuple((name, key) for key, name in self.resource_names.items())

    def synthesis_tool(self) -> str | None:
        """The first of its synthesis tools on PATH, or None."""
        return next((tool for tool in self.synthesis_tools if shutil.which(tool)), None)

    def not_found(self) -> str:
        tools = self.synthesis_tools
        others = f" (nor {', '.join(tools[1:])})" if len(tools) > 1 else ""
        return f"skipped: {tools[0]} not found{others} on PATH" if tools else f"skipped: {self.name} has no tool"

    def synthesis_command(self, project: Path, tool: str) -> list:
        """The command that runs synthesis of `project` with `tool`, in the project's directory. Abstract: each
        backend with a synthesis tool gives its own (`hls4ml_backends.py`); one registered without one has no
        synthesis to run (`synthesis_tool` finds none, so nothing asks this)."""
        raise NotImplementedError(f"{self.name}: no synthesis command")

    def read_report(self, project: Path) -> dict:
        """The synthesis report of `project`, parsed ({} when there is none)."""
        return {}

    def testbench_arguments(self, project: Path) -> list:
        """The command-line arguments of the project's own test bench, run in `project`."""
        return []

    def synthesis_figures(self, project: Path) -> dict | None:
        """{resource: count, and "latency_cycles"/"ii_cycles" where its tool reports them, "source"} of a project
        its tool synthesized, read from the tool's own report; None where there is none."""
        return None


def register_backend(backend: Backend) -> None:
    """Add `backend` (or replace the one of its name)."""
    _backends()[backend.name.lower()] = backend


def _backends() -> dict:
    """{lower-case name: backend}: each `fpgaprune.backends` entry point's in its `listed_order` (read once; one
    whose package fails to import is left out), then those registered since."""
    if not _LOADED:
        _LOADED.append(True)
        found = []
        for entry in entry_points(group=ENTRY_POINTS):
            try:
                backend = entry.load()
            except ImportError:
                continue
            if isinstance(backend, Backend):
                found.append(backend)
        for backend in sorted(found, key=lambda backend: backend.listed_order):
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
    """The backend called `name` (any case), or None where fpgaprune knows none of that name."""
    return _backends().get(str(name).lower())


def backend_named(name: str) -> Backend:
    """The backend called `name` (any case); one line naming the known ones otherwise."""
    found = known_backend(name)
    if found is None:
        known = ", ".join(backend_names())
        raise HlsConfigError(f"hls backend {name!r}: fpgaprune knows {known}")
    return found


def backend_of_project(project) -> Backend:
    """The backend an exported project was made for (its manifest's)."""
    manifest = json.loads((Path(project) / "fpgaprune_manifest.json").read_text())
    return backend_named(manifest["backend"])
