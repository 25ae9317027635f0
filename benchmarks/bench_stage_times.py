"""The default run's stage times at two revisions, side by side in one run.

Each revision is checked out into its own git worktree (the working tree is left alone) and runs `fpgaprune run`
on its own default config (digits) with this Python environment, the revisions alternating, `--repeats` times.
Printed per stage: the median seconds at each revision and after / before. These machines are noisy: compare
ratios from one run, not numbers across runs.

    python benchmarks/bench_stage_times.py --before 5987f83 --after HEAD
    python benchmarks/bench_stage_times.py --before 5987f83 --no-synth   # leave out the yosys measurement
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
STAGES = ("train", "prune", "finetune", "quantize", "hls", "csim", "synth", "report")


def checkout(revision: str, where: Path) -> Path:
    """A detached worktree of `revision` under `where`."""
    tree = where / revision.replace("/", "_")
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(tree), revision], check=True,
                   capture_output=True)
    return tree


def run_once(tree: Path, out: Path, synth: bool) -> dict:
    """Stage -> seconds of one default run at the revision checked out in `tree`."""
    config = yaml.safe_load((tree / "fpgaprune" / "pipeline" / "default.yaml").read_text())
    config.setdefault("outputs", {})["synthesize_layers"] = synth
    path = out.with_suffix(".yaml")
    path.write_text(yaml.safe_dump(config))
    env = {**os.environ, "PYTHONPATH": str(tree), "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run([sys.executable, "-m", "fpgaprune.cli", "run", str(path), "--out", str(out)], cwd=tree,
                          env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: fpgaprune run failed: {done.stderr.strip().splitlines()[-1:]}")
    return {stage: json.loads((out / stage / "stage.json").read_text())["seconds"] for stage in STAGES
            if (out / stage / "stage.json").exists()}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="the revision to compare against, e.g. a commit")
    parser.add_argument("--after", default="HEAD")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--no-synth", action="store_true", help="outputs.synthesize_layers: false at both")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="stage-times-") as scratch:
        scratch = Path(scratch)
        trees = {label: checkout(rev, scratch) for label, rev in (("before", args.before), ("after", args.after))}
        try:
            times = {label: [] for label in trees}
            for repeat in range(args.repeats):
                for label, tree in trees.items():
                    times[label].append(run_once(tree, scratch / f"{label}-{repeat}", not args.no_synth))
                    print(f"  {label} run {repeat + 1}: {sum(times[label][-1].values()):.1f} s", flush=True)
        finally:
            for tree in trees.values():
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
    print(f"\nstage times of the default run (median of {args.repeats}), {args.before} -> {args.after}")
    print(f"{'stage':<9} {'before s':>9} {'after s':>9} {'after/before':>13}")
    for stage in (*STAGES, "total"):
        pick = (lambda run: sum(run.values())) if stage == "total" else (lambda run: run.get(stage, 0.0))
        before, after = (statistics.median(pick(run) for run in times[label]) for label in ("before", "after"))
        print(f"{stage:<9} {before:>9.1f} {after:>9.1f} {after / before if before else float('nan'):>13.2f}")


if __name__ == "__main__":
    from record import run_recorded

    run_recorded(main, __file__)
