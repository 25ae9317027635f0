"""What hls4ml 1.3 cannot build is caught before anything is built: each precondition its headers `assert` (a
failed one aborts a g++ C-simulation, and with it the process), and the padding of a max pooling after a ReLU,
which it fills wrongly (issue 68: a PyTorch MaxPool2d(2, padding=1) passed validate, then killed the CLI with exit
134). At validate (the starting model, before training) and at the export (the quantized model); should one abort
all the same, C-sim runs in worker processes and says in one line which layer's header stopped it."""

import shutil

import numpy as np
import pytest
from hls_helpers import digits
from quantizer_specs import SPEC8

import fpgaprune as fp
from fpgaprune.errors import ExportError
from fpgaprune.hls import shipped
from fpgaprune.hls.csim import compare_with_qkeras
from fpgaprune.hls.exporter import preset_problems
from fpgaprune.hls.hls4ml_bridge import CsimAborted
from fpgaprune.quantize import to_qkeras
from fpgaprune.record import resolved
from fpgaprune.tfk import keras

L = keras.layers
X = np.round(np.random.default_rng(0).random((16, 9, 9, 1)) * 16) / 16  # 9x9: a 2x2 pooling of 7x7 pads


def _model(*middle, input_shape=(9, 9, 1)):
    keras.utils.set_random_seed(0)
    head = [L.Flatten(name="flatten"), L.Dense(10, name="fc")]
    return keras.Sequential([keras.Input(input_shape), L.Conv2D(4, 3, name="conv"), *middle, *head])


CASES = {  # (layers after the conv, preset, the line's start, what it names)
    "stream padding": (
        (L.ReLU(name="relu"), L.MaxPooling2D(2, padding="same", name="pool")),
        "latency_stream",
        "layer 'pool': hls4ml's io_stream pooling takes no padding (nnet_pooling_stream.h",
        "top, bottom, left, right here: 0, 1, 0, 1); use an io_parallel preset",
    ),
    "stream overlapping windows": (
        (L.AveragePooling2D(3, strides=2, name="pool"),),
        "latency_stream",
        "layer 'pool': hls4ml's io_stream 2-D pooling takes windows that tile the input",
        "pool (3, 3), stride (2, 2) here",
    ),
    "unsigned max padding": (
        (L.ReLU(name="relu"), L.MaxPooling2D(2, padding="same", name="pool")),
        "latency_parallel",
        "layer 'pool': hls4ml 1.3 fills a max pooling's padding with its input type's top bit",
        "use no padding (padding=0, 'valid'",
    ),
    "depth multiplier": (
        (L.DepthwiseConv2D(3, depth_multiplier=2, name="dw"),),
        "latency_parallel",
        "layer 'dw': hls4ml 1.3's depthwise convolution takes a depth multiplier of 1 only",
        "2 here: use depth_multiplier=1",
    ),
    "depthwise resource": (
        (L.DepthwiseConv2D(3, name="dw"),),
        "resource_parallel",
        "layer 'dw': hls4ml 1.3 has no Resource strategy for depthwise convolutions",
        "use a Latency preset",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_validate_names_the_layer_the_header_and_the_way_out(case):
    middle, preset, start, detail = CASES[case]
    problems = preset_problems(resolved(_model(*middle)), preset, X)
    assert len(problems) == 1 and problems[0].startswith(start) and detail in problems[0], problems


def test_what_hls4ml_builds_right_is_not_refused():
    """A signed input to a padded max pooling (its padding is the type's lowest value), pooling with no padding
    in io_stream, a depthwise convolution of multiplier 1 at Latency, a softmax on its last axis."""
    signed = _model(L.MaxPooling2D(2, padding="same", name="pool"))
    tiling = _model(L.ReLU(name="relu"), L.MaxPooling2D(2, name="pool"), input_shape=(10, 10, 1))
    depthwise = _model(L.DepthwiseConv2D(3, name="dw"))
    softmax = keras.Sequential([keras.Input((9, 9, 1)), L.Flatten(), L.Dense(10), L.Softmax(axis=-1, name="s")])
    for model, preset in ((signed, "latency_parallel"), (tiling, "latency_stream"), (depthwise, "latency_stream")):
        x = X if model.input_shape[1] == 9 else np.zeros((4, 10, 10, 1))
        assert preset_problems(resolved(model), preset, x) == [], model.layers
    assert preset_problems(resolved(softmax), "latency_stream", X) == []


def test_a_softmax_on_a_named_axis_in_io_stream_is_refused():
    model = keras.Sequential([keras.Input((9, 9, 1)), L.Conv2D(3, 3), L.Reshape((49, 3)), L.Softmax(axis=2, name="s")])
    problems = preset_problems(resolved(model), "latency_stream", X)
    assert problems and problems[0].startswith("layer 's': hls4ml's io_stream softmax takes axis=-1 only"), problems


def test_the_export_refuses_what_validate_would_and_writes_nothing(tmp_path):
    model = to_qkeras(fp.hold(_model(L.ReLU(name="relu"), L.MaxPooling2D(2, padding="same", name="pool"))), SPEC8)
    with pytest.raises(ExportError, match=r"^layer 'pool': hls4ml's io_stream pooling takes no padding"):
        fp.export(model, "latency_stream", "pynq-z2", tmp_path / "prj", x=X)
    assert not (tmp_path / "prj").exists() and not list(tmp_path.glob(".prj.tmp-*"))


@pytest.mark.csim
def test_an_assert_that_stops_the_design_is_one_line_naming_its_layer_and_header(tmp_path):
    """Should a header's assert fail all the same (here one injected into the shipped project's ReLU), the C-sim
    worker stops, not its caller: one line names the layer, the header and the condition."""
    data = digits()
    model = to_qkeras(fp.hold(_model(L.ReLU(name="relu"), input_shape=(8, 8, 1))), SPEC8)
    exported = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "prj", x=data.x_test)
    project = tmp_path / "copy"
    shutil.copytree(exported.path, project)
    header = project / "firmware" / "nnet_utils" / "nnet_activation.h"
    text = header.read_text()
    relu = text.index("void relu(data_T data")
    body = text.index("{", relu) + 1
    header.write_text(text[:body] + '\n    assert(CONFIG_T::n_in == 0 && "injected");' + text[body:])
    build = shipped.build_shipped(project, tmp_path / "scratch")
    run = shipped.runner(build, resolved(model), exported.manifest["traced_outputs"])
    with pytest.raises(CsimAborted) as stopped:
        compare_with_qkeras(run, resolved(model), data.x_test[:20], exported.input_type)
    line = str(stopped.value)
    assert "\n" not in line and "stopped in layer 'relu': hls4ml's nnet_activation.h:" in line, line
    assert 'asserts `CONFIG_T::n_in == 0 && "injected"`' in line, line
