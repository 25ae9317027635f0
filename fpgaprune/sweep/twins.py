"""Points that are one run: an axis the run does not read (the hybrid share of a kernel-pruned point) gives
points whose stage keys are all equal. Each such run is run once; the other points get a copy of its directory,
which the runner finds up to date, and their own config.json and result.json.
"""

import shutil
import time
from pathlib import Path

from fpgaprune.pipeline.runner import run, stage_keys
from fpgaprune.support.atomic import write_text_atomic
from fpgaprune.sweep.trials import RESULT, TrialResult, point_directory


def run_key(config) -> str:
    """The key of the run's last stage, which chains the keys of all the stages before it."""
    return list(stage_keys(config).values())[-1]


def split_twins(planned: list, finished: set) -> tuple:
    """(the pending points to run, one per distinct run, {pending point: the point whose run it is}); a point
    that finished earlier is the one its twins copy."""
    first, to_run, twins = {}, [], {}
    for point, config in sorted(planned, key=lambda planned_point: planned_point[0].name not in finished):
        key, done = run_key(config), point.name in finished
        if key not in first:
            first[key] = point.name
            if not done:
                to_run.append((point, config))
        elif not done:
            twins[point.name] = first[key]
    return to_run, twins


def copy_run(out: Path, point, config, source: TrialResult) -> TrialResult:
    """`point`'s directory as a copy of `source`'s run, brought up to date (nothing re-runs), atomically."""
    started = time.perf_counter()
    if source.error:
        result = TrialResult(point.name, point.as_dict(), error=source.error, same_as=source.name)
        write_text_atomic(out / "points" / point.name / RESULT, result.to_json())
        return result
    with point_directory(out, point.name) as tmp:
        shutil.copytree(out / "points" / source.name, tmp, symlinks=True)
        (tmp / RESULT).unlink(missing_ok=True)
        records = run(config, tmp, echo=lambda line: None)
        metrics = {stage: record["metrics"] for stage, record in records.items()}
        result = TrialResult(
            point.name, point.as_dict(), metrics, None, round(time.perf_counter() - started, 1), same_as=source.name
        )
        write_text_atomic(tmp / RESULT, result.to_json())
    return result
