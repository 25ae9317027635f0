"""The run config (one YAML file): a pydantic schema, plus the checks that need fpgaprune itself.

Every error is one line: `file:line: key.path: what was found; what is allowed`.
"""

import warnings
from pathlib import Path
from typing import Literal, Optional, Union

from pydantic import Field, PositiveInt, PrivateAttr, field_validator

from fpgaprune.errors import FpgapruneError
from fpgaprune.hls.backend import backend_names, known_backend
from fpgaprune.quantize.spec import DEFAULT_QUANTIZERS
from fpgaprune.support.yaml_schema import Located, Strict, load_yaml_file, parse_yaml


class ConfigError(FpgapruneError):
    """A run config that does not validate (exit code 2)."""


# `model.json` is the YAML key hls4ml users know (KerasJson); the field shadows pydantic's deprecated
# `BaseModel.json()`, which nothing calls, and pydantic says so once at import.
warnings.filterwarnings("ignore", message='Field name "json" in "ModelSection" shadows', category=UserWarning)


class ModelSection(Strict):
    """The network: a built-in architecture trained by the run, or your own model file."""

    architecture: Optional[Literal["small_cnn", "original_question_cnn"]] = "small_cnn"  # a built-in network
    # a .keras/.h5 model, a PyTorch state dict (.pt) of `module`, or (--trust-model-code) a whole pickled module:
    # no train stage
    file: Optional[str] = None
    json: Optional[str] = None  # or an architecture (model.to_json()), with its HDF5 `weights`: hls4ml's KerasJson
    weights: Optional[str] = None  # the HDF5 weights of `json` (model.save_weights('weights.h5')): hls4ml's KerasH5
    # A PyTorch nn.Module class, "models.py:ClassName" or "package.module:ClassName" (imported with
    # --trust-model-code only): with `file`, its state dict; without, the run trains it. Data is NCHW.
    module: Optional[str] = None
    arguments: dict = {}  # the keyword arguments of `module`
    filters: list[PositiveInt] = [8, 16]  # small_cnn: the filters of each conv layer
    _trust_code: bool = PrivateAttr(False)  # set by `fpgaprune run --trust-model-code` only, never from YAML

    def given(self) -> bool:
        """Whether the run starts from the user's trained model (a file, or an architecture and its weights)."""
        return bool(self.file or self.json)

    def describe(self) -> str:
        """The user's model as the messages name it: its file, or its architecture and weights."""
        if self.module:
            return f"{self.file} ({self.module})" if self.file else str(self.module)
        return str(self.file) if self.file else f"{self.json} + {self.weights}"

    @property
    def torch(self) -> bool:
        """Whether the model is a PyTorch module: an architecture (`module`), or a `.pt` file (a state dict of
        one, or a whole pickled module)."""
        return bool(self.module) or Path(self.file or "").suffix in (".pt", ".pth")

    @property
    def suffix(self) -> str:
        """The run's model files: PyTorch files for a PyTorch module, Keras archives otherwise."""
        return ".pt" if self.torch else ".keras"

    @property
    def trust_code(self) -> bool:
        """Whether model files may run code (Lambda layers) while loading: the CLI's explicit opt-in."""
        return self._trust_code


class DataSection(Strict):
    """The data: offline data sets, or your own arrays."""

    # fashion_mnist needs `apt-get install dataset-fashion-mnist`; npz reads `file`
    dataset: Literal["digits", "fashion_mnist", "npz"] = "digits"
    file: Optional[str] = None  # .npz with x_train, y_train, x_test, y_test (dataset: npz)


class TrainingSection(Strict):
    """Training of the dense model (the train stage; skipped when `model.file` or `model.json` is given)."""

    # What the model is trained for (fpgaprune/model/task.py): "auto" reads it from the output activation and the
    # labels.
    task: Literal["auto", "classification", "binary", "multilabel", "regression"] = "auto"
    loss: Literal[
        "auto",
        "sparse_categorical_crossentropy",
        "categorical_crossentropy",
        "binary_crossentropy",
        "mse",
        "mae",
        "huber",
    ] = "auto"  # "auto": the task's loss
    optimizer: Literal["adam", "sgd", "rmsprop", "adamw"] = "adam"  # every training stage uses it
    learning_rate: float = Field(3e-3, gt=0)  # of the train stage
    epochs: int = Field(12, ge=0)  # of the train stage
    batch_size: PositiveInt = 32  # of every training stage


