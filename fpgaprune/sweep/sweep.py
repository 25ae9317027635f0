"""`run_sweep()`: every point of a grid as an ordinary run, on a local Ray or a cluster, resumable; points that
are one run (an axis the run does not read) run once."""

import json
import re
from pathlib import Path

import yaml

from fpgaprune.errors import FpgapruneError, first_line
from fpgaprune.pipeline.checks import check_against_model, check_config
from fpgaprune.pipeline.runner import run, stage_keys
from fpgaprune.pipeline.schema import parse_config
from fpgaprune.pipeline.training import build_model, dataset_of
from fpgaprune.support.atomic import write_text_atomic
from fpgaprune.support.extras import require_extra
from fpgaprune.sweep.grid import SweepError, point_config, points
from fpgaprune.sweep.results import summary_line, write_results
from fpgaprune.sweep.trials import RESULT, TRIAL_ENV, SweepOutcome, TrialResult, archive, finished, store, trial
from fpgaprune.sweep.twins import copy_run, split_twins


def plan(config, grid: dict) -> list:
    """[(point, its RunConfig)], every point checked like `fpgaprune validate` (against its model too) before
    anything runs; one line naming a bad point."""
    base, models, planned = config.model_dump(mode="json"), {}, []
    for point in points(grid):
        try:
            parsed, at = parse_config(yaml.safe_dump(point_config(base, point)), f"sweep point {point.name}")
            parsed.model._trust_code = config.model.trust_code
            check_config(parsed, at)
            key = json.dumps([parsed.model.model_dump(), parsed.data.model_dump()], sort_keys=True)
            if key not in models:
                models[key] = build_model(parsed, dataset_of(parsed))
            check_against_model(parsed, at, models[key])
        except FpgapruneError as error:  # the line numbers of a generated config mean nothing to the user
            message = re.sub(rf"^(sweep point {re.escape(point.name)}):\d+:", r"\1:", first_line(error))
            raise SweepError(message) from None
        planned.append((point, parsed))
    return planned


def shared_training(planned: list, shared: Path, echo) -> dict:
    """Run each distinct train stage once (in the driver) and pack it: {train key: .tar.gz of `train/`}."""
    packed = {}
    for _, config in planned:
        key = stage_keys(config)["train"]
        if key not in packed:
            echo(f"sweep: training once for every point that shares it ({key})")
            run(config, shared / key, echo=lambda line: None, until="train")
            packed[key] = archive(shared / key / "train", "train")
    return packed


def run_sweep(config, grid: dict, out, address: str | None = None, cpus: int | None = None, echo=print) -> SweepOutcome:
    """Run (or resume) every point of `grid` under `<out>/points/`; write the results table and Pareto plot. Ray
    (the `sweep` extra) is checked before anything runs."""
    require_extra("ray", "fpgaprune sweep")
    out = Path(out)
    planned = plan(config, grid)
    earlier = {point.name: finished(out / "points" / point.name) for point, _ in planned}
    done = {name for name, result in earlier.items() if result}
    pending, twins = split_twins(planned, done)
    echo(
        f"sweep: {len(planned)} points, {len(done)} finished earlier, {len(pending)} to run"
        + (f", {len(twins)} the same run as another point (copied, not run again)" if twins else "")
    )
    results = {}
    if pending:
        results = _on_ray(pending, shared_training(pending, out / "shared", echo), out, address, cpus, echo)
    for point, parsed in planned:
        if point.name in twins:
            source = twins[point.name]
            results[point.name] = copy_run(out, point, parsed, earlier[source] or results[source])
            echo(f"  {summary_line(results[point.name])}")
    outcome = SweepOutcome([earlier[point.name] or results[point.name] for point, _ in planned])
    write_results(out, outcome, config)
    return outcome


def _on_ray(pending: list, trains: dict, out: Path, address, cpus, echo) -> dict:
    ray = require_extra("ray", "fpgaprune sweep")

    started_here = not ray.is_initialized()
    if started_here:
        ray.init(
            address=address,
            num_cpus=None if address else cpus,
            include_dashboard=False,
            log_to_driver=False,
            logging_level="ERROR",
            runtime_env={"env_vars": TRIAL_ENV},
        )
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(trial)
        train_refs = {key: ray.put(data) for key, data in trains.items()}
        refs = {
            remote.remote(
                point.name,
                point.as_dict(),
                parsed.model_dump_json(),
                train_refs[stage_keys(parsed)["train"]],
                parsed.model.trust_code,
            ): point
            for point, parsed in pending
        }
        results = {}
        while refs:
            (ready,), _ = ray.wait(list(refs), num_returns=1)
            point = refs.pop(ready)
            try:
                result = store(out, ray.get(ready))
            except Exception as failure:  # noqa: BLE001 - a lost worker fails its point, not the sweep
                result = TrialResult(point.name, point.as_dict(), error=first_line(failure))
                write_text_atomic(out / "points" / point.name / RESULT, result.to_json())
            results[point.name] = result
            echo(f"  [{len(results)}/{len(pending)}] {summary_line(result)}")
        return results
    finally:
        if started_here:
            ray.shutdown()
