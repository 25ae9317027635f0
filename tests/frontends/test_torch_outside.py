"""PyTorch models as people write them, from a chosen weight to a C-simulated project: activations called as
functions (`torch.relu`, `F.relu(inplace=True)`, `x.relu()`), `x.view(x.size(0), -1)`, Brevitas' default
quantizers (a float scale per tensor), a Sequential from a state dict whose sums pass float32's 24 bits, a ReLU at
the output, one-channel images, and a whole pickled module; in processes that never import TensorFlow or Keras."""

import json
import textwrap
import warnings

import numpy as np
import pytest
import yaml

torch = pytest.importorskip("torch", reason="the PyTorch front end needs the torch extra (pip install -e '.[torch]')")
qnn = pytest.importorskip("brevitas.nn", reason="PyTorch quantization needs the torch extra (Brevitas)")
from quantizer_specs import SPEC8 as SPEC  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402
from watch_imports import KERAS, run_watched  # noqa: E402

import fpgaprune as fp  # noqa: E402
from fpgaprune.errors import FpgapruneNote, QuantizationConfigError  # noqa: E402
from fpgaprune.record import resolved  # noqa: E402

# The user's script: two models in the styles of hls4ml's PyTorch tutorial, each held, pruned, trained in the
# user's own loop, quantized, QAT-trained, exported and C-simulated; what it found is printed as JSON.
CHAIN = textwrap.dedent(
    """
    import json, sys, warnings
    import numpy as np, torch
    import torch.nn.functional as F
    from torch import nn
    import brevitas.nn as qnn
    from sklearn.datasets import load_digits
    import fpgaprune as fp

    class FunctionalMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2, self.fc3 = nn.Linear(64, 32), nn.Linear(32, 16), nn.Linear(16, 10)

        def forward(self, x):
            x = x.view(x.size(0), -1)
            x = torch.relu(self.fc1(x))
            x = F.relu(self.fc2(x), inplace=True)
            return self.fc3(x)

    class BrevitasDefaults(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant_inp = qnn.QuantIdentity(bit_width=8, return_quant_tensor=True)
            self.fc1 = qnn.QuantLinear(64, 32, bias=True, weight_bit_width=6)
            self.relu1 = qnn.QuantReLU(bit_width=6)
            self.fc2 = qnn.QuantLinear(32, 10, bias=True, weight_bit_width=6)

        def forward(self, x):
            return self.fc2(self.relu1(self.fc1(self.quant_inp(torch.flatten(x, 1)))))

    digits = load_digits()
    x = (np.minimum(digits.images, 15) / 16).astype(np.float32)[:, None]
    y = digits.target.astype(np.int64)

    def train(model, epochs):
        optimizer = torch.optim.Adam(model.parameters(), 1e-2)
        for _ in range(epochs):
            model.train()
            for start in range(0, 1400, 64):
                optimizer.zero_grad()
                batch = slice(start, start + 64)
                F.cross_entropy(model(torch.from_numpy(x[batch])), torch.from_numpy(y[batch])).backward()
                optimizer.step()
        return model.eval()

    spec = json.loads(sys.argv[1])
    found = {}
    named = {"fc1_relu": {"activation": "quantized_relu(8,3)"}}  # a functional ReLU, addressed by its name
    for model, layers in ((FunctionalMLP(), named), (BrevitasDefaults(), {})):
        torch.manual_seed(0)
        held = fp.prune(train(model, 3), 0.5, structure="element", layers=["fc1"], selections=["fc2[3, 5]"])
        with warnings.catch_warnings(record=True) as notes:
            warnings.simplefilter("always")
            quantized = fp.quantized_twin(train(held, 1), {**spec, "layers": layers})
        train(quantized, 1)
        kernel = quantized.fc1.quant_weight().value.detach().numpy()
        pruned = held.fc1.parametrizations.weight[0].mask.numpy()
        exported = fp.export(quantized, "latency_parallel", "pynq-z2", f"prj_{type(model).__name__}", x=x[1400:])
        check = fp.csim(exported, quantized, x[1400:])
        found[type(model).__name__] = {
            "modules": [name for name, _ in quantized.named_modules() if name],
            "relu": str(getattr(getattr(quantized, "fc1_relu", None), "act_quant", None) and
                        quantized.fc1_relu.act_quant.quant_injector.bit_width),
            "notes": [str(note.message) for note in notes if note.category.__name__ == "FpgapruneNote"],
            "pruned_zero": bool(np.all(kernel[pruned] == 0.0)) and int(pruned.sum()) > 0,
            "chosen_zero": float(quantized.fc2.quant_weight().value[3, 5]) == 0.0,
            "bit_exact": check.bit_exact,
            "verdict": check.format(),
        }
    print(json.dumps(found))
    """
)


