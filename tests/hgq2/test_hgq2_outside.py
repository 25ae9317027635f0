"""An HGQ2 model trained outside fpgaprune, saved as HGQ2 writes it, with weights at 0 bits: accepted as it is
(HGQ2's classes pass the file allow-list; nothing is run), its 0-bit weights count as pruned, kernel by kernel,
and the export runs no product for them, bit-exact in C-sim."""

import numpy as np
import pytest

pytest.importorskip("hgq", reason="HGQ2 lives in its own environment (requirements/hgq2.txt, docs/hgq2.md)")
import keras  # noqa: E402
from hgq.config import LayerConfigScope, QuantizerConfigScope  # noqa: E402
from hgq.layers import QConv2D, QDense  # noqa: E402
from hgq.utils import trace_minmax  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402

import fpgaprune as fp  # noqa: E402
from fpgaprune.errors import ModelTypeError  # noqa: E402
from fpgaprune.framework import front_end_of, library_front_end  # noqa: E402
from fpgaprune.hls import count_products  # noqa: E402
from fpgaprune.record import resolved


@pytest.fixture(scope="module")
def outside(tmp_path_factory):
    """HGQ2's README scopes, one epoch on digits, `trace_minmax`; then conv's filter 0 and one more weight set
    to 0 bits, as HGQ2's EBOPs penalty leaves weights it has removed."""
    data = load_digits()
    x = (np.minimum(data.images, 15) / 16).astype("float32")[..., None]
    keras.utils.set_random_seed(0)
    with (
        QuantizerConfigScope(place="all", default_q_type="kbi", overflow_mode="SAT_SYM"),
        QuantizerConfigScope(place="datalane", default_q_type="kif", overflow_mode="WRAP"),
        LayerConfigScope(enable_ebops=True, beta0=1e-5),
    ):
        model = keras.Sequential(
            [
                keras.Input((8, 8, 1)),
                QConv2D(4, 3, activation="relu", name="conv"),
                keras.layers.Flatten(),
                QDense(10, name="fc"),
            ]
        )
    model.compile(keras.optimizers.Adam(1e-2), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x[:1400], data.target[:1400], epochs=1, verbose=0)
    trace_minmax(model, x[:1400], verbose=False)
    bits = model.get_layer("conv").kq.quantizer._b
    zeroed = np.asarray(bits).copy()
    zeroed[..., 0], zeroed[0, 0, 0, 1] = 0, 0
    bits.assign(zeroed)
    path = tmp_path_factory.mktemp("outside") / "hgq2_model.keras"
    model.save(path)
    return path, model, x[1400:]


def test_an_outside_hgq2_model_is_accepted_with_its_0_bit_weights_counted_as_pruned(tmp_path, outside):
    path, original, x_test = outside
    before = path.read_bytes()
    model = fp.load_model(path)
    assert front_end_of(model).name == "Keras 3 + HGQ2"
    assert np.array_equal(model.predict(x_test, verbose=0), original.predict(x_test, verbose=0))
    conv = model.get_layer("conv")
    quantized = np.asarray(conv.kq(conv.kernel, training=False))
    assert np.asarray(conv.kernel)[..., 0].any() and not quantized[..., 0].any()  # nonzero, but 0 bits
    result = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "prj", x=x_test[:50])
    check = fp.csim(result, model, x_test)
    assert check.bit_exact, check.format()
    pruned_kernels = result.manifest["layers"]["conv"]["kernels_pruned"]
    assert [0, 0] in pruned_kernels  # filter 0's only kernel (one input channel) is dead, kernel by kernel
    live = {
        "conv": int(np.count_nonzero(quantized)) * 36,
        "fc": int(np.count_nonzero(np.asarray(model.get_layer("fc").kq(model.get_layer("fc").kernel, training=False)))),
    }
    assert live["conv"] <= (36 - 9 - 1) * 36
    assert count_products(result.hls_model, x_test[:3]) == live
    assert path.read_bytes() == before  # the user's file is never modified
    twin = fp.quantized_twin(model, {"library": "hgq2"})  # an HGQ2 model keeps its own quantizers and widths
    assert np.array_equal(twin.predict(x_test, verbose=0), model.predict(x_test, verbose=0))
    assert not np.asarray(twin.get_layer("conv").kq.quantizer._b)[..., 0].any()


def test_the_qkeras_library_in_the_hgq2_environment_is_one_line():
    with pytest.raises(
        ModelTypeError, match=r"^quantization.library 'qkeras': quantization needs QKeras, which this env"
    ):
        library_front_end("qkeras")
    assert library_front_end("auto").name == "Keras 3 + HGQ2"


def test_an_hgq2_layer_hls4ml_cannot_convert_is_one_line_naming_it():
    from hgq.layers import QConv3D

    model = keras.Sequential(
        [keras.Input((4, 4, 4, 1)), QConv3D(2, 3, name="volume"), keras.layers.Flatten(), QDense(3, name="fc")]
    )
    problem = front_end_of(model).conversion_problem(model)
    assert problem == "layer 'volume' is a QConv3D, which hls4ml 1.3.0's Keras 3 converter cannot convert; replace it"


