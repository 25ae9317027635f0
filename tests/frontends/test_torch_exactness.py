"""PyTorch models in the shapes issue 68 found holes in, each C-simulated against the module computed exactly (a
float64 copy): a residual network whose sums pass float32's 24 bits (bit-exact, and one shipped weight one step
off is caught), the Brevitas/FINN block QuantConv -> BatchNorm -> QuantReLU (the BatchNorm folded), Brevitas'
integer biases (Int32Bias, Int8Bias: typed at their input's scale times their weight's), and what has no exact
route (a BatchNorm after a ReLU, padded or ceil-mode pooling), each one line before any training."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch front end needs the torch extra (pip install -e '.[torch]')")
qnn = pytest.importorskip("brevitas.nn", reason="PyTorch quantization needs the torch extra (Brevitas)")
from brevitas.quant import (  # noqa: E402
    Int8ActPerTensorFixedPoint,
    Int8Bias,
    Int8WeightPerTensorFixedPoint,
    Int32Bias,
    Uint8ActPerTensorFixedPoint,
)
from quantizer_specs import SPEC8  # noqa: E402
from torch import nn  # noqa: E402

import fpgaprune as fp  # noqa: E402
from fpgaprune.errors import QuantizationConfigError  # noqa: E402
from fpgaprune.framework import front_end_of  # noqa: E402
from fpgaprune.hls import shipped  # noqa: E402
from fpgaprune.hls.csim import compare_with_qkeras  # noqa: E402
from fpgaprune.hls.exporter import preset_problems  # noqa: E402
from fpgaprune.hls.tolerance import parse_type  # noqa: E402
from fpgaprune.record import resolved  # noqa: E402

pytestmark = pytest.mark.csim
WIDE = {  # 16-bit weights and activations: the residual network's sums pass float32's 24 bits
    "default": {
        "kernel": "quantized_bits(16,2,alpha=1)",
        "bias": "quantized_bits(16,5,alpha=1)",
        "activation": "quantized_relu(16,6)",
    }
}


def _x(shape, count=300, seed=0):
    """Inputs on a 1/16 grid (the hardware's input type holds them exactly)."""
    return (np.round(np.random.default_rng(seed).uniform(-1, 1, (count, *shape)) * 16) / 16).astype(np.float32)


class Residual(nn.Module):
    """A ResNet block as PyTorch users write one: `out = relu(bn(conv(x)) + x)`, its skip an addition."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.conv1, self.bn1 = nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.conv2, self.bn2 = nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.relu1, self.relu2 = nn.ReLU(), nn.ReLU()
        self.head = nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        x = self.stem(x)
        y = self.bn2(self.conv2(self.relu1(self.bn1(self.conv1(x)))))
        return self.head(self.relu2(x + y).view(x.size(0), -1))


def _statistics(model, shape):
    """Batch-norm statistics from a few training-mode passes, then eval mode."""
    torch.manual_seed(0)
    model.train()
    with torch.no_grad():
        for _ in range(4):
            model(torch.randn(64, *shape) * 0.7 + 0.2)
    return model.eval()


@pytest.fixture(scope="module")
def residual(tmp_path_factory):
    torch.manual_seed(0)
    quantized = fp.quantized_twin(_statistics(Residual(), (1, 8, 8)), WIDE)
    x = _x((1, 8, 8))
    front_end_of(quantized).predict(quantized, x[:2])  # as training would: the module has seen its input shape
    root = tmp_path_factory.mktemp("residual")
    return quantized, x, fp.export(quantized, "latency_parallel", "pynq-z2", root / "project", x=x), root


def test_a_residual_module_is_bit_exact_against_the_module_computed_exactly(residual):
    quantized, x, exported, root = residual
    assert not any(isinstance(m, nn.BatchNorm2d) for m in quantized.modules())  # each folded into its conv
    build = shipped.build_shipped(exported.path, root / "exact")
    shipped.simulate_synthesized_weights(build)
    run = shipped.runner(build, resolved(quantized), exported.manifest["traced_outputs"])
    result = compare_with_qkeras(run, resolved(quantized), x, exported.input_type)
    assert result.passed and result.bit_exact and result.reference == "Brevitas", result.format()


def test_one_shipped_weight_one_step_off_is_caught(residual):
    quantized, x, exported, root = residual
    build = shipped.build_shipped(exported.path, root / "changed")  # its .txt as they are: C-sim reads them
    names = {user: node for node, user in exported.manifest.get("names", {}).items()}
    node = names.get("head", "head")
    array = next(a for a in exported.manifest["hls_nodes"][node]["weight_headers_sha256"] if a.startswith("w"))
    weights = build.directory / "firmware" / "weights" / f"{array}.txt"
    values = np.array([float(v) for v in weights.read_text().split(",")])
    fixed = parse_type(exported.config["LayerName"][node]["Precision"]["weight"])
    index = int(np.argmax(np.abs(values)))
    values[index] += -(2.0**-fixed.frac) if values[index] > 0 else 2.0**-fixed.frac
    weights.write_text(", ".join(repr(float(v)) for v in values))
    run = shipped.runner(
        build, resolved(quantized), exported.manifest["traced_outputs"], exported.manifest.get("names")
    )
    result = compare_with_qkeras(run, resolved(quantized), x, exported.input_type)
    assert not result.passed and result.first_difference.startswith("the first layer that differs is 'head'")
    assert result.mismatches <= result.samples  # one weight: one logit of a sample at most


def test_the_brevitas_block_quantconv_batchnorm_quantrelu_folds_and_is_bit_exact(tmp_path):
    """The usual Brevitas/FINN block, from issue 68's report: the BatchNorm stayed, and C-sim differed by 0.0263."""
    model = nn.Sequential(
        qnn.QuantConv1d(2, 4, 3, bias=False, weight_bit_width=8),
        nn.BatchNorm1d(4),
        qnn.QuantReLU(bit_width=8),
        nn.Flatten(),
        qnn.QuantLinear(56, 3),
    )
    torch.manual_seed(0)
    quantized = fp.quantized_twin(_statistics(model, (2, 16)), SPEC8)
    assert isinstance(quantized[1], nn.Identity) and quantized[0].bias is not None  # folded, with its shift
    x = _x((2, 16))
    exported = fp.export(quantized, "latency_parallel", "pynq-z2", tmp_path / "prj", x=x)
    result = fp.csim(exported, quantized, x)
    assert result.passed and result.bit_exact, result.format()


def test_a_batchnorm_that_follows_no_conv_is_one_line_before_any_training(tmp_path):
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(144, 3))
    problem = front_end_of(model).conversion_problem(model)
    assert problem.startswith("module '2' (BatchNorm2d): a BatchNorm folds into the Conv/Linear right before it")
    quantized = fp.quantized_twin(model.eval(), SPEC8)
    with pytest.raises(QuantizationConfigError, match=r"^module '2' \(BatchNorm2d\)"):
        fp.export(quantized, x=_x((1, 8, 8), 8), output_dir=tmp_path / "prj")


