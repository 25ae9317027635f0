"""Sweeps: the grid, points as ordinary runs on a local Ray (2 CPUs), the table and plot, failures, resume."""

import csv
import json

import pytest
import yaml

from fpgaprune.cli import DEFAULT_CONFIG
from fpgaprune.pipeline.schema import parse_config
from fpgaprune.sweep import SweepError, parse_grid, point_config, points, run_sweep
from fpgaprune.sweep.trials import TRIAL_ENV
from fpgaprune.sweep.twins import run_key, split_twins


def _base() -> dict:
    return parse_config(DEFAULT_CONFIG.read_text())[0].model_dump(mode="json")


def test_grid_from_the_command_line_and_from_yaml_gives_the_same_points():
    cli = parse_grid(["sparsity=0.3,0.6", "bits=4,6", "structure=kernel"])
    assert cli == parse_grid({"sparsity": [0.3, 0.6], "bits": [4, 6], "structure": "kernel"})
    names = [point.name for point in points(cli)]
    assert names == [
        "bits=4,sparsity=0.3,structure=kernel",
        "bits=4,sparsity=0.6,structure=kernel",
        "bits=6,sparsity=0.3,structure=kernel",
        "bits=6,sparsity=0.6,structure=kernel",
    ]


def test_each_named_axis_sets_the_config_it_names():
    base = _base()
    point = points(parse_grid(["sparsity=0.7", "bits=4", "quantization.qat_epochs=2"]))[0]
    config = point_config(base, point)
    assert config["pruning"]["targets"] == {"conv2": 0.7} and config["pruning"]["budget"] == {}
    assert config["quantization"]["default"]["kernel"] == "quantized_bits(4,0,alpha=1)"
    assert config["quantization"]["default"]["activation"] == "quantized_relu(4,2)"
    assert config["quantization"]["default"]["bias"] == base["quantization"]["default"]["bias"]
    assert config["quantization"]["qat_epochs"] == 2
    budget = point_config(base, points(parse_grid(["budget_lut=0.3", "budget_dsp=0.5", "structure=hybrid"]))[0])
    assert budget["pruning"]["budget"] == {"LUT": 0.3, "DSP": 0.5} and budget["pruning"]["targets"] == {}
    assert budget["pruning"]["structure"] == "hybrid"
    assert base["pruning"]["targets"] == {"conv2": 0.6}  # the base is not modified


def test_the_bits_axis_sets_hgq2s_initial_widths_in_an_hgq2_run():
    base = parse_config("quantization: {library: hgq2, hgq2: {beta0: 1.0e-6}}")[0].model_dump(mode="json")
    config = point_config(base, points(parse_grid(["bits=4"]))[0])
    assert config["quantization"]["hgq2"] == {**base["quantization"]["hgq2"], "weight_bits": 4, "activation_bits": 4}
    assert config["quantization"]["default"] is None  # no QKeras texts written into an HGQ2 run
    assert parse_config(yaml.safe_dump(config))[0].quantization.hgq2.weight_bits == 4


@pytest.mark.parametrize(
    "grid,message",
    [
        ([], "the sweep has no axis"),
        (["sparsity"], "expected AXIS=V1,V2"),
        (["bits=4,4"], "expected distinct values"),
        (["sparsity=0.3", "budget_lut=0.5"], "exclude each other"),
    ],
)
def test_bad_grids_are_one_line(grid, message):
    with pytest.raises(SweepError, match=message):
        parse_grid(grid)


@pytest.mark.parametrize(
    "grid,message",
    [
        (["bits=1"], "expected a width of at least 2 bits"),
        (["training.epochs.deep=1"], "'epochs' is not a config section"),
    ],
)
def test_bad_points_are_one_line(grid, message):
    with pytest.raises(SweepError, match=message):
        point_config(_base(), points(parse_grid(grid))[0])


def test_a_point_that_does_not_validate_names_the_point(tmp_path):
    config = parse_config(DEFAULT_CONFIG.read_text())[0]
    with pytest.raises(SweepError, match=r"^sweep point sparsity=1.5: pruning.targets.conv2: found 1.5"):
        run_sweep(config, parse_grid(["sparsity=0.5,1.5"]), tmp_path / "sweep")
    assert not (tmp_path / "sweep" / "points").exists()  # nothing ran