class PruningSection(Strict):
    """Which kernels go: exact selections, then a structure scored and pruned to targets or to a budget."""

    selections: list[str] = []  # exact kernels, e.g. "conv2[:, :, 29, 13]"
    # kernel, filter, input_channel, element, neuron, block(h,w,avg|max), depthwise or hybrid; or {layer: structure}
    structure: Union[str, dict[str, str]] = "kernel"
    score: Literal["l1", "l2", "max"] = "l1"  # of each group
    scope: Literal["layer", "global"] = "layer"  # rank groups per layer, or across layers (one target for all)
    schedule: Literal["one_shot", "polynomial"] = "one_shot"  # polynomial: gradual over `epochs` (Zhu & Gupta)
    targets: dict[str, float] = {}  # layer -> sparsity of its groups
    budget: dict[str, float] = {}  # or a budget: {LUT: 0.5, DSP: 200, LUT+DSP: 0.6} of the run's board
    budget_margin: float = Field(0.05, ge=0, lt=1)  # prune to (1 - margin) of each limit before QAT
    budget_min_kept: float = Field(0.1, gt=0, le=1)  # each pruned layer keeps its strongest share of groups
    hybrid_first_share: float = Field(0.5, ge=0, le=1)  # structure hybrid: whole kernels' share of the pruning
    do_not_prune: list[str] = []  # layers left dense
    epochs: int = Field(0, ge=0)  # training epochs during a polynomial schedule
    lottery_rounds: int = Field(0, ge=0)  # > 0: lottery-ticket rounds reaching the targets
    strip: bool = False  # after pruning, remove dead channels (a smaller network), then fine-tune it
    # Your model's exact zeros (a model pruned elsewhere) are held at 0 as pruned entries; false: training may
    # move them. Biases, and weights under 5% zeros, stay free (`masking/input_zeros.py`).
    keep_input_zeros: bool = True

    def in_effect(self) -> dict:
        """The settings a run reads (its stage key hashes these): the hybrid share only for structure hybrid."""
        settings = self.model_dump()
        if self.structure != "hybrid":
            settings.pop("hybrid_first_share")
        return settings


class FinetuneSection(Strict):
    """Retraining after pruning, with the pruned entries held at zero."""

    epochs: int = Field(4, ge=0)  # of fine-tuning
    learning_rate: float = Field(1e-3, gt=0)  # of fine-tuning


class Hgq2Section(Strict):
    """HGQ2's settings (`quantization.library: hgq2`, docs/hgq2.md): where its learned bit widths start, and the
    EBOPs penalty that pushes them down."""

    weight_bits: int = Field(8, ge=1, le=23)  # initial bits of each weight (HGQ2's kbi b0), sign included
    weight_integer_bits: int = Field(2, ge=-8, le=16)  # initial integer bits of the weights (i0)
    activation_bits: int = Field(8, ge=1, le=24)  # initial fraction bits of each layer's input (kif f0)
    beta0: float = Field(1e-5, ge=0)  # the EBOPs penalty's weight: each layer adds ebops x beta to the loss
    beta_final: Optional[float] = Field(None, gt=0)  # unset: beta constant; set: log-linear from beta0 over QAT
    granularity: Literal["weight", "channel"] = "weight"  # a bit width per weight, or per output channel
    # a bit width per activation value (HGQ2's default; io_parallel only), or one per layer input (io_stream)
    activation_granularity: Literal["element", "channel", "tensor"] = "element"


class QuantizationSection(Strict):
    """The quantizer library and quantization-aware training (QAT): QKeras quantizer texts, or HGQ2's learned
    bit widths (`library: hgq2`, in the HGQ2 environment).

    `default` quantizes the float layers (unset: `DEFAULT_QUANTIZERS`); a QKeras layer keeps its own quantizers,
    and `layers.<name>` replaces the roles it names on either kind. With no QKeras layer and nothing set, the
    built-in default quantizes the whole model; with a QKeras model and nothing set, QAT fine-tunes it as it is."""

    def effective_default(self) -> dict:
        """The quantizers of the float layers: `default`, or the built-in default when it is unset."""
        return dict(self.default) if self.default is not None else dict(DEFAULT_QUANTIZERS)

    # The float layers' quantizers, by role; unset: the built-in default (`frontends/qkeras/spec.py`). A QKeras layer
    # keeps its own quantizers either way.
    default: Optional[dict[str, str]] = None
    layers: dict[str, dict[str, str]] = {}  # per layer, by role, over its own or the default: {conv2: {kernel: ...}}
    # auto: the library this environment holds (QKeras, the base install; HGQ2 in its own venv: docs/hgq2.md)
    library: Literal["auto", "qkeras", "hgq2"] = "auto"
    hgq2: Hgq2Section = Hgq2Section()  # HGQ2's settings (library hgq2); `default`/`layers` are QKeras texts
    qat_epochs: int = Field(3, ge=0)  # of QAT
    learning_rate: float = Field(1e-3, gt=0)  # of QAT
    batchnorm: Literal["fold", "quantize"] = "fold"  # fold into the layer before, or keep as QBatchNormalization


