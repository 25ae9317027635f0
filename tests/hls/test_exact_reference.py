"""C-sim against the quantized model computed exactly, on a residual CNN in the shape of MLPerf Tiny's ResNet-8
(`outside_models.resnet8`) whose sums pass float32's 24 bits: the shipped project is bit-exact against it, one
weight of `weights/*.txt` (what C-sim reads) changed by one step of its type is caught at its layer, and the
bound a float32 reference would need grows past 1/16 of its layers' ranges, where it could not fail (issue 68:
a bound of 6.4e+08 on logits of order 10 passed a design whose decisions differed in 12% of samples). For
tf_keras + QKeras, and for Keras 3 (quantized as its QKeras twin); PyTorch's is in
tests/frontends/test_torch_exactness.py, HGQ2's in tests/hgq2/test_hgq2_outside.py."""

import dataclasses

import keras as keras3
import numpy as np
import pytest
from hls_helpers import digits
from outside_models import RESIDUAL_SPEC, resnet8

import fpgaprune as fp
from fpgaprune.frontends.qkeras.reference import LayerValuesProbe
from fpgaprune.hls import shipped
from fpgaprune.hls.csim import compare_with_qkeras, hardware_input
from fpgaprune.hls.names import map_keys
from fpgaprune.hls.tolerance import Unbounded, node_types, parse_type, record_tolerances
from fpgaprune.record import record_of, resolved
from fpgaprune.tfk import keras

pytestmark = pytest.mark.csim


def _trained(framework: str):
    data = digits()
    module = keras if framework == "tf_keras" else keras3
    module.utils.set_random_seed(0)
    model = module.Model(*resnet8(module.layers))
    model.compile(module.optimizers.Adam(3e-3), module.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(data.x_train, data.y_train, epochs=2, batch_size=64, verbose=0)
    return fp.quantized_twin(fp.prune(model, 0.5, layers=["b2a_conv"]), RESIDUAL_SPEC), data


@pytest.fixture(scope="module", params=["tf_keras", "keras3"])
def shipped_resnet(request, tmp_path_factory):
    quantized, data = _trained(request.param)
    root = tmp_path_factory.mktemp(request.param)
    exported = fp.export(quantized, "latency_stream", "pynq-z2", root / "project", x=data.x_test)
    return quantized, data, exported, root


def test_the_shipped_residual_project_is_bit_exact_where_qkeras_float32_forward_is_not(shipped_resnet):
    quantized, data, exported, root = shipped_resnet
    build = shipped.build_shipped(exported.path, root / "exact")
    shipped.simulate_synthesized_weights(build)
    run = shipped.runner(build, resolved(quantized), exported.manifest["traced_outputs"])
    result = compare_with_qkeras(run, resolved(quantized), data.x_test, exported.input_type)
    assert result.passed and result.bit_exact and not result.judged, result.format()
    # QKeras' own float32 forward rounds: the same design differs from it (the reason for the exact reference)
    xq = hardware_input(data.x_test[:200], exported.input_type)
    _, traces = run(xq)
    float32 = LayerValuesProbe(quantized)(xq)
    differing = [
        n for n in traces if n in float32.layer_outputs and np.any(traces[n] != float32.traced(n).reshape(200, -1))
    ]
    assert differing, "no layer's float32 sum rounded: the case does not need the exact reference"
    # and the bound a float32 reference needs: past 1/16 of a layer's range, so no bound at all from there on
    types = map_keys(node_types(exported.config, saturation=True), exported.manifest.get("names", {}))
    rounded = record_tolerances(dataclasses.replace(record_of(quantized), float32=True), types, exported.input_type)
    assert isinstance(rounded["fc"], Unbounded) and "in float32" in rounded["fc"].reason, rounded["fc"]


def test_one_weight_one_step_off_in_the_shipped_weights_is_caught_at_its_layer(shipped_resnet):
    """C-sim reads `weights/*.txt`: one fc weight (of the input that is largest on average) one step of its type
    away is found, and named, where a bound loose enough to pass it would judge nothing."""
    quantized, data, exported, root = shipped_resnet
    build = shipped.build_shipped(exported.path, root / "changed")  # its .txt kept as they are: C-sim reads them
    array = next(a for a in exported.manifest["hls_nodes"]["fc"]["weight_headers_sha256"] if a.startswith("w"))
    weights = build.directory / "firmware" / "weights" / f"{array}.txt"
    values = np.array([float(v) for v in weights.read_text().split(",")])
    fixed = parse_type(exported.config["LayerName"]["fc"]["Precision"]["weight"])
    step = 2.0**-fixed.frac
    index = int(np.argmax(np.abs(values)))  # a live weight: the sparse array holds live ones only
    values[index] += -step if values[index] + step > fixed.hi else step
    weights.write_text(", ".join(repr(float(v)) for v in values))
    run = shipped.runner(build, resolved(quantized), exported.manifest["traced_outputs"])
    result = compare_with_qkeras(run, resolved(quantized), data.x_test, exported.input_type)
    assert not result.passed and not result.bit_exact and result.max_abs_diff > 0, result.format()
    assert result.first_difference.startswith("the first layer that differs is 'fc'"), result.first_difference
    assert result.mismatches <= result.samples  # one weight: one logit of a sample at most
