"""QKeras conversion keeps holds; pruned entries stay exactly 0 through QAT, in the shadow and after the quantizer."""

import re

import numpy as np
import pytest
from models import LOSS, OPTIMIZERS, build

import fpgaprune as fp
from fpgaprune.errors import QuantizationConfigError
from fpgaprune.frontends.qkeras.quantizers import weight_quantizer
from fpgaprune.quantize import QuantizationSpec, to_qkeras
from fpgaprune.selection import maskable_weights
from fpgaprune.tfk import keras

L = keras.layers
FLOAT_KINDS = ["Conv1D", "Conv2D", "DepthwiseConv2D", "SeparableConv2D", "Dense", "LSTM", "GRU"]


def spec(bits: int) -> dict:
    integer = 1 if bits > 2 else 0
    return {
        "default": {
            "kernel": f"quantized_bits({bits},{integer},alpha=1)",
            "bias": f"quantized_bits({max(bits, 8)},3,alpha=1)",
            "activation": f"quantized_relu({bits},2)",
        }
    }


@pytest.mark.parametrize("bits", [2, 3, 4, 6, 8, 12, 16])
@pytest.mark.parametrize("kind", FLOAT_KINDS)
def test_pruned_entries_stay_zero_through_qat(kind, bits):
    seed = FLOAT_KINDS.index(kind) * 100 + bits
    model, x, y = build(kind, seed)
    rng = np.random.default_rng(seed)
    manifest = fp.MaskManifest()
    masks = {}
    for weight in maskable_weights(kind):
        variable = getattr(getattr(model.get_layer("layer"), "cell", model.get_layer("layer")), weight.name)
        masks[weight.name] = rng.random(variable.shape) < 0.4
        manifest.prune(f"layer/{weight.name}", where=masks[weight.name])
    quantized = to_qkeras(fp.hold(model, manifest), spec(bits))
    layer = quantized.get_layer("layer")
    assert type(layer).__name__ == "Q" + kind
    quantized.compile(OPTIMIZERS[["Adam", "AdamW", "SGD-momentum"][bits % 3]](), LOSS)
    before = [w.copy() for w in quantized.get_weights()]
    quantized.fit(x, y, batch_size=8, epochs=2, verbose=0)
    assert any(np.count_nonzero(a != b) for a, b in zip(before, quantized.get_weights()))
    for weight in maskable_weights("Q" + kind):
        variable = weight.variable(layer)
        mask = masks[weight.name]
        shadow = variable.numpy()
        quantized_values = np.asarray(weight_quantizer(layer, weight.role)(variable))
        assert np.count_nonzero(shadow[mask]) == 0, f"{weight.name}: float shadow drifted"
        assert np.count_nonzero(quantized_values[mask]) == 0, f"{weight.name}: quantized value not 0"


def digits_cnn():
    keras.utils.set_random_seed(0)
    return keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            L.Conv2D(4, 3, name="conv1"),
            L.BatchNormalization(name="bn1"),
            L.ReLU(name="relu1"),
            L.Conv2D(6, 3, activation="relu", name="conv2"),
            L.Flatten(name="flatten"),
            L.Dense(10, name="fc"),
        ],
        name="cnn",
    )


def randomise_bn(model):
    bn = model.get_layer("bn1")
    rng = np.random.default_rng(0)
    bn.set_weights([rng.uniform(0.5, 1.5, 4), rng.normal(size=4), rng.normal(size=4) * 0.1, rng.uniform(0.5, 1.5, 4)])
    return model


