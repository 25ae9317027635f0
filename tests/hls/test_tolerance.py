"""Where hls4ml is not exact, C-sim is judged by a tolerance derived from the types, not a constant."""

import dataclasses

import numpy as np
import pytest

import fpgaprune as fp
from fpgaprune.hls.tolerance import RECURRENT_RELATIVE, UNBOUNDED, export_type, logits_tolerance, parse_type
from fpgaprune.quantize import FixedType, to_qkeras
from fpgaprune.record import record_of, resolved
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


def test_an_export_type_that_saturates_is_marked_and_one_that_wraps_is_not():
    """An export's node type with SAT or SAT_SYM holds its value clipped to its range (as a quantizer's)."""
    assert export_type("ufixed<6,2,RND,SAT,0>") == FixedType(6, 2, False, quantizing=True)
    assert export_type("ap_fixed<8,3,AP_TRN,AP_SAT_SYM>") == FixedType(8, 3, True, quantizing=True)
    assert export_type("ufixed<6,2,TRN,WRAP,0>") == FixedType(6, 2, False)
    assert export_type("fixed<16,6>") == parse_type("fixed<16,6>") and export_type("auto") is None


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
    tolerance = logits_tolerance(resolved(quantized), "fc", {"gap": {"accum": accum, "result": result}})
    kernel = np.asarray(quantized.get_layer("fc").kernel_quantizer_internal(quantized.get_layer("fc").kernel))
    # and one rounding of the mean in the reference, which computes QKeras' model exactly (float64: 53 bits)
    steps = 2.0**-accum.frac + 2.0**-result.frac + 2.0**-52 * result.hi
    colsum = np.abs(kernel).sum(axis=0).max()  # fc's own sum is exact in float64: 6 + 16 + 3 bits at most
    assert tolerance.absolute == pytest.approx(steps * colsum, rel=1e-9)
    assert "'gap' (36 values)" in tolerance.reason and "power-of-2" in tolerance.advice


def test_a_power_of_two_average_and_a_model_without_one_need_no_tolerance():
    assert logits_tolerance(resolved(_pooled(6)), "fc", {}) is None  # 4 x 4 = 16 values: exact with the derived types
    plain = keras.Sequential([keras.Input((4,)), L.Dense(3, name="fc")])
    assert logits_tolerance(resolved(to_qkeras(fp.hold(plain), SPEC)), "fc", {}) is None


def test_recurrent_layers_take_the_recurrent_tolerance():
    model = keras.Sequential([keras.Input((5, 3)), L.GRU(4, name="rnn"), L.Dense(3, name="fc")])
    tolerance = logits_tolerance(
        resolved(
            to_qkeras(
                fp.hold(model),
                {"default": {"kernel": "quantized_bits(8,1,alpha=1)", "bias": "quantized_bits(8,3,alpha=1)"}},
            )
        ),
        "fc",
        {},
    )
    assert (tolerance.absolute, tolerance.relative) == (0.0, RECURRENT_RELATIVE)
    assert tolerance.bound(2.0) == pytest.approx(0.04) and "rnn" in tolerance.reason


def _input_batchnorm():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((6,)), L.BatchNormalization(name="bn"), L.Dense(3, name="fc")])
    bn = model.get_layer("bn")
    bn.set_weights(
        [np.full(6, 1.3, "float32"), np.full(6, 0.1, "float32"), np.zeros(6, "float32"), np.full(6, 0.7, "float32")]
    )  # scale 1.3 / sqrt(0.7 + 1e-3): on no short grid
    return to_qkeras(fp.hold(model), SPEC)


def _float32(model):
    """The model's record, as a front end whose reference computes in float32 would describe it."""
    return dataclasses.replace(record_of(model), float32=True)


@pytest.mark.parametrize("float32", [False, True])
def test_a_batchnorm_that_cannot_fold_is_bounded_by_its_scale_bias_and_result_types(float32):
    from fpgaprune.hls.precision.batchnorm import batchnorm_affine
    from fpgaprune.hls.tolerance import layer_tolerances

    quantized, fixed_in = _input_batchnorm(), FixedType(5, 1, False)
    unit = 2.0**-24 if float32 else 2.0**-53  # the reference's unit roundoff: float32, or QKeras' exact float64
    types = {"bn": {"scale": FixedType(16, 2, False), "bias": FixedType(20, 2), "result": FixedType(22, 4)}}
    tolerances = layer_tolerances(_float32(quantized) if float32 else resolved(quantized), types, fixed_in)
    scale, bias = batchnorm_affine(record_of(quantized).layers["bn"], quantized=True)
    expected = (
        fixed_in.hi * (2.0**-14 + 4 * unit * scale.max()) + 2.0**-18 + 4 * unit * np.abs(bias).max() + 2 * unit * 8.0
    )
    assert tolerances["bn"].absolute == pytest.approx(expected, rel=1e-9)
    assert "'bn' (a batch normalization that cannot fold) keeps its scale to 2^-14" in tolerances["bn"].reason
    assert f"computes it in {'float32' if float32 else 'float64'}" in tolerances["bn"].reason
    kernel = np.asarray(quantized.get_layer("fc").kernel_quantizer_internal(quantized.get_layer("fc").kernel))
    colsum = np.abs(kernel).sum(axis=0).max()
    own = 7 * unit / (1 - 7 * unit) * 8.0 * colsum if float32 else 0.0  # fc's float32 rounding: 6 + 22 + 3 bits
    assert tolerances["fc"].absolute == pytest.approx(expected * colsum + own, rel=1e-6)
    assert layer_tolerances(resolved(quantized), {}, fixed_in)["bn"] is UNBOUNDED  # no types: no bound, not a pass


