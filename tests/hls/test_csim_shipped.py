"""C-sim of the shipped project: the exported directory itself is built (elsewhere: it stays byte-identical),
its own test bench runs, the synthesis branch compiles, and C-sim runs the weights that synthesis reads."""

import shutil
from pathlib import Path

import numpy as np
import pytest
from hls_helpers import digits, digits_cnn, trained, tree_hash

import fpgaprune as fp
from fpgaprune.hls import shipped
from fpgaprune.hls.csim import CsimResult, compare_with_qkeras, hardware_input, layer_diff, simulated_subset
from fpgaprune.record import resolved
from fpgaprune.support.tools import ToolError


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    dataset = digits()
    model = trained(digits_cnn(), ["conv2[:, :, 1, 2]", "conv2[:, :, 3, 0]", "fc[:, 4]"], dataset)
    project = tmp_path_factory.mktemp("shipped") / "project"
    export = fp.export(model, "latency_parallel", "pynq-z2", project, x=dataset.x_test, tb_samples=30)
    return export, model, dataset


def _owners(export) -> dict:
    return {
        array: node for node, entry in export.manifest["hls_nodes"].items() for array in entry["weight_headers_sha256"]
    }


def test_the_shipped_project_simulates_bit_exact_and_stays_unchanged(exported, tmp_path, monkeypatch):
    export, model, dataset = exported
    before = tree_hash(export.path)
    monkeypatch.chdir(tmp_path)  # a scratch path relative to the working directory, as the README's run has
    build = shipped.build_shipped(export.path, Path("scratch"))
    assert shipped.check_weight_files(export.path, _owners(export)) == []
    shipped.simulate_synthesized_weights(build)
    shipped.check_synthesis_branch(build)
    run = shipped.runner(build, resolved(model), export.manifest["traced_outputs"])
    result = compare_with_qkeras(run, resolved(model), dataset.x_test, export.input_type)
    assert result.bit_exact and result.argmax_agreement == 1.0, result.format()
    assert result.samples == len(dataset.x_test) and result.diff == []
    _the_same_build_traces_every_layer(export, model, build, dataset.x_test[:40])
    bench = shipped.run_testbench(build)
    assert bench.samples == 30 and bench.argmax_agreement == 1.0 and bench.max_abs_diff < 1e-4
    assert tree_hash(export.path) == before


def _the_same_build_traces_every_layer(export, model, build, x):
    """The shipped code carries hls4ml's trace calls (C-sim only): the one build gives each layer's outputs."""
    cpp = (export.path / "firmware" / "myproject.cpp").read_text()
    assert "#ifndef __SYNTHESIS__\n    nnet::save_layer_output" in cpp
    sizes = export.manifest["traced_outputs"]
    assert {"conv1", "conv2", "fc"} <= set(sizes)
    xq = hardware_input(x, export.input_type)
    outputs, traced = shipped.runner(build, resolved(model), sizes)(xq)  # one pass: the outputs and every traced layer
    assert set(traced) == set(sizes) and all(v.shape == (len(x), sizes[k]) for k, v in traced.items())
    assert layer_diff(traced, resolved(model), xq) == ["no traced layer differs"]
    logits = model.predict(xq, verbose=0).reshape(len(x), -1)
    assert np.array_equal(traced["fc"], logits) and np.array_equal(outputs, logits)


def _copy(export, tmp_path) -> Path:
    project = tmp_path / "project"
    shutil.copytree(export.path, project)
    return project


def test_a_weight_changed_in_the_header_only_is_found_and_simulated(exported, tmp_path):
    """Synthesis reads weights/*.h; C-sim used to read weights/*.txt. A change in the .h alone is named by
    layer, and C-sim (which now runs the .h values) differs from QKeras in that layer."""
    export, model, dataset = exported
    project = _copy(export, tmp_path)
    owners = _owners(export)
    array = next(name for name, node in owners.items() if node == "fc" and name.startswith("w"))
    header = project / "firmware" / "weights" / f"{array}.h"
    text = header.read_text()
    head, values = text.split("= {", 1)
    first, rest = values.split(",", 1)
    header.write_text(f"{head}= {{{float(first) + 0.5:.5f},{rest}")
    problems = shipped.check_weight_files(project, owners)
    assert len(problems) == 1 and problems[0].startswith(f"layer 'fc': {array}[0] is"), problems
    build = shipped.build_shipped(project, tmp_path / "scratch")
    shipped.simulate_synthesized_weights(build)
    result = compare_with_qkeras(
        shipped.runner(build, resolved(model), export.manifest["traced_outputs"]),
        resolved(model),
        dataset.x_test,
        export.input_type,
    )
    assert not result.bit_exact and result.float32_exact and result.mismatches > 0
    assert result.diff[0].startswith("layer ") and "values differing" in result.diff[0]  # a table with its header
    assert result.diff[2].startswith("fc "), result.diff  # the first differing layer, from the shipped build
    assert result.first_difference.startswith("the first layer that differs is 'fc': ")
    _a_seeded_sample_names_held_out_samples(build, export, model, dataset)