@pytest.mark.csim
def test_an_hgq2_model_whose_datalanes_saturate_is_judged_against_the_clipped_values(tmp_path):
    """Each conv read by a standalone quantizer that rounds and saturates at fixed widths (SAT, not HGQ2's default
    WRAP; as a model carried from PQuantML has them), then a ReLU: BitExact folds the quantizer into the conv's
    type, which then holds the quantizer's value, not the conv's. C-sim is bit-exact at the logits, and each conv
    is judged against its value clipped to its type's range (before the fix: "beyond its tolerance ... modulo")."""
    from hgq.quantizer import Quantizer, QuantizerConfig

    data = load_digits()
    x = (np.minimum(data.images, 15) / 16).astype("float32")[..., None]
    keras.utils.set_random_seed(0)

    def lane():  # ufixed<5,1,RND,SAT>: clipped to [0, 1.9375]
        return QuantizerConfig("kif", "datalane", k0=False, i0=1, f0=4, round_mode="RND", overflow_mode="SAT")

    layers = []
    for index, filters in enumerate((6, 8), start=1):
        layers += [QConv2D(filters, 3, name=f"conv{index}", iq_conf=lane()), Quantizer(lane(), name=f"q{index}")]
        layers += [keras.layers.Activation("relu", name=f"relu{index}")]
    with LayerConfigScope(enable_ebops=True, beta0=1e-6):
        model = keras.Sequential(
            [keras.Input((8, 8, 1)), *layers, keras.layers.Flatten(), QDense(10, name="fc", iq_conf=lane())]
        )
    model.compile(keras.optimizers.Adam(1e-2), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x[:1400], data.target[:1400], epochs=2, verbose=0)
    x_test = x[1400:]
    conv2_out = keras.Model(model.inputs, model.get_layer("conv2").output).predict(x_test, verbose=0)
    assert conv2_out.max() > 2.0  # values beyond the quantizer's range: the export holds them saturated
    result = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "prj", x=x_test[:50])
    check = fp.csim(result, model, x_test)
    assert check.bit_exact and check.passed, check.format()
    judged = "\n".join(check.judged)
    assert "'conv2'" in judged and "saturating (judged against the value clipped to [0, 1.9375])" in judged, judged


def _residual_hgq2(x, y):
    """A residual block as an HGQ2 user writes it (HGQ2's README scopes): QConv2D with relu inside, a QAdd skip, a
    Keras ReLU layer after it, QDense; trained one epoch, `trace_minmax`."""
    from hgq.layers import QAdd

    keras.utils.set_random_seed(0)
    with (
        QuantizerConfigScope(place="all", default_q_type="kbi", overflow_mode="SAT_SYM"),
        QuantizerConfigScope(place="datalane", default_q_type="kif", overflow_mode="WRAP"),
        LayerConfigScope(enable_ebops=True, beta0=1e-7),
    ):
        image = keras.Input((8, 8, 1))
        first = QConv2D(8, 3, padding="same", activation="relu", name="conv1")(image)
        second = QConv2D(8, 3, padding="same", name="conv2")(
            QConv2D(8, 3, padding="same", activation="relu", name="conv1b")(first)
        )
        merged = keras.layers.ReLU(name="relu")(QAdd(name="add")([first, second]))
        model = keras.Model(image, QDense(10, name="fc")(keras.layers.Flatten(name="flatten")(merged)))
    model.compile(keras.optimizers.Adam(1e-2), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, epochs=1, verbose=0)
    trace_minmax(model, x, verbose=False)
    return model


@pytest.mark.csim
def test_an_hgq2_residual_network_is_bit_exact_and_one_shipped_weight_one_step_off_is_caught(tmp_path):
    """hls4ml 1.3 converts a Keras ReLU layer of an HGQ2 model to a thresholded ReLU that C-sim shows differs
    (argmax agreement 9% on a digits CNN): its export is one line, and its quantized twin (a ReLU layer written as
    Activation('relu')) is bit-exact. One fc weight of the shipped `weights/*.txt` one step of its type off is
    caught at fc (issue 68's property, for HGQ2)."""
    from fpgaprune.hls import shipped
    from fpgaprune.hls.csim import compare_with_qkeras
    from fpgaprune.hls.tolerance import export_layer_tolerances, parse_type

    data = load_digits()
    x = (np.minimum(data.images, 15) / 16).astype("float32")[..., None]
    model = _residual_hgq2(x[:1400], data.target[:1400])
    with pytest.raises(ModelTypeError, match=r"layer 'relu' is a ReLU layer, .* export fp.quantized_twin\(model\)"):
        fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "refused", x=x[1400:])
    twin = fp.quantized_twin(model, {"library": "hgq2"})
    assert type(twin.get_layer("relu")).__name__ == "Activation"
    assert np.array_equal(twin.predict(x[1400:], verbose=0), model.predict(x[1400:], verbose=0))
    exported = fp.export(twin, "latency_parallel", "pynq-z2", tmp_path / "prj", x=x[1400:])
    build = shipped.build_shipped(exported.path, tmp_path / "scratch")
    sizes = exported.manifest["traced_outputs"]
    result = compare_with_qkeras(
        shipped.runner(build, resolved(twin), sizes), resolved(twin), x[1400:], exported.input_type
    )
    assert result.bit_exact, result.format()
    array = next(a for a in exported.manifest["hls_nodes"]["fc"]["weight_headers_sha256"] if a.startswith("w"))
    weights = build.directory / "firmware" / "weights" / f"{array}.txt"
    values = np.array([float(v) for v in weights.read_text().split(",")])
    step = 2.0 ** -max(0, parse_type(exported.config["LayerName"]["fc"]["Precision"]["weight"]).frac)
    index = int(np.argmax(np.abs(values)))
    values[index] -= np.sign(values[index]) * step
    weights.write_text(", ".join(repr(float(v)) for v in values))
    tolerances = export_layer_tolerances(
        resolved(twin), exported.config, exported.manifest.get("names"), exported.input_type
    )
    changed = compare_with_qkeras(
        shipped.runner(build, resolved(twin), sizes),
        resolved(twin),
        x[1400:],
        exported.input_type,
        tolerances=tolerances,
    )
    assert not changed.passed and not changed.bit_exact and changed.layer == "fc", changed.format()
    assert not changed.beyond and changed.mismatches <= changed.samples  # one weight: one logit of a sample at most
