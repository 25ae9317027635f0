"""PyTorch model files run no code when read: a state dict read with `torch.load(weights_only=True)`, and an
architecture imported only with the trust flag; fpgaprune's own file keeps holds and the quantized twin; a bad
file is one line; the CLI runs a PyTorch model file from YAML end to end, in PyTorch's names and layout."""

import hashlib
import json
import os
import pathlib
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest
import yaml

torch = pytest.importorskip("torch", reason="the PyTorch front end needs the torch extra (pip install -e '.[torch]')")
pytest.importorskip("brevitas.nn", reason="PyTorch quantization needs the torch extra (Brevitas)")
from sklearn.datasets import load_digits  # noqa: E402

import fpgaprune as fp  # noqa: E402
from fpgaprune.errors import ModelFileError  # noqa: E402

MODELS = textwrap.dedent(
    """
    import torch
    from torch import nn


    class DigitsCNN(nn.Module):
        def __init__(self, filters=4):
            super().__init__()
            self.features = nn.Sequential(nn.Conv2d(1, filters, 3), nn.BatchNorm2d(filters), nn.ReLU(), nn.MaxPool2d(2))
            self.head = nn.Linear(filters * 9, 10)

        def forward(self, x):
            return self.head(torch.flatten(self.features(x), 1))
    """
)
SPEC = {"default": {"kernel": "quantized_bits(6,0,alpha=1)", "bias": "quantized_bits(8,3,alpha=1)"}}
SPEC["default"]["activation"] = "quantized_relu(6,2)"


def _digits():
    data = load_digits()
    return (np.minimum(data.images, 15) / 16).astype(np.float32)[:, None], data.target.astype(np.int64)


def _sha(path) -> str:
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


@pytest.fixture
def state_dict_file(tmp_path):
    """models.py with DigitsCNN, and the state dict of one trained briefly in the user's own loop."""
    (tmp_path / "models.py").write_text(MODELS)
    model = fp.load_model(architecture=f"{tmp_path / 'models.py'}:DigitsCNN", arguments={"filters": 4}, trust_code=True)
    x, y = _digits()
    torch.manual_seed(0)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(3):
        for start in range(0, 1400, 64):
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(
                model(torch.from_numpy(x[start : start + 64])), torch.from_numpy(y[start : start + 64])
            )
            loss.backward()
            optimizer.step()
    torch.save(model.state_dict(), tmp_path / "model.pt")
    return tmp_path / "model.pt", f"{tmp_path / 'models.py'}:DigitsCNN"


def test_a_state_dict_loads_only_with_trust_and_fits_its_architecture(state_dict_file, tmp_path):
    path, architecture = state_dict_file
    with pytest.raises(ModelFileError, match="--trust-model-code") as untrusted:
        fp.load_model(path, architecture=architecture)
    assert "\n" not in str(untrusted.value) and architecture in str(untrusted.value)
    with pytest.raises(ModelFileError, match=r"needs its architecture") as nameless:
        fp.load_model(path, trust_code=True)
    assert str(path) in str(nameless.value)
    with pytest.raises(ModelFileError, match=r"does not fit DigitsCNN .*model.arguments") as misfit:
        fp.load_model(path, architecture=architecture, arguments={"filters": 6}, trust_code=True)
    assert "\n" not in str(misfit.value) and str(path) in str(misfit.value)
    with pytest.raises(ModelFileError, match="'models.py:ClassName'"):
        fp.load_model(path, architecture="DigitsCNN", trust_code=True)
    model = fp.load_model(path, architecture=architecture, arguments={"filters": 4}, trust_code=True)
    state = torch.load(path, weights_only=True)
    assert all(torch.equal(model.state_dict()[key], value) for key, value in state.items())


