"""da4ml's cost of the same DA circuits under two da4ml versions: this environment's and another Python's (a venv
with the other version: `python3 -m venv /tmp/da05 && /tmp/da05/bin/pip install da4ml==0.5.2`).

The circuits: the kernels of the default run's digits CNN (conv1, conv2 60% of kernels pruned, fc 50% pruned by
L1), trained briefly and quantized to 6 bits, traced with hls4ml's DA settings (`workers/circuit.matrix_logic`) at
the input types the export gives them. Printed per layer: each version's cost and their ratio, and the time of
each version's first trace.

    python benchmarks/bench_da4ml_versions.py --other /tmp/da05/bin/python
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KIFS = {"conv1": (0, 0, 4), "conv2": (0, 2, 4), "fc": (0, 2, 4)}  # digits on 1/16, quantized_relu(6,2) after
COSTS = """
import json, sys, time
import numpy as np
sys.path.insert(0, {root!r})
from importlib.metadata import version
from fpgaprune.workers.circuit import matrix_logic
arrays, found = np.load({path!r}), {{}}
for name, kif in {kifs!r}.items():
    started = time.perf_counter()
    found[name] = [float(matrix_logic(arrays[name], tuple(kif)).cost), time.perf_counter() - started]
print(json.dumps({{"version": version("da4ml"), "costs": found}}))
"""


def matrices(path: Path) -> None:
    """The default run's kernels, pruned and quantized, as (rows, outputs) matrices in `path`."""
    import numpy as np

    import fpgaprune as fp
    from fpgaprune import data
    from fpgaprune.framework import front_end_of
    from fpgaprune.model import architectures
    from fpgaprune.tfk import keras

    digits = data.digits()
    keras.utils.set_random_seed(0)
    model = architectures.small_cnn(digits.x_train.shape[1:], (8, 16), digits.classes)
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(digits.x_train, digits.y_train, epochs=3, verbose=0)
    held = fp.prune(fp.prune(model, 0.6, layers=["conv2"]), 0.5, structure="element", layers=["fc"])
    bits = {"kernel": "quantized_bits(6,0,alpha=1)", "bias": "quantized_bits(8,3,alpha=1)"}
    quantized = fp.to_qkeras(held, {"default": {**bits, "activation": "quantized_relu(6,2)"}})
    front = front_end_of(quantized)
    found = {}
    for name in KIFS:
        layer = quantized.get_layer(name)
        kernel = front.quantized(layer, "kernel", layer.kernel)
        found[name] = kernel.reshape(-1, kernel.shape[-1])
    np.savez(path, **found)


def costs(python: str, path: Path) -> dict:
    script = COSTS.format(root=str(ROOT), path=str(path), kifs={k: list(v) for k, v in KIFS.items()})
    done = subprocess.run([python, "-c", script], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--other", required=True, help="a Python whose environment holds the other da4ml version")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "matrices.npz"
        matrices(path)
        started = time.perf_counter()
        runs = [costs(args.other, path), costs(sys.executable, path)]
        print(f"traced both in {time.perf_counter() - started:.1f} s")
    before, after = runs
    print(f"\nda4ml's cost of the default run's DA circuits: {before['version']} -> {after['version']}")
    print(
        f"{'layer':<6} {'cost ' + before['version']:>12} {'cost ' + after['version']:>12} {'ratio':>7}  first trace s"
    )
    for name in KIFS:
        (a, seconds_a), (b, seconds_b) = before["costs"][name], after["costs"][name]
        print(f"{name:<6} {a:>12.0f} {b:>12.0f} {b / a:>7.3f}  {seconds_a:.1f} -> {seconds_b:.1f}")
    total_a = sum(c for c, _ in before["costs"].values())
    total_b = sum(c for c, _ in after["costs"].values())
    print(f"{'all':<6} {total_a:>12.0f} {total_b:>12.0f} {total_b / total_a:>7.3f}")


if __name__ == "__main__":
    from record import run_recorded

    run_recorded(main, __file__)
