"""A BatchNormalization after a DepthwiseConv2D or a SeparableConv2D (MobileNet's depthwise-separable block,
`outside_models.separable_block`), in tf_keras and Keras 3: folded into the convolution (per input channel and
multiplier, or into the pointwise kernel) and C-simulated bit-exactly in io_stream; kept as a quantized
BatchNormalization, bounded through the depthwise kernel (issue 68: never exact in either mode, "no bound follows
from its types")."""

import keras as keras3
import numpy as np
import pytest
from hls_helpers import digits
from outside_models import separable_block

import fpgaprune as fp
from fpgaprune.frontends.qkeras.convert import folded_weights
from fpgaprune.hls.tolerance import Tolerance, export_layer_tolerances
from fpgaprune.record import resolved
from fpgaprune.tfk import keras

SPEC = {
    "default": {
        "kernel": "quantized_bits(8,1,alpha=1)",
        "bias": "quantized_bits(8,3,alpha=1)",
        "activation": "quantized_relu(8,3)",
    }
}


def _trained(framework: str, separable: bool):
    data = digits()
    module = keras if framework == "tf_keras" else keras3
    module.utils.set_random_seed(0)
    model = module.Model(*separable_block(module.layers, separable))
    model.compile(module.optimizers.Adam(3e-3), module.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(data.x_train, data.y_train, epochs=1, batch_size=64, verbose=0)  # statistics far from 0 and 1
    return model, data


@pytest.mark.csim
@pytest.mark.parametrize("framework, separable", [("tf_keras", False), ("tf_keras", True), ("keras3", False)])
def test_a_batchnorm_after_a_depthwise_or_separable_conv_folds_and_is_bit_exact(tmp_path, framework, separable):
    model, data = _trained(framework, separable)
    quantized = fp.quantized_twin(model, SPEC)
    assert not [layer.name for layer in quantized.layers if "BatchNormalization" in type(layer).__name__]
    exported = fp.export(quantized, "latency_stream", "pynq-z2", tmp_path / "prj", x=data.x_test)
    result = fp.csim(exported, quantized, data.x_test[:200])
    assert result.passed and result.bit_exact, result.format()


@pytest.mark.parametrize("separable", [False, True])
def test_the_folded_convolution_computes_what_it_and_its_batchnorm_did(separable):
    """In float, before any quantizer: depth multiplier 2 (output channel c * 2 + m), a bias, statistics far from
    0 and 1."""
    rng = np.random.default_rng(0)
    conv = (
        keras.layers.SeparableConv2D(6, 3, depth_multiplier=2)
        if separable
        else keras.layers.DepthwiseConv2D(3, depth_multiplier=2)
    )
    x = rng.normal(size=(8, 6, 6, 3)).astype(np.float32)
    y = conv(x)
    channels = y.shape[-1]
    gamma, beta = rng.uniform(0.5, 2, channels), rng.normal(size=channels)
    mean, variance = rng.normal(size=channels), rng.uniform(0.2, 3, channels)
    conv.set_weights([w if w.ndim == 1 else w for w in conv.get_weights()[:-1]] + [rng.normal(size=channels)])
    expected = (np.asarray(conv(x)) - mean) / np.sqrt(variance + 1e-3) * gamma + beta
    scale = gamma / np.sqrt(variance + 1e-3)
    conv.set_weights(folded_weights(conv.get_weights(), True, scale, beta - mean * scale))
    assert np.allclose(np.asarray(conv(x)), expected, atol=1e-4)


@pytest.mark.csim
def test_a_quantized_batchnorm_after_a_depthwise_conv_is_bounded_through_the_depthwise_kernel(tmp_path):
    model, data = _trained("tf_keras", False)
    quantized = fp.quantized_twin(model, SPEC, batchnorm="quantize")
    exported = fp.export(quantized, "latency_stream", "pynq-z2", tmp_path / "prj", x=data.x_test)
    names = exported.manifest.get("names")
    bounds = export_layer_tolerances(resolved(quantized), exported.config, names, exported.input_type)
    assert (
        isinstance(bounds["dw"], Tolerance)
        and "'conv_bn' (a batch normalization that cannot fold)" in bounds["dw"].reason
    )
    result = fp.csim(exported, quantized, data.x_test[:200])
    assert result.passed, result.format()  # each batch normalization within its bound, through to the logits
    assert {line.split("'")[1] for line in result.judged} >= {"conv_bn", "dw_bn"}, result.judged
