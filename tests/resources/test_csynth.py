"""The per-tool C-synthesis model of stock hls4ml layers, against the hls4ml tutorial's published reports."""

import importlib.util
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml

from fpgaprune.resources import csynth

ROOT = Path(__file__).parents[2]
VIVADO, VITIS = csynth.MODELS["vivado_hls 2019.2"], csynth.MODELS["vitis 2024.1"]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_published", ROOT / "benchmarks" / "bench_published.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_vivado_hls_charges_a_zero_weight_and_vitis_hardly_does():
    """A pruned weight left to the HLS compiler: Vivado HLS 2019.2 keeps its adder, Vitis HLS 2024.1 drops it."""
    codes = np.array([[300, 0], [0, -200]])  # two live 16-bit products, two zeros
    dense, pruned = (csynth.layer_features(c, 16, 16, 1) for c in (np.array([[300, 5], [7, -200]]), codes))
    for model in (VIVADO, VITIS):
        saved = csynth.csynth_estimate(dense, model)["LUT"] - csynth.csynth_estimate(pruned, model)["LUT"]
        assert saved == pytest.approx(2 * model.lut_per_product + rule_luts_of(dense, pruned, model))
    zero_cost = {
        m.tool: csynth.csynth_estimate(csynth.layer_features(np.zeros(100), 16, 16, 1), m)["LUT"]
        for m in (VIVADO, VITIS)
    }
    assert zero_cost[VIVADO.tool] > 5 * zero_cost[VITIS.tool] > 0


def rule_luts_of(dense, pruned, model):
    return csynth.rule_luts(dense, model) - csynth.rule_luts(pruned, model)


