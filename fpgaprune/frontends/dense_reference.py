"""The dense reference of a pruned, quantized model: what "what pruning saved" is measured against."""

import numpy as np

from fpgaprune.masking import hold
from fpgaprune.quantize import to_qkeras


def _keras_weights(layer) -> list:
    return layer.get_weights()


def _set_keras_weights(layer, values) -> None:
    layer.set_weights(values)


def dense_reference(front, quantized, trained, spec, batchnorm="fold", read=_keras_weights, write=_set_keras_weights):
    """The reference for "what pruning saved": the final quantized weights, with every pruned entry (exactly
    0 in the shadow weights) given back its value from before pruning (`front`: the quantized model's front
    end, which the trained model's twin shares; `read`/`write`: a layer's arrays, kernel first, as its framework
    holds them). A stripped model's shapes differ from the trained one; it is compared with the trained weights as
    they are."""
    dense = to_qkeras(hold(trained), spec, batchnorm=batchnorm)
    names = {q.name for q in front.layers(quantized)}
    for layer in front.layers(dense):
        source = front.get_layer(quantized, layer.name) if layer.name in names else None
        if source is None or [w.shape for w in read(source)] != [w.shape for w in read(layer)]:
            continue
        values = read(source)
        restored = None
        if getattr(layer, "kernel", None) is not None:
            before = read(layer)[0]  # pre-pruning, BatchNormalization folded as in `quantized`
            restored = (values[0] == 0) & (before != 0)
            values[0] = np.where(values[0] == 0, before, values[0])
        write(layer, values)
        if restored is not None and restored.any():
            front.restore_quantizer(layer, restored)  # HGQ2: bits for the weights given back
    return dense
