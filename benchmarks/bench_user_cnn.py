"""Networks a user recognizes, through `fpgaprune run` as a user runs it: stage times, wall time, peak memory
and the estimates against the board, at one or two revisions side by side.

- part6: the CNN of the hls4ml tutorial's part 6 (three 3x3 convs of 16/16/24 filters with batch norm and
  max-pooling, Dense 42/64/10) on Fashion-MNIST: 50% of conv kernels pruned, 6 bits, io_stream, ZCU102.
- jet: a jet-tagger-shaped MLP 16-64-32-32-5 on the UCI letters A-E (16 features; `apt-get install
  opencv-doc`): 75% of the weights pruned element-wise, 6 bits, io_parallel, PYNQ-Z2.
- residual: a digits CNN with a residual `Add` (8 filters, `same`) and Dense 512 -> 10: 50% kernels, 6 bits.

Each network is trained here first (the user's own trained `.h5`, with its `.npz`), then run with a YAML file
and default settings otherwise (the yosys measurement included). The run's process tree is polled for its
memory (psutil). With `--before REV` each network also runs at that revision (a git worktree), alternating.

    python benchmarks/bench_user_cnn.py                      # this checkout
    python benchmarks/bench_user_cnn.py --before c302d2f     # and a revision before, side by side
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_stage_times import ROOT, STAGES, checkout  # noqa: E402

LETTERS = Path("/usr/share/doc/opencv-doc/examples/data/letter-recognition.data")
SIX_BITS = {
    "kernel": "quantized_bits(6,0,alpha=1)",
    "bias": "quantized_bits(6,2,alpha=1)",
    "activation": "quantized_relu(6,2)",
}


def part6(keras):
    L = keras.layers
    body = [keras.Input((28, 28, 1))]
    for i, filters in enumerate((16, 16, 24), start=1):
        body += [
            L.Conv2D(filters, 3, use_bias=False, name=f"conv{i}"),
            L.BatchNormalization(name=f"bn{i}"),
            L.ReLU(name=f"relu{i}"),
            L.MaxPooling2D(2, name=f"pool{i}"),
        ]
    body += [
        L.Flatten(name="flatten"),
        L.Dense(42, use_bias=False, name="fc1"),
        L.BatchNormalization(name="bn4"),
        L.ReLU(name="relu4"),
        L.Dense(64, use_bias=False, name="fc2"),
        L.BatchNormalization(name="bn5"),
        L.ReLU(name="relu5"),
        L.Dense(10, activation="softmax", name="output"),
    ]
    return keras.Sequential(body, name="part6_cnn")


def jet(keras):
    L = keras.layers
    return keras.Sequential(
        [
            keras.Input((16,)),
            L.Dense(64, activation="relu", name="fc1"),
            L.Dense(32, activation="relu", name="fc2"),
            L.Dense(32, activation="relu", name="fc3"),
            L.Dense(5, activation="softmax", name="output"),
        ],
        name="jet_mlp",
    )


def residual(keras):
    L = keras.layers
    image = keras.Input((8, 8, 1))
    a = L.ReLU(name="relu1")(L.Conv2D(8, 3, padding="same", name="conv1")(image))
    b = L.ReLU(name="relu2")(L.Conv2D(8, 3, padding="same", name="conv2")(a))
    merged = L.Flatten(name="flatten")(L.Add(name="add")([a, b]))
    return keras.Model(image, L.Dense(10, activation="softmax", name="fc")(merged), name="residual_cnn")


def datasets():
    from fpgaprune import data

    fashion, digits = data.fashion_mnist(), data.digits()
    rows = np.loadtxt(LETTERS, delimiter=",", dtype=str)
    keep = np.isin(rows[:, 0], list("ABCDE"))
    x, y = rows[keep, 1:].astype(np.float32) / 16.0, np.array(["ABCDE".index(c) for c in rows[keep, 0]])
    split = int(0.75 * len(x))
    return {
        "part6": (fashion.x_train, fashion.y_train, fashion.x_test, fashion.y_test),
        "jet": (x[:split], y[:split], x[split:], y[split:]),
        "residual": (digits.x_train, digits.y_train, digits.x_test, digits.y_test),
    }


NETWORKS = {  # builder, pre-training epochs, the run's YAML (beside model and data)
    "part6": (
        part6,
        6,
        {
            "pruning": {"structure": "kernel", "targets": {"conv2": 0.5, "conv3": 0.5}},
            "training": {"batch_size": 128},
            "finetune": {"epochs": 3},
            "quantization": {"default": SIX_BITS, "qat_epochs": 3},
            "hls": {"preset": "latency_stream"},
            "board": "zcu102",
        },
    ),
    "jet": (
        jet,
        40,
        {
            "pruning": {"structure": "element", "targets": {"fc1": 0.75, "fc2": 0.75, "fc3": 0.75}},
            "finetune": {"epochs": 10},
            "quantization": {"default": SIX_BITS, "qat_epochs": 10},
            "board": "pynq-z2",
        },
    ),
    "residual": (
        residual,
        10,
        {"pruning": {"structure": "kernel", "targets": {"conv2": 0.5}}, "quantization": {"default": SIX_BITS}},
    ),
}


def prepare(root: Path, names: list) -> dict:
    """Train each network here (the user's model), save it with its data and a YAML; return {name: YAML path}."""
    import fpgaprune  # noqa: F401  (TF_USE_LEGACY_KERAS before TensorFlow)
    from fpgaprune.tfk import keras

    data, configs = datasets(), {}
    for name in names:
        build, epochs, settings = NETWORKS[name]
        x_train, y_train, x_test, y_test = data[name]
        keras.utils.set_random_seed(0)
        model = build(keras)
        model.compile(keras.optimizers.Adam(2e-3), "sparse_categorical_crossentropy", metrics=["accuracy"])
        model.fit(x_train, y_train, batch_size=128, epochs=epochs, verbose=0)
        model.save(root / f"{name}.h5")
        np.savez(root / f"{name}.npz", x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)
        config = {
            "name": name,
            "model": {"file": str(root / f"{name}.h5")},
            "data": {"dataset": "npz", "file": str(root / f"{name}.npz")},
            **settings,
        }
        configs[name] = root / f"{name}.yaml"
        configs[name].write_text(yaml.safe_dump(config))
        print(
            f"  {name}: trained {epochs} epochs, test accuracy {model.evaluate(x_test, y_test, verbose=0)[1]:.4f}",
            flush=True,
        )
    return configs


def _watch(pid: int, peak: list, stop: threading.Event) -> None:
    import psutil

    process = psutil.Process(pid)
    while not stop.wait(0.2):
        try:
            members = [process, *process.children(recursive=True)]
            peak[0] = max(peak[0], sum(m.memory_info().rss for m in members if m.is_running()))
        except psutil.Error:
            pass


def _kill(pid: int) -> None:
    import psutil

    parent = psutil.Process(pid)
    for member in [*parent.children(recursive=True), parent]:
        try:
            member.kill()
        except psutil.Error:
            pass


def run(tree: Path, config: Path, out: Path, cache: Path, timeout: float) -> dict:
    """One `fpgaprune run` at the revision in `tree`: its stage seconds, wall time, peak memory and report (its
    process tree is killed past `timeout` seconds)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "TF_CPP_MIN_LOG_LEVEL": "3", "FPGAPRUNE_CACHE_DIR": str(cache)}
    started, peak, stop = time.perf_counter(), [0], threading.Event()
    process = subprocess.Popen(
        [sys.executable, "-m", "fpgaprune.cli", "run", str(config), "--out", str(out)],
        cwd=tree,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watcher = threading.Thread(target=_watch, args=(process.pid, peak, stop), daemon=True)
    watcher.start()
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(process.pid)
        stdout, stderr = process.communicate()
        stderr += f"\nstopped by the benchmark after {timeout:.0f} s"
    stop.set()
    wall = time.perf_counter() - started
    if process.returncode != 0:
        return {"failed": (stderr.strip().splitlines() or ["?"])[-1], "wall": wall, "peak_gb": peak[0] / 2**30}
    stages = {s: json.loads((out / s / "stage.json").read_text()) for s in STAGES if (out / s / "stage.json").exists()}
    waited = [float(line.split("waited ")[1].split(" s")[0]) for line in stdout.splitlines() if " waited " in line]
    return {
        "stages": {s: r["seconds"] for s, r in stages.items()},
        "wall": wall,
        "peak_gb": peak[0] / 2**30,
        "synth_waited": sum(waited),
        "beside": bool(waited),
        "report": stages.get("report", {}).get("metrics", {}),
        "csim": stages.get("csim", {}).get("metrics", {}),
        "synth": stages.get("synth", {}).get("metrics", {}),
        "headline": stdout.strip().splitlines()[-7:],
    }


def show(name: str, label: str, result: dict, x_test: int) -> None:
    print(
        f"\n{name} at {label}: wall {result['wall']:.0f} s, peak memory of the run's processes "
        f"{result['peak_gb']:.2f} GB"
    )
    if "failed" in result:
        print(f"  FAILED: {result['failed']}")
        return
    seconds = result["stages"]
    training = sum(seconds.get(s, 0) for s in ("train", "prune", "finetune", "quantize"))
    synth = result["synth_waited"] if result["beside"] else seconds.get("synth", 0)  # beside csim: its wait only
    after_qat = sum(seconds.get(s, 0) for s in ("hls", "csim", "report")) + synth
    print(
        "  "
        + ", ".join(f"{s} {v:.1f}" for s, v in seconds.items())
        + (f" (s; synth ran beside csim, then {synth:.1f} s of waiting)" if result["beside"] else " (s)")
    )
    print(
        f"  training stages {training:.0f} s; everything after QAT {after_qat:.0f} s: "
        f"{after_qat / training if training else float('nan'):.2f} x the training stages"
    )
    csim = seconds.get("csim")
    if csim:
        simulated = result["csim"].get("samples") or x_test  # a seeded sample of the held-out set, or all of it
        print(
            f"  C-sim stage {csim:.1f} s over {simulated} of {x_test} held-out samples "
            f"({1000 * csim / simulated:.2f} ms per sample, g++ build included)"
        )
    report = result["report"]
    print(f"  estimate: LUT {report.get('lut')}, DSP {report.get('dsp')}, fits {report.get('fits')}")
    print("  " + "\n  ".join(result["headline"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--networks", default="part6,jet,residual")
    parser.add_argument("--before", help="also run at this revision, side by side")
    parser.add_argument("--timeout", type=float, default=1800, help="stop a run after this many seconds")
    args = parser.parse_args()
    names = args.networks.split(",")
    with tempfile.TemporaryDirectory(prefix="user-cnn-") as scratch:
        scratch = Path(scratch)
        configs = prepare(scratch, names)
        trees = {"after": checkout("HEAD", scratch, "after")}  # the commit: edits meanwhile do not count
        if args.before:
            trees["before"] = checkout(args.before, scratch, "before")
        try:
            sizes = {name: len(np.load(scratch / f"{name}.npz")["x_test"]) for name in names}
            for name in names:
                for label, tree in trees.items():  # a fresh circuit cache: nothing measured before counts
                    result = run(
                        tree,
                        configs[name],
                        scratch / f"{name}-{label}",
                        scratch / f"cache-{name}-{label}",
                        args.timeout,
                    )
                    show(name, f"{label} ({args.before if label == 'before' else 'HEAD'})", result, sizes[name])
        finally:
            for tree in trees.values():
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)


if __name__ == "__main__":
    from record import run_recorded

    run_recorded(main, __file__)
