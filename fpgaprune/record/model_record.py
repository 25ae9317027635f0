"""fpgaprune's own description of a model, made once by its front end (`FrontEnd.describe`): per layer its name,
kind, shapes, weights by role with their quantized values, fixed-point types and holds, its activation and that
activation's quantizer, and its place in the graph. The stages after quantization (precision derivation,
tolerances, the manifest) read this record and hls4ml's IR, never a framework object.

Every array is numpy, in fpgaprune's layout (a kernel's input axes first, its outputs last); every type a
`quantize.fixed_types.FixedType`.
"""

from dataclasses import dataclass, field, replace
from graphlib import TopologicalSorter

import numpy as np

from fpgaprune.quantize.fixed_types import FixedType


@dataclass(frozen=True)
class WeightRecord:
    """One weight of a layer, as the layer computes with it."""

    name: str  # the weight's name (kernel, depthwise_kernel, recurrent_kernel, bias)
    role: str  # its quantizer's role (kernel, depthwise, pointwise, recurrent, bias)
    values: np.ndarray  # as the layer holds it (a fused layer's raw kernel)
    quantized: np.ndarray  # as the layer computes with it: folded (a fused layer's), through its quantizer, float64
    fixed: FixedType | None  # the type of `quantized` (of `grid` where a per-channel scale is factored out)
    quantizer: str | None  # the quantizer, as it describes itself (None: a float weight)
    bits: int  # the quantizer's width (32 for a float weight)
    grid: np.ndarray | None = None  # with a per-output-channel scale (hls4ml's `<layer>_alpha`): the unscaled values
    scale: np.ndarray | None = None  # ... and the scales
    held: np.ndarray | None = None  # the entries a hold keeps at their targets (a pruned one's is 0), if any
    folded: np.ndarray | None = None  # what its quantizer receives, where not `values` (a fused layer's folded kernel)
    range: tuple | None = None  # (lo, hi) of what its quantizer outputs, where finite
    targets: np.ndarray | None = None  # where held: the values the hold keeps (0 where pruned)
    entries: tuple = ()  # the hold's entries (`masking.HoldEntry`), in the order they apply
    own_shape: tuple = ()  # its shape in the framework's own layout, which a selection's index addresses
    layout: tuple | None = None  # the axes of the framework's layout in fpgaprune's order, where they differ
    own_name: str = ""  # the framework's name for it, where it differs (PyTorch's `weight`): a selection may use it
    zero: float = 0.0  # what its quantizer makes of a weight that is 0 with all its neighbours
    pruned_to: np.ndarray | None = None  # where a hold prunes entries: what its quantizer makes of them

    @property
    def shape(self) -> tuple:
        return tuple(np.shape(self.values))

    @property
    def pruned(self) -> np.ndarray | None:
        """The entries a hold keeps at 0, or None."""
        return None if self.held is None else self.held & (self.targets == 0)

    @property
    def received(self) -> np.ndarray:
        """What the weight's quantizer receives: `values`, or a fused layer's folded kernel."""
        return self.values if self.folded is None else self.folded

    @property
    def scaled(self) -> bool:
        return self.scale is not None

    def columns(self, count: int) -> np.ndarray:
        """`quantized` as a matrix of `count` columns (one accumulation each)."""
        return np.asarray(self.quantized, np.float64).reshape(-1, count)


@dataclass(frozen=True)
class ActivationRecord:
    """An activation: a float function (relu, sigmoid, ...), or a quantizer that rounds (QKeras' quantized_relu)."""

    function: str | None  # the float function's name (None where it has none: a quantizer)
    class_name: str  # the object's class name (a quantizer's names hls4ml's node `<layer>_<class>`)
    described: str  # as it prints, for notes
    quantizer: bool = False  # it is a quantizer (it has a config): it rounds
    fixed: FixedType | None = None  # a quantizer's output type, where it has one
    table: str | None = None  # the function hls4ml reads from a table for it ("sigmoid", "tanh"), if any
    range: tuple | None = None  # a quantizer's (lo, hi), where finite
    relu: bool = False  # a ReLU quantizer (below 0 is its function, not a clip)
    curve: str | None = None  # a quantizer's function before it rounds, where it is a curve ("sigmoid", "tanh")
    line: tuple | None = None  # ... where it is a line: (slope, offset) (QKeras' hard sigmoid: 0.5, 0.5)

    @property
    def name(self) -> str:
        """The function's name, lower case ("" for none)."""
        return str(self.function or "").lower()


@dataclass(frozen=True)
class BatchNormRecord:
    """A batch normalization as x * scale + bias, from its float parameters and (as the library computes it) its
    quantized ones."""

    scale: np.ndarray
    bias: np.ndarray
    quantized_scale: np.ndarray
    quantized_bias: np.ndarray
    mean: np.ndarray


