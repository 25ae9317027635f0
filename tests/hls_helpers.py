"""Helpers for the export tests. Every oracle here is computed from the Keras model, never from the generator."""

import hashlib
import re
from pathlib import Path

import numpy as np
from quantizer_specs import SPEC8

import fpgaprune as fp
from fpgaprune import data
from fpgaprune.hls import convert_model, export_config
from fpgaprune.hls.manifest import quantized_kernel
from fpgaprune.quantize import to_qkeras
from fpgaprune.record import record_of, resolved
from fpgaprune.tfk import keras

L = keras.layers
LOSS = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
# 8x8 one-channel inputs on a 1/16 grid, like the digits: the export tests' held-out x.
X8 = np.round(np.random.default_rng(0).random((40, 8, 8, 1)) * 16) / 16


def trained(model, prune, dataset, epochs=2, spec=SPEC8, seed=0, loss=LOSS):
    """`model` with `prune` held at zero, converted to QKeras and trained on `dataset`."""
    keras.utils.set_random_seed(seed)
    quantized = to_qkeras(fp.hold(model, prune=prune), spec)
    quantized.compile(keras.optimizers.Adam(3e-3), loss)
    if epochs:
        quantized.fit(dataset.x_train, dataset.y_train, epochs=epochs, batch_size=64, verbose=0)
    return quantized


def digits_cnn(padding="same"):
    return keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            L.Conv2D(4, 3, name="conv1"),
            L.ReLU(name="relu1"),
            L.Conv2D(6, 3, padding=padding, name="conv2"),
            L.ReLU(name="relu2"),
            L.Flatten(name="flatten"),
            L.Dense(10, name="fc"),
        ]
    )


def branching_model():
    """A residual Add, a Concatenate of the sum with a 1x1 conv of it, explicit zero padding, pooling."""
    image = keras.Input((8, 8, 1), name="image")
    first = L.Conv2D(4, 3, padding="same", activation="relu", name="conv1")(image)
    summed = L.Add(name="add")([first, L.Conv2D(4, 3, padding="same", name="conv2")(first)])
    joined = L.Concatenate(name="concat")([summed, L.Conv2D(4, 1, name="conv3")(summed)])
    pooled = L.MaxPooling2D(name="pool")(L.ZeroPadding2D(1, name="pad")(joined))
    return keras.Model(image, L.Dense(10, name="fc")(L.Flatten(name="flatten")(pooled)))


def digits():
    return data.digits()


def live_weights(model) -> dict:
    """{layer: nonzero quantized kernel entries} for layers with a kernel."""
    layers = record_of(model).layers
    return {
        name: int(np.count_nonzero(quantized_kernel(layer)))
        for name, layer in layers.items()
        if quantized_kernel(layer) is not None
    }


def output_positions(layer) -> int:
    """Output pixels of a conv layer (1 for Dense)."""
    shape = layer.output_shape
    return int(np.prod(shape[1:-1])) if len(shape) > 2 else 1


def tree_hash(root: Path) -> str:
    """SHA-256 over every file's relative path and bytes: equal only for byte-identical directories."""
    digest = hashlib.sha256()
    for path in sorted(p for p in Path(root).rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(root)).encode() + path.read_bytes())
    return digest.hexdigest()


def header_entries(project: Path, variable: str) -> int:
    """Entries in the initializer of a weight header (`firmware/weights/<variable>.h`)."""
    text = (Path(project) / "firmware" / "weights" / f"{variable}.h").read_text()
    body = re.search(r"=\s*\{([^}]*)\}", text).group(1)
    return len([v for v in body.split(",") if v.strip()])


def product_sites(project: Path) -> dict:
    """{layer named in the generated table's comment: its `{input, output}` entries in nnet_code_gen.h}: the
    product loop runs once per entry, one product each."""
    text = (Path(project) / "firmware" / "nnet_utils" / "nnet_code_gen.h").read_text()
    sites = {}
    for block in text.split("// fpgaprune kernel-sparse product of ")[1:]:
        layer = block.split(" ", 1)[0]
        table = block.split("[2] = {", 1)[1].split("};", 1)[0]
        sites[layer] = len(re.findall(r"\{\d+, \d+\},(?! // no live weight)", table))
        assert "for (unsigned p = 0; p < CONFIG_T::n_live; p++)" in block and "mul(data[" in block, layer
    return sites


def top_calls(project: Path) -> dict:
    """{layer: the C++ call the top function makes for it}."""
    calls = {}
    for line in (Path(project) / "firmware" / "myproject.cpp").read_text().splitlines():
        match = re.match(r"\s*(nnet::\w+)<.*;\s*//\s*(\S+)", line)
        if match:
            calls[match.group(2)] = match.group(1)
    return calls


# Random 8x8 inputs on a 1/16 grid: the inputs of `random_model`'s tests.
RNG_X = np.round(np.random.default_rng(0).random((32, 8, 8, 1)) * 16) / 16


def random_model(kind, seed):
    """A small model of `kind` with random kernels and random pruned kernels/weights."""
    rng = np.random.default_rng(seed)
    if kind == "dense":
        model = keras.Sequential(
            [
                keras.Input((8, 8, 1)),
                L.Flatten(name="flatten"),
                L.Dense(12, name="a"),
                L.ReLU(name="r"),
                L.Dense(5, name="b"),
            ]
        )
        prune = [f"a[{int(rng.integers(64))}:{int(rng.integers(64, 65))}, {int(rng.integers(12))}]", "b[2:7, 1]"]
    elif kind == "conv1d":
        model = keras.Sequential(
            [
                keras.Input((8, 8, 1)),
                L.Reshape((8, 8), name="rs"),
                L.Conv1D(5, 3, padding="same", name="a"),
                L.ReLU(name="r"),
                L.Conv1D(4, 2, strides=2, name="b"),
                L.Flatten(name="f"),
                L.Dense(3, name="c"),
            ]
        )
        prune = [f"a[:, {int(rng.integers(8))}, {int(rng.integers(5))}]", f"b[:, {int(rng.integers(5))}, :]"]
    else:
        model = keras.Sequential(
            [
                keras.Input((8, 8, 1)),
                L.Conv2D(4, 3, strides=2, padding="same", name="a"),
                L.ReLU(name="r"),
                L.Conv2D(5, 1, strides=2, name="b"),  # a strided 1x1 (a ResNet skip): every other row
                L.Flatten(name="f"),
                L.Dense(3, name="c"),
            ]
        )
        prune = [f"a[:, :, 0, {int(rng.integers(4))}]", f"b[:, :, {int(rng.integers(4))}, :]", "c[0:9, 2]"]
    for layer in model.layers:
        if layer.weights:
            layer.set_weights([rng.normal(0, 0.4, w.shape) for w in layer.get_weights()])
    return trained(model, prune, None, epochs=0, seed=seed)


def written(model, tmp_path, io_type, strategy="Latency", reuse=1, backend="Vitis", sparse=True):
    config, _, _ = export_config(
        resolved(model),
        {"HLSConfig": {"Model": {"Strategy": strategy, "ReuseFactor": reuse}}},
        RNG_X,
        kernel_sparse=sparse,
    )
    hls_model = convert_model(
        resolved(model), config, tmp_path / f"{io_type}_{strategy}_{backend}_{sparse}", io_type=io_type, backend=backend
    )
    hls_model.write()
    return hls_model
