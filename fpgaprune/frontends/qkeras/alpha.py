"""Per-channel QKeras scales (alpha='auto' or 'auto_po2'), as hls4ml factors them out of a layer.

hls4ml keeps the layer's weights on the quantizer's alpha=1 grid and multiplies each output channel by its
scale in a `<layer>_alpha` node. A fully pruned channel has no weights to scale: QKeras gives it 0 (or a
tiny power of 2), and fpgaprune uses 1 instead, which changes nothing and keeps the scale's type narrow.
"""

import numpy as np


def has_channel_scale(quantizer) -> bool:
    """Whether the quantizer computes a per-channel scale (alpha='auto' or 'auto_po2')."""
    alpha = getattr(quantizer, "alpha", None)
    return isinstance(alpha, str) and alpha.startswith("auto")


def channel_scales(quantizer, quantized: np.ndarray) -> np.ndarray:
    """The scale of each output column after `quantizer` produced `quantized`; 1 for all-zero columns."""
    quantized = np.asarray(quantized, np.float64)
    columns = quantized.shape[-1]
    scale = np.broadcast_to(np.asarray(quantizer.scale, np.float64).reshape(-1), (columns,))
    dead = ~np.any(quantized.reshape(-1, columns) != 0, axis=0)
    return np.where(dead | (scale == 0), 1.0, scale)


def unit_quantizer(quantizer):
    """The same quantizer with alpha=1: the grid that hls4ml keeps the factored weights on."""
    return type(quantizer).from_config({**quantizer.get_config(), "alpha": 1})


def factor_scales(quantizer, weights) -> tuple[np.ndarray, np.ndarray]:
    """(weights on the alpha=1 grid, per-column scales) with grid * scale == quantizer(weights)."""
    quantized = np.asarray(quantizer(weights), np.float64)
    scale = channel_scales(quantizer, quantized)
    grid = np.asarray(unit_quantizer(quantizer)((quantized / scale).astype(np.float32)), np.float64)
    return grid, scale
