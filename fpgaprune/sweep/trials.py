"""Running a sweep's points on Ray: training once per distinct training config, then every point as an
ordinary run directory.

Each trial runs in a temporary directory on whichever node Ray gives it and returns its metrics and its whole
run directory (a .tar.gz) to the driver, which unpacks it under `<out>/points/<point>/`. So a cluster needs
no shared storage; its workers need fpgaprune installed. A point is finished when its directory holds
`result.json` without an error; a resumed sweep does not run finished points again.
"""

import contextlib
import io
import json
import shutil
import tarfile
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from fpgaprune.errors import first_line
from fpgaprune.pipeline.records import json_value
from fpgaprune.pipeline.runner import run
from fpgaprune.pipeline.schema import RunConfig
from fpgaprune.support.atomic import replace_directory, write_text_atomic

RESULT = "result.json"
# Trials run one per CPU: TensorFlow in each keeps to one thread, and stays quiet.
TRIAL_ENV = {
    "TF_USE_LEGACY_KERAS": "1",
    "TF_CPP_MIN_LOG_LEVEL": "3",
    "TF_NUM_INTRAOP_THREADS": "1",
    "TF_NUM_INTEROP_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "FPGAPRUNE_WORKERS": "1",
}


@dataclass
class TrialResult:
    name: str
    values: dict
    metrics: dict | None = None
    error: str | None = None
    seconds: float = 0.0
    ran: bool = True  # False: finished in an earlier sweep, read back
    same_as: str | None = None  # the point whose run this is (copied, not run again)

    def to_json(self) -> str:
        return json.dumps(
            {
                "name": self.name,
                "values": self.values,
                "metrics": self.metrics,
                "error": self.error,
                "seconds": self.seconds,
                "same_as": self.same_as,
            },
            indent=1,
            default=json_value,
        )


@dataclass
class SweepOutcome:
    results: list = field(default_factory=list)  # TrialResult per point, in grid order

    @property
    def ran(self) -> list:
        return [r.name for r in self.results if r.ran and not r.same_as]

    @property
    def copied(self) -> list:
        return [r.name for r in self.results if r.ran and r.same_as]

    @property
    def failed(self) -> list:
        return [r for r in self.results if r.error]


def archive(directory: Path, arcname: str = ".") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(directory, arcname=arcname)
    return buffer.getvalue()


def unpack(data: bytes, directory: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(directory, filter="data")  # no links out, no absolute paths


def finished(point_dir: Path) -> TrialResult | None:
    """The result of a point that finished in an earlier sweep, or None (never ran, failed, or unreadable)."""
    try:
        raw = json.loads((point_dir / RESULT).read_text())
    except (OSError, ValueError):
        return None
    if raw.get("error") or not raw.get("metrics"):
        return None
    return TrialResult(
        raw["name"], raw["values"], raw["metrics"], None, raw.get("seconds", 0.0), ran=False, same_as=raw.get("same_as")
    )


def trial(name: str, values: dict, config_json: str, train: bytes, trust_code: bool) -> dict:
    """One point, wherever Ray runs it: unpack the shared training, run every stage, return metrics and the
    run directory. Failures come back as one line."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fpgaprune-trial-") as tmp:
        run_dir = Path(tmp) / "run"
        run_dir.mkdir()
        unpack(train, run_dir)
        metrics, error = None, None
        try:
            config = RunConfig.model_validate_json(config_json)
            config.model._trust_code = trust_code
            records = run(config, run_dir, echo=lambda line: None)
            metrics = {stage: record["metrics"] for stage, record in records.items()}
        except Exception as failure:  # noqa: BLE001 - a failed point is reported, the sweep goes on
            error = first_line(failure)
        result = TrialResult(name, values, metrics, error, round(time.perf_counter() - started, 1))
        return {"result": result.to_json(), "archive": archive(run_dir)}


def store(out: Path, reply: dict) -> TrialResult:
    """Unpack a trial's run directory under `<out>/points/<name>/` with its result.json, atomically."""
    raw = json.loads(reply["result"])
    result = TrialResult(raw["name"], raw["values"], raw["metrics"], raw["error"], raw["seconds"])
    with point_directory(out, result.name) as tmp:
        tmp.mkdir()
        unpack(reply["archive"], tmp)
        write_text_atomic(tmp / RESULT, result.to_json())
    return result


@contextlib.contextmanager
def point_directory(out: Path, name: str):
    """A temporary path that becomes `<out>/points/<name>/` when the block ends without an error."""
    final = out / "points" / name
    tmp = final.with_name(f".{name}.tmp-{uuid.uuid4().hex[:8]}")
    tmp.parent.mkdir(parents=True, exist_ok=True)
    try:
        yield tmp
        replace_directory(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
