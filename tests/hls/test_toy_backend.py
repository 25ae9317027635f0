"""A backend that is not hls4ml's: it subclasses fpgaprune's `Backend` only, writes its project from the model's
record (one C function per network, one product per live weight), builds it with g++ and C-simulates it through
`Backend.simulator`. `fp.export` and `fp.csim` reach it through the registry and the backend contract alone, and
its C-sim is bit-exact with QKeras."""

import ctypes
import json
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest
import qkeras
from sklearn.datasets import load_digits

import fpgaprune as fp
from fpgaprune.errors import ExportError
from fpgaprune.hls import backend as backends
from fpgaprune.hls.boards import load_board
from fpgaprune.hls.exporter import Export
from fpgaprune.quantize.fixed_types import input_type
from fpgaprune.tfk import keras

BITS = "quantized_bits(6,0,alpha=1)"
L = keras.layers


def _quantize(fixed) -> str:
    """C of a quantizing activation's output type: round to nearest even and saturate (as QKeras does)."""
    return f"q(v, {fixed.frac}, {float(fixed.lo)!r}, {float(fixed.hi)!r})"


class ToyCBackend(backends.Backend):
    """Dense layers and their quantized activations as one C function, from the record: the export writes it,
    `simulator` builds it with g++ and runs it through ctypes."""

    def export(self, bound, hls_config, board, output_dir, *, x, overwrite=False, input_fixed=None, **options):
        board, record, fixed = load_board(board), bound.record, input_fixed or input_type(x)
        self.check_board(board)
        output_dir = Path(output_dir)
        if output_dir.exists() and not overwrite:
            raise ExportError(f"{output_dir}: already exists")
        output_dir.mkdir(parents=True)
        code, size = self._code(record)
        (output_dir / "network.c").write_text(code)
        manifest = {"backend": self.name, "input_type": fixed.hls(), "names": {}, "hls_nodes": {}, "outputs": size}
        (output_dir / "fpgaprune_manifest.json").write_text(json.dumps(manifest))
        return Export(output_dir, None, manifest, {"Model": {}, "LayerName": {}}, fixed, board)

    def _code(self, record) -> tuple[str, int]:
        lines, previous, size = [], "x", 0
        for layer in record.layers.values():
            if layer.role == "InputLayer":
                continue
            if layer.kind == "Dense":
                kernel, bias = layer.kernel.quantized, layer.weights["bias"].quantized
                lines.append(f"  double {layer.name}[{kernel.shape[1]}];")
                for o in range(kernel.shape[1]):
                    live = [f"{float(kernel[i, o])!r} * {previous}[{i}]" for i in np.flatnonzero(kernel[:, o])]
                    lines.append(f"  {layer.name}[{o}] = {' + '.join([repr(float(bias[o])), *live])};")
                previous, size = layer.name, kernel.shape[1]
                activation = layer.activation
            elif layer.applies is not None:
                activation = layer.applies
            else:
                raise ExportError(f"layer '{layer.name}': the toy backend writes Dense layers and quantizers only")
            if activation is not None and activation.quantizer:
                lines.append(f"  for (int k = 0; k < {size}; k++) {{ double v = {previous}[k]; ")
                lines.append(f"    {previous}[k] = {_quantize(activation.fixed)}; }}")
            elif activation is not None and activation.name not in ("", "linear"):
                raise ExportError(f"layer '{layer.name}': the toy backend computes no {activation.name}")
        body = "\n".join(lines)
        return TEMPLATE.format(body=body, size=size, last=previous), size

    def simulator(self, exported, bound, x):
        build = Path(tempfile.mkdtemp(prefix="toy-backend-"))
        command = ["g++", "-O1", "-shared", "-fPIC", "-x", "c", str(exported.path / "network.c"), "-o"]
        subprocess.run([*command, str(build / "network.so"), "-lm"], check=True, capture_output=True)
        library, size = ctypes.cdll.LoadLibrary(str(build / "network.so")), exported.manifest["outputs"]

        def run(xq):
            xq = np.ascontiguousarray(np.asarray(xq, np.float64).reshape(len(xq), -1))
            out = np.zeros((len(xq), size))
            pointer = ctypes.POINTER(ctypes.c_double)
            library.network(len(xq), xq.shape[1], xq.ctypes.data_as(pointer), out.ctypes.data_as(pointer))
            return out, {}

        return run


TEMPLATE = """#include <math.h>
static double q(double v, int frac, double lo, double hi) {{
  double s = nearbyint(ldexp(v, frac)) / ldexp(1.0, frac);
  return s < lo ? lo : s > hi ? hi : s;
}}
void network(int n, int width, const double *inputs, double *outputs) {{
  for (int s = 0; s < n; s++) {{
    const double *x = inputs + s * width;
{body}
    for (int k = 0; k < {size}; k++) outputs[s * {size} + k] = {last}[k];
  }}
}}
"""


@pytest.fixture(scope="module")
def toy():
    backends.register_backend(ToyCBackend("ToyC", kernel_sparse=True))
    yield "ToyC"
    backends._BACKENDS.pop("toyc")


@pytest.fixture(scope="module")
def digits():
    x = load_digits().data.astype(np.float32) / 16
    return np.round(x * 8) / 8  # a 4-bit grid


@pytest.fixture(scope="module")
def model(digits):
    keras.utils.set_random_seed(3)
    quantized = keras.Sequential(
        [
            keras.Input((64,), name="input_1"),
            qkeras.QDense(16, kernel_quantizer=BITS, bias_quantizer=BITS, name="fc1"),
            qkeras.QActivation("quantized_relu(6,2)", name="relu1"),
            qkeras.QDense(10, kernel_quantizer=BITS, bias_quantizer=BITS, name="fc2"),
        ]
    )
    return fp.prune(quantized, selections=["fc1[:, 3]", "fc2[5, :]"])  # a whole output and a whole input removed


def test_the_toy_subclasses_no_hls4ml_class():
    assert all(not cls.__module__.startswith("hls4ml") for cls in ToyCBackend.__mro__)


def test_a_backend_of_its_own_exports_builds_and_csimulates_bit_exactly_through_the_contract(
    toy, model, digits, tmp_path
):
    exported = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "toy", x=digits[:100], backend=toy)
    assert exported.hls_model is None and exported.manifest["backend"] == toy
    code = (tmp_path / "toy" / "network.c").read_text()
    assert "fc1[3] = " in code and "* relu1" not in code  # the QActivation quantizes fc1 in place
    assert code.split("fc1[3] = ", 1)[1].splitlines()[0].count("*") == 0  # fc1's output 3 computes no product
    assert code.split("fc2[0] = ", 1)[1].splitlines()[0].count("fc1[5]") == 0  # fc2 reads nothing of input 5
    check = fp.csim(exported, model, digits)
    assert check.bit_exact and check.samples == len(digits), check.format()


def test_a_wrong_toy_project_is_caught_by_the_same_check(toy, model, digits, tmp_path):
    exported = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "toy", x=digits[:100], backend=toy)
    code = exported.path / "network.c"
    first = code.read_text().split("fc2[0] = ", 1)[1].split(";", 1)[0]
    code.write_text(code.read_text().replace(f"fc2[0] = {first};", f"fc2[0] = {first} + 0.03125;", 1))
    check = fp.csim(exported, model, digits)
    assert not check.bit_exact and check.mismatches >= len(digits)
