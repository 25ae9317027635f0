"""Where hls4ml is not exact, C-sim is judged by a tolerance derived from the types, not a constant."""

import numpy as np
import pytest

import fpgaprune as fp
from fpgaprune.hls.tolerance import RECURRENT_RELATIVE, logits_tolerance, parse_type
from fpgaprune.quantize import FixedType, to_qkeras
from fpgaprune.tfk import keras

L = keras.layers
SPEC = {
    "default": {
        "kernel": "quantized_bits(6,0,alpha=1)",
        "bias": "quantized_bits(8,3,alpha=1)",
        "activation": "quantized_relu(6,2)",
    }
}


def test_types_are_read_in_both_spellings():
    assert parse_type("ap_fixed<16,6>") == FixedType(16, 6, True)
    assert parse_type("ufixed<6,2,RND_CONV,SAT>") == FixedType(6, 2, False)
    assert parse_type("ap_ufixed<8, 0>") == FixedType(8, 0, False) and parse_type("float") is None


def _pooled(size):
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((size, size, 1)),
            L.Conv2D(4, 3, name="conv1"),
            L.ReLU(name="relu1"),
            L.GlobalAveragePooling2D(name="gap"),
            L.Dense(5, name="fc"),
        ]
    )
    return to_qkeras(fp.hold(model), SPEC)


@pytest.mark.parametrize(
    "accum, result",
    [(FixedType(12, 4, False), FixedType(10, 2, False)), (FixedType(16, 4, False), FixedType(16, 4, False))],
)
def test_averaging_a_non_power_of_two_is_bounded_by_one_step_of_each_type_times_the_next_layer(accum, result):
    quantized = _pooled(8)  # 6 x 6 = 36 values averaged
    tolerance = logits_tolerance(quantized, "fc", {"gap": {"accum": accum, "result": result}})
    kernel = np.asarray(quantized.get_layer("fc").kernel_quantizer_internal(quantized.get_layer("fc").kernel))
    steps = 2.0**-accum.frac + 2.0**-result.frac + 2.0**-23 * result.hi  # and one float32 rounding in QKeras
    assert tolerance.absolute == pytest.approx(steps * np.abs(kernel).sum(axis=0).max(), rel=1e-4)
    assert "'gap' (36 values)" in tolerance.reason and "power-of-2" in tolerance.advice


def test_a_power_of_two_average_and_a_model_without_one_need_no_tolerance():
    assert logits_tolerance(_pooled(6), "fc", {}) is None  # 4 x 4 = 16 values: exact with the derived types
    plain = keras.Sequential([keras.Input((4,)), L.Dense(3, name="fc")])
    assert logits_tolerance(to_qkeras(fp.hold(plain), SPEC), "fc", {}) is None


def test_recurrent_layers_take_the_recurrent_tolerance():
    model = keras.Sequential([keras.Input((5, 3)), L.GRU(4, name="rnn"), L.Dense(3, name="fc")])
    tolerance = logits_tolerance(
        to_qkeras(
            fp.hold(model),
            {"default": {"kernel": "quantized_bits(8,1,alpha=1)", "bias": "quantized_bits(8,3,alpha=1)"}},
        ),
        "fc",
        {},
    )
    assert (tolerance.absolute, tolerance.relative) == (0.0, RECURRENT_RELATIVE)
    assert tolerance.bound(2.0) == pytest.approx(0.04) and "rnn" in tolerance.reason
