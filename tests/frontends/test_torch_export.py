"""A PyTorch model from a chosen kernel to a C-simulated project: hold and prune (50% by L1), fine-tune with AdamW
in the user's own loop, quantize with Brevitas (constant power-of-two quantizers), QAT, export through hls4ml's
PyTorch converter and C-simulate bit-exactly against the Brevitas model on NCHW data, with one product per live
weight; the quantizers equal their numpy definition (QKeras') bit for bit; what has no exact route is one line."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch front end needs the torch extra (pip install -e '.[torch]')")
qnn = pytest.importorskip("brevitas.nn", reason="PyTorch quantization needs the torch extra (Brevitas)")
from quantizer_specs import SPEC8 as SPEC  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from torch import nn  # noqa: E402

import fpgaprune as fp  # noqa: E402
from fpgaprune.errors import QuantizationConfigError  # noqa: E402
from fpgaprune.frontends.torch.brevitas_quants import FixedRelu, FixedSignedAct  # noqa: E402
from fpgaprune.frontends.torch.quantizers import brevitas_quant, from_text  # noqa: E402
from fpgaprune.hls import count_products  # noqa: E402
from fpgaprune.record import resolved  # noqa: E402


@pytest.fixture(scope="module")
def digits():
    """Two-channel 8x8 digits, NCHW (the second channel mirrored, so that the layout matters), on a 1/16 grid."""
    data = load_digits()
    x = (np.minimum(data.images, 15) / 16).astype(np.float32)[:, None]
    x = np.ascontiguousarray(np.concatenate([x, x[:, :, :, ::-1]], axis=1))
    order = np.random.default_rng(0).permutation(len(x))
    x, y = x[order], data.target[order].astype(np.int64)
    return x[:1400], y[:1400], x[1400:1700], y[1400:1700]


class DigitsCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(2, 6, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Dropout(0.1))
        self.head = nn.Linear(6 * 3 * 3, 10)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


def _mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(128, 24), nn.ReLU(), nn.Linear(24, 10))


def _train(model, x, y, epochs: int, lr: float, seed: int = 0):
    """The user's own loop: AdamW with weight decay."""
    torch.manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-2)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    for _ in range(epochs):
        model.train()
        for start in range(0, len(xt), 64):
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(xt[start : start + 64]), yt[start : start + 64]).backward()
            optimizer.step()
    return model.eval()


def _live_products(quantized, exported_names: dict, positions: dict) -> dict:
    """{hls4ml node: live quantized weights x output positions} of each quantized layer."""
    found = {}
    for name, module in quantized.named_modules():
        if isinstance(module, (qnn.QuantLinear, qnn.QuantConv2d)):
            live = int(np.count_nonzero(module.quant_weight().value.detach().numpy()))
            found[exported_names.get(name, name)] = live * positions[name]
    return found


@pytest.fixture(scope="module")
def pruned_cnn(digits):
    """The DigitsCNN trained, a chosen kernel held and half of its kernels pruned, retrained, and QAT-trained:
    (float model, quantized model)."""
    x, y, x_test, y_test = digits
    torch.manual_seed(0)
    model = _train(DigitsCNN(), x, y, epochs=4, lr=1e-2)
    held = fp.hold(model, prune=["features.0[5, 1, :, :]", "head/bias[2]"])
    pruned = fp.prune(held, 0.5, structure="kernel", score="l1", layers=["features.0"])
    pruned = _train(pruned, x, y, epochs=2, lr=3e-3)
    return model, _train(fp.quantized_twin(pruned, SPEC), x, y, epochs=2, lr=1e-3)  # QAT, holds carried over


