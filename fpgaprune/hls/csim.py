"""C-simulation against the QKeras model: `compile()` + `predict()` through g++, compared at the logits.

The reference gets its input converted exactly as the hardware's input type converts a float (ap_fixed:
truncation and wrap-around unless the type says RND_CONV/SAT). The logits are the output of the last
Conv/Dense layer, before any table-based activation (softmax, sigmoid, tanh); there the outputs must be
bit-identical wherever QKeras' float32 accumulation is exact. After a table-based activation only argmax
agreement is expected. On a disagreement, a per-layer diff from `hls_model.trace()` names the first
layer, index and values that differ.
"""

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fpgaprune.quantize import qkeras_front as front
from fpgaprune.quantize.fixed_types import FixedType
from fpgaprune.text_table import format_rows
from fpgaprune.tfk import keras

TABLE_ACTIVATIONS = ("softmax", "sigmoid", "tanh", "hard_sigmoid", "softsign")


def hardware_input(x: np.ndarray, fixed: FixedType) -> np.ndarray:
    """`x` as the hardware's input type holds it (float32)."""
    scaled = np.asarray(x, np.float64) * 2.0**fixed.frac
    if fixed.quantizing:
        steps = np.clip(np.round(scaled), fixed.lo * 2.0**fixed.frac, fixed.hi * 2.0**fixed.frac)
    else:
        steps = np.floor(scaled)
        span, low = 2.0**fixed.width, fixed.lo * 2.0**fixed.frac
        steps = np.mod(steps - low, span) + low  # AP_WRAP
    return (steps / 2.0**fixed.frac).astype(np.float32)


def _activation_name(layer) -> str:
    activation = getattr(layer, "activation", None)
    return str(getattr(activation, "__name__", activation) or "").lower()


def logits_layer(model):
    """The last layer with a kernel, and whether a table-based activation follows (inside it or after it)."""
    with_kernel = [layer for layer in model.layers if getattr(layer, "kernel", None) is not None]
    last = with_kernel[-1]
    after = model.layers[model.layers.index(last) + 1:]
    names = [_activation_name(last)] + [_activation_name(layer) for layer in after]
    return last, any(table in name for name in names for table in TABLE_ACTIVATIONS)


def _linear_output(model, layer, x):
    """The layer's output before its own activation."""
    inputs = keras.Model(model.input, layer.input).predict(x, verbose=0)
    activation = layer.activation
    layer.activation = keras.activations.linear
    try:
        return np.asarray(layer(inputs))
    finally:
        layer.activation = activation


def exactness_bound(layer, fixed_bits: int) -> int:
    """weight bits + input bits + log2(fan-in): float32 accumulation is exact when this is at most 24."""
    weight_bits = front.quantizer_bits(layer, "kernel")
    fan_in = int(np.prod(layer.kernel.shape[:-1]))
    return weight_bits + fixed_bits + math.ceil(math.log2(max(fan_in, 2)))


@dataclass
class CsimResult:
    layer: str
    bit_exact: bool
    mismatches: int
    max_abs_diff: float
    argmax_agreement: float
    table_activation: bool
    float32_exact: bool
    diff: list = field(default_factory=list)

    def format(self) -> str:
        verdict = "bit-exact" if self.bit_exact else f"{self.mismatches} values differ (max |diff| {self.max_abs_diff})"
        lines = [f"C-sim vs QKeras at the logits ({self.layer}): {verdict}; "
                 f"argmax agreement {self.argmax_agreement:.4f}"]
        return "\n".join(lines + self.diff)


def _reference_of(model, layer, x):
    if _activation_name(layer) not in ("", "linear", "none"):
        return _linear_output(model, layer, x)
    return np.asarray(keras.Model(model.input, layer.output).predict(x, verbose=0))


def layer_diff(trace: dict, model, x, limit: int = 3) -> list:
    """Readable lines for the first layers whose C-sim trace ({layer: outputs}) differs from QKeras' outputs."""
    rows = []
    for layer in model.layers:
        if layer.name not in trace:
            continue
        reference = _reference_of(model, layer, x)
        traced = np.asarray(trace[layer.name]).reshape(reference.shape)
        differs = np.argwhere(traced != reference)
        if len(differs):
            first = tuple(int(i) for i in differs[0])
            rows.append((layer.name, len(differs), f"{np.abs(traced - reference).max():g}", str(first),
                         f"{traced[first]:g}", f"{reference[first]:g}"))
        if len(rows) == limit:
            break
    header = ("layer", "values differing", "max |diff|", "first index", "C-sim", "QKeras")
    return format_rows(header, rows) if rows else ["no traced layer differs"]


def compile_library(hls_model) -> None:
    """hls4ml's `compile()` (write, build_lib.sh, load the library), with a time limit on the g++ build."""
    import ctypes

    from fpgaprune.tools import GXX_TIMEOUT_S, run_tool

    hls_model.write()
    project = Path(hls_model.config.get_output_dir())
    run_tool(["bash", "build_lib.sh"], f"g++ build of the C-sim library in {project}", GXX_TIMEOUT_S, cwd=project)
    library = project / "firmware" / (f"{hls_model.config.get_project_name()}-"
                                      f"{hls_model.config.get_config_value('Stamp')}.so")
    hls_model._top_function_lib = ctypes.cdll.LoadLibrary(str(library))


def csim_check(hls_model, model, x, fixed: FixedType) -> CsimResult:
    """Compile (if needed) and compare hls4ml's C-simulation of `hls_model` with the QKeras model on `x`."""
    if hls_model._top_function_lib is None:
        compile_library(hls_model)
    return compare_with_qkeras(hls_model.predict, model, x, fixed, lambda xq: hls_model.trace(xq)[1])


def compare_with_qkeras(simulate, model, x, fixed: FixedType, trace=None) -> CsimResult:
    """Compare a C-simulation with the QKeras model at the logits, bit for bit, over all of `x`.

    `simulate(xq)` returns the C-sim outputs for the hardware inputs `xq`; `trace(xq)` (optional) the traced
    layer outputs {layer name: array}, needed when a table activation follows the logits, and used for the
    per-layer diff on a disagreement.
    """
    xq = np.ascontiguousarray(hardware_input(x, fixed))
    reference = np.asarray(model.predict(xq, verbose=0)).reshape(len(xq), -1)
    layer, table = logits_layer(model)
    if table and trace is None:
        raise ValueError(f"a table activation follows {layer.name}: comparing its logits needs a trace")
    final = np.asarray(simulate(xq)).reshape(reference.shape)
    csim_logits, reference_logits = final, reference
    if table:
        reference_logits = _linear_output(model, layer, xq).reshape(len(xq), -1)
        csim_logits = np.asarray(trace(xq)[layer.name]).reshape(reference_logits.shape)
    differs = csim_logits != reference_logits
    result = CsimResult(layer.name, not differs.any(), int(differs.sum()),
                        float(np.abs(csim_logits - reference_logits).max()),
                        float(np.mean(final.argmax(1) == reference.argmax(1))), table,
                        exactness_bound(layer, fixed.width) <= 24)
    if not result.bit_exact and trace is not None:
        result.diff = layer_diff(trace(xq), model, xq)
    return result
