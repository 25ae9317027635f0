"""A C-sim library's bridge, run over samples: each sample's outputs and, in the same call, hls4ml's trace of
every traced layer. In the calling process (`traced_runner`), or in worker processes that each load the library
once (`ChunkPool`): io_stream code keeps `static` state, so processes, never threads, share the work, and a C++
`assert` in the design ends a worker, not its caller. Each sample is independent of the ones before it (the
csim tests compare every sample with QKeras).
"""

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np


class _TraceData(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p)]


def _samples(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(x, np.float64).reshape(len(x), -1))


def traced_runner(library, project_name: str, output_size: int, sizes: dict):
    """`run(xq) -> (outputs, {layer: outputs})` through a loaded C-sim library: its `<project>_double` top
    function and hls4ml's trace calls for the layers of `sizes` ({layer: output size}). One pass gives both, in
    float64: a fixed-point value of up to 53 bits exactly (float32 would round an accumulator past 24)."""
    top = getattr(library, f"{project_name}_double")
    top.restype = None
    top.argtypes = [np.ctypeslib.ndpointer(ctypes.c_double, flags="C_CONTIGUOUS")] * 2
    library.allocate_trace_storage.argtypes = [ctypes.c_size_t]
    library.collect_trace_output.argtypes = [ctypes.POINTER(_TraceData)]

    def run(x: np.ndarray) -> tuple[np.ndarray, dict]:
        x = _samples(x)
        outputs = np.zeros((len(x), output_size), np.float64)
        traced = {name: np.zeros((len(x), size), np.float64) for name, size in sizes.items()}
        slots = (_TraceData * len(sizes))()
        library.allocate_trace_storage(ctypes.sizeof(ctypes.c_double))
        try:
            for i in range(len(x)):
                top(x[i], outputs[i])
                library.collect_trace_output(slots)
                for slot in slots:
                    name = slot.name.decode()
                    values = ctypes.cast(slot.data, ctypes.POINTER(ctypes.c_double))
                    traced[name][i] = np.ctypeslib.as_array(values, shape=(sizes[name],))
        finally:
            library.free_trace_storage()
        return outputs, traced

    return run


class WorkerStopped(RuntimeError):
    """A C-sim worker ended without answering (an `assert` in the design's C++ aborts it): what it printed."""

    def __init__(self, request: str, returncode, stderr: str):
        super().__init__(f"a C-sim worker stopped (exit {returncode}) on {request}")
        self.returncode, self.stderr = returncode, stderr


class ChunkPool:
    """Worker processes (this file run as a script: they import numpy and ctypes only, never fpgaprune's package
    or the caller's script) that each load the library at `path` once and run chunks of samples through it;
    chunks and results pass through files in `scratch`, results come back in submission order. A worker that
    ends without answering raises WorkerStopped with its stderr."""

    def __init__(self, path, project_name: str, output_size: int, sizes: dict, workers: int, scratch):
        self.scratch = Path(scratch)
        self.spec = json.dumps(
            {"library": str(path), "project": project_name, "output_size": output_size, "sizes": dict(sizes)}
        )
        self.workers, self._count = [], 0
        self.grow(workers)

    def grow(self, workers: int) -> None:
        """Start workers until there are `workers`."""
        while len(self.workers) < workers:
            stderr = open(self.scratch / f"worker{len(self.workers)}.err", "w+")
            process = subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve()), self.spec],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
            self.workers.append((process, stderr))

    def _send(self, worker, chunk: np.ndarray) -> Path:
        self._count += 1
        request = self.scratch / f"chunk{self._count}.npy"
        np.save(request, chunk)
        try:
            worker[0].stdin.write(f"{request}\n")
            worker[0].stdin.flush()
        except BrokenPipeError:  # it ended already: _receive says how
            pass
        return request

    @staticmethod
    def _receive(worker, request: Path) -> tuple[np.ndarray, dict]:
        process, stderr = worker
        line = process.stdout.readline().strip()
        if not line.startswith("done "):
            if line:  # not an answer: it cannot be served further
                process.kill()
            returncode = process.wait()
            stderr.seek(0)
            raise WorkerStopped(request.name, returncode, stderr.read())
        with np.load(line[5:]) as result:
            outputs = result["__outputs__"]
            traces = {name: result[name] for name in result.files if name != "__outputs__"}
        Path(line[5:]).unlink()
        request.unlink()
        return outputs, traces

    def map(self, chunks):
        """(outputs, traces) of each chunk of hardware inputs, in order: each worker holds one chunk at a time."""
        pending = []
        for index, chunk in enumerate(chunks):
            worker = self.workers[index % len(self.workers)]
            if len(pending) == len(self.workers):
                yield self._receive(*pending.pop(0))
            pending.append((worker, self._send(worker, chunk)))
        while pending:
            yield self._receive(*pending.pop(0))

    def close(self) -> None:
        for process, stderr in self.workers:
            try:
                process.stdin.close()
                process.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                process.kill()
            stderr.close()


def main(argv=None) -> int:
    """Serve chunk requests: one `.npy` path per line on stdin; `done <.npz path>` per answer on stdout. What the
    design's C++ prints (hls::stream's warnings, its own `std::cout`) goes to stderr, never into the answers."""
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    spec = json.loads((argv or sys.argv[1:])[0])
    run = traced_runner(ctypes.cdll.LoadLibrary(spec["library"]), spec["project"], spec["output_size"], spec["sizes"])
    for line in sys.stdin:
        request = Path(line.strip())
        outputs, traces = run(np.load(request))
        answer = request.with_suffix(".out.npz")
        np.savez(answer, __outputs__=outputs, **traces)
        print(f"done {answer}", file=answers, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
