"""Models as hls4ml users already keep them, built here and saved the way each arrived from outside fpgaprune:
a Keras 2.4 JSON architecture plus HDF5 weights, a QKeras model whose file holds Keras 2.4's serialized quantizer
dicts, a model pruned elsewhere (exact zeros), a CNN whose first layer is a BatchNormalization, a residual CNN in
the shape of MLPerf Tiny's ResNet-8, and a depthwise-separable block in MobileNet's shape."""

import json
from pathlib import Path

import h5py
import numpy as np
import qkeras
import yaml

from fpgaprune import data
from fpgaprune.tfk import keras

L = keras.layers


def keras24_config(model) -> dict:
    """`model.to_json()` as Keras 2.4 wrote it: no `module`/`registered_name` keys, `keras_version` 2.4.0, and a
    QActivation's quantizer passively serialized (a dict with `__passive_serialization__`)."""

    def legacy(value):
        if isinstance(value, dict):
            return {k: legacy(v) for k, v in value.items() if k not in ("module", "registered_name")}
        return [legacy(v) for v in value] if isinstance(value, list) else value

    config = legacy(json.loads(model.to_json()))
    config["keras_version"], config["backend"] = "2.4.0", "tensorflow"
    for layer in config["config"]["layers"]:
        if layer["class_name"] == "QActivation" and isinstance(layer["config"]["activation"], dict):
            layer["config"]["activation"]["__passive_serialization__"] = True
    return config


def _bits(bits=6, integer=0):
    return qkeras.quantized_bits(bits, integer, alpha=1)


def qkeras_cnn():
    """hls4ml's example `qkeras_mnist_cnn` at 8x8: QConv2D with relu inside, a QBatchNormalization with QKeras'
    default (po2) parameter quantizers, QActivation objects, max pooling, Dropout, QDense and a softmax."""
    return keras.Sequential(
        [
            keras.Input((8, 8, 1), name="input_1"),
            qkeras.QConv2D(8, 3, kernel_quantizer=_bits(), bias_quantizer=_bits(), activation="relu", name="q_conv2d"),
            qkeras.QConv2D(12, 3, kernel_quantizer=_bits(), bias_quantizer=_bits(), name="q_conv2d_1"),
            qkeras.QBatchNormalization(name="q_batch_normalization"),  # QKeras' po2 parameter quantizers
            qkeras.QActivation(qkeras.quantized_relu(6, 2), name="q_activation"),
            L.MaxPooling2D(2, name="max_pooling2d"),
            L.Flatten(name="flatten"),
            L.Dropout(0.25, name="dropout"),
            qkeras.QDense(10, kernel_quantizer=_bits(), bias_quantizer=_bits(), name="q_dense"),
            L.Activation("softmax", name="softmax"),
        ]
    )


def qkeras_mlp():
    """A QDense/QActivation MLP (hls4ml's `qkeras_3layer`), no Dropout."""
    return keras.Sequential(
        [
            keras.Input((64,), name="input_1"),
            qkeras.QDense(32, kernel_quantizer=_bits(), bias_quantizer=_bits(), name="fc1"),
            qkeras.QActivation(qkeras.quantized_relu(6, 2), name="relu1"),
            qkeras.QDense(16, kernel_quantizer=_bits(), bias_quantizer=_bits(), name="fc2"),
            qkeras.QActivation(qkeras.quantized_relu(6, 2), name="relu2"),
            qkeras.QDense(10, kernel_quantizer=_bits(), bias_quantizer=_bits(), name="output"),
            L.Activation("softmax", name="softmax"),
        ]
    )


def float_mlp():
    return keras.Sequential(
        [
            keras.Input((64,), name="input_1"),
            L.Dense(32, activation="relu", name="fc1"),
            L.Dense(16, activation="relu", name="fc2"),
            L.Dense(10, activation="softmax", name="output"),
        ]
    )


def input_batchnorm_cnn():
    """A BatchNormalization on the input (no conv before it to fold into), a strided conv, BN, conv, Dense."""
    return keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            L.BatchNormalization(name="bn0"),
            L.Conv2D(8, 3, strides=2, padding="same", name="conv1"),
            L.BatchNormalization(name="bn1"),
            L.Activation("relu", name="relu1"),
            L.Conv2D(8, 3, padding="same", activation="relu", name="conv2"),
            L.Flatten(name="flatten"),
            L.Dense(10, activation="softmax", name="fc"),
        ]
    )


def digits_arrays(flat: bool) -> dict:
    digits = data.digits()
    shape = (lambda x: x.reshape(len(x), -1)) if flat else (lambda x: x)
    return {
        "x_train": shape(digits.x_train),
        "y_train": digits.y_train,
        "x_test": shape(digits.x_test),
        "y_test": digits.y_test,
    }


def trained(build, arrays: dict, epochs: int = 6, seed: int = 0):
    """The model `build()` makes, seeded before it is built (its initial weights too), trained on `arrays`."""
    keras.utils.set_random_seed(seed)
    model = build()
    model.compile(keras.optimizers.Adam(3e-3), "sparse_categorical_crossentropy")
    model.fit(arrays["x_train"], arrays["y_train"], epochs=epochs, batch_size=32, verbose=0)
    return model


