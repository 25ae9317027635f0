"""hls4ml's C-simulation library and the bridge that runs it: the project built with g++ (hls4ml's `compile()`, its
build script under a time limit) and `<project>_float` with hls4ml's trace calls, in this process or in worker
processes (`workers/csim_chunks.py`), so that a C++ `assert` of the design ends a worker, not this process. The
hls4ml backends' `simulator` and shipped-project runner (`hls/hls4ml_backends.py`, `hls/shipped.py`)."""

import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fpgaprune.errors import FpgapruneError
from fpgaprune.hls.names import map_keys
from fpgaprune.support.tools import GXX_TIMEOUT_S, run_tool
from fpgaprune.workers.csim_chunks import ChunkPool, WorkerStopped, traced_runner

PARALLEL_ABOVE_S = 3.0  # C-sim the rest in worker processes when it would take longer than this in one


@dataclass
class BridgeRun:
    """The C-simulation of a built library (`<project>_float` and hls4ml's trace calls): `run(xq)` in this
    process, or `pool(workers)` of processes that each load it. Traces are keyed by the user's layer names."""

    library: Path
    project_name: str
    output_size: int
    sizes: dict  # traced node -> output size
    names: dict = field(default_factory=dict)  # hls4ml node -> the user's name, where the export renamed it

    def __post_init__(self):
        self._run = None

    def _named(self, result):
        outputs, traces = result
        return outputs, map_keys(traces, self.names) if self.names else traces

    def __call__(self, xq):
        import ctypes

        if self._run is None:
            self._run = traced_runner(
                ctypes.cdll.LoadLibrary(str(self.library)), self.project_name, self.output_size, self.sizes
            )
        return self._named(self._run(xq))

    def map(self, chunks: list, workers: int):
        """Each chunk's (outputs, traces) in order, computed in worker processes, so that a C++ `assert` of the
        design ends a worker, not this process (`CsimAborted`, one line naming the layer and the header): the
        first chunk in one, timed; the rest in up to `workers` when they would take longer than
        PARALLEL_ABOVE_S in one."""
        with tempfile.TemporaryDirectory(prefix="fpgaprune-csim-") as scratch:
            pool = ChunkPool(self.library, self.project_name, self.output_size, self.sizes, 1, scratch)
            try:
                started = time.perf_counter()
                yield from (self._named(result) for result in pool.map(chunks[:1]))
                if (time.perf_counter() - started) * (len(chunks) - 1) > PARALLEL_ABOVE_S:
                    pool.grow(max(1, min(workers, len(chunks) - 1)))
                yield from (self._named(result) for result in pool.map(chunks[1:]))
            except WorkerStopped as stopped:
                raise CsimAborted(aborted_line(stopped, self.library)) from None
            finally:
                pool.close()


class CsimAborted(FpgapruneError):
    """The design's C++ stopped the C-simulation (an `assert` in an hls4ml header): one line naming the layer."""


_ASSERT = re.compile(r"([\w./-]+\.h):(\d+):.*?Assertion `(.*)' failed")
_CONFIG = re.compile(r"CONFIG_T = (\w+)")


def aborted_line(stopped: WorkerStopped, library: Path) -> str:
    """What stopped a C-sim worker, in one line: the layer (from the failed `assert`'s config struct and the
    project's top function), the header and the condition."""
    text = stopped.stderr
    found = _ASSERT.search(text)
    if found is None:
        last = next((line for line in reversed(text.splitlines()) if line.strip()), "no message")
        return f"C-sim of {library.parent} stopped (exit code {stopped.returncode}): {last.strip()}"
    header, line, condition = Path(found[1]).name, found[2], found[3]
    config = _CONFIG.search(text[: found.end()])
    layer = _layer_of_config(library, config[1]) if config else None
    where = f"layer '{layer}'" if layer else "a layer"
    return (
        f"C-sim of {library.parent} stopped in {where}: hls4ml's {header}:{line} asserts `{condition}`, which the "
        "layer's settings break; `fpgaprune validate` names what to change"
    )


def _layer_of_config(library: Path, config: str) -> str | None:
    """The layer whose call in the project's top function uses the config struct `config` (hls4ml writes
    `nnet::...<..., configN>(...); // name`)."""
    for project in (library.parent, library.parent.parent):
        for cpp in (project / "firmware").glob("*.cpp"):
            for text_line in cpp.read_text().splitlines():
                if f"{config}>" in text_line and "//" in text_line:
                    return text_line.rsplit("//", 1)[1].strip()
    return None


def compile_library(hls_model) -> None:
    """hls4ml's `compile()` (write, build_lib.sh, load the library), with a time limit on the g++ build. `-e`: a
    failing g++ stops the script with its error (Catapult's build_lib.sh would go on without `set -e`)."""
    import ctypes

    hls_model.write()
    project = Path(hls_model.config.get_output_dir())
    run_tool(["bash", "-e", "build_lib.sh"], f"g++ build of the C-sim library in {project}", GXX_TIMEOUT_S, cwd=project)
    library = (
        project
        / "firmware"
        / (f"{hls_model.config.get_project_name()}-{hls_model.config.get_config_value('Stamp')}.so")
    )
    hls_model._top_function_lib = ctypes.cdll.LoadLibrary(str(library))


def library_run(hls_model, bound, x=None, names: dict | None = None) -> "BridgeRun":
    """The C-sim of a converted hls4ml model, built with its trace calls where it was not (`compile_library`), as
    a `BridgeRun` for a bound model (`record.resolved`; `x`: an input, where its record has no output shape)."""
    if not hls_model.config.trace_output:
        hls_model.config.trace_output, hls_model._top_function_lib = True, None
    if hls_model._top_function_lib is None:
        compile_library(hls_model)
    sizes = {
        layer.name: int(np.prod(layer.get_output_variable().shape))
        for layer in hls_model.get_layers()
        if layer.get_attr("function_cpp", None) and layer.get_attr("trace", False)
    }
    return BridgeRun(
        Path(hls_model._top_function_lib._name),
        hls_model.config.get_project_name(),
        output_size(bound, x),
        sizes,
        names or {},
    )


def output_size(bound, x=None) -> int:
    """The number of values the bound model gives per sample (`Bound.output_shape`)."""
    return int(np.prod(bound.output_shape(x)[1:]))
