"""C-sim build cost of the generated code as the model grows: fpgaprune's kernel-sparse project vs stock hls4ml.

Model `Input(8,8,C) -> Conv2D(C,3,same) -> Flatten -> Dense(10)`, half of the conv kernels pruned (by L1),
8 bits, latency_parallel (io_parallel, Latency). For each C the same QKeras model is exported twice, with
fpgaprune's kernel-sparse code and as stock hls4ml writes it, and each project's C-sim library is built with
its own `build_lib.sh` (g++), one build at a time, the two alternating. Printed: live weights, the median build time of
`--repeats` builds and the peak resident memory of the compiler (getrusage of the children, per build), and
fpgaprune / stock for both. Target: <= 1.5x stock's time and <= 1.2x its memory at every size.
"""

import argparse
import statistics
import subprocess
import tempfile
from pathlib import Path

import numpy as np

import fpgaprune as fp
from fpgaprune.hls import convert_model, export_config
from fpgaprune.hls.manifest import quantized_kernel
from fpgaprune.pruning import Pruner
from fpgaprune.quantize import to_qkeras
from fpgaprune.record import record_of, resolved
from fpgaprune.support.text_table import format_rows
from fpgaprune.tfk import keras

SPEC = {
    "default": {
        "kernel": "quantized_bits(8,0,alpha=1)",
        "bias": "quantized_bits(8,3,alpha=1)",
        "activation": "quantized_relu(8,3)",
    }
}


def model_for(channels: int):
    keras.utils.set_random_seed(channels)
    L = keras.layers
    model = keras.Sequential(
        [
            keras.Input((8, 8, channels)),
            L.Conv2D(channels, 3, padding="same", name="conv"),
            L.Flatten(name="flatten"),
            L.Dense(10, name="fc"),
        ]
    )
    held = Pruner(structure="kernel", layers=["conv"]).prune(fp.hold(model), sparsity=0.5)
    return to_qkeras(held, SPEC)


def written(model, x, directory: Path, kernel_sparse: bool) -> Path:
    config, io_type, _ = export_config(resolved(model), "latency_parallel", x, kernel_sparse=kernel_sparse)
    hls_model = convert_model(resolved(model), config, directory, io_type=io_type, backend="Vitis")
    hls_model.write()
    return directory


def measured(sparse: Path, stock: Path, repeats: int) -> tuple[tuple, tuple]:
    """(median seconds, peak GB) of each project, their builds alternating so that noise hits both alike."""
    runs = {sparse: [], stock: []}
    for _ in range(repeats):
        for project in (sparse, stock):
            runs[project].append(_isolated_build(project))
    return tuple((statistics.median(r[0] for r in runs[p]), max(r[1] for r in runs[p])) for p in (sparse, stock))


def _isolated_build(project: Path) -> tuple[float, float]:
    """One build in a child Python process, so that its RUSAGE_CHILDREN peak is this build's alone."""
    code = (
        "import resource, subprocess, sys, time; t = time.perf_counter(); "
        f"subprocess.run(['bash', 'build_lib.sh'], cwd={str(project)!r}, check=True, capture_output=True); "
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    out = subprocess.run(["python3", "-c", code], check=True, capture_output=True, text=True).stdout.split()
    return float(out[0]), float(out[1]) / 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", default="8,16,32,64")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for channels in (int(c) for c in args.channels.split(",")):
        model = model_for(channels)
        x = np.random.default_rng(0).integers(0, 16, (32, 8, 8, channels)) / 16.0
        live = sum(
            int(np.count_nonzero(quantized_kernel(record_of(model).layers[layer.name])))
            for layer in model.layers
            if quantized_kernel(record_of(model).layers[layer.name]) is not None
        )
        with tempfile.TemporaryDirectory() as scratch:
            sparse, stock = measured(
                written(model, x, Path(scratch) / "sparse", True),
                written(model, x, Path(scratch) / "stock", False),
                args.repeats,
            )
        rows.append(
            (
                channels,
                f"{live / 1000:.1f}k",
                f"{sparse[0]:.1f} s",
                f"{sparse[1]:.2f} GB",
                f"{stock[0]:.1f} s",
                f"{stock[1]:.2f} GB",
                f"{sparse[0] / stock[0]:.2f}x",
                f"{sparse[1] / stock[1]:.2f}x",
            )
        )
        print(
            "\n".join(
                format_rows(
                    (
                        "C",
                        "live weights",
                        "fpgaprune build",
                        "g++ peak",
                        "stock build",
                        "g++ peak",
                        "time ratio",
                        "memory ratio",
                    ),
                    rows,
                )
            ),
            flush=True,
        )


if __name__ == "__main__":
    from record import run_recorded

    run_recorded(main, __file__)