def test_an_accumulation_past_the_references_float_is_bounded_by_gamma_n_and_an_exact_one_needs_none():
    """A float32 reference rounds sums of more than 24 bits (gamma_n bounds it); QKeras' reference is the model
    computed exactly in float64, where the same sum must be bit-exact."""
    from fpgaprune.hls.tolerance import UNIT, layer_tolerances

    keras.utils.set_random_seed(0)
    model = to_qkeras(fp.hold(keras.Sequential([keras.Input((256,)), L.Dense(4, name="fc")])), SPEC)
    kernel = np.asarray(model.get_layer("fc").kernel_quantizer_internal(model.get_layer("fc").kernel))
    wide, narrow = FixedType(16, 4, False), FixedType(8, 1, False)  # 6 + 16 + 9 = 31 bits; 6 + 8 + 9 = 23
    bound = layer_tolerances(_float32(model), {}, wide)["fc"]
    gamma = 257 * UNIT / (1 - 257 * UNIT)
    assert bound.absolute == pytest.approx(gamma * wide.hi * np.abs(kernel).sum(axis=0).max(), rel=1e-6)
    assert "QKeras accumulates 'fc' in float32, not exactly (31 bits of products > 24)" in bound.reason
    assert layer_tolerances(_float32(model), {}, narrow)["fc"] is None
    assert layer_tolerances(resolved(model), {}, wide)["fc"] is None  # exact in float64: bit-exact, no tolerance


def test_a_bound_larger_than_a_sixteenth_of_its_types_range_is_no_bound():
    """A derived bound counts only where it could fail: past 1/16 of the range its layer's type reaches, the
    layer is unbounded, naming why and what to change, and so is everything after it."""
    from fpgaprune.hls.tolerance import Unbounded, layer_tolerances

    quantized, fixed_in = _input_batchnorm(), FixedType(5, 1, False)
    coarse = {"scale": FixedType(4, 2, False), "bias": FixedType(4, 2), "result": FixedType(8, 2)}
    tolerances = layer_tolerances(resolved(quantized), {"bn": coarse, "fc": {"result": FixedType(10, 5)}}, fixed_in)
    bn, fc = tolerances["bn"], tolerances["fc"]
    assert isinstance(bn, Unbounded) and fc is bn  # what follows an unbounded layer is unbounded too
    reach = FixedType(8, 2).hi - FixedType(8, 2).lo
    assert f"more than 1/16 of what its type fixed<8,2> can reach ({reach:.3g})" in bn.reason
    assert "'bn' (a batch normalization that cannot fold)" in bn.reason
    assert "normalize the data instead of 'bn'" in bn.advice and "hls.config LayerName" in bn.advice
    fine = {"scale": FixedType(16, 2, False), "bias": FixedType(20, 2), "result": FixedType(22, 4)}
    assert not isinstance(layer_tolerances(resolved(quantized), {"bn": fine}, fixed_in)["bn"], Unbounded)


def test_a_layer_that_differs_beyond_its_bound_or_with_none_is_named():
    from fpgaprune.hls.csim import _LayerDiff
    from fpgaprune.hls.tolerance import UNBOUNDED, Tolerance

    diff = _LayerDiff()
    reference = np.ones((2, 3), np.float32)
    diff.add("a", 0, reference + 0.25, reference)
    diff.add("b", 0, reference, reference)
    diff.add("c", 0, reference + 0.5, reference)
    within, beyond = diff.judged(["a", "b", "c"], {"a": Tolerance(0.3, 0.0, "types", ""), "c": UNBOUNDED})
    assert within == ["'a' (6 values, max |diff| 0.25 <= 0.3: types)"]
    assert beyond == "'c' differs from QKeras (6 values, max |diff| 0.5) and no bound follows from its types"
    _, beyond = diff.judged(["a", "b", "c"], {})
    assert beyond == "'a' differs from QKeras (6 values, max |diff| 0.25) where it must be bit-exact"
    _, beyond = diff.judged(["a"], {"a": Tolerance(0.1, 0.0, "types", "")})
    assert beyond == "'a' differs from QKeras (6 values, max |diff| 0.25) beyond its tolerance 0.1 (types)"