def pruned_elsewhere(model, shares=(0.7, 0.6, 0.5), seed: int = 0):
    """The model with the smallest `share` of each Dense kernel set to exactly 0 (a "70% pruned" model)."""
    for layer, share in zip([layer for layer in model.layers if hasattr(layer, "kernel")], shares):
        kernel, bias = layer.get_weights()
        kernel[np.abs(kernel) <= np.quantile(np.abs(kernel), share)] = 0.0
        layer.set_weights([kernel, bias])
    return model


def save_json_and_weights(model, root: Path, name: str) -> tuple[Path, Path]:
    """model.to_json() as Keras 2.4 wrote it, and model.save_weights(.h5): hls4ml's KerasJson + KerasH5."""
    architecture, weights = root / f"{name}.json", root / f"{name}_weights.h5"
    architecture.write_text(json.dumps(keras24_config(model)))
    model.save_weights(weights)
    return architecture, weights


def save_as_keras24_h5(model, path: Path) -> Path:
    """model.save(.h5), with the model config Keras 2.4 + QKeras wrote (quantizer dicts, keras_version 2.4.0)."""
    model.save(path)
    with h5py.File(path, "r+") as handle:
        handle.attrs["model_config"] = json.dumps(keras24_config(model))
        handle.attrs["keras_version"] = "2.4.0"
    return path


def run_config(root: Path, name: str, model: dict, flat: bool, **sections) -> Path:
    """A quick run config for the case (digits as an .npz), written beside it."""
    np.savez(root / f"{name}.npz", **digits_arrays(flat))
    config = {
        "name": name,
        "model": model,
        "data": {"dataset": "npz", "file": str(root / f"{name}.npz")},
        "finetune": {"epochs": 1},
        "quantization": {"qat_epochs": 1},
        "outputs": {"dir": str(root / "runs" / name), "tb_samples": 20, "synthesize_layers": False},
    }
    for section, values in sections.items():
        config[section] = {**config.get(section, {}), **values}
    path = root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


RESIDUAL_SPEC = {  # 16-bit weights and activations: its sums pass float32's 24 bits
    "default": {
        "kernel": "quantized_bits(16,2,alpha=1)",
        "bias": "quantized_bits(16,5,alpha=1)",
        "activation": "quantized_relu(16,6)",
    }
}


def resnet8(layers=L, filters=(8, 16)):
    """MLPerf Tiny's ResNet-8 (mlcommons/tiny, benchmark/training/image_classification, `resnet_v1_eembc`) at the
    size of 8x8 digits: a Conv2D + BatchNormalization + ReLU stem, a residual block (two 3x3 convolutions with
    their BatchNormalizations, an Add skip), a block whose skip is a strided 1x1 convolution, average pooling and a
    Dense. `layers`: tf_keras' or Keras 3's."""
    image = layers.Input((8, 8, 1), name="image")

    def conv_bn(x, count, name, strides=1, relu=True):
        x = layers.Conv2D(count, 3, strides=strides, padding="same", name=f"{name}_conv")(x)
        x = layers.BatchNormalization(name=f"{name}_bn")(x)
        return layers.Activation("relu", name=f"{name}_relu")(x) if relu else x

    first, second = filters
    x = conv_bn(image, first, "stem")
    y = conv_bn(conv_bn(x, first, "b1a"), first, "b1b", relu=False)
    x = layers.Activation("relu", name="b1_out")(layers.Add(name="b1_add")([x, y]))
    y = conv_bn(conv_bn(x, second, "b2a", strides=2), second, "b2b", relu=False)
    skip = layers.Conv2D(second, 1, strides=2, name="b2_skip")(x)
    x = layers.Activation("relu", name="b2_out")(layers.Add(name="b2_add")([skip, y]))
    x = layers.Flatten(name="flatten")(layers.AveragePooling2D(2, name="pool")(x))
    return image, layers.Dense(10, name="fc")(x)


def separable_block(layers=L, separable: bool = False):
    """A depthwise-separable block as MobileNet writes it (Conv2D + BN + ReLU, DepthwiseConv2D + BN + ReLU, 1x1
    Conv2D + BN + ReLU), average pooling and a Dense; `separable`: the middle two as one SeparableConv2D + BN."""
    image = layers.Input((8, 8, 1), name="image")

    def bn_relu(x, name):
        return layers.Activation("relu", name=f"{name}_relu")(layers.BatchNormalization(name=f"{name}_bn")(x))

    x = bn_relu(layers.Conv2D(8, 3, padding="same", use_bias=False, name="conv")(image), "conv")
    if separable:
        x = bn_relu(layers.SeparableConv2D(12, 3, padding="same", depth_multiplier=1, name="sep")(x), "sep")
    else:
        x = bn_relu(layers.DepthwiseConv2D(3, padding="same", use_bias=False, name="dw")(x), "dw")
        x = bn_relu(layers.Conv2D(12, 1, use_bias=False, name="pw")(x), "pw")
    x = layers.Flatten(name="flatten")(layers.AveragePooling2D(2, name="pool")(x))
    return image, layers.Dense(10, name="fc")(x)
