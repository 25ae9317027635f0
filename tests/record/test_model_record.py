"""fpgaprune's record of a model (`fpgaprune.record`): made once by the model's front end, it holds what the stages
after quantization read (per layer its kind, its weights by role as the layer computes with them, their types and
holds, its activation and that activation's quantizer, its place in the graph) and nothing of the framework. The
precision derivation and the tolerances run on a record in a process where no framework can be imported, and give
exactly what they give on the model."""

import dataclasses
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from models import build
from quantizer_specs import SPEC8

import fpgaprune as fp
from fpgaprune.hls.precision import derive_precisions
from fpgaprune.hls.tolerance import layer_tolerances
from fpgaprune.quantize import FixedType, to_qkeras
from fpgaprune.record import ModelRecord, record_of, resolved

ROOT = Path(__file__).resolve().parents[2]
INPUT = FixedType(8, 3, True)
# One model per precision rule the derivation has: Conv/Dense, depthwise, separable, fused, recurrent; each with
# its first kernel entries pruned
KINDS = ("QConv2D", "QDense", "QDepthwiseConv2D", "QSeparableConv2D", "QConv2DBatchnorm", "QLSTM", "Conv2D")
FRAMEWORK_FREE = (str, int, float, bool, type(None), np.ndarray, np.generic, FixedType)
IN_A_PROCESS_WITHOUT_FRAMEWORKS = """
import pickle, sys

class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tensorflow", "tf_keras", "keras", "qkeras", "torch", "brevitas", "hgq"):
            raise ImportError(f"{name} is blocked")

sys.meta_path.insert(0, Blocked())
from fpgaprune.hls.precision import derive_precisions
from fpgaprune.hls.tolerance import record_tolerances

record, input_type = pickle.load(sys.stdin.buffer)
plan = derive_precisions(record, input_type)
tolerances = record_tolerances(record, plan.types, input_type)
sys.stdout.buffer.write(pickle.dumps((plan.types, plan.notes, tolerances)))
"""


def _quantized(kind: str, seed: int = 0):
    model, _, _ = build(kind, seed)
    first = next(layer for layer in model.layers if layer.name == "layer")
    weight = "depthwise_kernel" if "Depthwise" in kind or "Separable" in kind else "kernel"
    held = fp.hold(model, prune=[f"layer/{weight}[0, ...]"] if "LSTM" not in kind else ["layer/kernel[0, :]"])
    return to_qkeras(held, SPEC8) if not kind.startswith("Q") else held, first.name


def _framework_objects(value, where: str) -> list:
    """Where the record holds anything but numbers, text, arrays, fixed-point types and records of them."""
    if dataclasses.is_dataclass(value) and not isinstance(value, FixedType):
        return sum(
            (_framework_objects(getattr(value, f.name), f"{where}.{f.name}") for f in dataclasses.fields(value)), []
        )
    if isinstance(value, dict):
        return sum((_framework_objects(v, f"{where}[{k!r}]") for k, v in value.items()), [])
    if isinstance(value, (tuple, list)):
        return sum((_framework_objects(v, f"{where}[{i}]") for i, v in enumerate(value)), [])
    return [] if isinstance(value, FRAMEWORK_FREE) else [f"{where}: {type(value).__module__}.{type(value).__name__}"]


@pytest.mark.parametrize("kind", KINDS)
def test_the_record_holds_no_framework_object_and_keeps_the_holds(kind):
    quantized, name = _quantized(kind)
    record = record_of(quantized)
    assert isinstance(record, ModelRecord) and record.front_end == "tf_keras + QKeras"
    assert not _framework_objects(record, "record")
    layer = record.layers[name]
    assert layer.quantized and layer.kind is not None and layer.inbound == ()
    first = next(iter(layer.weights.values()))
    assert first.held is not None and first.held.any(), "the pruned entries are the record's held mask"
    assert np.all(first.quantized[first.held] == 0.0), "pruned entries are exactly 0.0 after quantization"
    assert first.fixed is not None and first.bits == first.fixed.width
    assert record.topological()[0] == name and record.layers["head"].inbound


@pytest.mark.parametrize("kind", KINDS)
def test_derivation_and_tolerances_on_the_record_in_a_process_without_frameworks_equal_the_models(kind):
    quantized, _ = _quantized(kind, seed=1)
    record = record_of(quantized)
    done = subprocess.run(
        [sys.executable, "-c", IN_A_PROCESS_WITHOUT_FRAMEWORKS],
        input=pickle.dumps((record, INPUT)),
        capture_output=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    types, notes, tolerances = pickle.loads(done.stdout)
    plan = derive_precisions(record_of(quantized), INPUT)
    assert types == plan.types and notes == plan.notes and plan.types
    assert tolerances == layer_tolerances(resolved(quantized), plan.types, INPUT)


def test_a_record_is_its_own_record():
    quantized, name = _quantized("QDense")
    whole = record_of(quantized)
    assert record_of(whole) is whole and whole.layers[name].kind == "Dense"
    assert record_of(record_of(quantized)).layers.keys() == whole_names(quantized)


def whole_names(model) -> set:
    return {layer.name for layer in model.layers} - {
        layer.name for layer in model.layers if type(layer).__name__ == "InputLayer"
    }
