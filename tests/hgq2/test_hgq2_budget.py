"""Kernel removal by budget with HGQ2 (the HGQ2 environment): the kernels are priced before QAT on the HGQ2 twin,
its activation ranges traced from the training data, with the types hls4ml's BitExact pass will give them
(`frontends/hgq2/types.py`); after QAT the learned bits are priced again and, where they no longer fit, kernels are
pruned (their bit widths held at 0 with them); the exported project's estimate is what was priced."""

import json

import numpy as np
import pytest
import yaml

pytest.importorskip("hgq", reason="HGQ2 lives in its own environment (requirements/hgq2.txt, docs/hgq2.md)")

import fpgaprune as fp  # noqa: E402
from fpgaprune.pipeline.runner import run  # noqa: E402
from fpgaprune.pipeline.schema import parse_config  # noqa: E402

PYNQ_LUT = 53200
CONFIG = {
    "name": "hgq2_budget",
    "model": {"architecture": "small_cnn", "filters": [4, 8]},
    "training": {"epochs": 4},
    "pruning": {
        "structure": "kernel",
        "budget": {"LUT": 0.3},
        "schedule": "one_shot",
        "selections": ["conv2[:, :, 3, 5]"],
    },
    "finetune": {"epochs": 1},
    "quantization": {"library": "hgq2", "qat_epochs": 2, "learning_rate": 0.005},
    "outputs": {"tb_samples": 20, "csim_samples": 200, "synthesize_layers": False},
}


@pytest.fixture(scope="module")
def budget_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("budget") / "run"
    config = parse_config(yaml.safe_dump({**CONFIG, "outputs": {**CONFIG["outputs"], "dir": str(out)}}))[0]
    return config, out, run(config, out, echo=lambda line: None)


@pytest.mark.csim
def test_an_hgq2_budget_run_fits_and_the_export_costs_what_was_priced(budget_run):
    config, out, records = budget_run
    (row,) = records["report"]["metrics"]["budget"]
    assert row["constraint"] == "LUT" and row["fits"] and row["achieved"] <= row["budget"] == 0.3
    assert row["pruning"] <= 0.3 * 0.95 + 1e-9  # aimed at the limit less the margin, before QAT
    # priced after QAT (and any repair) with BitExact's types; the export's estimate rounds each layer's total up
    assert abs(row["achieved"] - row["final"]) * PYNQ_LUT <= 3 + 1e-6
    assert records["csim"]["metrics"]["bit_exact"]
    assert records["prune"]["metrics"]["budget"]["aimed"]["LUT"] == pytest.approx(0.3 * 0.95 - 3 / PYNQ_LUT)
    quantized = fp.load_model(out / "quantize" / "model.keras")
    conv2 = quantized.get_layer("conv2")
    kernel = np.asarray(conv2.kq(conv2.kernel, training=False))
    bits = np.asarray(conv2.kq.quantizer._b)
    assert not kernel[:, :, 3, 5].any() and not bits[:, :, 3, 5].any()
    pruned = ~np.asarray(conv2.kernel).any(axis=(0, 1))
    assert pruned.sum() > 1 and not bits[:, :, pruned].any()  # the budget's kernels hold no bits either
    report = (out / "report" / "report.md").read_text()
    assert "## Budget" in report and f"{100 * row['achieved']:.1f}%" in report


def test_repair_after_hgq2_qat_prunes_until_the_learned_bits_fit_and_holds_their_widths(budget_run):
    from fpgaprune.budget import parse_budget, repair
    from fpgaprune.framework import front_end_of
    from fpgaprune.hls import load_board
    from fpgaprune.pipeline.pruning_policy import hardware_costs, pruner_of
    from fpgaprune.pipeline.training import dataset_of

    config, out, _ = budget_run
    dataset = dataset_of(config)
    quantized = fp.load_model(out / "quantize" / "model.keras")
    costs, pruner = hardware_costs(config, dataset), pruner_of(config)
    before = costs(quantized).total()["LUT"] / PYNQ_LUT
    limit = round(before * 0.8, 4)
    ebops = sum(front_end_of(quantized).ebops(quantized).values())
    fixed = repair(pruner, quantized, costs, parse_budget({"LUT": limit}, load_board(config.board)))
    assert fixed.repaired and fixed.groups > 0 and fixed.after["LUT"] <= limit
    front = front_end_of(quantized)
    front.fit(quantized, dataset.x_train[:512], dataset.y_train[:512], **_one_epoch(config, dataset, quantized))
    for name in ("conv1", "conv2"):
        layer = quantized.get_layer(name)
        pruned = ~np.asarray(layer.kernel).any(axis=(0, 1))
        assert not np.asarray(layer.kq(layer.kernel, training=False))[:, :, pruned].any()
        assert not np.asarray(layer.kq.quantizer._b)[:, :, pruned].any(), name  # EBOPs count none of them
    front.calibrate(quantized, dataset.x_train[:512])
    assert sum(front.ebops(quantized).values()) < ebops
    assert json.loads((out / "quantize" / "stage.json").read_text())["metrics"]["budget"]["final"]["LUT"] <= 0.3


def _one_epoch(config, dataset, model) -> dict:
    from fpgaprune.task import infer_task

    task = infer_task(model, dataset.y_train, dataset.y_test, config.data.dataset)
    return dict(task=task, optimizer="adamw", learning_rate=5e-3, epochs=1, batch_size=64)
