"""An hls4ml pass that prepares per-channel QKeras scales (alpha='auto'/'auto_po2') for `qkeras_factorize_alpha`.

It runs just before that pass and wraps the layer's quantizer, changing two things that hls4ml 1.3 gets wrong:
- a fully pruned output channel gets the scale 1. QKeras gives it 0 (hls4ml then divides by it: NaN
  weights) or a tiny power of 2 (which would widen the scale's type for nothing);
- 'auto_po2' is reported as 'auto', so the `<layer>_alpha` scales get a fixed-point type from the config
  (fpgaprune derives an exact one) instead of hls4ml's exponent type, whose weight writer calls
  `np.product`, which NumPy 2 removed.
Both mirror the front end's `alpha.py`, which the precision derivation uses.
"""

from hls4ml.model.optimizer import OptimizerPass

from fpgaprune.frontends.qkeras import alpha as front

PASS_NAME = "fpgaprune_alpha_scale"


class FactorableScale:
    """A QKeras quantizer whose `scale` reads 1 for all-zero channels and whose config says alpha='auto'."""

    def __init__(self, quantizer):
        self.quantizer = quantizer
        self.scale = 1.0

    def __call__(self, x):
        import tensorflow as tf

        quantized = self.quantizer(x)
        self.scale = tf.constant(front.channel_scales(self.quantizer, quantized.numpy()), dtype=tf.float32)
        return quantized

    def get_config(self):
        config = dict(self.quantizer.get_config())
        if config.get("alpha") == "auto_po2":
            config["alpha"] = "auto"
        return config

    def __getattr__(self, name):  # alpha, bits, from_config, ... come from the wrapped quantizer
        return getattr(self.quantizer, name)


class AlphaScale(OptimizerPass):
    def match(self, node):
        weight = node.weights.get("weight") if hasattr(node, "weights") else None
        quantizer = getattr(getattr(weight, "quantizer", None), "quantizer_fn", None)
        return front.has_channel_scale(quantizer) and not isinstance(quantizer, FactorableScale)

    def transform(self, model, node):
        weight_quantizer = node.weights["weight"].quantizer
        weight_quantizer.quantizer_fn = FactorableScale(weight_quantizer.quantizer_fn)
        return False  # the graph itself is unchanged