def test_conversion_maps_layers_folds_batchnorm_and_keeps_holds(tmp_path):
    model = randomise_bn(digits_cnn())
    held = fp.hold(model, prune=["conv2[:, :, 1, :]"], freeze=["fc[0, :]"])
    wide = {
        "default": {
            "kernel": "quantized_bits(16,5,alpha=1)",
            "bias": "quantized_bits(16,5,alpha=1)",
            "activation": "quantized_relu(16,6)",
        },
        "layers": {"fc": {"kernel": "quantized_bits(8,1,alpha=1)"}},
    }
    quantized = to_qkeras(held, wide)
    assert [(l.name, type(l).__name__) for l in quantized.layers] == [
        ("conv1", "QConv2D"),
        ("relu1", "QActivation"),
        ("conv2", "QConv2D"),
        ("flatten", "Flatten"),
        ("fc", "QDense"),
    ]
    assert str(quantized.get_layer("conv2").activation).startswith("quantized_relu(16,6")
    assert str(quantized.get_layer("fc").kernel_quantizer_internal).startswith("quantized_bits(8,1")
    gamma, beta, mean, variance = model.get_layer("bn1").get_weights()
    scale = gamma / np.sqrt(variance + model.get_layer("bn1").epsilon)
    kernel, bias = model.get_layer("conv1").get_weights()
    folded_kernel, folded_bias = quantized.get_layer("conv1").get_weights()
    np.testing.assert_allclose(folded_kernel, kernel * scale, rtol=1e-6)
    np.testing.assert_allclose(folded_bias, (bias - mean) * scale + beta, rtol=1e-6, atol=1e-7)
    x = np.random.default_rng(1).random((32, 8, 8, 1), dtype=np.float32)
    reference = keras.Model(held.input, held.get_layer("conv2").output).predict(x, verbose=0)
    ours = keras.Model(quantized.input, quantized.get_layer("conv2").output).predict(x, verbose=0)
    np.testing.assert_allclose(ours, reference, atol=1e-2)  # 16-bit quantizers: the 2^-10 grid, not the fold
    assert [e.selection for e in fp.manifest_of(quantized)] == ["conv2/kernel[:, :, 1, :]", "fc/kernel[0, :]"]
    loaded = fp.load_model(fp.save_model(quantized, tmp_path / "q.keras"))
    assert str(loaded.get_layer("fc").kernel_quantizer_internal) == str(
        quantized.get_layer("fc").kernel_quantizer_internal
    )
    assert fp.manifest_of(loaded).to_json() == fp.manifest_of(quantized).to_json()
    loaded.compile(OPTIMIZERS["Adam"](), LOSS)
    loaded.fit(x, np.zeros(32), epochs=1, verbose=0)
    assert np.count_nonzero(loaded.get_layer("conv2").kernel.numpy()[:, :, 1, :]) == 0
    assert model.get_layer("conv1").__class__.__name__ == "Conv2D"  # the user's model is untouched


def test_batchnorm_can_become_qbatchnormalization():
    model = randomise_bn(digits_cnn())
    quantized = to_qkeras(fp.hold(model, prune=["conv1[..., 0]"]), spec(8), batchnorm="quantize")
    assert type(quantized.get_layer("bn1")).__name__ == "QBatchNormalization"
    np.testing.assert_array_equal(quantized.get_layer("bn1").get_weights()[2], model.get_layer("bn1").get_weights()[2])
    assert np.count_nonzero(quantized.get_layer("conv1").kernel.numpy()[..., 0]) == 0


def test_a_twin_asked_for_with_no_spec_takes_the_built_in_default():
    """`fp.quantized_twin(model)`, as the refusals that send users there write it, needs no spec."""
    from fpgaprune.quantize.spec import DEFAULT_QUANTIZERS

    model = fp.hold(digits_cnn())
    default = fp.quantized_twin(model)
    assert str(default.get_layer("conv1").kernel_quantizer) == DEFAULT_QUANTIZERS["kernel"]
    assert default.get_config() == fp.quantized_twin(model, {"default": DEFAULT_QUANTIZERS}).get_config()


def tanh_sigmoid_mlp():
    keras.utils.set_random_seed(0)
    return keras.Sequential(
        [
            keras.Input((6,)),
            L.Dense(8, activation="tanh", name="fc1"),
            L.ReLU(name="relu"),
            L.Dense(4, name="fc2"),
            L.Activation("sigmoid", name="sigmoid"),
        ]
    )


