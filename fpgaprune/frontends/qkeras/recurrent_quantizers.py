"""An hls4ml pass: QLSTM/QGRU weights go through their QKeras quantizers, as QLSTM/QGRU use them.

hls4ml 1.3 builds LSTM/GRU weights without the quantizers it parsed. The float weights are then written into
the quantizer's fixed type: a weight outside its range wraps around and one inside is truncated, while QKeras
clips and rounds. This pass re-adds each weight through its quantizer (same names, same fixed types).
"""

import numpy as np
from hls4ml.model.optimizer import OptimizerPass

from fpgaprune.hls.attribute_keys import RECURRENT_QUANTIZED

PASS_NAME = "fpgaprune_recurrent_quantizers"
# weight -> (hls4ml variable name, the node attribute holding its QKeras quantizer)
_WEIGHTS = {
    "weight": ("w{index}", "weight_quantizer"),
    "recurrent_weight": ("wr{index}", "recurrent_weight_quantizer"),
    "bias": ("b{index}", "bias_quantizer"),
    "recurrent_bias": ("br{index}", "bias_quantizer"),
}


class RecurrentQuantizers(OptimizerPass):
    def match(self, node):
        return (
            node.class_name in ("LSTM", "GRU")
            and node.get_attr("weight_quantizer") is not None
            and not node.get_attr(RECURRENT_QUANTIZED, False)
        )

    def transform(self, model, node):
        for name, (var_name, role) in _WEIGHTS.items():
            quantizer, variable = node.get_attr(role), node.weights.get(name)
            if quantizer is None or variable is None:
                continue
            data = np.asarray(getattr(variable, "data_unquantized", variable.data))
            if name == "recurrent_bias" and not data.any():
                continue  # a Keras LSTM's recurrent bias: zeros, typed by the config
            node.add_weights_variable(name=name, var_name=var_name, data=data, quantizer=quantizer)
        node.set_attr(RECURRENT_QUANTIZED, True)
        return False