def _quick(tmp_path, **pruning):
    config = yaml.safe_load(DEFAULT_CONFIG.read_text())
    config["training"]["epochs"] = 2
    config["model"]["filters"] = [4, 8]
    config["finetune"]["epochs"] = 1
    config["quantization"]["qat_epochs"] = 1
    config["pruning"].update(pruning)
    config["outputs"] = {"dir": str(tmp_path / "run"), "tb_samples": 20, "synthesize_layers": False}
    return parse_config(yaml.safe_dump(config))[0]


def _mtimes(directory):
    return {str(p): p.stat().st_mtime_ns for p in directory.rglob("stage.json")}


def test_points_that_are_one_run_are_run_once_and_a_finished_point_is_the_one_copied():
    base, share = _base(), "pruning.hybrid_first_share"
    planned = [
        (point, parse_config(yaml.safe_dump(point_config(base, point)))[0])
        for point in points(parse_grid(["structure=kernel,hybrid", f"{share}=0.3,0.7"]))
    ]
    name = {(p.as_dict()["structure"], p.as_dict()[share]): p.name for p, _ in planned}
    keys = {p.name: run_key(config) for p, config in planned}
    assert keys[name["kernel", 0.3]] == keys[name["kernel", 0.7]]  # a kernel run does not read the hybrid share
    assert keys[name["hybrid", 0.3]] != keys[name["hybrid", 0.7]]
    to_run, twins = split_twins(planned, finished=set())
    assert [p.name for p, _ in to_run] == [name["kernel", 0.3], name["hybrid", 0.3], name["hybrid", 0.7]]
    assert twins == {name["kernel", 0.7]: name["kernel", 0.3]}
    to_run, twins = split_twins(planned, finished={name["kernel", 0.7], name["hybrid", 0.3]})
    assert [p.name for p, _ in to_run] == [name["hybrid", 0.7]]
    assert twins == {name["kernel", 0.3]: name["kernel", 0.7]}  # copied from the finished one, not run again


