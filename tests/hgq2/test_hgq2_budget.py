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
    """The run's repair (`pruning_policy.repaired`): prune to fit, one epoch of QAT, the ranges traced again, a
    last repair; the repaired kernels' bit widths are held at 0 through that epoch."""
    from fpgaprune.framework import front_end_of
    from fpgaprune.pipeline.pruning_policy import hardware_costs, repaired
    from fpgaprune.pipeline.training import dataset_of
    from fpgaprune.record import Bound

    config, out, _ = budget_run
    dataset = dataset_of(config)
    quantized = fp.load_model(out / "quantize" / "model.keras")
    front = front_end_of(quantized)
    costs = hardware_costs(config, dataset)
    limit = round(costs(quantized).total()["LUT"] / PYNQ_LUT * 0.8, 4)
    ebops = sum(front.ebops(quantized).values())
    kept = {name: np.asarray(quantized.get_layer(name).kernel).any(axis=(0, 1)) for name in ("conv1", "conv2")}
    lower = config.model_copy(update={"pruning": config.pruning.model_copy(update={"budget": {"LUT": limit}})})
    done = repaired(lower, Bound(quantized, front), dataset)
    assert done["repaired"] and done["repaired_groups"] > 0 and done["final"]["LUT"] <= limit
    newly = 0
    for name in ("conv1", "conv2"):
        layer = quantized.get_layer(name)
        pruned = ~np.asarray(layer.kernel).any(axis=(0, 1))
        newly += int((pruned & kept[name]).sum())
        assert not np.asarray(layer.kq(layer.kernel, training=False))[:, :, pruned].any()
        assert not np.asarray(layer.kq.quantizer._b)[:, :, pruned].any(), name  # EBOPs count none of them
    assert newly > 0
    traced = costs(quantized).total()
    front.calibrate(quantized, dataset.x_train)  # the ranges were traced after the repair's epoch already
    assert costs(quantized).total() == traced and traced["LUT"] / PYNQ_LUT == pytest.approx(done["final"]["LUT"])
    assert sum(front.ebops(quantized).values()) < ebops
    assert json.loads((out / "quantize" / "stage.json").read_text())["metrics"]["budget"]["final"]["LUT"] <= 0.3


def test_narrow_datalanes_lower_the_price_the_budget_sees(budget_run):
    """The budget prices each product with its layer's input type, from the twin's datalane quantizers: starting
    the datalanes at fewer fraction bits (`quantization.hgq2.activation_bits`) narrows every layer's input (the
    first layer's too: HGQ2 quantizes the model's input with a datalane), moves products out of DSPs into LUTs,
    and lowers the board fraction the same kernels cost."""
    from fpgaprune.budget import HardwareCosts
    from fpgaprune.hls import load_board
    from fpgaprune.pipeline.settings import hls_preset, quantization_spec
    from fpgaprune.pipeline.training import dataset_of
    from fpgaprune.quantize import input_type

    config, out, _ = budget_run
    dataset, board = dataset_of(config), load_board(config.board)
    model = fp.load_model(out / "finetune" / "model.keras")
    priced = {}
    for bits in (8, 4):
        spec = quantization_spec(config)
        spec["hgq2"] = {**spec["hgq2"], "activation_bits": bits}
        costs = HardwareCosts(
            spec, hls_preset(config)["HLSConfig"], input_type(dataset.x_test), board, calibration=dataset.x_train[:512]
        )
        total = costs(model).total()
        fraction = sum(total[r] / board.resources[r] for r in ("LUT", "DSP"))
        priced[bits] = (total, fraction, {name: t.input_bits for name, t in costs.types.items()})
    (narrow, narrow_fraction, narrow_bits), (wide, wide_fraction, wide_bits) = priced[4], priced[8]
    assert all(narrow_bits[name] < wide_bits[name] for name in wide_bits), (narrow_bits, wide_bits)
    assert narrow["DSP"] < wide["DSP"] and narrow_fraction < wide_fraction, (narrow, wide)
