"""How far C-sim may stand from QKeras at the logits where hls4ml is not bit-exact, derived from the types.

- Averaging k values (average and global average pooling) divides in the accumulator type: with k a power of
  2 that is exact (the derived types carry log2(k) more fraction bits); otherwise the quotient is truncated
  to the accumulator's, then the result's, fraction bits: less than one step of each below the exact mean.
  That error runs through the layers up to the logits: a Conv/Dense multiplies it by its largest column sum
  of |weights|, a quantizer adds at most one of its steps, ReLU, max pooling and reshapes pass it on.
- Recurrent layers (LSTM, GRU) compute sigmoid and tanh by tables in hls4ml: no bound follows from the types.
  They are judged by the tolerance their tests use: 2% of the largest |logit| (tests/hls/test_hls_adapter.py).
"""

import math
import re
from dataclasses import dataclass

import numpy as np

from fpgaprune.frontends import QUANTIZING as front
from fpgaprune.layer_graph import MERGES, LayerGraph
from fpgaprune.layer_kinds import kind_of
from fpgaprune.quantize.fixed_types import FixedType

RECURRENT_RELATIVE = 0.02
FLOAT32_STEP = 2.0**-23  # QKeras averages in float32: one rounding of the mean
_AVERAGING = ("AveragePooling1D", "AveragePooling2D", "GlobalAveragePooling1D", "GlobalAveragePooling2D")
_SAME = (
    "ReLU",
    "Flatten",
    "Reshape",
    "MaxPooling1D",
    "MaxPooling2D",
    "GlobalMaxPooling1D",
    "GlobalMaxPooling2D",
    "ZeroPadding1D",
    "ZeroPadding2D",
    "Cropping1D",
    "Cropping2D",
    "UpSampling1D",
    "UpSampling2D",
    "Permute",
    "Dropout",
    "InputLayer",
    "Concatenate",
    "Maximum",
    "Minimum",
)
_TYPE = re.compile(r"(?:ap_)?(u?)fixed<\s*(\d+)\s*,\s*(-?\d+)\s*(?:,[^>]*)?>")


def parse_type(text) -> FixedType | None:
    """`ap_fixed<16,6>`, `fixed<8,3,RND_CONV,SAT>`, `ufixed<6,2>` as a FixedType (None for anything else)."""
    match = _TYPE.fullmatch(str(text).replace(" ", ""))
    return FixedType(int(match[2]), int(match[3]), not match[1]) if match else None


def node_types(hls_config: dict) -> dict:
    """{hls4ml node: {variable: FixedType}} from an HLSConfig's `LayerName` precisions."""
    found = {}
    for node, settings in (hls_config.get("LayerName") or {}).items():
        precision = settings.get("Precision") if isinstance(settings, dict) else None
        items = precision.items() if isinstance(precision, dict) else [("result", precision)]
        found[node] = {key: fixed for key, text in items if (fixed := parse_type(text)) is not None}
    return found


@dataclass(frozen=True)
class Tolerance:
    """|C-sim - QKeras| at the logits may reach `absolute` + `relative` x the largest |logit| of QKeras."""

    absolute: float
    relative: float
    reason: str
    advice: str

    def bound(self, largest: float) -> float:
        return self.absolute + self.relative * largest


def export_tolerance(model, hls_config: dict, names: dict | None = None) -> Tolerance | None:
    """The tolerance at the model's logits (the last layer with a kernel), from an export's HLSConfig (`names`:
    the export's {hls4ml node: user's layer name})."""
    from fpgaprune.hls.names import map_keys

    with_kernel = [layer for layer in model.layers if getattr(layer, "kernel", None) is not None]
    types = map_keys(node_types(hls_config), names or {})
    return logits_tolerance(model, with_kernel[-1].name, types) if with_kernel else None


def logits_tolerance(model, logits_name: str, types: dict) -> Tolerance | None:
    """The tolerance at the layer `logits_name`, or None where C-sim must be bit-exact (or no bound is known)."""
    graph = LayerGraph(model)
    recurrent = [name for name in graph.layers if (kind_of(graph.class_of(name)) or _NONE).precision == "recurrent"]
    if recurrent:
        return Tolerance(
            0.0,
            RECURRENT_RELATIVE,
            f"hls4ml computes the sigmoid/tanh of {', '.join(recurrent)} by "
            f"tables: judged at {RECURRENT_RELATIVE:.0%} of the largest |logit|",
            "no setting makes hls4ml 1.3's recurrent tables exact; larger tables (table_size in "
            "hls.config) bring it closer",
        )
    errors, sources = {}, []
    for name in graph.topological():
        inbound = [errors.get(source, 0.0) for source in graph.inbound[name]]
        error = _propagated(graph.layers[name], graph.class_of(name), inbound, types.get(name, {}), sources)
        if error is None:
            return None
        errors[name] = error
        if name == logits_name:
            break
    if not errors.get(logits_name):
        return None
    pools = ", ".join(f"'{name}' ({k} values)" for name, k in sources)
    return Tolerance(
        errors[logits_name],
        0.0,
        f"averaging {pools} is not exact in fixed point (not a power of 2): "
        f"at most {errors[logits_name]:.3g} at the logits, from the types",
        "use a power-of-2 pooling window, or give the pooling's accum and result types more fraction "
        "bits (hls.config LayerName)",
    )


class _NoKind:
    precision = ""


_NONE = _NoKind()


def _propagated(layer, kind: str, inbound: list, types: dict, sources: list) -> float | None:
    """The bound on the error of the layer's output, given its inputs' bounds (None: no bound is known)."""
    error = max(inbound, default=0.0)
    if kind in MERGES:
        return sum(inbound) if kind in ("Add", "Subtract", "Average") else error if kind in _SAME or not error else None
    if kind in _AVERAGING:
        k = int(np.prod(layer.input_shape[1:-1])) if kind.startswith("Global") else int(np.prod(layer.pool_size))
        if k & (k - 1):
            accum, result = types.get("accum"), types.get("result")
            if accum is None or result is None:
                return None
            sources.append((layer.name, k))
            return error + 2.0**-accum.frac + 2.0**-result.frac + FLOAT32_STEP * max(abs(result.lo), result.hi)
        return error
    if error == 0.0 or kind in _SAME:
        return error
    if getattr(layer, "kernel", None) is not None and kind_of(kind) is not None and kind_of(kind).precision == "linear":
        kernel = front.quantized(layer, "kernel", layer.kernel)
        error *= float(np.abs(kernel).reshape(-1, kernel.shape[-1]).sum(axis=0).max())
        return error + _step(getattr(layer, "activation", None))
    if front.is_quantized_activation(layer):
        return error + _step(front.activation_quantizer(layer))
    if front.is_batchnorm(layer):
        gamma = np.asarray(layer.gamma) if layer.scale else 1.0
        scale = np.abs(gamma / np.sqrt(np.asarray(layer.moving_variance) + layer.epsilon))
        return error * float(scale.max())
    return None


def _step(quantizer) -> float:
    """One step of an activation quantizer (0 for a float activation)."""
    fixed = front.quantizer_type(quantizer, activation=True) if hasattr(quantizer, "get_config") else None
    return 2.0**-fixed.frac if fixed is not None else 0.0 if not hasattr(quantizer, "get_config") else math.inf
