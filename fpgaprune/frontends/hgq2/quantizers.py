"""What an HGQ2 layer's quantizers are and compute: its weights' quantizers by role, their bit widths, the
values they give, and the layer's EBOPs (HGQ2's own cost: effective bit operations)."""

import numpy as np

_BY_ROLE = {"kernel": "_kq", "bias": "_bq"}


def is_hgq2(obj) -> bool:
    cls = obj if isinstance(obj, type) else type(obj)
    return any(c.__module__.startswith("hgq.") for c in cls.__mro__)


def weight_quantizer(layer, role: str):
    """The HGQ2 quantizer of a layer's weight by role, or None."""
    return getattr(layer, _BY_ROLE.get(role, "_none"), None) if is_hgq2(layer) else None


def quantized(layer, role: str, values) -> np.ndarray:
    quantizer = weight_quantizer(layer, role)
    if quantizer is None:
        return np.asarray(values, np.float64)
    return np.asarray(quantizer(np.asarray(values, np.float32), training=False), np.float64)


def bits(quantizer) -> np.ndarray:
    """Each weight's bit width (sign included), as HGQ2 rounds its trained widths."""
    k, i, f = (np.asarray(v, np.float64) for v in quantizer.quantizer.kif)
    return np.where(k + i + f > 0, k + i + f, 0)


def quantizer_range(quantizer) -> tuple[float, float]:
    """The widest [lo, hi] over the quantizer's weights (each weight has its own range)."""
    return float(np.min(np.asarray(quantizer.quantizer.min))), float(np.max(np.asarray(quantizer.quantizer.max)))


def quantizer_bits(layer, role: str, default: int = 32) -> int:
    quantizer = weight_quantizer(layer, role)
    return default if quantizer is None else int(np.max(bits(quantizer)))


def quantizer_texts(layer) -> dict:
    """{role: 'HGQ2 kbi, 0-7 bits per weight'} of a layer's quantized weights."""
    texts = {}
    for role in _BY_ROLE:
        quantizer = weight_quantizer(layer, role)
        if quantizer is not None:
            widths = bits(quantizer)
            each = "per weight" if widths.size > 1 else "per tensor"
            texts[role] = f"HGQ2 {quantizer.q_type}, {int(widths.min())}-{int(widths.max())} bits {each}"
    return texts


def ebops(model) -> dict:
    """{layer: its EBOPs} as HGQ2 last computed them (in training, or by `trace_minmax`)."""
    return {
        layer.name: int(np.asarray(layer.ebops))
        for layer in model.layers
        if is_hgq2(layer) and getattr(layer, "enable_ebops", False)
    }


def restore_quantizer(layer, restored: np.ndarray) -> None:
    """Give the kernel entries `restored` (pruned, given back their values in a dense reference) the widest bit
    width of the layer's other weights, where theirs is 0: what they would cost unpruned, at most."""
    quantizer = weight_quantizer(layer, "kernel")
    bits = getattr(getattr(quantizer, "quantizer", None), "_b", None)
    if bits is None or len(bits.shape) != restored.ndim:
        return
    current = np.asarray(bits.numpy(), np.float32)
    axes = tuple(axis for axis, n in enumerate(current.shape) if n == 1 and restored.shape[axis] > 1)
    covered = np.any(restored, axis=axes, keepdims=True) if axes else restored
    widest = float(current.max())
    bits.assign(np.where(covered & (current == 0), widest, current).astype(np.float32))