def test_activations_take_the_quantizer_that_computes_them():
    base = spec(8)["default"]
    quantized = to_qkeras(
        fp.hold(tanh_sigmoid_mlp()),
        {
            "default": base,
            "layers": {"fc1": {"activation": "quantized_tanh(8)"}, "sigmoid": {"activation": "quantized_sigmoid(6)"}},
        },
    )
    assert str(quantized.get_layer("fc1").activation) == "quantized_tanh(8)"
    assert [(l.name, type(l).__name__, str(getattr(l, "quantizer", ""))) for l in quantized.layers[1:]] == [
        ("relu", "QActivation", "quantized_relu(8,2)"),
        ("fc2", "QDense", ""),
        ("sigmoid", "QActivation", "quantized_sigmoid(6)"),
    ]
    default_only = to_qkeras(fp.hold(tanh_sigmoid_mlp()), spec(8))  # quantized_relu: the relu only
    assert default_only.get_layer("fc1").activation.__name__ == "tanh"
    assert type(default_only.get_layer("sigmoid")).__name__ == "Activation"
    assert type(default_only.get_layer("relu")).__name__ == "QActivation"


def test_a_layer_quantizer_for_another_activation_is_rejected():
    wrong = {"default": spec(8)["default"], "layers": {"fc1": {"activation": "quantized_sigmoid(8)"}}}
    with pytest.raises(
        fp.QuantizationConfigError,
        match=r"quantization\.layers\.fc1\.activation: "
        r"'quantized_sigmoid\(8\)' does not compute 'tanh', the activation of layer 'fc1'; "
        r"expected quantized_tanh$",
    ):
        to_qkeras(fp.hold(tanh_sigmoid_mlp()), wrong)


@pytest.mark.parametrize("quantizer", ["binary", "quantized_po2(4)", "stochastic_binary"])
def test_quantizer_that_cannot_represent_zero_is_rejected(quantizer):
    held = fp.hold(digits_cnn(), prune=["conv2[:, :, 1, 2]"])
    config = {
        "default": {"kernel": "quantized_bits(6,0,alpha=1)", "bias": "quantized_bits(8,3,alpha=1)"},
        "layers": {"conv2": {"kernel": quantizer}},
    }
    with pytest.raises(fp.QuantizerZeroError, match=r"layer 'conv2' \(QConv2D\): kernel quantizer .* maps 0 to"):
        to_qkeras(held, config)


def test_pruning_on_the_qkeras_model_directly():
    from fpgaprune.pruning import GradualPruning, PolynomialDecay, Pruner

    quantized = to_qkeras(digits_cnn(), spec(6))
    pruned = Pruner(structure="kernel").prune(quantized, sparsity=0.5)
    kernel = pruned.get_layer("conv2").kernel.numpy()
    assert np.all(kernel.reshape(9, -1) == 0, axis=0).mean() == 0.5
    pruner = Pruner(structure="kernel", layers=["conv2"])  # prune and quantize in one training run
    model = pruner.attach(quantized)
    model.compile(OPTIMIZERS["Adam"](), LOSS)
    rng = np.random.default_rng(0)
    gradual = GradualPruning(pruner, PolynomialDecay(0.0, 0.75, 0, 8, frequency=2))
    model.fit(
        rng.random((64, 8, 8, 1)), rng.integers(0, 10, 64), batch_size=8, epochs=2, verbose=0, callbacks=[gradual]
    )
    layer = model.get_layer("conv2")
    dead = np.all(layer.kernel.numpy().reshape(9, -1) == 0, axis=0)
    assert dead.mean() == 0.75
    assert np.count_nonzero(np.asarray(layer.kernel_quantizer_internal(layer.kernel)).reshape(9, -1)[:, dead]) == 0


@pytest.mark.parametrize(
    "data, message",
    [
        (
            {"default": {"kernel": "quantized_bitz(6,0)"}},
            "quantization.default.kernel: 'quantized_bitz(6,0)' is not a QKeras",
        ),
        ({"default": {"kernel": "quantized_bits(6,0,alpha=__import__('os'))"}}, "may only take literal arguments"),
        ({"default": {"kernal": "quantized_bits(6,0)"}}, "quantization.default: unknown role 'kernal'"),
        ({"defaults": {}}, "quantization: unknown key(s) ['defaults']"),
        ({"default": {"kernel": "quantized_bits(6,0"}}, "cannot parse quantizer"),
        ({"default": {"kernel": 6}}, "expected a QKeras quantizer string"),
    ],
)
def test_bad_quantization_settings(data, message):
    with pytest.raises(fp.QuantizationConfigError) as info:
        QuantizationSpec.from_dict(data)
    assert message in str(info.value)


