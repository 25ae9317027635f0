"""Nothing outside `fpgaprune/frontends/` calls into a model framework while a model is held, pruned, quantized,
exported, C-simulated, estimated and reported: a profiler (as `../shared/tools/framework_calls.py` counts them)
sees every call whose caller is a module of the package outside `frontends/` and whose callee is TensorFlow,
tf_keras, Keras or QKeras code. A plain attribute read makes no call, so this is a floor; an object that the
garbage collector frees while such a line runs (`__del__`) is not a call the line makes."""

import os
import sys
from pathlib import Path

import numpy as np

import fpgaprune as fp
from fpgaprune.quantize import quantization_report
from fpgaprune.report.inspection import sparsity_table
from fpgaprune.tfk import keras

FRAMEWORKS = ("tensorflow", "keras", "tf_keras", "qkeras")
PACKAGE = str(Path(fp.__file__).resolve().parent) + os.sep
FRONT_ENDS = PACKAGE + "frontends" + os.sep


def _framework(filename: str) -> bool:
    marker = f"{os.sep}site-packages{os.sep}"
    return marker in filename and filename.split(marker, 1)[1].split(os.sep, 1)[0] in FRAMEWORKS


def _outside_front_ends(filename: str) -> bool:
    return filename.startswith(PACKAGE) and not filename.startswith(FRONT_ENDS)


def _calls_from_stages(work) -> list:
    """(caller file:line, callee) of each framework call a module outside `frontends/` makes while `work` runs."""
    found = []

    def profile(frame, event, arg):
        if event != "call" or frame.f_back is None or frame.f_code.co_name == "__del__":
            return
        if _framework(frame.f_code.co_filename) and _outside_front_ends(frame.f_back.f_code.co_filename):
            where = f"{frame.f_back.f_code.co_filename[len(PACKAGE) :]}:{frame.f_back.f_lineno}"
            found.append((where, frame.f_code.co_name))

    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return found


def test_the_stages_after_a_keras_model_make_no_framework_call(tmp_path):
    keras.utils.set_random_seed(0)
    L = keras.layers
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            L.Conv2D(4, 3, name="conv1"),
            L.ReLU(name="relu1"),
            L.Conv2D(6, 3, name="conv2"),
            L.ReLU(name="relu2"),
            L.Flatten(name="flatten"),
            L.Dense(10, name="fc"),
        ]
    )
    x = np.random.default_rng(0).random((40, 8, 8, 1)).astype(np.float32)
    y = np.arange(40) % 10

    def work():
        held = fp.prune(model, 0.5, selections=["conv2[:, :, 1, 2]"])
        quantized = fp.quantized_twin(held)
        sparsity_table(quantized)
        quantization_report(quantized, held, x, y)
        exported = fp.export(quantized, "latency_parallel", "pynq-z2", tmp_path / "prj", x=x)
        assert fp.csim(exported, quantized, x).bit_exact
        estimate = fp.estimate(exported, fp.quantized_twin(model))
        fp.write_report(tmp_path / "report", exported, estimate, quantized)

    calls = _calls_from_stages(work)
    assert not calls, f"{len(calls)} framework calls from outside frontends/, first: {sorted(set(calls))[:10]}"


def test_the_profiler_sees_a_framework_call_made_from_a_stage():
    """A function compiled as if it were `fpgaprune/report/fake.py` asks a tf_keras layer for its weights: seen."""
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="fc")])
    scope = {}
    exec(compile("def stage(model):\n    return model.get_weights()\n", PACKAGE + "report/fake.py", "exec"), scope)
    calls = _calls_from_stages(lambda: scope["stage"](model))
    assert ("report/fake.py:2", "get_weights") in calls