@dataclass(frozen=True)
class InputQuantizer:
    """A layer's own quantizer of its input, value by value (HGQ2's `iq`): (k, i, f) arrays shaped as its input
    (no batch axis; a value it keeps no bit of at (0, 0, 0)), its rounding and overflow modes, and the types per
    kernel row as hls4ml's DA pass gives them to da4ml (each the widest over the output positions; None for a
    layer without a kernel)."""

    k: np.ndarray
    i: np.ndarray
    f: np.ndarray
    round_mode: str  # "TRN", "RND" (half up), "RND_CONV" (half to even)
    overflow_mode: str  # "WRAP", "SAT", "SAT_SYM"
    rows: tuple | None = None  # (k, i, f) per kernel row

    def per_channel(self) -> tuple | None:
        """(k, i, f) per channel where every position of the input has the same types (a stream applies them
        pixel by pixel); None where they differ by position."""
        kif = [np.asarray(v).reshape(-1, np.shape(v)[-1] if np.ndim(v) else 1) for v in (self.k, self.i, self.f)]
        same = all((v == v[:1]).all() for v in kif)
        return tuple(v[0] for v in kif) if same else None


@dataclass(frozen=True)
class LayerRecord:
    """One layer."""

    RECORDED = True  # `layer_kinds.kind_of` reads a record's kind by name

    name: str
    role: str  # its Keras class name through its MRO (`layer_kinds.role_of`): Conv2D, Activation, MaxPooling2D, ...
    class_name: str  # its own class name (QConv2D, QuantLinear)
    inbound: tuple  # the names of the layers it reads
    kind: str | None = None  # fpgaprune's layer kind (`layer_kinds.kind_of`), None for a weight-less layer
    precision: str | None = None  # the kind's precision rule: "linear", "separable", "recurrent"
    quantized: bool = False  # its weights or activations are quantized
    activation: ActivationRecord | None = None  # its `activation`: inside a Conv/Dense, an Activation layer's own
    applies: ActivationRecord | None = None  # the quantizer an activation quantizer of its own applies (QActivation)
    weights: dict = field(default_factory=dict)  # {weight name: WeightRecord}
    batchnorm: BatchNormRecord | None = None
    input_shape: tuple = ()  # batch first
    output_shape: tuple = ()
    options: dict = field(default_factory=dict)  # padding, pool_size, units, reset_after, max_value, ...
    quantizer_texts: dict = field(default_factory=dict)  # {weight role: its quantizer as the model's config writes it}
    input_quantizer: InputQuantizer | None = None  # where its library quantizes its input value by value (HGQ2)
    layout: tuple | None = None  # how the framework's layout of its kernel maps to fpgaprune's, axis by axis
    inner_activation: bool = False  # it applies a non-linear activation inside it (the reference swaps it out)
    params: int = 0  # how many numbers its weights hold, every weight counted (a batch normalization's statistics too)
    package: str | None = None  # where a front end names its classes otherwise (PyTorch): its class's package

    def weight(self, role: str) -> WeightRecord | None:
        """The layer's weight whose quantizer has `role`."""
        return next((w for w in self.weights.values() if w.role == role), None)

    @property
    def input_types(self) -> tuple | None:
        """(k, i, f) per kernel row where its library types its inputs value by value (HGQ2's, for da4ml)."""
        return self.input_quantizer.rows if self.input_quantizer is not None else None

    @property
    def quantizing_activation(self) -> bool:
        return self.applies is not None

    @property
    def kernel(self) -> WeightRecord | None:
        return self.weights.get("kernel")

    @property
    def use_bias(self) -> bool:
        return "bias" in self.weights


@dataclass(frozen=True)
class ModelRecord:
    """A model as fpgaprune reads it after quantization."""

    name: str
    front_end: str  # the front end that described it ("tf_keras + QKeras", "PyTorch")
    quantizer_library: str  # what computes the quantized model ("QKeras", "Brevitas"): C-sim is compared with it
    float32: bool  # whether that reference computes in float32 (its accumulations round past 24 bits)
    input_name: str  # the input node's name in hls4ml's IR
    layers: dict  # {name: LayerRecord}, in the model's order
    outputs: tuple  # the output layers' names

    def renamed(self, names: dict) -> "ModelRecord":
        """The record of a copy whose layers named in `names` ({original: new}) carry their new names."""
        new = lambda name: names.get(name, name)  # noqa: E731
        layers = {
            new(name): replace(layer, name=new(name), inbound=tuple(map(new, layer.inbound)))
            for name, layer in self.layers.items()
        }
        return replace(self, layers=layers, outputs=tuple(map(new, self.outputs)))

    def weighted(self) -> list:
        """The layers with weights of a kind fpgaprune knows (Conv, Dense, depthwise, recurrent), in order."""
        return [layer for layer in self.layers.values() if layer.kind is not None]

    def topological(self) -> list:
        """Every layer after the layers it reads (ties in the model's own order)."""
        return list(TopologicalSorter({name: layer.inbound for name, layer in self.layers.items()}).static_order())
