"""An HGQ2 CNN end to end through the CLI (the HGQ2 environment): `fpgaprune validate`, then `fpgaprune run` from
YAML with `quantization.library: hgq2`: the built-in CNN in Keras 3, a chosen kernel and 60% of conv2's pruned,
HGQ2 QAT with β moving up, `trace_minmax`, the kernel-sparse export, C-sim bit-exact at the logits against HGQ2,
one product per live weight, the yosys measurement and the report with HGQ2's EBOPs beside the estimates."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import yaml

pytest.importorskip("hgq", reason="HGQ2 lives in its own environment (requirements/hgq2.txt, docs/hgq2.md)")

import fpgaprune as fp  # noqa: E402
from fpgaprune.hls import count_products  # noqa: E402

CONFIG = {
    "name": "hgq2_cli",
    "model": {"architecture": "small_cnn", "filters": [4, 8]},
    "training": {"epochs": 6},
    "pruning": {"structure": "kernel", "targets": {"conv2": 0.6}, "selections": ["conv2[:, :, 3, 5]"]},
    "finetune": {"epochs": 1},
    "quantization": {
        "library": "hgq2",
        "hgq2": {"beta0": 1e-5, "beta_final": 1e-4},
        "qat_epochs": 2,
        "learning_rate": 0.005,
    },
    "outputs": {"tb_samples": 20, "csim_samples": 200},
}
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}


def _cli(*arguments, timeout=1500):
    command = [sys.executable, "-m", "fpgaprune.cli", *map(str, arguments)]
    return subprocess.run(command, capture_output=True, text=True, env=ENV, timeout=timeout)


@pytest.mark.parametrize(
    "change, key, says",
    [
        (
            {"quantization": {"library": "hgq2", "default": {"kernel": "quantized_bits(6,0,alpha=1)"}}},
            "quantization.default",
            "set quantization.hgq2 instead",
        ),
        ({"quantization": {"library": "qkeras"}}, "quantization.library", "which this environment does not hold"),
    ],
)
def test_what_hgq2_does_not_take_is_one_line(tmp_path, change, key, says):
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump({**CONFIG, **change}))
    done = _cli("validate", tmp_path / "bad.yaml", timeout=300)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    assert key in lines[0] and says in lines[0], lines[0]


def test_an_hgq2_cnn_runs_from_yaml_through_every_stage(tmp_path):
    config = {**CONFIG, "outputs": {**CONFIG["outputs"], "dir": str(tmp_path / "run")}}
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(config))
    validated = _cli("validate", tmp_path / "run.yaml", timeout=300)
    assert validated.returncode == 0 and validated.stdout.strip().endswith("ok"), validated.stderr[-2000:]
    result = _cli("run", tmp_path / "run.yaml")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "C-sim:     bit-exact against HGQ2 at the logits" in result.stdout
    run = tmp_path / "run"
    csim = json.loads((run / "csim" / "stage.json").read_text())["metrics"]
    assert csim["bit_exact"] and csim["reference"] == "HGQ2"
    quantize = json.loads((run / "quantize" / "stage.json").read_text())["metrics"]
    assert set(quantize["ebops"]) == {"conv1", "conv2", "fc"} and all(v > 0 for v in quantize["ebops"].values())

    quantized = fp.load_model(run / "quantize" / "model.keras")
    conv2 = quantized.get_layer("conv2")
    kernel = np.asarray(conv2.kq(conv2.kernel, training=False))
    assert not kernel[:, :, 3, 5].any() and not np.asarray(conv2.kq.quantizer._b)[:, :, 3, 5].any()
    manifest = json.loads((run / "hls" / "project" / "fpgaprune_manifest.json").read_text())
    assert manifest["layers"]["conv2"]["kernels_pruned"].count([3, 5]) == 1
    assert manifest["hls_nodes"]["conv2"]["live_weights"] == np.count_nonzero(kernel)
    x = np.load(run / "hls" / "project" / "tb_data" / "tb_input.npy")[:3].reshape(3, 8, 8, 1)
    exported = fp.export(quantized, "latency_parallel", "pynq-z2", tmp_path / "again", x=x)
    counted = count_products(exported.hls_model, x)
    assert counted["conv2"] == np.count_nonzero(kernel) * 16  # one product per live weight, 4x4 positions

    report = (run / "report" / "report.md").read_text()
    assert "C-sim against HGQ2" in report and "EBOPs (effective bit operations" in report
    assert "Measured against HGQ2 alone (benchmarks/results/hgq2_front" in report  # the advice, as measured
    assert "measured:  removing conv2[" in result.stdout


def test_the_run_configs_hgq2_defaults_are_the_front_ends():
    """`quantization.hgq2` (the schema) and `Hgq2Settings` (what `fp.quantized_twin` reads) start HGQ2 alike."""
    import dataclasses

    from fpgaprune.frontends.hgq2.settings import Hgq2Settings
    from fpgaprune.pipeline.schema import Hgq2Section

    assert Hgq2Section().model_dump() == dataclasses.asdict(Hgq2Settings())