class _RunsCode:
    """Unpickling this touches a marker file: what a pickled module could do when loaded."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (pathlib.Path.touch, (self.marker,))


def test_a_pickle_runs_no_code_without_the_trust_flag(state_dict_file, tmp_path):
    _, architecture = state_dict_file
    marker = tmp_path / "code_ran"
    torch.save({"weights": _RunsCode(marker)}, tmp_path / "pickled.pt")
    with pytest.raises(ModelFileError, match=r"weights_only=True.*save model.state_dict\(\).*--trust-model-code"):
        fp.load_model(tmp_path / "pickled.pt", architecture=architecture)
    with pytest.raises(ModelFileError, match=r"weights_only=True.*--trust-model-code") as refused:
        fp.load_model(tmp_path / "pickled.pt")
    assert not marker.exists() and "\n" not in str(refused.value)
    # trusted, the pickle runs (the user accepted that): it holds neither a state dict nor a module
    with pytest.raises(ModelFileError, match=r"pickled.pt: holds no state dict and no module \(a dict\)"):
        fp.load_model(tmp_path / "pickled.pt", trust_code=True)
    assert marker.exists()
    (tmp_path / "broken.pt").write_bytes(b"not a torch file")
    with pytest.raises(ModelFileError, match="broken.pt: not a state dict .*not an archive torch.save wrote"):
        fp.load_model(tmp_path / "broken.pt", architecture=architecture, trust_code=True)
    with zipfile.ZipFile(tmp_path / "keras.pt", "w") as archive:  # a .keras archive under a PyTorch name
        archive.writestr("metadata.json", "{}")
    with pytest.raises(ModelFileError, match="without torch.save's data.pkl"):
        fp.load_model(tmp_path / "keras.pt", architecture=architecture, trust_code=True)


def test_fpgaprunes_own_file_keeps_holds_and_the_quantized_twin(state_dict_file, tmp_path):
    path, architecture = state_dict_file
    model = fp.load_model(path, architecture=architecture, arguments={"filters": 4}, trust_code=True)
    held = fp.hold(model, fp.MaskManifest().prune("features.0[3, 0, :, :]").prune("head[2, 5]"))
    saved = fp.save_model(held, tmp_path / "held.pt")
    before = _sha(saved)
    again = fp.load_model(saved, trust_code=True)  # the file names its architecture and arguments
    assert _sha(saved) == before and set(fp.manifest_of(again).to_json()) == set(fp.manifest_of(held).to_json())
    assert torch.count_nonzero(again.features[0].weight[3, 0]) == 0 and again.head.weight[2, 5] == 0
    optimizer = torch.optim.SGD(again.parameters(), lr=0.5, momentum=0.9)
    x, y = _digits()
    for _ in range(3):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(again(torch.from_numpy(x[:64])), torch.from_numpy(y[:64])).backward()
        optimizer.step()
    assert torch.count_nonzero(again.features[0].weight[3, 0]) == 0 and again.head.weight[2, 5] == 0
    quantized = fp.quantized_twin(again, SPEC)
    fp.save_model(quantized, tmp_path / "quantized.pt")
    reread = fp.load_model(tmp_path / "quantized.pt", trust_code=True)
    with torch.no_grad():
        xt = torch.from_numpy(x[:200])
        assert torch.equal(quantized.eval()(xt), reread.eval()(xt))
    with pytest.raises(ModelFileError, match="names the architecture"):
        fp.save_model(torch.nn.Sequential(torch.nn.Linear(4, 2)), tmp_path / "plain.pt")
    assert not (tmp_path / "plain.pt").exists()


def test_the_cli_runs_a_pytorch_state_dict_from_yaml(state_dict_file, tmp_path):
    """`model: {file, module, arguments}`: prune a chosen kernel and 50% by L1, fine-tune, QAT, export, C-sim
    bit-exact against Brevitas, measure a removal; kernels are named in PyTorch's layout; the file is untouched."""
    path, architecture = state_dict_file
    config = {
        "name": "torch_cli",
        "model": {"file": str(path), "module": architecture, "arguments": {"filters": 4}},
        "data": {"dataset": "digits"},
        "pruning": {"structure": "kernel", "targets": {"features.0": 0.5}, "selections": ["features.0[3, 0, :, :]"]},
        "finetune": {"epochs": 1},
        "quantization": {"qat_epochs": 1},
        "outputs": {"dir": str(tmp_path / "runs"), "tb_samples": 20, "csim_samples": 300},
    }
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(config))
    before = _sha(path)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    command = [sys.executable, "-m", "fpgaprune.cli", "run", str(tmp_path / "run.yaml")]
    refused = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert refused.returncode == 2 and "--trust-model-code" in refused.stderr, refused.stderr[-2000:]
    assert len(refused.stderr.strip().splitlines()) == 1 and not (tmp_path / "runs").exists()
    result = subprocess.run([*command, "--trust-model-code"], capture_output=True, text=True, env=env, timeout=1500)
    assert result.returncode == 0, result.stderr[-3000:]
    run = tmp_path / "runs"
    assert _sha(path) == before
    assert "C-sim:     bit-exact against Brevitas at the logits" in result.stdout
    measured = next(line for line in result.stdout.splitlines() if line.startswith("measured:"))
    kernel = json.loads((run / "synth" / "synth.json").read_text())["removal"]["kernel"]
    assert measured.startswith(f"measured:  removing {kernel}: ") and kernel.endswith(", :, :]"), measured
    pruned = torch.load(run / "finetune" / "pruned.pt", weights_only=True)["state_dict"]
    assert torch.count_nonzero(pruned["features.0.weight"][3, 0]) == 0
    csim = json.loads((run / "csim" / "stage.json").read_text())["metrics"]
    assert csim["bit_exact"] and csim["reference"] == "Brevitas"
    sparsity = (run / "prune" / "sparsity.txt").read_text()
    assert "Conv2d" in sparsity and "4x1x3x3" in sparsity  # PyTorch's class and layout
    report = (run / "report" / "report.md").read_text()
    assert "C-sim against Brevitas" in report and "features.0[3, 0, :, :]" in report
