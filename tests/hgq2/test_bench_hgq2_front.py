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


@pytest.mark.csim
def test_the_quick_mode_runs_every_method_and_prints_the_verdicts(tmp_path):
    out, models = tmp_path / "out", tmp_path / "models"
    argv = ["--quick", "--workers", "1", "--out", str(out), "--models", str(models)]
    code = (
        f"import sys; sys.path.insert(0, {str(BENCHMARKS)!r}); import bench_hgq2_front; bench_hgq2_front.main({argv!r})"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
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