def _a_seeded_sample_names_held_out_samples(build, export, model, dataset):
    """C-sim of a seeded sample of the held-out set (outputs.csim_samples) finds the same change, and names the
    held-out sample where it first shows."""
    held_out = len(dataset.x_test)
    ids = simulated_subset(held_out, 60, seed=3)
    assert np.array_equal(ids, simulated_subset(held_out, 60, seed=3)) and len(np.unique(ids)) == 60
    assert np.all(np.diff(ids) > 0) and ids[-1] < held_out and ids[-1] > 60  # in order, drawn from all of them
    assert simulated_subset(held_out, held_out, 3) is None and simulated_subset(held_out, "all", 3) is None
    result = compare_with_qkeras(
        shipped.runner(build, resolved(model), export.manifest["traced_outputs"]),
        resolved(model),
        dataset.x_test[ids],
        export.input_type,
        ids=ids,
    )
    result.held_out = held_out
    assert result.samples == 60 and not result.bit_exact
    sample = int(result.first_difference.split("(sample, index) (")[1].split(",")[0])
    assert sample in set(ids.tolist()), (sample, ids)
    assert f"60 of the {held_out} held-out samples (a seeded sample" in result.format()
    assert CsimResult.from_metrics(result.metrics()).scope() == result.scope()


def test_a_cpp_error_in_the_synthesis_branch_only_is_caught(exported, tmp_path):
    export, _, _ = exported
    project = _copy(export, tmp_path)
    header = project / "firmware" / "weights" / "w2.h"
    header.write_text(header.read_text().replace("#else\n", "#else\nthis_is_not_cpp;\n", 1))
    build = shipped.build_shipped(project, tmp_path / "scratch")  # C-sim alone does not see it
    with pytest.raises(ToolError, match=r"__SYNTHESIS__ branch.*this_is_not_cpp"):
        shipped.check_synthesis_branch(build)


def test_c_sim_in_worker_processes_gives_what_one_process_gives(exported, tmp_path, monkeypatch):
    """A long set is spread over worker processes (each loads the library once: io_stream code keeps static
    state, so never threads); the outputs, traces and the comparison are those of one process."""
    from fpgaprune.hls import hls4ml_bridge

    export, model, dataset = exported
    build = shipped.build_shipped(export.path, tmp_path / "scratch")
    shipped.simulate_synthesized_weights(build)
    sizes = export.manifest["traced_outputs"]
    xq = hardware_input(dataset.x_test[:200], export.input_type)
    chunks = [xq[i : i + 50] for i in range(0, 200, 50)]
    monkeypatch.setattr(hls4ml_bridge, "PARALLEL_ABOVE_S", 0.0)  # always spread, however short
    apart = list(shipped.runner(build, resolved(model), sizes).map(chunks, workers=2))
    together = [shipped.runner(build, resolved(model), sizes)(chunk) for chunk in chunks]
    for (a_out, a_traces), (b_out, b_traces) in zip(apart, together):
        assert np.array_equal(a_out, b_out) and a_traces.keys() == b_traces.keys()
        assert all(np.array_equal(a_traces[k], b_traces[k]) for k in a_traces)
    spread = compare_with_qkeras(
        shipped.runner(build, resolved(model), sizes),
        resolved(model),
        dataset.x_test,
        export.input_type,
        chunk=64,
        workers=2,
    )
    alone = compare_with_qkeras(
        shipped.runner(build, resolved(model), sizes),
        resolved(model),
        dataset.x_test,
        export.input_type,
        chunk=64,
        workers=1,
    )
    assert spread.metrics() == alone.metrics() and spread.bit_exact and spread.samples == len(dataset.x_test)