def test_functional_activations_and_brevitas_defaults_are_bit_exact_in_a_process_without_keras(tmp_path):
    """hold, prune, quantize, export and csim from the user's script: no TensorFlow, tf_keras, Keras or QKeras."""
    (tmp_path / "chain.py").write_text(CHAIN)
    done, imported = run_watched(["chain.py", json.dumps(SPEC)], tmp_path, cwd=tmp_path, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    functional, defaults = found["FunctionalMLP"], found["BrevitasDefaults"]
    assert {"fc1_relu", "fc2_relu"} <= set(functional["modules"]) and functional["relu"] == "8"  # named, addressed
    for result in (functional, defaults):
        assert result["bit_exact"] and result["pruned_zero"] and result["chosen_zero"], result["verdict"]
    assert not functional["notes"]
    notes = {note.split(":")[0]: note for note in defaults["notes"]}  # one note per converted layer
    assert set(notes) == {"quant_inp", "fc1", "relu1", "fc2"}, defaults["notes"]
    assert "kernel Brevitas 6-bit signed, float scale" in notes["fc1"] and "-> quantized_bits(6," in notes["fc1"]
    assert "bias float -> quantized_bits(8,3,alpha=1)" in notes["fc1"] and "quantized_relu(6," in notes["relu1"]
    assert imported & set(KERAS) == set() and {"torch", "brevitas"} <= imported, imported


def _digits_nchw(channels_last=False):
    from fpgaprune import data

    dataset = data.digits()
    return dataset if channels_last else dataset.channels_first()


def test_one_channel_images_reach_the_module_in_pytorchs_layout_and_view_works():
    dataset = _digits_nchw()
    assert dataset.x_train.shape[1] == 1 and dataset.x_train.strides[1] == dataset.x_train.strides[0]

    class Flattening(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.fc = nn.Conv2d(1, 2, 3), nn.Linear(2 * 6 * 6, 10)

        def forward(self, x):
            x = torch.relu(self.conv(x))
            return self.fc(x.view(x.size(0), -1))  # fails on channels-last memory

    from fpgaprune.framework import front_end_of
    from fpgaprune.model.task import infer_task

    model = Flattening()
    task = infer_task(resolved(model), dataset.y_train, dataset.y_test, "digits", x_sample=dataset.x_test[:1])
    # an NHWC array moved by numpy alone keeps strides torch reads as channels-last: the front end takes it too
    moved = np.ascontiguousarray(np.moveaxis(_digits_nchw(channels_last=True).x_train[:64], -1, 1))
    front = front_end_of(model)
    front.fit(
        model, moved, dataset.y_train[:64], task=task, optimizer="adam", learning_rate=1e-3, epochs=1, batch_size=32
    )
    assert front.predict(model, moved).shape == (64, 10)


class ReluOutput(nn.Module):
    """A LeNet-5 as some tutorials end it: a ReLU on the last layer, read as class scores."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(64, 16), nn.Linear(16, 10)

    def forward(self, x):
        return F.relu(self.fc2(torch.relu(self.fc1(torch.flatten(x, 1)))))


def test_integer_labels_make_a_relu_output_a_classifier_and_a_regression_says_what_to_set():
    from fpgaprune.errors import DataError
    from fpgaprune.model.task import infer_task

    dataset = _digits_nchw()
    task = infer_task(resolved(ReluOutput()), dataset.y_train, dataset.y_test, "digits", x_sample=dataset.x_test[:1])
    assert (task.kind, task.from_logits, task.metric) == ("classification", True, "accuracy")
    with pytest.raises(DataError) as error:
        infer_task(
            resolved(ReluOutput()),
            dataset.y_train,
            dataset.y_test,
            "digits",
            task="regression",
            x_sample=dataset.x_test[:1],
        )
    assert "y_train holds 1 integer label per sample; the output layer 'fc2_relu' has 10 units" in str(error.value)
    assert "set training.task: classification" in str(error.value)


def test_functional_activations_are_named_after_the_layer_they_follow():
    from fpgaprune.framework import front_end_of

    class Named(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(nn.Conv2d(1, 2, 3), nn.Conv2d(2, 2, 3))
            self.relu = nn.ReLU()  # a module already called what a functional name would be
            self.head = nn.Linear(2 * 4 * 4, 10)

        def forward(self, x):
            x = F.relu(self.features[1](self.features[0](x)))
            x = torch.sigmoid(x.flatten(1)).relu()
            return torch.softmax(self.head(x), dim=1)

    model = Named()
    layers, inbound, outputs = front_end_of(model).graph_edges(model)
    names = [layer.name for layer in layers]
    assert names == ["features.0", "features.1", "features_1_relu", "sigmoid", "relu_1", "head", "head_softmax"]
    assert inbound["sigmoid"] == ["features_1_relu"] and outputs == {"head_softmax"}
    twin = fp.quantized_twin(model, SPEC)
    assert isinstance(twin.features_1_relu, qnn.QuantReLU) and isinstance(twin.relu_1, qnn.QuantReLU)
    assert isinstance(twin.sigmoid, nn.Sigmoid) and twin.head_softmax.dim == 1  # tables stay float, as modules do
    out = twin.eval()(torch.rand(4, 1, 8, 8))
    assert out.shape == (4, 10) and torch.allclose(out.sum(dim=1), torch.ones(4))  # still a softmax


def test_relu6_is_a_quantized_relu_within_6_and_leaky_relu_is_one_line():
    class Capped(nn.Module):
        def __init__(self, activation):
            super().__init__()
            self.fc, self.act, self.out = nn.Linear(4, 4), activation, nn.Linear(4, 2)

        def forward(self, x):
            return self.out(self.act(self.fc(x)))

    twin = fp.quantized_twin(Capped(nn.ReLU6()), SPEC)
    assert isinstance(twin.act, qnn.QuantReLU)  # quantized_relu(6,2) saturates at 3.94, below 6
    wide = {"default": {**SPEC["default"], "activation": "quantized_relu(8,4)"}}
    with pytest.raises(QuantizationConfigError, match=r"module 'act' \(ReLU6\): .* reaches 15.9375, past ReLU6's 6"):
        fp.quantized_twin(Capped(nn.ReLU6()), wide)
    with pytest.raises(QuantizationConfigError) as error:
        fp.quantized_twin(Capped(nn.LeakyReLU(0.1)), SPEC)
    assert "module 'act' (LeakyReLU): no exact route to hls4ml" in str(error.value) and "\n" not in str(error.value)


def test_a_default_quant_relu_converted_off_the_default_type_computes_the_converted_type():
    """A learned ReLU scale far from the default activation's step: the twin computes the type the note names."""
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Flatten(), qnn.QuantLinear(64, 8, bias=True, weight_bit_width=6), qnn.QuantReLU(bit_width=6)
    )
    scaling = dict(model[2].named_parameters())[
        "act_quant.fused_activation_quant_proxy.tensor_quant.scaling_impl.value"
    ]
    with torch.no_grad():
        scaling.fill_(1.0)  # scale 1/63: converted to quantized_relu(6,0), the default activation is (6,2)
    with pytest.warns(FpgapruneNote, match=r"^2: activation Brevitas 6-bit unsigned, .* -> quantized_relu\(6,0\)"):
        twin = fp.quantized_twin(fp.hold(model), SPEC).eval()
    x = torch.rand(64, 1, 8, 8)
    inner = twin[1](twin[0](x))
    inner = (inner.value if hasattr(inner, "value") else inner).detach().numpy()
    out = twin[2](twin[1](twin[0](x)))
    out = (out.value if hasattr(out, "value") else out).detach().numpy()
    np.testing.assert_array_equal(out, np.clip(np.round(inner * 64), 0, 63) / 64)


def test_a_per_channel_float_scale_is_held_then_converted_to_one_power_of_two():
    torch.manual_seed(0)
    model = nn.Sequential(
        qnn.QuantConv2d(1, 4, 3, weight_bit_width=4, weight_scaling_per_output_channel=True, bias=False),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(4 * 6 * 6, 10),
    )
    held = fp.hold(model, prune=["0[2, 0, :, :]"])  # holds take Brevitas' defaults: they keep 0
    with pytest.warns(FpgapruneNote, match=r"^0: kernel Brevitas 4-bit signed, float scale per channel -> "):
        twin = fp.quantized_twin(held, SPEC)
    scale = float(model[0].weight_quant.scale().max())
    step = float(twin[0].quant_weight().scale)
    assert step == 2.0 ** round(np.log2(scale)) and np.all(twin[0].quant_weight().value.detach().numpy()[2] == 0)
    with warnings.catch_warnings(record=True) as notes:  # named in the twin's spec: a rebuild converts nothing
        warnings.simplefilter("always")
        again = fp.quantized_twin(fp.finalize(held)[0], twin.fpgaprune_quantization["spec"])
    assert not [note for note in notes if note.category is FpgapruneNote]
    assert float(again[0].quant_weight().scale) == step


def test_a_sequential_from_a_state_dict_whose_sums_pass_24_bits_is_bit_exact_against_the_exact_reference(tmp_path):
    """A 16-64-32-32-5 softmax MLP (a jet tagger's shape) on features on a 2^-16 grid: 6 + 17 + 7 bits of
    products, past float32's 24, so Brevitas' float32 sums may differ from hls4ml's exact ones. C-sim compares with
    the module computed in float64: no layer needs a bound, and the design is bit-exact (before issue 68: each such
    layer was judged by the float32 bound)."""
    from fpgaprune.hls.tolerance import export_layer_tolerances

    (tmp_path / "models.py").write_text(
        "from torch import nn\n\n\nclass JetMLP(nn.Sequential):\n    def __init__(self):\n        super().__init__("
        "nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 5), "
        "nn.Softmax(dim=1))\n"
    )
    rng = np.random.default_rng(0)
    x = np.round(rng.normal(size=(1200, 16)) * 2**16) / 2**16
    y = (np.argmax(x[:, :5] + 0.5 * x[:, 5:10], axis=1)).astype(np.int64)
    x = x.astype(np.float32)
    torch.manual_seed(0)
    user = fp.load_model(architecture=f"{tmp_path / 'models.py'}:JetMLP", trust_code=True)
    optimizer = torch.optim.Adam(user.parameters(), 1e-2)
    for _ in range(30):
        optimizer.zero_grad()
        F.nll_loss(torch.log(user(torch.from_numpy(x[:1000]))), torch.from_numpy(y[:1000])).backward()
        optimizer.step()
    torch.save(user.state_dict(), tmp_path / "jets.pt")
    model = fp.load_model(tmp_path / "jets.pt", architecture=f"{tmp_path / 'models.py'}:JetMLP", trust_code=True)
    quantized = fp.quantized_twin(fp.prune(model, 0.5, structure="element", layers=["0"]), SPEC)
    exported = fp.export(quantized, "latency_parallel", "pynq-z2", tmp_path / "prj", x=x[1000:])
    names = exported.manifest.get("names", {})
    tolerances = export_layer_tolerances(resolved(quantized), exported.config, names, exported.input_type)
    assert all(tolerances[name] is None for name in ("0", "2", "4", "6")), tolerances
    check = fp.csim(exported, quantized, x[1000:])
    assert check.passed and check.bit_exact, check.format()


# A LeNet-5 as an older tutorial writes it and saves it: functional activations, `.view`, a ReLU on its last
# layer, defined in the training script itself and pickled whole (`torch.save(model)`).
LENET = textwrap.dedent(
    """
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch import nn


    class LeNet5(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
            self.pool = nn.MaxPool2d(2)
            self.conv2 = nn.Conv2d(4, 8, 3)
            self.fc1 = nn.Linear(8 * 2 * 2, 24)
            self.fc2 = nn.Linear(24, 10)

        def forward(self, x):
            x = self.pool(F.relu(self.conv1(x)))
            x = torch.relu(self.conv2(x))
            x = x.view(x.size(0), -1)
            x = self.fc1(x).relu()
            return F.relu(self.fc2(x))


    if __name__ == "__main__":
        from sklearn.datasets import load_digits

        digits = load_digits()
        x = torch.from_numpy((np.minimum(digits.images, 15) / 16).astype(np.float32)[:, None])
        y = torch.from_numpy(digits.target.astype(np.int64))
        torch.manual_seed(0)
        model = LeNet5()
        optimizer = torch.optim.Adam(model.parameters(), 1e-2)
        for _ in range(5):
            for start in range(0, 1400, 64):
                optimizer.zero_grad()
                F.cross_entropy(model(x[start:start + 64]), y[start:start + 64]).backward()
                optimizer.step()
        torch.save(model, "lenet5.pt")
    """
)


def test_a_pickled_lenet5_runs_every_stage_from_yaml_in_a_process_without_keras(tmp_path):
    (tmp_path / "train.py").write_text(LENET)
    trained, _ = run_watched(["train.py"], tmp_path, cwd=tmp_path, timeout=600)
    assert trained.returncode == 0 and (tmp_path / "lenet5.pt").exists(), trained.stderr[-2000:]
    config = {
        "name": "lenet5",
        "model": {"file": "lenet5.pt", "module": "train.py:LeNet5"},  # the pickle names __main__.LeNet5
        "data": {"dataset": "digits"},  # one channel, NCHW
        "pruning": {"structure": "kernel", "targets": {"conv2": 0.5}, "selections": ["conv2[3, 1, :, :]"]},
        "finetune": {"epochs": 1},
        "quantization": {"qat_epochs": 1, "layers": {"fc1_relu": {"activation": "quantized_relu(8,3)"}}},
        "outputs": {"dir": "runs", "tb_samples": 20, "csim_samples": 200},
    }
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(config))
    refused, _ = run_watched(["-m", "fpgaprune.cli", "run", "run.yaml"], tmp_path, cwd=tmp_path, timeout=600)
    assert refused.returncode == 2 and "--trust-model-code" in refused.stderr, refused.stderr[-2000:]
    done, imported = run_watched(
        ["-m", "fpgaprune.cli", "run", "run.yaml", "--trust-model-code"], tmp_path, cwd=tmp_path, timeout=1200
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert imported & set(KERAS) == set() and "torch" in imported, imported
    assert "C-sim:     bit-exact against Brevitas at the logits" in done.stdout
    run = tmp_path / "runs"
    train = json.loads((run / "train" / "stage.json").read_text())["metrics"]
    assert train["task"].startswith("classification (logits, integer class labels)") and train["accuracy"] > 0.5
    record = torch.load(run / "quantize" / "model.pt", weights_only=True)["fpgaprune"]
    assert "__main__.LeNet5" in record["classes"] and record["architecture"] == "train.py:LeNet5"
    pruned = torch.load(run / "finetune" / "pruned.pt", weights_only=True)["state_dict"]
    assert torch.count_nonzero(pruned["conv2.weight"][3, 1]) == 0
