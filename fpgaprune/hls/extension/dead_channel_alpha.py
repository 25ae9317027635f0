"""An hls4ml pass: per-channel QKeras scales (alpha='auto') of fully pruned output channels read 1, not 0.

QKeras gives an all-zero channel the scale 0 (its quantized weights are 0 whatever the scale). hls4ml's
`qkeras_factorize_alpha` then divides the weights by it and writes NaN. This pass runs just before that one
and wraps the layer's quantizer so that the scale it reports is 1 wherever it was 0; nothing else changes.
"""

import numpy as np
from hls4ml.model.optimizer import OptimizerPass

PASS_NAME = "fpgaprune_dead_channel_alpha"


class DeadChannelSafeScale:
    """A QKeras quantizer whose `scale` reads 1 where the wrapped one computed 0."""

    def __init__(self, quantizer):
        self.quantizer = quantizer
        self.scale = 1.0

    def __call__(self, x):
        import tensorflow as tf

        quantized = self.quantizer(x)
        scale = self.quantizer.scale
        if isinstance(scale, (int, float)):
            self.scale = scale if scale != 0 else 1.0
        else:
            values = np.asarray(scale)
            self.scale = tf.constant(np.where(values == 0, 1.0, values), dtype=tf.float32)
        return quantized

    def __getattr__(self, name):  # get_config, alpha, bits, ... come from the wrapped quantizer
        return getattr(self.quantizer, name)


class DeadChannelAlpha(OptimizerPass):
    def match(self, node):
        weight = node.weights.get("weight") if hasattr(node, "weights") else None
        quantizer = getattr(getattr(weight, "quantizer", None), "quantizer_fn", None)
        alpha = getattr(quantizer, "alpha", None)
        return isinstance(alpha, str) and "auto" in alpha and not isinstance(quantizer, DeadChannelSafeScale)

    def transform(self, model, node):
        weight_quantizer = node.weights["weight"].quantizer
        weight_quantizer.quantizer_fn = DeadChannelSafeScale(weight_quantizer.quantizer_fn)
        return False  # the graph itself is unchanged
