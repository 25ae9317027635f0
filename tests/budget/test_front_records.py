"""The accuracy-at-equal-hardware benchmark's records in git (`benchmarks/results/budget_front/`): every record is
complete and has the pretrained model it started from, so a fresh clone resumes the run; and its verdicts compare
points over the same seeds."""

import json
from pathlib import Path

import pytest

import fpgaprune as fp

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"
RECORDS = BENCHMARKS / "results" / "budget_front"
KEYS = {"cnn", "seed", "method", "level", "pricing", "accuracy", "cost"}


def _records() -> list:
    log = RECORDS / "points.jsonl"
    if not log.exists():
        pytest.skip(f"{log} is not in this checkout: no records to check")
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_every_record_is_complete_and_sensible():
    for record in _records():
        assert KEYS <= record.keys(), record
        if record["accuracy"] is None:
            assert record["cost"] is None and record["infeasible"], record
        else:
            assert 0.1 <= record["accuracy"] <= 1 and 0 < record["cost"] < 2, record


def test_every_cnn_and_seed_has_its_pretrained_model_uncompiled_and_of_its_widths(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import bench_budget_front as front

    starts = {(record["cnn"], record["seed"]) for record in _records()}
    for cnn, seed in sorted(starts):
        path = front.pretrained_path(RECORDS, cnn, seed)
        assert path.exists(), f"{path} is missing: a fresh clone could not resume {cnn} seed {seed}"
        model = fp.load_model(path)
        assert model.optimizer is None, f"{path} carries optimizer state (three times the size in git)"
        convs = [layer.filters for layer in model.layers if type(layer).__name__ == "Conv2D"]
        assert ",".join(map(str, convs)) == cnn


def test_verdicts_compare_fpgaprune_and_a_peer_over_the_same_seeds_only(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import bench_budget_front as front

    def record(method, seed, accuracy, cost):
        return {"cnn": "4,8", "seed": seed, "method": method, "level": 0.5, "accuracy": accuracy, "cost": cost}

    peer = "tfmot unstructured, sparsity"
    records = [
        record(peer, 0, 0.90, 0.5),
        record(peer, 1, 0.80, 0.5),
        record("fpgaprune element, sparsity", 0, 0.88, 0.4),
        record("fpgaprune element, sparsity", 1, 0.86, 0.4),
        record("fpgaprune kernel, budget", 0, 0.95, 0.3),
    ]  # seed 1 not run yet: better, but not comparable
    (verdict,) = front.verdicts(front.summary(records))
    assert verdict[1] == "0,1" and verdict[5:8] == ("fpgaprune element, sparsity 0.5", "0.400", "0.8700")
    assert verdict[-1] == "yes"  # 0.87 against the peer's 0.85