def test_failed_trials_are_reported_with_their_error_and_retried_on_resume(tmp_path):
    out, lines = tmp_path / "sweep", []
    grid = parse_grid(["budget_lut=0.002", "structure=kernel,element", "pruning.hybrid_first_share=0.5,0.7"])
    outcome = run_sweep(_quick(tmp_path, targets={}), grid, out, cpus=2, echo=lines.append)
    assert len(outcome.failed) == 4 and len(outcome.ran) == len(outcome.copied) == 2  # shares: one run each
    for result in outcome.failed:
        assert "stage prune failed: pruning.budget: LUT <= 0.2%" in result.error and "\n" not in result.error
        assert any(f"{result.name}: FAILED: stage prune failed" in line for line in lines)
        if not result.same_as:  # a copy of a failed run gets its error and nothing else
            assert (out / "points" / result.name / "train" / "stage.json").exists()  # the stages done are kept
    assert "failed: stage prune failed" in (out / "results.md").read_text()
    retry = run_sweep(_quick(tmp_path, targets={}), grid, out, cpus=2, echo=lines.append)
    assert (retry.ran, retry.copied) == (outcome.ran, outcome.copied)  # failed points are not "finished"


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray, started as `run_sweep` starts it, for the sweeps after it: `run_sweep` runs on a Ray that is
    already up and leaves it up (the test above starts and stops its own, twice)."""
    ray = pytest.importorskip("ray")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level="ERROR",
        runtime_env={"env_vars": TRIAL_ENV},
    )
    yield ray
    ray.shutdown()


def test_a_sweep_on_local_ray_writes_every_point_the_table_and_the_plot_and_resumes(tmp_path, local_ray):
    out, lines = tmp_path / "sweep", []
    grid = parse_grid(["sparsity=0.3,0.6", "bits=4,6", "pruning.hybrid_first_share=0.5,0.7"])  # kernel: 4 runs
    outcome = run_sweep(_quick(tmp_path), grid, out, cpus=2, echo=lines.append)
    by_share = {
        share: [p.name for p in points(grid) if p.as_dict()["pruning.hybrid_first_share"] == share]
        for share in (0.5, 0.7)
    }
    assert outcome.ran == by_share[0.5] and outcome.copied == by_share[0.7] and not outcome.failed
    assert sum("training once" in line for line in lines) == 1  # one shared train stage for all four
    assert len([line for line in lines if line.strip().startswith("[")]) == 4  # progress per trial
    assert "8 points, 0 finished earlier, 4 to run, 4 the same run as another point" in lines[0]
    for source, twin in zip(by_share[0.5], by_share[0.7]):
        result = json.loads((out / "points" / twin / "result.json").read_text())
        assert result["same_as"] == source
        assert result["metrics"] == json.loads((out / "points" / source / "result.json").read_text())["metrics"]
        assert json.loads((out / "points" / twin / "config.json").read_text())["pruning"]["hybrid_first_share"] == 0.7
        assert all(
            json.loads((out / "points" / twin / stage / "stage.json").read_text())["key"]
            == json.loads((out / "points" / source / stage / "stage.json").read_text())["key"]
            for stage in ("train", "prune", "report")
        )
        assert (out / "points" / twin / "hls" / "project").is_dir()
    for point in points(grid):
        run_dir = out / "points" / point.name
        assert (run_dir / "report" / "report.html").exists() and (run_dir / "hls" / "project").is_dir()
        result = json.loads((run_dir / "result.json").read_text())
        assert result["error"] is None and result["metrics"]["csim"]["bit_exact"]
        record = json.loads((run_dir / "quantize" / "stage.json").read_text())
        bits = point.as_dict()["bits"]
        assert record["config"]["quantization"]["default"]["kernel"] == f"quantized_bits({bits},0,alpha=1)"
    table = (out / "results.csv").read_text().splitlines()
    assert len(table) == 9 and table[0].startswith("bits,pruning.hybrid_first_share,sparsity,point,status")
    assert "repeat another point's run" in (out / "sweep.html").read_text()
    assert f"| {by_share[0.5][0]} |" in (out / "results.md").read_text()  # the same_run_as column
    assert (out / "pareto.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "non-dominated" in (out / "sweep.html").read_text()
    assert "| bits | pruning.hybrid_first_share | sparsity |" in (out / "results.md").read_text()
    rows = list(csv.DictReader(table))
    luts = {(r["bits"], r["sparsity"]): int(r["LUT"]) for r in rows}
    assert luts[("4", "0.3")] < luts[("6", "0.3")] and luts[("6", "0.6")] < luts[("6", "0.3")]
    assert any(r["pareto_LUT"] == "True" for r in rows)

    before = _mtimes(out / "points")
    again = run_sweep(_quick(tmp_path), grid, out, cpus=2, echo=lines.append)
    assert again.ran == again.copied == [] and _mtimes(out / "points") == before  # finished points stay
    assert [r.metrics["report"]["lut"] for r in again.results] == [r.metrics["report"]["lut"] for r in outcome.results]

    redo = [by_share[0.5][1], by_share[0.7][1]]  # a run and its copy
    for name in redo:
        (out / "points" / name / "result.json").unlink()
    third = run_sweep(_quick(tmp_path), grid, out, cpus=2, echo=lines.append)
    assert third.ran == redo[:1] and third.copied == redo[1:]
    assert {k: v for k, v in _mtimes(out / "points").items() if not any(f"/{n}/" in k for n in redo)} == {
        k: v for k, v in before.items() if not any(f"/{n}/" in k for n in redo)
    }


def test_the_sweep_command_says_what_is_wrong_with_a_grid_in_one_line(tmp_path, capsys):
    from fpgaprune.cli import entry

    assert entry(["sweep", str(DEFAULT_CONFIG), "--grid", "sparsity", "--out", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --grid 'sparsity': expected AXIS=V1,V2")
    assert not (tmp_path / "s").exists()