@pytest.mark.csim
@pytest.mark.parametrize(
    "preset, backend",
    [
        ("latency_parallel", "Vitis"),
        ("latency_stream", "Vitis"),
        ("latency_parallel", "Catapult"),
        ("latency_stream", "Catapult"),
    ],
)
def test_a_cnn_goes_from_a_chosen_kernel_to_a_bit_exact_kernel_sparse_project(
    tmp_path, digits, pruned_cnn, preset, backend
):
    x, y, x_test, y_test = digits
    model, quantized = pruned_cnn
    weight = quantized.features[0].quant_weight().value.detach().numpy()
    assert np.all(weight[5, 1] == 0.0) and quantized.head.quant_bias().value[2].item() == 0.0
    assert (np.abs(weight).sum(axis=(2, 3)) == 0).sum() >= 6  # half of the 12 kernels, the chosen one among them

    result = fp.export(quantized, preset, "pynq-z2", tmp_path / "prj", x=x_test, backend=backend)
    assert result.manifest["names"] == {
        "features_0": "features.0",
        "features_1": "features.1",
        "features_2": "features.2",
    }
    check = fp.csim(result, quantized, x_test, task=None)
    assert check.bit_exact and check.samples == len(x_test), check.format()
    positions = {"features.0": 6 * 6, "head": 1}
    expected = _live_products(quantized, {"features.0": "features_0"}, positions)
    hardware = np.ascontiguousarray(np.moveaxis(x_test[:3], 1, -1))  # the design is channels-last
    assert count_products(result.hls_model, hardware) == expected
    assert result.manifest["layers"]["features.0"]["kernels_pruned"].count([1, 5]) == 1  # (in, out), fpgaprune's
    dense = fp.quantized_twin(model, SPEC)  # the same quantizers before pruning: what each removal saved
    savings = {s.name: s for layer in fp.estimate(result, dense).layers for s in layer.savings}
    chosen = savings["features.0[5, 1, :, :]"]  # named in PyTorch's layout: out 5 <- in 1
    assert chosen.whole and chosen.products == 9 and chosen.per_inference == 9 * 36 and chosen.lut > 0


@pytest.mark.csim
@pytest.mark.parametrize("preset", ["latency_parallel", "resource_stream"])
def test_a_sequential_mlp_exports_with_identifier_names_and_is_bit_exact(tmp_path, digits, preset):
    x, y, x_test, _ = digits
    torch.manual_seed(1)
    model = fp.prune(_train(_mlp(), x, y, epochs=4, lr=1e-2), 0.5, structure="element", score="l1")
    quantized = _train(fp.quantized_twin(model, SPEC), x, y, epochs=2, lr=1e-3)
    result = fp.export(quantized, preset, "pynq-z2", tmp_path / "prj", x=x_test)
    assert {"layer_1", "layer_2", "layer_3"} <= {layer.name for layer in result.hls_model.get_layers()}
    check = fp.csim(result, quantized, x_test)
    assert check.bit_exact, check.format()
    expected = _live_products(quantized, {"1": "layer_1", "3": "layer_3"}, {"1": 1, "3": 1})
    assert count_products(result.hls_model, x_test[:2].reshape(2, -1)) == expected


@pytest.mark.csim
def test_table_activations_are_typed_and_never_pass_silently(tmp_path, digits):
    """A softmax output: its logits bit-exact, the table's ties reported; a hidden sigmoid (hls4ml's table):
    not bit-exact, judged by the bound its table's types give, which the report names layer by layer."""
    x_test = digits[2][:, 0].reshape(-1, 64)  # one channel, flat
    for hidden, tail, exact in ((nn.ReLU(), [nn.Softmax(dim=1)], True), (nn.Sigmoid(), [], False)):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(64, 16), hidden, nn.Linear(16, 10), *tail)
        quantized = fp.quantized_twin(model, SPEC).eval()
        result = fp.export(quantized, "latency_parallel", "pynq-z2", tmp_path / f"prj{exact}", x=x_test)
        check = fp.csim(result, quantized, x_test)
        assert check.bit_exact is exact and check.passed, check.format()
        if exact:
            assert check.table_activation, check.format()
        else:
            assert check.max_abs_diff > 0 and "reads sigmoid '1' from a 4096-entry table" in check.tolerance.reason
            assert any(line.startswith("'1' (") for line in check.judged) and not check.beyond, check.format()


