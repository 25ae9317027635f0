"""Hardware costs before export: each kernel entry's estimated DSP and LUT, from its quantized value.

Per resource, the price is the one the exported design's fit verdict reads (`fit_verdict.py`): the C-synthesis
model checked against vendor results for the backend's tool, where one prices every hardware layer's kind, io
type and strategy (`csynth.product_figures`: fpgaprune's figure, no site for a zero); else the rules of the
exported estimate (`rules.py`, `estimator.product_cost`). Weight, input and accumulator types are the
precisions fpgaprune derives for hls4ml (`hls/precision/`); strategy and reuse factor come from the hls config.
Layers, kinds, shapes and quantized kernels are read from the model's record (`record/`), not the framework.
So a budget met here is met by the exported design's figure, up to the rounding of each layer's total and the
accumulators that pruning narrows further (never widens).
"""

from dataclasses import dataclass, field

import numpy as np

from fpgaprune.hls.backend import DEFAULT_BACKEND
from fpgaprune.hls.manifest import quantized_kernel
from fpgaprune.hls.multipliers import is_fabric
from fpgaprune.hls.presets import layer_setting
from fpgaprune.model.layer_kinds import BY_NAME
from fpgaprune.quantize.fixed_types import FixedType, ValueRange
from fpgaprune.record.model_record import LayerRecord
from fpgaprune.resources import csynth, rules
from fpgaprune.resources.estimator import LayerTypes, product_cost
from fpgaprune.resources.fit_verdict import design_model

RULES_SOURCE = "fpgaprune's rules (unchecked against vendor results for these layers)"


def is_hardware_layer(layer: LayerRecord) -> bool:
    """A quantized layer (its record) whose products fpgaprune's export generates (a kernel-sparse kind,
    `layer_kinds`)."""
    return layer.kind in BY_NAME and BY_NAME[layer.kind].kernel_sparse and layer.quantized


def _positions(layer: LayerRecord) -> int:
    """How many times each weight is used per inference: the output's spatial size (1 for a Dense on vectors)."""
    shape = layer.output_shape
    return int(np.prod(shape[1:-1])) if len(shape) > 2 else 1


@dataclass
class EntryCosts:
    """Per hardware layer of a QKeras model: the estimated DSP and LUT of every kernel entry."""

    dsp: dict  # layer -> array of the kernel's shape
    lut: dict
    notes: list
    sources: dict = field(default_factory=dict)  # resource -> what priced it

    def total(self, layers=None) -> dict:
        names = self.dsp if layers is None else [name for name in layers if name in self.dsp]
        return {
            "DSP": float(sum(self.dsp[n].sum() for n in names)),
            "LUT": float(sum(self.lut[n].sum() for n in names)),
        }


def layer_hardware(
    bound, hls_config: dict, input_fixed: FixedType, board, io_type: str = "io_parallel"
) -> tuple[dict, list]:
    """({layer: LayerTypes} for the hardware layers of a bound quantized model (`record.resolved`), notes on
    layers left out), from the types its front end derives for each layer (`FrontEnd.derive_types`: bits and
    fixed-point types per role; the input's from its source's range, or the layer's own "input" type where the
    front end gives one)."""
    plan, record = bound.front.derive_types(bound, input_fixed), bound.record
    types, notes = {}, []
    for layer in record.layers.values():
        if not is_hardware_layer(layer):
            continue
        derived, sources = plan.types.get(layer.name, {}), layer.inbound
        span = plan.ranges.get(sources[0]) if sources else ValueRange(input_fixed.lo, input_fixed.hi, input_fixed.frac)
        source = derived.get("input") or (span and FixedType.covering(span.lo, span.hi, span.frac))
        if "weight" not in derived or "accum" not in derived or source is None:
            notes.append(f"{layer.name}: no derived weight/accumulator type; its cost is not estimated")
            continue
        weight = derived["weight"]
        types[layer.name] = LayerTypes(
            weight.width,
            weight.frac,
            source.width,
            derived["accum"].width,
            int(layer_setting(hls_config, layer.name, "ReuseFactor", 1)),
            str(layer_setting(hls_config, layer.name, "Strategy", "Latency")).lower(),
            io_type,
            _positions(layer),
            board.dsp_a_bits,
            board.dsp_b_bits,
            is_fabric(hls_config, layer.name),
        )
    return types, notes


def pricing(record, types: dict, backend: str) -> dict:
    """{resource: the C-synthesis model that prices it, or None for the rules} (`fit_verdict.design_model`), from
    the quantized model's record."""
    layers = [(record.layers[name].kind.lower(), t.io_type, t.strategy, t.fabric) for name, t in types.items()]
    return {resource: design_model(layers, backend, resource) for resource in ("DSP", "LUT")}


def entry_costs(record, types: dict, notes=(), backend: str = DEFAULT_BACKEND) -> EntryCosts:
    """Each kernel entry's (DSP, LUT) under `types` (from `layer_hardware`), from the quantized kernel of the
    model's record, priced per resource as the fit verdict of `backend`'s export reads it (`pricing`)."""
    models = pricing(record, types, backend)
    dsp, lut = {}, {}
    for name, t in types.items():
        kernel = quantized_kernel(record.layers[name])
        unique, inverse = np.unique(rules.codes(kernel, t.weight_frac), return_inverse=True)
        costs = np.array([_entry_cost(int(code), t, models) for code in unique], np.float64).reshape(-1, 2)
        dsp[name] = costs[inverse.ravel(), 0].reshape(kernel.shape)
        lut[name] = costs[inverse.ravel(), 1].reshape(kernel.shape)
    sources = {
        resource: f"the {model.tool} C-synthesis model" if model else RULES_SOURCE for resource, model in models.items()
    }
    return EntryCosts(dsp, lut, list(notes), sources)


def _entry_cost(code: int, t: LayerTypes, models: dict) -> tuple[float, float]:
    ruled = product_cost(code, t)
    checked = {
        resource: csynth.product_figures(code, t.weight_bits, t.input_bits, t.reuse, t.dsp_a_bits, t.dsp_b_bits, model)[
            column
        ]
        for column, resource in enumerate(("DSP", "LUT"))
        if (model := models[resource])
    }
    return checked.get("DSP", ruled[0]), checked.get("LUT", ruled[1])