def _integer_biases(bias_quant, source: bool = True):
    """Brevitas' integer biases after a quantized input (QuantIdentity / QuantReLU with return_quant_tensor)."""
    torch.manual_seed(0)
    layers = [qnn.QuantIdentity(act_quant=Int8ActPerTensorFixedPoint, return_quant_tensor=True)] if source else []
    layers += [
        qnn.QuantConv2d(1, 4, 3, weight_quant=Int8WeightPerTensorFixedPoint, bias_quant=bias_quant),
        qnn.QuantReLU(act_quant=Uint8ActPerTensorFixedPoint, return_quant_tensor=True),
        nn.Flatten(),
        qnn.QuantLinear(4 * 6 * 6, 10, weight_quant=Int8WeightPerTensorFixedPoint, bias_quant=bias_quant),
    ]
    model = nn.Sequential(*layers)
    with torch.no_grad():
        for layer in (model[-4], model[-1]):
            layer.bias.uniform_(-2, 2)
    return model.eval()


@pytest.mark.parametrize("bias_quant", [Int32Bias, Int8Bias])
def test_brevitas_integer_biases_read_as_the_fixed_point_type_they_compute(tmp_path, bias_quant):
    """scale = the input's scale x the weight's, at the quantizer's own width: the twin computes what the model
    does, bit for bit, and C-sim is bit-exact (issue 68: Brevitas' bare 'Input scale required')."""
    model, x = _integer_biases(bias_quant), _x((1, 8, 8), 200)
    quantized = fp.quantized_twin(model)
    with torch.no_grad():
        before, after = model(torch.from_numpy(x)), quantized(torch.from_numpy(x))
    assert torch.equal(getattr(before, "value", before), getattr(after, "value", after))
    exported = fp.export(quantized, "latency_parallel", "pynq-z2", tmp_path / "prj", x=x)
    result = fp.csim(exported, quantized, x)
    assert result.passed and result.bit_exact, result.format()


def test_the_quantizers_of_a_brevitas_model_name_its_layers_only():
    """quantize/stage.json listed a QuantReLU's own parts (`2.act_quant.fused_activation_quant_proxy....`)."""
    from fpgaprune.frontends.torch.quantize import quantizer_sources

    sources = quantizer_sources(_integer_biases(Int32Bias), SPEC8)
    assert sorted(sources) == ["0", "1", "2", "4"], sources


def test_an_integer_bias_with_no_quantized_input_is_one_line():
    model = _integer_biases(Int32Bias, source=False)
    with pytest.raises(
        QuantizationConfigError, match=r"^layer '0': its bias quantizer .* takes the scale of its input"
    ):
        fp.quantized_twin(model)


class PaddedPool(nn.Module):
    def __init__(self, **pool):
        super().__init__()
        self.conv, self.pool, self.head = nn.Conv2d(1, 4, 3), nn.MaxPool2d(2, **pool), nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        return self.head(torch.flatten(self.pool(torch.relu(self.conv(x))), 1))


@pytest.mark.parametrize(
    "preset, start",
    [
        ("latency_stream", "layer 'pool': hls4ml's io_stream pooling takes no padding"),
        ("latency_parallel", "layer 'pool': hls4ml 1.3 fills a max pooling's padding with its input type's top bit"),
    ],
)
def test_padded_pooling_after_a_relu_is_refused_at_validate_in_both_io_types(preset, start):
    """Issue 68: MaxPool2d(2, padding=1) passed validate, then an hls4ml assert killed the CLI (io_stream), or
    C-sim failed at the pooling by 2 (io_parallel: its padding read as the unsigned type's largest value)."""
    problems = preset_problems(resolved(PaddedPool(padding=1)), preset, _x((1, 8, 8), 8))
    assert problems and problems[0].startswith(start), problems


def test_pooling_settings_the_converter_ignores_are_one_line():
    model = PaddedPool(ceil_mode=True)
    problem = front_end_of(model).conversion_problem(model)
    assert problem.startswith("module 'pool' (MaxPool2d): hls4ml 1.3.0's PyTorch converter ignores its ceil_mode")
