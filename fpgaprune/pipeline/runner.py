"""Run the stages in order, skipping those that are up to date, each written atomically.

A stage's key hashes its own config section and the key of the stage before it, so a change re-runs that
stage and everything after it. A stage writes into `.<stage>.tmp-*` and is renamed into place only when
it finished; a run killed mid-stage leaves no half-written stage (the leftover temporary is removed on
the next run). `stage.json` records the key, the config, the versions of the stack, the time and metrics.
"""

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import time
import uuid
from pathlib import Path

from fpgaprune.atomic import replace_directory, write_text_atomic
from fpgaprune.errors import FpgapruneError, first_line
from fpgaprune.hls.manifest import versions
from fpgaprune.pipeline.records import StageRecord, stage_sections
from fpgaprune.pipeline.stages import STAGES


LOCK_FILE = "run.lock"


class StageFailed(RuntimeError):
    def __init__(self, stage: str, error: BaseException):
        kind = "" if isinstance(error, FpgapruneError) else f"{type(error).__name__}: "
        super().__init__(f"stage {stage} failed: {kind}{first_line(error) if str(error).strip() else ''}")
        self.stage = stage


def _section(config, dotted: str):
    value = config
    for part in dotted.split("."):
        value = getattr(value, part)
    if hasattr(value, "in_effect"):  # a section with settings that only some runs read
        return value.in_effect()
    return value.model_dump() if hasattr(value, "model_dump") else value


def stage_keys(config) -> dict:
    keys, previous = {}, ""
    for stage, sections in stage_sections(config).items():
        payload = json.dumps({"stage": stage, "previous": previous, "seed": config.seed,
                              **{s: _section(config, s) for s in sections}}, sort_keys=True, default=str)
        previous = keys[stage] = hashlib.sha256(payload.encode()).hexdigest()[:16]
    return keys


def _record(run_dir: Path, stage: str) -> dict | None:
    record = StageRecord.read(run_dir / stage / "stage.json")
    return record.model_dump() if record else None


class RunDirectoryBusy(FpgapruneError):
    """Another fpgaprune run holds the run directory's lock."""


@contextlib.contextmanager
def run_lock(run_dir: Path):
    """An exclusive lock on `run_dir/run.lock` for the whole run; a second run gets a one-line error at once."""
    with open(run_dir / LOCK_FILE, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise RunDirectoryBusy(f"{run_dir}: another fpgaprune run ({holder}) is using this run directory; "
                                   "wait for it to finish, or pass --out for a new directory") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def run(config, run_dir, from_stage: str | None = None, echo=print, until: str | None = None) -> dict:
    """Run (or resume) every stage, or those up to `until`, under the run directory's lock; returns {stage: its
    stage.json record}."""
    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise FpgapruneError(f"{run_dir}: is a file; the run directory must be a directory")
    run_dir.mkdir(parents=True, exist_ok=True)
    with run_lock(run_dir):
        return _run_stages(config, run_dir, from_stage, echo, until)


def _run_stages(config, run_dir: Path, from_stage: str | None, echo, until: str | None = None) -> dict:
    for leftover in run_dir.glob(".*.tmp-*"):
        shutil.rmtree(leftover, ignore_errors=True)
    write_text_atomic(run_dir / "config.json", config.model_dump_json(indent=1))
    keys, records, forced = stage_keys(config), {}, False
    for stage, function in STAGES.items():
        forced = forced or stage == from_stage
        record = _record(run_dir, stage)
        if record and record["key"] == keys[stage] and not forced:
            echo(f"  {stage:<9} up to date (skipped)")
            records[stage] = record
            if stage == until:
                break
            continue
        forced = True  # everything after a re-run stage re-runs too
        tmp = run_dir / f".{stage}.tmp-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        echo(f"  {stage:<9} running ...")
        started = time.perf_counter()
        try:
            metrics = function(config, run_dir, tmp)
        except Exception as error:
            shutil.rmtree(tmp, ignore_errors=True)
            raise StageFailed(stage, error) from error
        text = StageRecord(stage=stage, key=keys[stage], seconds=round(time.perf_counter() - started, 1),
                           metrics=metrics, config={s: _section(config, s) for s in stage_sections(config)[stage]},
                           versions=versions()).text()
        (tmp / "stage.json").write_text(text)
        replace_directory(tmp, run_dir / stage)
        records[stage] = json.loads(text)
        echo(f"  {stage:<9} done in {records[stage]['seconds']:.1f} s")
        if stage == until:
            break
    return records