class Branching(nn.Module):
    """A residual `+` and a `torch.cat` of two branches, written as functions in the forward."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Conv2d(2, 4, 3, padding=1), nn.Conv2d(4, 4, 3, padding=1)
        self.side, self.r1, self.r2 = nn.Conv2d(2, 4, 1), nn.ReLU(), nn.ReLU()
        self.pool, self.fc = nn.AvgPool2d(2), nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        h = self.r1(self.a(x))
        merged = torch.cat([self.r2(self.b(h) + h), self.side(x)], dim=1)
        return self.fc(torch.flatten(self.pool(merged), 1))


@pytest.mark.csim
def test_functional_add_and_cat_are_typed_as_merges_and_bit_exact(tmp_path, digits, preset="latency_stream"):
    """`+` and `torch.cat` are graph nodes with merge types (a signed branch beside a ReLU's: the concatenation
    must be signed, or C-sim wraps), held kernel included, bit-exact (io_stream; io_parallel checked by hand)."""
    x, y, x_test, _ = digits
    torch.manual_seed(2)
    held = fp.hold(_train(Branching(), x, y, epochs=3, lr=3e-3), prune=["b[1, 2, :, :]"])
    quantized = _train(fp.quantized_twin(held, SPEC), x, y, epochs=1, lr=1e-3)
    result = fp.export(quantized, preset, "pynq-z2", tmp_path / "prj", x=x_test)
    assert {"add", "cat"} <= {layer.name for layer in result.hls_model.get_layers()}
    assert [2, 1] in result.manifest["layers"]["b"]["kernels_pruned"]  # (in, out), fpgaprune's
    check = fp.csim(result, quantized, x_test)
    assert check.bit_exact and check.argmax_agreement == 1.0, check.format()


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(
    "text, relu_text",
    [
        ("quantized_bits(6,0,alpha=1)", "quantized_relu(6,2)"),
        ("quantized_bits(8,3)", "quantized_relu(8,0)"),
        ("quantized_bits(4,-1,0,1,1)", "quantized_relu(3,-1)"),
    ],
)
def test_brevitas_quantizers_compute_the_texts_numpy_definition_bit_for_bit(text, relu_text, seed):
    rng = np.random.default_rng(seed)
    quantizer = from_text(text, "test")
    step = 2.0**-quantizer.fixed.frac
    ties = (rng.integers(-300, 300, 2000) + 0.5) * step  # half-way between two steps: round half to even
    values = np.concatenate([rng.normal(0, 4 * 2.0**quantizer.fixed.integer, 4000), ties]).astype(np.float32)
    weight = qnn.QuantLinear(len(values), 1, bias=False, weight_quant=brevitas_quant(quantizer, "kernel"))
    with torch.no_grad():
        weight.weight.copy_(torch.from_numpy(values)[None])
    identity = qnn.QuantIdentity(act_quant=brevitas_quant(quantizer, "activation"))
    assert issubclass(identity.act_quant.quant_injector, FixedSignedAct)
    expected = quantizer(values)
    assert np.array_equal(weight.quant_weight().value.detach().numpy()[0], expected)
    assert np.array_equal(identity.eval()(torch.from_numpy(values)).numpy(), expected)
    relu = from_text(relu_text, "test")
    module = qnn.QuantReLU(act_quant=brevitas_quant(relu, "activation"))
    assert issubclass(module.act_quant.quant_injector, FixedRelu)
    assert np.array_equal(module.eval()(torch.from_numpy(values)).numpy(), relu(np.maximum(values, 0)))
    assert np.unique(expected).size > 8 and np.any(expected == quantizer.fixed.lo)  # the grid and its saturation


@pytest.mark.parametrize(
    "text", ["quantized_po2(4)", "quantized_bits(6,0,alpha='auto_po2')", "quantized_bits(6,0,symmetric=1)"]
)
def test_a_quantizer_with_no_exact_route_is_one_line_saying_what_to_use(text):
    model = _mlp()
    spec = {"default": {**SPEC["default"], "kernel": text}}
    with pytest.raises(QuantizationConfigError) as error:
        fp.quantized_twin(model, spec)
    message = str(error.value)
    assert "\n" not in message and text in message and "use quantized_bits(bits,integer,alpha=1)" in message


def test_held_kernels_stay_exactly_zero_through_qat_over_seeds(digits):
    x, y, _, _ = digits
    for seed in range(3):
        torch.manual_seed(seed)
        held = fp.hold(DigitsCNN(), prune=["features.0[0, 0]", "features.0[4, 1]", "head[3, :]"])
        quantized = _train(fp.quantized_twin(held, SPEC), x[:400], y[:400], epochs=1, lr=5e-2, seed=seed)
        weight = quantized.features[0].quant_weight().value.detach().numpy()
        assert np.all(weight[0, 0] == 0.0) and np.all(weight[4, 1] == 0.0)
        assert np.all(quantized.head.quant_weight().value.detach().numpy()[3] == 0.0)


def test_a_brevitas_layer_with_a_float_scale_is_refused_at_export_in_one_line(tmp_path, digits):
    _, _, x_test, _ = digits
    model = nn.Sequential(nn.Flatten(), qnn.QuantLinear(128, 10, bias=False))  # Brevitas' default: a float scale
    with pytest.raises(QuantizationConfigError) as error:
        fp.export(model, x=x_test, output_dir=tmp_path / "prj")
    message = str(error.value)
    assert "\n" not in message and "layer '1' (kernel)" in message and "power-of-two" in message
    assert not (tmp_path / "prj").exists()
    float_bias = nn.Sequential(
        nn.Flatten(),
        qnn.QuantLinear(128, 10, weight_quant=brevitas_quant(from_text("quantized_bits(6,0)", "test"), "kernel")),
    )
    with pytest.raises(QuantizationConfigError, match="layer '1': its kernel is quantized and its bias is float"):
        fp.export(float_bias, x=x_test, output_dir=tmp_path / "prj")


def test_a_module_hls4ml_cannot_convert_is_named_before_any_training():
    from fpgaprune.framework import front_end_of

    model = nn.Sequential(nn.Linear(4, 4), nn.GELU(), nn.Linear(4, 2))
    problem = front_end_of(model).conversion_problem(model)
    assert problem is not None and "module '1' (GELU)" in problem and "\n" not in problem
    assert front_end_of(_mlp()).conversion_problem(_mlp()) is None


class _Recurrent(nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.rnn, self.head = cell(4, 8, batch_first=True), nn.Linear(8, 3)

    def forward(self, x):
        return self.head(self.rnn(x)[0][:, -1])


@pytest.mark.parametrize("cell", [nn.LSTM, nn.GRU])
def test_a_recurrent_module_has_no_exact_route_and_says_so_in_one_line(tmp_path, cell):
    """hls4ml 1.3 reads PyTorch's recurrent layers in float only (its ONNX converter not at all): quantizing,
    exporting or holding one is one line naming the module, what has no route, and what to use instead."""
    from fpgaprune.errors import UnsupportedLayerError
    from fpgaprune.framework import front_end_of
    from fpgaprune.training.guards import check_finite_weights

    model, name = _Recurrent(cell), cell.__name__  # bias=True, PyTorch's default
    for call in (
        lambda: fp.quantized_twin(model, SPEC),
        lambda: fp.export(model, x=np.zeros((4, 5, 4), np.float32), output_dir=tmp_path / "prj"),
    ):
        with pytest.raises(UnsupportedLayerError, match=rf"module 'rnn' \({name}\): .*QKeras' QLSTM/QGRU") as refused:
            call()
        assert "\n" not in str(refused.value)
    assert f"module 'rnn' ({name})" in front_end_of(model).conversion_problem(model)
    check_finite_weights(
        resolved(model), "validate"
    )  # what validate reads first: `bias` here is the constructor's flag
    with pytest.raises(UnsupportedLayerError, match=rf"'rnn' is a {name}, .*maskable classes: Conv1d, Conv2d, Linear$"):
        fp.hold(model, prune=["rnn[0, :]"])
    assert not (tmp_path / "prj").exists()


@pytest.mark.parametrize("text", ["quantized_bits(6,0,alpha=1)", "quantized_bits(8,3)", "quantized_relu(6,2)"])
def test_a_quantizer_text_means_the_same_in_pytorch_as_in_qkeras(text):
    from fpgaprune.frontends.qkeras.spec import build_quantizer

    rng = np.random.default_rng(7)
    quantizer = from_text(text, "test")
    ties = (rng.integers(-200, 200, 1000) + 0.5) * 2.0**-quantizer.fixed.frac
    values = np.concatenate([rng.normal(0, 2.0**quantizer.fixed.integer, 3000), ties]).astype(np.float32)
    qkeras = np.asarray(build_quantizer(text, "test")(values), np.float64)
    assert np.array_equal(quantizer(values if quantizer.fixed.signed else np.maximum(values, 0)), qkeras)


@pytest.mark.csim
def test_pytorch_models_stream_as_rtl_bit_exactly_against_brevitas(tmp_path, digits, pruned_cnn):
    """The RTL backend reads the same record: a Linear after a functional flatten, and an nn.Flatten of a
    two-channel input, gather their maps channel by channel as PyTorch flattens them."""
    x, y, x_test, _ = digits
    _, quantized = pruned_cnn
    exported = fp.export(quantized, "latency_parallel", "ulx3s-85f", tmp_path / "cnn", x=x_test, backend="RTL")
    assert [s["layers"] for s in exported.manifest["stages"]][2:] == [["head: its input, flattened"], ["head"]]
    check = fp.csim(exported, quantized, x_test[:150])
    assert check.bit_exact and check.reference == "Brevitas", check.format()
    torch.manual_seed(2)
    mlp = fp.prune(_train(_mlp(), x, y, epochs=2, lr=1e-2), 0.5, structure="element", score="l1")
    qmlp = _train(fp.quantized_twin(mlp, SPEC), x, y, epochs=1, lr=1e-3)
    exported = fp.export(qmlp, "latency_parallel", "ulx3s-85f", tmp_path / "mlp", x=x_test, backend="RTL")
    check = fp.csim(exported, qmlp, x_test[:150])
    assert check.bit_exact, check.format()