class HlsSection(Strict):
    """The hls4ml project: a preset (or your own YAML), overrides, and the backend."""

    # latency_parallel, resource_parallel, latency_stream, resource_stream, distributed_arithmetic, or a YAML path
    preset: str = "latency_parallel"
    config: dict = {}  # inline hls4ml config (HLSConfig-shaped overrides)
    io_type: Optional[Literal["io_parallel", "io_stream"]] = None  # over the preset's
    strategy: Optional[Literal["Latency", "Resource", "latency", "resource"]] = None  # over the preset's
    reuse_factor: Optional[PositiveInt] = None  # over the preset's
    backend: str = "Vitis"  # a registered backend (Vitis, Vivado, Catapult, a user's): its code, build, C-synthesis

    @field_validator("backend")
    @classmethod
    def _registered(cls, value: str) -> str:
        """A backend fpgaprune knows (built in, installed through the `fpgaprune.backends` entry points, or
        registered), by its own name."""
        found = known_backend(value)
        if found is None:
            raise ValueError(f"expected a backend fpgaprune knows: {', '.join(backend_names())}")
        return found.name


class OutputsSection(Strict):
    """Where the run writes, and what it checks and measures after the export."""

    dir: str = "runs/digits"  # the run directory (`--out` overrides it)
    tb_samples: PositiveInt = 100  # held-out samples written to the project's tb_data/
    # C-sim runs at most this many held-out samples, a seeded uniform sample of them ("all": every one). A CNN's
    # C-sim costs milliseconds per sample (measured: the hls4ml tutorial's part-6 CNN 5.5 ms on one core), so
    # 10,000 images would outlast its training; hls4ml's own tutorial simulates 3,000 of them.
    csim_samples: Union[PositiveInt, Literal["all"]] = 2000
    synthesize_layers: bool = True  # yosys measurement of the DA circuit (false: none)
    # What yosys measures: "sample" (one removed kernel's output column, with and without it; every layer's DA
    # LUTs from the calibrated da4ml cost) or "all" (every layer's DA circuit).
    measure: Literal["sample", "all"] = "sample"
    synth_time_budget_s: float = Field(300.0, gt=0)  # the synth stage's circuits together, wall time
    synth_memory_budget_mb: int = Field(2048, ge=256)  # the circuits running at once together
    # The RTL backend's yosys and nextpnr, each, on each design (dense, pruned): past it the run says so in one
    # line and keeps its other results. Measured: the digits network's stream on an LFE5U-85F, about 4-8 minutes.
    place_route_time_limit_s: float = Field(1800.0, gt=0)
    # A layer whose values fall outside their quantizer's or type's range more often than this (a fraction of
    # the held-out values) gets a console line and is marked in the report's profile. Measured: the default
    # digits run clips 1.4% of relu2's pre-activations at quantized_relu(6,2)'s 3.94 (its largest share; the
    # examples and other scaled-input runs 0%); the same CNN on uint8 pixels (0-255) 26.8% at relu1.
    saturation_threshold: float = Field(0.05, ge=0, le=1)


class RaySection(Strict):
    """The Ray that runs a sweep's points."""

    address: Optional[str] = None  # an existing Ray cluster ("ray://host:10001" or "auto"); None: a local Ray
    cpus: Optional[PositiveInt] = None  # CPUs of the local Ray (default: all); one trial per CPU


class SweepSection(Strict):
    """`fpgaprune sweep`: a grid of runs (read by the sweep only)."""

    grid: dict[str, list] = {}  # axis -> values, e.g. {sparsity: [0.3, 0.6], bits: [4, 6]}
    ray: RaySection = RaySection()  # where the points run


class RunConfig(Strict):
    """One run: every section has defaults, so a config names only what it changes."""

    name: str = "digits"  # the run's name, in the report
    seed: int = 0  # the random seed: training, the digits split and the C-sim sample
    model: ModelSection = ModelSection()
    data: DataSection = DataSection()
    training: TrainingSection = TrainingSection()
    pruning: PruningSection = PruningSection()
    finetune: FinetuneSection = FinetuneSection()
    quantization: QuantizationSection = QuantizationSection()
    hls: HlsSection = HlsSection()
    board: str = "pynq-z2"  # a board of `fpgaprune boards`, or a YAML path
    outputs: OutputsSection = OutputsSection()
    sweep: SweepSection = SweepSection()  # read by `fpgaprune sweep` only


def parse_config(text: str, source: str = "<config>") -> tuple[RunConfig, Located]:
    """A RunConfig from YAML text, or ConfigError with file, line, key path, the value and what is allowed."""
    return parse_yaml(text, source, RunConfig, ConfigError)


def load_config(path) -> tuple[RunConfig, Located]:
    return load_yaml_file(path, RunConfig, ConfigError, "config")
