"""The default run's stage times at two revisions, side by side in one run.

Each revision is checked out into its own git worktree (the working tree is left alone) and runs `fpgaprune run`
on its own default config (digits) with this Python environment, the revisions alternating, `--repeats` times.
Printed per stage: the median seconds at each revision and after / before, the run's wall time, and the wall
time against the run's own train -> csim stages (a stage may run beside another: the stages' sum is not the
wall time). These machines are noisy: compare ratios from one run, not numbers across runs.

Each run has its own, empty circuit cache (`FPGAPRUNE_CACHE_DIR`), unless `--warm-cache` (then the after runs
share one, filled by a first run that is not counted). `--cold-yosys` also gives each run an empty yowasp cache
(`XDG_CACHE_HOME`): a newcomer's first run, its WebAssembly compiled again.

    python benchmarks/bench_stage_times.py --before 5987f83 --after HEAD
    python benchmarks/bench_stage_times.py --before 5987f83 --no-synth   # leave out the yosys measurement
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
STAGES = ("train", "prune", "finetune", "quantize", "hls", "csim", "synth", "report")


def checkout(revision: str, where: Path, label: str = "") -> Path:
    """A detached worktree of `revision` under `where` (in `label`'s own folder: one revision may be both)."""
    tree = where / (label or "tree") / revision.replace("/", "_")
    tree.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(tree), revision],
        check=True,
        capture_output=True,
    )
    return tree


def run_once(tree: Path, out: Path, synth: bool, caches: dict | None = None) -> dict:
    """Stage -> seconds of one default run at the revision checked out in `tree`, and its wall time ("wall")."""
    config = yaml.safe_load((tree / "fpgaprune" / "pipeline" / "default.yaml").read_text())
    config.setdefault("outputs", {})["synthesize_layers"] = synth
    path = out.with_suffix(".yaml")
    path.write_text(yaml.safe_dump(config))
    env = {**os.environ, "PYTHONPATH": str(tree), "TF_CPP_MIN_LOG_LEVEL": "3", **(caches or {})}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "fpgaprune.cli", "run", str(path), "--out", str(out)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{tree}: fpgaprune run failed: {done.stderr.strip().splitlines()[-1:]}")
    seconds = {
        stage: json.loads((out / stage / "stage.json").read_text())["seconds"]
        for stage in STAGES
        if (out / stage / "stage.json").exists()
    }
    total = re.search(r"^total ([0-9.]+) s", done.stdout, re.M)  # the CLI's: from the first stage to the last
    return {**seconds, "wall": wall, "total": float(total[1]) if total else wall}


def _caches(scratch: Path, label: str, repeat: int, args) -> dict:
    caches = {
        "FPGAPRUNE_CACHE_DIR": str(
            scratch / ("cache-warm" if args.warm_cache and label == "after" else f"cache-{label}-{repeat}")
        )
    }
    if args.cold_yosys:
        caches["XDG_CACHE_HOME"] = str(scratch / f"xdg-{label}-{repeat}")
    return caches


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="the revision to compare against, e.g. a commit")
    parser.add_argument("--after", default="HEAD")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--no-synth", action="store_true", help="outputs.synthesize_layers: false at both")
    parser.add_argument("--warm-cache", action="store_true", help="the after runs share a filled circuit cache")
    parser.add_argument("--cold-yosys", action="store_true", help="every run compiles yowasp's WebAssembly again")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="stage-times-") as scratch:
        scratch = Path(scratch)
        trees = {
            label: checkout(rev, scratch, label) for label, rev in (("before", args.before), ("after", args.after))
        }
        try:
            if args.warm_cache:
                run_once(trees["after"], scratch / "fill", not args.no_synth, _caches(scratch, "after", -1, args))
            times = {label: [] for label in trees}
            for repeat in range(args.repeats):
                for label, tree in trees.items():
                    times[label].append(
                        run_once(
                            tree,
                            scratch / f"{label}-{repeat}",
                            not args.no_synth,
                            _caches(scratch, label, repeat, args),
                        )
                    )
                    print(f"  {label} run {repeat + 1}: {times[label][-1]['wall']:.1f} s", flush=True)
        finally:
            for tree in trees.values():
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
    _print(times, args)


def _print(times: dict, args) -> None:
    own = ("train", "prune", "finetune", "quantize", "hls", "csim")
    print(
        f"\nstage times of the default run (median of {args.repeats}), {args.before} -> {args.after}"
        + (", warm circuit cache" if args.warm_cache else "")
        + (", cold yowasp cache" if args.cold_yosys else "")
    )
    print(f"{'stage':<14} {'before s':>9} {'after s':>9} {'after/before':>13}")
    for stage in (*STAGES, "train..csim", "total", "wall"):
        pick = (
            (lambda run: sum(run.get(s, 0.0) for s in own))
            if stage == "train..csim"
            else (lambda run, stage=stage: run.get(stage, 0.0))
        )
        before, after = (statistics.median(pick(run) for run in times[label]) for label in ("before", "after"))
        print(f"{stage:<14} {before:>9.1f} {after:>9.1f} {after / before if before else float('nan'):>13.2f}")
    for label in ("before", "after"):
        ratios = [run["total"] / sum(run.get(s, 0.0) for s in own) for run in times[label]]
        print(
            f"{label}: the run's total (first stage to last) / its own train..csim stages = "
            f"{statistics.median(ratios):.2f} (median); wall time includes Python's and TensorFlow's start"
        )


if __name__ == "__main__":
    from record import run_recorded

    run_recorded(main, __file__)