@pytest.mark.parametrize("model", [VIVADO, VITIS], ids=lambda m: m.tool)
def test_reuse_shares_multipliers_only_where_the_tool_does(model):
    codes = np.random.default_rng(0).integers(100, 900, (32, 16)) * np.random.default_rng(1).choice([-1, 1], (32, 16))
    one, two = (csynth.csynth_estimate(csynth.layer_features(codes, 16, 16, r), model) for r in (1, 2))
    if model.shares_under_reuse:
        assert two["DSP"] == -(-one["DSP"] // 2) and two["LUT"] > one["LUT"]  # multiplexers in front of shared DSPs
    else:
        assert two == one


def test_the_fit_recovers_known_coefficients():
    rng = np.random.default_rng(3)
    truth = replace(VIVADO, lut_per_site=7.5, lut_per_product=12.25)
    rows = []
    for _ in range(6):
        codes = rng.integers(-600, 600, (int(rng.integers(8, 40)), int(rng.integers(4, 20)))) * (rng.random() > 0.3)
        codes = codes * (rng.random(codes.shape) > rng.uniform(0.1, 0.9))
        features = csynth.layer_features(codes, 16, int(rng.choice([6, 16])), int(rng.integers(1, 4)))
        rows.append((features, csynth.csynth_estimate(features, truth)["LUT"], truth))
    assert csynth.fit_lut_coefficients(rows) == pytest.approx((7.5, 12.25))


def test_the_stored_models_are_the_fit_of_the_published_designs_and_hold_out(bench):
    """Networks of the published shape, trained here (one seed): the coefficients fitted on the two FIT designs
    match `csynth.MODELS`, and the designs held out stay within the issue's targets (LUT 25%, DSP 15%)."""
    data = yaml.safe_load(bench.DESIGNS.read_text())
    sparsities = {d["sparsity"] for d in data["designs"]}
    networks = {s: [bench.trained_network(data["network"], s, seed=0)] for s in sparsities}
    features = {
        d["name"]: [bench.layer_features(k, d["precision"], d["reuse_factor"]) for k in networks[d["sparsity"]]]
        for d in data["designs"]
    }
    results = bench.held_out(data["designs"], features)
    assert {model.tool for model, _, _ in results} == {VIVADO.tool, VITIS.tool}
    for model, refit, errors in results:
        assert refit.lut_per_site == pytest.approx(model.lut_per_site, rel=0.05, abs=0.2)
        assert refit.lut_per_product == pytest.approx(model.lut_per_product, rel=0.05)
        assert len(errors) == (4 if model.dsp_modelled else 2)
        for (name, resource), error in errors.items():
            assert abs(error) <= bench.TARGETS[resource], (name, resource, error)


def test_vivado_2020_stream_keeps_narrow_constants_out_of_dsps():
    """Vivado HLS 2020.1 (io_stream) builds a 16-bit constant product from LUTs when the constant's odd part is
    narrower than `dsp_min_width` (its trailing zeros are a shift), and in a DSP otherwise."""
    stream = csynth.MODELS["vivado_hls 2020.1 io_stream"]
    assert [csynth.odd_width(c) for c in (0, 1, 96, -96, 255, 256, 127 << 4)] == [0, 1, 2, 2, 8, 1, 7]
    narrow, wide = np.array([3, 96, -5 << 6, 0]), np.array([127, 127 << 4, -255, 0])
    for codes, dsps in ((narrow, 0), (wide, 3)):
        features = csynth.layer_features(codes, 16, 16, 1, dsp_min_width=stream.dsp_min_width)
        assert features.products == 3 and csynth.csynth_estimate(features, stream)["DSP"] == dsps
        rules_only = csynth.layer_features(codes, 16, 16, 1)  # without the threshold: the rules' DSPs
        assert rules_only.dsp_slices == 3 - sum(csynth.rules.is_power_of_two(c) for c in codes if c)
    assert csynth.layer_features(narrow, 16, 16, 1, dsp_min_width=7).csd_multiplier_luts > 0


def test_each_model_prices_only_the_layers_it_was_checked_on():
    """The jet tagger's models: Dense in io_parallel; the part-6 CNN's: convolutions and Dense in io_stream. No
    model for the Resource strategy or io_parallel convolutions (no published design of those here)."""
    tools = lambda *args: [m.tool for m in csynth.models_for(*args)]  # noqa: E731
    assert tools("dense", "io_parallel", "latency") == [VIVADO.tool, VITIS.tool]
    assert (
        tools("conv2d", "io_stream", "latency")
        == tools("dense", "io_stream", "latency")
        == ["Vivado HLS 2020.1 (io_stream)"]
    )
    assert tools("conv2d", "io_parallel", "latency") == tools("dense", "io_parallel", "resource") == []


@pytest.mark.parametrize(
    "fraction, error, verdict",
    [
        (0.50, (-0.10, 0.20), "fits"),  # even at the model's lowest ratio it stays under the board
        (0.95, (-0.10, 0.20), "within the model's held-out error of the limit"),  # 0.79 .. 1.06
        (1.30, (-0.10, 0.20), "does NOT fit"),  # over the board even at its highest ratio
        (0.30, (-1.00, 3.60), "within the model's held-out error of the limit"),  # a model that once gave 0: no bound
        (0.95, None, "fits"),
        (1.01, None, "does NOT fit"),
    ],
)  # the rules: no band
def test_the_fit_verdict_carries_the_models_held_out_error(fraction, error, verdict):
    from fpgaprune.resources.fit_verdict import verdict_of

    assert verdict_of(fraction, error) == verdict


def test_the_io_stream_model_is_the_fit_its_newest_bench_record_printed():
    """The part-6 CNN's model is fitted by benchmarks/bench_published_cnn.py (a trained CNN, too slow for the
    suite): its coefficients and held-out error bands are those the newest record printed, so the code cannot
    drift from the fit it cites. The record is the benchmark's own output, not written by hand."""
    import re

    model = csynth.MODELS["vivado_hls 2020.1 io_stream"]
    record = sorted((ROOT / "benchmarks" / "results" / "bench_published_cnn").glob("*.txt"))[-1].read_text()
    fitted = re.search(
        r"fitted on \S+: ([\d.]+) LUT per weight site, ([\d.]+) per live product, DSP for "
        r"constants of odd part >= (\d+) bits",
        record,
    )
    assert fitted, "the record does not print the fit"
    assert (model.lut_per_site, model.lut_per_product, model.dsp_min_width) == (
        float(fitted[1]),
        float(fitted[2]),
        int(fitted[3]),
    )
    held_out = record.split("error per layer kind on the designs held out")[1].split("on the design it was fitted")[0]
    for resource in ("DSP", "LUT"):
        ranges = [
            (float(low), float(high))
            for low, high in re.findall(rf"{resource}: [\d.]+% \(([-+\d.]+)% \.\. ([-+\d.]+)%\)", held_out)
        ]
        low, high = model.errors[resource]
        assert (round(100 * low, 1), round(100 * high, 1)) == (min(r[0] for r in ranges), max(r[1] for r in ranges))
