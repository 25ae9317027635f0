"""A smoke test of `benchmarks/bench_hgq2_front.py --quick` (the HGQ2 environment with its peers,
requirements/hgq2-peers.txt): every method's point runs end to end on a small CNN and is priced, PQuantML's copy
into hls4ml (with its fixed-point quantizers and with its HGQ ones) equals its own forward on the test set and
keeps its sparsity (the HGQ copy C-simulates bit-exactly), and the report prints the verdicts.
The benchmark's own figures are not asserted: they are recorded in benchmarks/results/."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("hgq", reason="HGQ2 lives in its own environment (requirements/hgq2.txt, docs/hgq2.md)")
pytest.importorskip("pquant", reason="PQuantML is the benchmark's peer: pip install -r requirements/hgq2-peers.txt")

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _bench(name: str, argv: list):
    code = f"import sys; sys.path.insert(0, {str(BENCHMARKS)!r}); import {name}; {name}.main({argv!r})"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=1800)


@pytest.fixture(scope="module")
def quick_front(tmp_path_factory):
    """`bench_hgq2_front.py --quick`'s record and saved models, and what it printed (run once, read twice)."""
    tmp_path = tmp_path_factory.mktemp("quick_front")
    out, models = tmp_path / "out", tmp_path / "models"
    done = _bench("bench_hgq2_front", ["--quick", "--workers", "1", "--out", str(out), "--models", str(models)])
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return out, models, done


@pytest.mark.csim
def test_the_quick_mode_runs_every_method_and_prints_the_verdicts(quick_front, tmp_path):
    out, models, done = quick_front
    records = [json.loads(line) for line in (out / "points.jsonl").read_text().splitlines()]
    assert not [r for r in records if "failed" in r or "infeasible" in r], done.stdout[-2000:]
    methods = {r["method"] for r in records}
    assert {"HGQ2 alone, beta", "HGQ2 alone, long QAT, beta", "PQuantML PDP + fixed point, sparsity"} <= methods
    assert {"fpgaprune kernels + HGQ2, sparsity@beta", "fpgaprune kernels by budget + HGQ2, LUT@beta"} <= methods
    assert "fpgaprune kernels + HGQ2, every layer, sparsity@beta" in methods
    # the cheap end's route: narrow datalanes, no DSP by a budget of 0 DSP or by fabric products, twice the epochs
    by_method = {(r["method"], r["level"]): r for r in records}
    assert ("fpgaprune kernels + HGQ2, every layer, sparsity@beta", "0.5@1e-06@4") in by_method
    no_dsp = [
        by_method[("fpgaprune by budget + HGQ2, every layer, LUT/DSP@beta", "30000/0@1e-06")],
        by_method[("fpgaprune kernels + HGQ2, every layer, no DSP, sparsity@beta", "0.5@1e-06")],
    ]
    assert all(r["DSP"] == 0 for r in no_dsp) and no_dsp[0]["LUT"] <= 30000
    twice = by_method[("fpgaprune kernels + HGQ2, every layer, 2x epochs, sparsity@beta", "0.5@1e-06@4")]
    assert twice["epochs"] == 2 * no_dsp[1]["epochs"]
    assert "at or under each PQuantML point's LUT and DSP, at equal epochs" in done.stdout
    assert all(r["LUT"] > 0 and 0 <= r["accuracy"] <= 1 for r in records)
    pquant = {r["method"]: r for r in records if r["method"].startswith("PQuantML")}
    assert set(pquant) == {"PQuantML PDP + fixed point, sparsity", "PQuantML PDP + HGQ, sparsity"}
    for record in pquant.values():
        assert record["copy_exact_on_test_set"] and record["phases"] == [0, 1, 0]
        assert all(abs(share - 0.5) < 0.02 for share in record["kernel_zeros"].values()), record["kernel_zeros"]
    assert pquant["PQuantML PDP + HGQ, sparsity"]["hgq_granularity"] == "per_weight"
    assert "at or under the cost of each peer point" in done.stdout and "PQuantML PDP + HGQ 0.5" in done.stdout
    assert (out / "front.png").stat().st_size > 0
    (hgq_copy,) = models.glob("*pquant-pdp-hgq-0.5.keras")
    _assert_exported_bit_exactly(hgq_copy, tmp_path / "prj")


def _assert_exported_bit_exactly(path, project):
    """The saved HGQ2 copy of PQuantML's HGQ model (a width per weight and per activation element) C-simulates
    bit-exactly at the logits, as every point's price assumes."""
    import fpgaprune as fp
    from fpgaprune import data

    x = data.fashion_mnist().x_test[:300]
    model = fp.load_model(path, compile=False)
    check = fp.csim(fp.export(model, "latency_parallel", "pynq-z2", project, x=x[:50]), model, x)
    assert check.bit_exact, check.first_difference


@pytest.mark.csim
def test_the_quick_cheap_end_is_widened_streamed_bit_exactly_and_synthesized(quick_front, tmp_path):
    """`bench_front_place_route.py --quick` on the quick front's record: the cheapest point of each family trained
    again, widened per channel, streamed by the RTL backend bit-exactly against the widened copy, synthesized for
    the ZCU102 (placed and routed only where asked: the quick CNN's streams take nextpnr minutes); the verdict table
    prints."""
    done = _bench("bench_front_place_route", ["--quick", "--front", str(quick_front[0]), "--out", str(tmp_path)])
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    records = [json.loads(line) for line in (tmp_path / "points.jsonl").read_text().splitlines()]
    assert sorted(r["family"] for r in records) == ["PQuantML", "fpgaprune"], records
    for record in records:
        assert record["bit_exact"] and record["csim_samples"] == 50, record
        assert 0 < record["accuracy_widened"] <= 1 and record["LUT6"] > 0, record
        assert record["synthesis"].startswith("measured by synthesis only") and "xczu9eg" in record["synthesis"]
        assert record["placed"] == "not placed: da4ml cost above 0", record
    assert "Verdict per PQuantML point and measure" in done.stdout and "synthesis LUT6" in done.stdout


def test_the_cheap_ends_points_are_each_familys_non_dominated_ones():
    """On the front's record: every chosen point has no DSP, 3 seeds and at most the LUT asked; no chosen point is
    beaten by another of its family; every eligible point left out is beaten by a chosen one of its family."""
    sys.path.insert(0, str(BENCHMARKS))
    from bench_front_place_route import FRONT, family, low_cost_front
    from bench_hgq2_front import summary

    records = [json.loads(line) for line in (FRONT / "points.jsonl").read_text().splitlines()]
    chosen = low_cost_front(records, 6, 60000)
    assert {r["family"] for r in chosen} == {"fpgaprune", "PQuantML"}
    assert all(r["DSP"] == 0 and r["LUT"] <= 60000 and len(r["seeds"]) >= 3 for r in chosen)

    def beats(a, b):
        return a["LUT"] <= b["LUT"] and a["accuracy"] >= b["accuracy"] and a is not b

    assert not [(a, b) for a in chosen for b in chosen if a["family"] == b["family"] and beats(a, b)]
    epochs = {(r["method"], r["level"]): r.get("epochs") for r in records}
    names = {(r["method"], r["level"]) for r in chosen}
    for row in summary([r for r in records if "accuracy" in r]):
        eligible = family(row["method"]) and epochs[(row["method"], row["level"])] == 6 and len(row["seeds"]) >= 3
        if eligible and row["DSP"] == 0 and row["LUT"] <= 60000 and (row["method"], row["level"]) not in names:
            assert any(c["family"] == family(row["method"]) and beats(c, row) for c in chosen), row
