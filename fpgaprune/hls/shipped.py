"""C-simulation of the shipped project itself: `hls/project` is copied and built elsewhere (it stays
byte-identical), with one g++ object of `firmware/myproject.cpp` linked into both the Python bridge and the
project's own test bench. What Vitis' `csim_design` (Catapult's C-sim) does, with g++ and the types the project
bundles (ap_types, or ac_types): the project's backend gives the flags (`hls/backend.py`).

- `runner` runs the bridge over the held-out set (bit-exactness is judged over all of it), reading each
  layer's outputs from hls4ml's trace calls in the same pass, which the shipped code carries (C-sim only,
  `#ifndef __SYNTHESIS__`): the logits before a table activation, the per-layer diff of a disagreement and
  the profile come from the same build;
- `run_testbench` runs `myproject_test.cpp` over `tb_data/` (its log holds 6 significant digits: argmax and a
  tolerance only);
- `check_synthesis_branch` compiles the `__SYNTHESIS__` branch with `g++ -fsyntax-only`, so that a C++ error
  only Vitis would see fails here;
- `check_weight_files` proves that the `weights/*.txt` values C-sim loads equal the `weights/*.h`
  initializers synthesis reads.
"""

import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fpgaprune.errors import ExportError
from fpgaprune.hls.backend import Backend, backend_of_project
from fpgaprune.hls.hls4ml_bridge import BridgeRun, output_size
from fpgaprune.support.tools import GXX_TIMEOUT_S, cores, run_tool

CXX = ["g++", "-O3", "-fPIC", "-fno-gnu-unique"]
SYNTHESIS_WRAPPER = """{includes}
#define __SYNTHESIS__
#include "firmware/{project}.cpp"
"""


@dataclass
class ShippedBuild:
    """The build of a copy of the shipped project: its directory, bridge library and test-bench program."""

    directory: Path
    project_name: str
    library: Path
    testbench: Path
    backend: Backend

    @property
    def compiler(self) -> list:
        return [*CXX, *self.backend.compile_flags]

    # what the csim stage asks of a shipped build (`Backend.build_shipped` gives it)
    def runner(self, bound, sizes: dict, names: dict | None = None, x=None):
        return runner(self, bound, sizes, names, x)

    def run_testbench(self) -> "TestbenchResult":
        return run_testbench(self)

    def check_synthesis_branch(self) -> None:
        check_synthesis_branch(self)

    def simulate_synthesized_weights(self) -> None:
        simulate_synthesized_weights(self)

    def weight_problems(self, owners: dict) -> list[str]:
        """`check_weight_files` of the build's copy (before `simulate_synthesized_weights` rewrites it)."""
        return check_weight_files(self.directory, owners)


def build_shipped(project: Path, scratch: Path, project_name: str = "myproject", backend=None) -> ShippedBuild:
    """Copy `project` into `scratch/build` and build it: one object, linked into the bridge and the test bench
    (`backend`: the hls4ml backend it was exported for; default: its manifest's)."""
    build = Path(scratch).resolve() / "build"  # absolute: the tools below run inside it
    shutil.rmtree(build, ignore_errors=True)
    shutil.copytree(project, build)
    backend = backend or backend_of_project(project)
    shipped = ShippedBuild(build, project_name, build / "bridge.so", build / "csim_tb", backend)
    cxx, weights = shipped.compiler, f'-DWEIGHTS_DIR="{build / "firmware" / "weights"}"'
    objects = [
        ([*cxx, weights, "-c", f"firmware/{project_name}.cpp", "-o", "project.o"], "the project"),
        ([*cxx, weights, "-c", f"{project_name}_bridge.cpp", "-o", "bridge.o"], "the bridge"),
        ([*cxx, weights, "-c", f"{project_name}_test.cpp", "-o", "test.o"], "the test bench"),
    ]
    links = [
        ([*cxx, "-shared", "project.o", "bridge.o", "-o", "bridge.so"], "the bridge library"),
        ([*cxx, "project.o", "test.o", "-o", "csim_tb"], "the test-bench program"),
    ]
    # the objects side by side, one per core (each g++ holds ~0.4 GB: more at once only adds memory), then the links
    with ThreadPoolExecutor(max_workers=max(1, min(len(objects), cores()))) as pool:
        for future in [
            pool.submit(run_tool, command, f"g++ build of {what} ({build})", GXX_TIMEOUT_S, cwd=build)
            for command, what in objects
        ]:
            future.result()
        for future in [
            pool.submit(run_tool, command, f"g++ build of {what} ({build})", GXX_TIMEOUT_S, cwd=build)
            for command, what in links
        ]:
            future.result()
    return shipped