def test_pruning_during_qat_checks_the_quantizers_too():
    from fpgaprune.pruning import Pruner

    config = {
        "default": {"kernel": "quantized_bits(6,0,alpha=1)", "bias": "quantized_bits(8,3,alpha=1)"},
        "layers": {"conv2": {"kernel": "binary"}},
    }
    pruner = Pruner(structure="kernel", layers=["conv2"])
    attached = pruner.attach(to_qkeras(digits_cnn(), config))  # nothing pruned yet: nothing to refuse
    with pytest.raises(fp.QuantizerZeroError, match="layer 'conv2'"):
        pruner.apply(attached, pruner.select(attached, sparsity=0.5))


def test_missing_quantizer_and_unknown_layer_are_named():
    with pytest.raises(fp.QuantizationConfigError, match="layer 'conv1' \\(Conv2D\\) needs a 'bias' quantizer"):
        to_qkeras(digits_cnn(), {"default": {"kernel": "quantized_bits(6,0,alpha=1)"}})
    with pytest.raises(fp.QuantizationConfigError, match="quantization.layers: no layer named 'conv9'"):
        to_qkeras(digits_cnn(), {"default": spec(6)["default"], "layers": {"conv9": {"kernel": "ternary"}}})


def _qkeras_model():
    import qkeras

    keras.utils.set_random_seed(0)
    bits = "quantized_bits(6,0,alpha=1)"
    return keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            qkeras.QConv2D(4, 3, kernel_quantizer=bits, bias_quantizer=bits, activation="relu", name="qconv"),
            keras.layers.BatchNormalization(name="bn"),
            qkeras.QActivation(qkeras.quantized_relu(6, 2), name="qrelu"),
            keras.layers.Flatten(name="flat"),
            keras.layers.Dense(10, name="fc"),
        ]
    )


def test_a_qkeras_model_keeps_its_quantizers_and_a_layer_key_replaces_only_what_it_names():
    from fpgaprune.frontends.qkeras.convert import quantizer_sources

    model = _qkeras_model()
    quantized = to_qkeras(fp.hold(model), {"default": spec(8)["default"]})
    qconv = quantized.get_layer("qconv")
    assert str(qconv.kernel_quantizer_internal) == str(model.get_layer("qconv").kernel_quantizer_internal)
    assert qconv.get_config()["activation"] == "relu"  # its float relu stays: not replaced by a QActivation
    assert type(quantized.get_layer("bn")).__name__ == "QBatchNormalization"  # not folded into a quantized conv
    assert type(quantized.get_layer("fc")).__name__ == "QDense"  # the float layer takes the default
    assert str(quantized.get_layer("qrelu").quantizer) == "quantized_relu(6,2)"
    layers = {"qconv": {"kernel": "quantized_bits(4,0,alpha=1)"}, "qrelu": {"activation": "quantized_relu(4,1)"}}
    replaced = to_qkeras(fp.hold(model), {"default": spec(8)["default"], "layers": layers})
    assert "quantized_bits(4,0" in str(replaced.get_layer("qconv").kernel_quantizer_internal)
    assert "quantized_bits(6,0" in str(replaced.get_layer("qconv").bias_quantizer_internal)
    assert str(replaced.get_layer("qrelu").quantizer) == "quantized_relu(4,1)"
    sources = quantizer_sources(model, {"default": spec(8)["default"], "layers": layers}, default_given=False)
    assert sources == {
        "qconv": "its own quantizers, kept; kernel from quantization.layers",
        "qrelu": "its own quantizers, kept; activation from quantization.layers",
        "fc": "the built-in default (quantization.default unset)",
    }


@pytest.mark.parametrize(
    "layers, expected",
    [
        ({"qrelu": {"kernel": "quantized_bits(4,0)"}}, "layer 'qrelu' (QActivation) has no kernel quantizer"),
        ({"qrelu": {"activation": "quantized_tanh(4)"}}, "does not compute 'relu', the activation of layer 'qrelu'"),
    ],
)
def test_a_layer_key_that_does_not_fit_a_qkeras_layer_is_one_line(layers, expected):
    with pytest.raises(QuantizationConfigError, match=re.escape(expected)):
        to_qkeras(fp.hold(_qkeras_model()), {"default": spec(8)["default"], "layers": layers})
