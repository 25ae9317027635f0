"""The run config (one YAML file): a pydantic schema, plus the checks that need fpgaprune itself.

Every error is one line: `file:line: key.path: what was found; what is allowed`.
"""

import difflib
from pathlib import Path
from typing import Literal, Optional, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, PositiveInt, PrivateAttr, ValidationError

from fpgaprune.errors import FpgapruneError


class ConfigError(FpgapruneError):
    """A run config that does not validate (exit code 2)."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelSection(Strict):
    architecture: Optional[Literal["small_cnn", "original_question_cnn"]] = "small_cnn"
    file: Optional[str] = None  # a .keras/.h5 model: the train stage is skipped
    filters: list[PositiveInt] = [8, 16]
    _trust_code: bool = PrivateAttr(False)  # set by `fpgaprune run --trust-model-code` only, never from YAML

    @property
    def trust_code(self) -> bool:
        """Whether model files may run code (Lambda layers) while loading: the CLI's explicit opt-in."""
        return self._trust_code


class DataSection(Strict):
    dataset: Literal["digits", "fashion_mnist", "npz"] = "digits"
    file: Optional[str] = None  # .npz with x_train, y_train, x_test, y_test (dataset: npz)


class TrainingSection(Strict):
    optimizer: Literal["adam", "sgd", "rmsprop", "adamw"] = "adam"
    learning_rate: float = Field(3e-3, gt=0)
    epochs: int = Field(12, ge=0)
    batch_size: PositiveInt = 32


class PruningSection(Strict):
    selections: list[str] = []  # exact kernels, e.g. "conv2[:, :, 29, 13]"
    structure: Union[str, dict[str, str]] = "kernel"
    score: Literal["l1", "l2", "max"] = "l1"
    scope: Literal["layer", "global"] = "layer"
    schedule: Literal["one_shot", "polynomial"] = "one_shot"
    targets: dict[str, float] = {}  # layer -> sparsity of its groups
    do_not_prune: list[str] = []
    epochs: int = Field(0, ge=0)  # training epochs during a polynomial schedule
    lottery_rounds: int = Field(0, ge=0)
    strip: bool = False


class FinetuneSection(Strict):
    epochs: int = Field(4, ge=0)
    learning_rate: float = Field(1e-3, gt=0)


class QuantizationSection(Strict):
    default: dict[str, str] = {"kernel": "quantized_bits(6,0,alpha=1)", "bias": "quantized_bits(8,3,alpha=1)",
                               "activation": "quantized_relu(6,2)"}
    layers: dict[str, dict[str, str]] = {}
    qat_epochs: int = Field(3, ge=0)
    learning_rate: float = Field(1e-3, gt=0)
    batchnorm: Literal["fold", "quantize"] = "fold"  # fold into the layer before, or keep as QBatchNormalization


class HlsSection(Strict):
    preset: str = "latency_parallel"
    config: dict = {}  # inline hls4ml config (HLSConfig-shaped overrides)
    io_type: Optional[Literal["io_parallel", "io_stream"]] = None
    strategy: Optional[Literal["Latency", "Resource", "latency", "resource"]] = None
    reuse_factor: Optional[PositiveInt] = None
    backend: Literal["Vitis", "Vivado"] = "Vitis"


class OutputsSection(Strict):
    dir: str = "runs/digits"
    tb_samples: PositiveInt = 100
    synthesize_layers: bool = True  # yosys measurement of the DA circuit per layer


class RunConfig(Strict):
    name: str = "digits"
    seed: int = 0
    model: ModelSection = ModelSection()
    data: DataSection = DataSection()
    training: TrainingSection = TrainingSection()
    pruning: PruningSection = PruningSection()
    finetune: FinetuneSection = FinetuneSection()
    quantization: QuantizationSection = QuantizationSection()
    hls: HlsSection = HlsSection()
    board: str = "pynq-z2"
    outputs: OutputsSection = OutputsSection()


def _lines(text: str) -> dict:
    """{key path tuple: line number} from the YAML's node marks (composed with the safe loader, not built)."""
    lines = {}

    def walk(node, path):
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                lines[path + (key.value,)] = key.start_mark.line + 1
                walk(value, path + (key.value,))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                lines[path + (i,)] = item.start_mark.line + 1
                walk(item, path + (i,))

    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if root is not None:
        walk(root, ())
    return lines


def _allowed(model_cls, path) -> list:
    for part in path[:-1]:
        field = model_cls.model_fields.get(part) if isinstance(part, str) else None
        model_cls = field.annotation if field is not None and isinstance(field.annotation, type) else None
        if model_cls is None or not issubclass(model_cls, BaseModel):
            return []
    return list(model_cls.model_fields)


def _message(error: dict, source: str, lines: dict) -> str:
    path = tuple(p for p in error["loc"])
    dotted = ".".join(str(p) for p in path)
    line = next((lines[path[:n]] for n in range(len(path), 0, -1) if path[:n] in lines), None)
    where = f"{source}:{line}" if line else source
    if error["type"] == "extra_forbidden":
        allowed = _allowed(RunConfig, path)
        close = difflib.get_close_matches(str(path[-1]), allowed, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        return f"{where}: {dotted}: unknown key; {hint}allowed: {', '.join(allowed)}"
    return f"{where}: {dotted}: found {error.get('input')!r}; {error['msg'].lower()}"


class Located:
    """Where keys of a config file are: `at(path)` is the `file:line` prefix of an error about that key."""

    def __init__(self, source: str, lines: dict):
        self.source, self.lines = source, lines

    def at(self, *path) -> str:
        line = next((self.lines[path[:n]] for n in range(len(path), 0, -1) if path[:n] in self.lines), None)
        prefix = f"{self.source}:{line}" if line else self.source
        return f"{prefix}: {'.'.join(str(p) for p in path)}"


def parse_config(text: str, source: str = "<config>") -> tuple[RunConfig, Located]:
    """A RunConfig from YAML text, or ConfigError with file, line, key path, the value and what is allowed."""
    try:
        raw = yaml.safe_load(text)
        lines = _lines(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"{source}: not valid YAML ({str(error).splitlines()[0]})") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level, found {type(raw).__name__}")
    try:
        return RunConfig.model_validate(raw), Located(source, lines)
    except ValidationError as error:
        raise ConfigError(_message(error.errors()[0], source, lines)) from None


def load_config(path) -> tuple[RunConfig, Located]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the config ({error.strerror})") from None
    return parse_config(text, str(path))
