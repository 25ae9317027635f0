"""The exported project as files: atomic writes, the manifest, test-bench vectors, presets, boards, synthesis."""

import hashlib
import json

import pytest
from hls_helpers import X8, digits_cnn, header_entries, live_weights, trained

import fpgaprune as fp
from fpgaprune.hls import csynth, find_hls_tool, load_board, load_preset
from fpgaprune.hls.presets import check_preset
from fpgaprune.strip import strip
from fpgaprune.tfk import keras

X = X8


@pytest.fixture(scope="module")
def stripped():
    keras.utils.set_random_seed(0)
    held = fp.hold(digits_cnn(padding="valid"), prune=["conv1[..., 2]", "conv2[:, :, 0, 4]"])
    result = strip(held)
    return trained(result.model, [], None, epochs=0), result


def test_export_writes_a_complete_project_with_its_manifest(tmp_path, stripped):
    model, result = stripped
    exported = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "prj", x=X, strip=result, tb_samples=25)
    project = exported.path
    for name in (
        "build_prj.tcl",
        "vivado_synth.tcl",
        "build_lib.sh",
        "firmware/myproject.cpp",
        "tb_data/tb_input_features.dat",
        "tb_data/tb_output_predictions.dat",
        "fpgaprune_manifest.json",
    ):
        assert (project / name).exists(), name
    assert len((project / "tb_data/tb_input_features.dat").read_text().splitlines()) == 25
    manifest = json.loads((project / "fpgaprune_manifest.json").read_text())
    assert manifest == json.loads(json.dumps(exported.manifest, default=str))
    assert manifest["part"] == "xc7z020clg400-1" and manifest["versions"]["hls4ml"] == "1.3.0"
    assert {"tensorflow", "qkeras", "hls4ml"} <= {k for k, v in manifest["versions"].items() if v}
    assert manifest["index_map"]["conv1"]["out"] == [0, 1, 3]
    conv2 = manifest["layers"]["conv2"]
    assert not [k for k in conv2["kernels_kept"] + conv2["kernels_pruned"] if k[0] == 2]  # stripped
    assert [0, 4] in conv2["kernels_pruned"] and "kernel" in conv2["quantizers"]
    for name, node in manifest["hls_nodes"].items():
        for variable, digest in node["weight_headers_sha256"].items():
            header = project / "firmware" / "weights" / f"{variable}.h"
            assert hashlib.sha256(header.read_bytes()).hexdigest() == digest
    live = live_weights(model)
    assert {n: manifest["hls_nodes"][n]["live_weights"] for n in live} == live
    assert header_entries(project, exported.hls_model.graph["conv2"].get_weights("weight").name) == live["conv2"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left behind


def test_an_existing_output_needs_overwrite_and_is_replaced_whole(tmp_path, stripped):
    model, _ = stripped
    target = tmp_path / "prj"
    target.mkdir()
    (target / "mine.txt").write_text("user data")
    with pytest.raises(fp.ExportError, match="already exists; pass overwrite=True"):
        fp.export(model, "latency_stream", "kv260", target, x=X)
    assert (target / "mine.txt").read_text() == "user data" and len(list(target.iterdir())) == 1
    fp.export(model, "latency_stream", "kv260", target, x=X, overwrite=True)
    assert not (target / "mine.txt").exists() and (target / "fpgaprune_manifest.json").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["prj"]


def test_a_failed_export_leaves_nothing_behind(tmp_path, stripped):
    model, _ = stripped
    with pytest.raises(fp.HlsConfigError):
        fp.export(model, {"HLSConfig": {"Model": {"Strategy": "Fastest"}}}, "kv260", tmp_path / "prj", x=X)
    assert list(tmp_path.iterdir()) == []


def test_presets_are_hls4ml_configs_and_unknown_keys_are_named():
    for name in (
        "latency_parallel",
        "resource_parallel",
        "latency_stream",
        "resource_stream",
        "distributed_arithmetic",
    ):
        preset = load_preset(name)
        assert preset["IOType"] in ("io_parallel", "io_stream") and "Strategy" in preset["HLSConfig"]["Model"]
    assert load_preset("resource_parallel")["HLSConfig"]["Model"]["ReuseFactor"] > 1
    with pytest.raises(
        fp.HlsConfigError,
        match=r"my.yaml: HLSConfig.Model.ReuseFacter: unknown key; did you mean "
        r"'ReuseFactor'\? allowed: .*Strategy",
    ):
        check_preset("my.yaml", {"HLSConfig": {"Model": {"ReuseFacter": 2}}})
    with pytest.raises(fp.HlsConfigError, match=r"HLSConfig.LayerName.fc.Trac: unknown key; did you mean 'Trace'"):
        check_preset("my.yaml", {"HLSConfig": {"LayerName": {"fc": {"Trac": True}}}})
    with pytest.raises(fp.HlsConfigError, match=r"HLSConfig.Model.Strategy: found 'fastest'; .* latency, resource"):
        check_preset("my.yaml", {"HLSConfig": {"Model": {"Strategy": "fastest"}}})
    with pytest.raises(fp.HlsConfigError, match="unknown hls config preset 'latency_paralel'.*did you mean"):
        load_preset("latency_paralel")


def test_a_users_own_preset_file(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("IOType: io_stream\nHLSConfig:\n  Model:\n    Strategy: Resource\n    ReuseFactor: 2\n")
    assert load_preset(str(path))["HLSConfig"]["Model"]["ReuseFactor"] == 2
    path.write_text("IOType: io_stream\nHLSConfg: {}\n")
    with pytest.raises(fp.HlsConfigError, match=f"{path}:2: HLSConfg: unknown key; did you mean 'HLSConfig'"):
        load_preset(str(path))
    path.write_text("IOType: [unclosed\n")
    with pytest.raises(fp.HlsConfigError, match=f"{path}: not valid YAML"):
        load_preset(str(path))


def test_boards_carry_the_data_sheet_figures():
    boards = {board.key: board for board in fp.boards()}
    assert {"pynq-z2", "arty-a7-100t", "zcu102", "kv260", "alveo-u250"} <= set(boards)
    assert boards["pynq-z2"].part == "xc7z020clg400-1" and boards["pynq-z2"].resources["DSP"] == 220
    assert boards["zcu102"].dsp_type == "DSP48E2" and boards["zcu102"].dsp_a_bits == 27
    assert boards["arty-a7-100t"].dsp_type == "DSP48E1" and boards["arty-a7-100t"].family == "7-series"
    assert boards["kv260"].resources["URAM"] == 64 and boards["alveo-u250"].resources["URAM"] == 1280
    assert boards["ulx3s-85f"].family == "ECP5" and boards["ulx3s-85f"].resources["MULT18X18D"] == 156
    for board in boards.values():
        own = ("DSP", "LUT", "FF", "BRAM_18K") if board.family != "ECP5" else ("LUT4", "TRELLIS_FF", "MULT18X18D")
        assert board.clock_period_ns > 0 and all(board.resources[k] > 0 for k in own)
        assert board.source
    with pytest.raises(fp.HlsConfigError, match="unknown board 'pynq'.*known: .*pynq-z2"):
        load_board("pynq")


def test_synthesis_is_skipped_clearly_without_vendor_tools(tmp_path, stripped):
    if find_hls_tool() is not None:
        pytest.skip("vitis_hls/vivado_hls is present: the synthesis test below runs instead")
    model, _ = stripped
    exported = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "prj", x=X)
    result = csynth(exported)
    assert not result.ran and result.reason == "skipped: vitis_hls not found (nor vivado_hls) on PATH"


@pytest.mark.skipif(find_hls_tool() is None, reason="vitis_hls/vivado_hls not found on PATH")
def test_csynthesis_with_vendor_tools(tmp_path, stripped):
    model, _ = stripped
    exported = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "prj", x=X)
    result = csynth(exported)
    assert result.ran and "CSynthesisReport" in result.report