def runner(build: ShippedBuild, bound, sizes: dict, names: dict | None = None, x=None):
    """`run(xq)` for `csim.compare_with_qkeras`: the shipped project's bridge, outputs and traces in one pass (in
    this process, or in worker processes for a long set), for a bound model (`record.resolved`; `x`: an input,
    where its record has no output shape); `names` maps traced nodes to the user's names."""
    return BridgeRun(build.library, build.project_name, output_size(bound, x), dict(sizes), names or {})


@dataclass
class TestbenchResult:
    samples: int
    argmax_agreement: float
    max_abs_diff: float


def run_testbench(build: ShippedBuild) -> TestbenchResult:
    """Run the project's own test bench over `tb_data/` and compare its log with the expected predictions."""
    command = [str(build.testbench), *build.backend.testbench_arguments(build.directory)]
    run_tool(command, f"the C-sim test bench of {build.directory}", GXX_TIMEOUT_S, cwd=build.directory)
    data = build.directory / "tb_data"
    got = np.atleast_2d(np.loadtxt(data / "csim_results.log", ndmin=2))
    expected = np.atleast_2d(np.loadtxt(data / "tb_output_predictions.dat", ndmin=2))
    if got.shape != expected.shape:
        raise ExportError(f"{data / 'csim_results.log'}: {got.shape} values, expected {expected.shape}")
    return TestbenchResult(
        len(got), float(np.mean(got.argmax(1) == expected.argmax(1))), float(np.abs(got - expected).max())
    )


def check_synthesis_branch(build: ShippedBuild) -> None:
    """`g++ -fsyntax-only` of the project as synthesis reads it (`__SYNTHESIS__` defined after the ap_types)."""
    wrapper = build.directory / "synthesis_branch.cpp"
    includes = "\n".join(f'#include "{header}"' for header in build.backend.synthesis_headers)
    wrapper.write_text(SYNTHESIS_WRAPPER.format(includes=includes, project=build.project_name))
    run_tool(
        [*build.compiler, "-fsyntax-only", wrapper.name],
        f"g++ -fsyntax-only of the __SYNTHESIS__ branch ({wrapper})",
        GXX_TIMEOUT_S,
        cwd=build.directory,
    )


_INITIALIZER = re.compile(r"(\w+)\s*\[[^\]]*\]\s*=\s*\{([^}]*)\}", re.S)


def _values(text: str) -> np.ndarray:
    return np.array([float(v) for v in text.replace("\n", " ").split(",") if v.strip()])


def synthesized_weights(project: Path) -> dict:
    """{array name: values} of the `weights/*.h` initializers, the numbers synthesis reads."""
    found = {}
    for header in sorted((Path(project) / "firmware" / "weights").glob("*.h")):
        found.update({name: _values(values) for name, values in _INITIALIZER.findall(header.read_text())})
    return found


def check_weight_files(project: Path, owners: dict) -> list[str]:
    """One line per weight array whose `.txt` values (C-sim's) differ from its `.h` initializer (synthesis'),
    naming the layer (`owners`: {array: layer}) and the first differing index. Empty when all agree."""
    problems = []
    for name, synthesized in synthesized_weights(project).items():
        text_file = Path(project) / "firmware" / "weights" / f"{name}.txt"
        if not text_file.exists():
            continue
        simulated, layer = _values(text_file.read_text()), owners.get(name, "?")
        if synthesized.shape != simulated.shape:
            problems.append(f"layer {layer!r}: {name}.h holds {synthesized.size} values, {name}.txt {simulated.size}")
        elif not np.array_equal(synthesized, simulated):
            index = int(np.argmax(synthesized != simulated))
            problems.append(
                f"layer {layer!r}: {name}[{index}] is {synthesized[index]:g} in {name}.h (synthesis) "
                f"but {simulated[index]:g} in {name}.txt (C-sim)"
            )
    return problems


def simulate_synthesized_weights(build: ShippedBuild) -> None:
    """Rewrite the build copy's `.txt` weights from the `.h` initializers: C-sim then runs synthesis' numbers."""
    for name, values in synthesized_weights(build.directory).items():
        text_file = build.directory / "firmware" / "weights" / f"{name}.txt"
        if text_file.exists():
            text_file.write_text(", ".join(repr(float(v)) for v in values))
