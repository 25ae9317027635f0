"""boards/ and hls_configs/ live at the repository root and ship inside the wheel; one loader finds either."""

import re
import subprocess
import sys
import zipfile
from pathlib import Path

from fpgaprune.hls import yaml_files
from fpgaprune.hls.boards import boards, load_board
from fpgaprune.hls.presets import load_preset

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_ships_every_board_and_preset(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    names = set(zipfile.ZipFile(next(tmp_path.glob("fpgaprune-*.whl"))).namelist())
    for directory in ("boards", "hls_configs"):
        files = sorted((ROOT / directory).glob("*.yaml"))
        assert files and all(f"fpgaprune/{directory}/{f.name}" in names for f in files), directory
    for data in (
        "hls/extension/vivado/cpp/nnet_fpgaprune_sparse.h",
        "hls/extension/catapult/cpp/nnet_fpgaprune_sparse.h",
        "report/templates/report.html.j2",
        "pipeline/default.yaml",
    ):  # the package's own data files too
        assert f"fpgaprune/{data}" in names, data


def test_one_loader_reads_the_checkout_or_the_installed_layout(tmp_path, monkeypatch):
    assert {board.key for board in boards()} == {p.stem for p in (ROOT / "boards").glob("*.yaml")}
    assert load_preset("latency_parallel")["IOType"] == "io_parallel"
    installed = tmp_path / "site" / "fpgaprune"
    (installed / "boards").mkdir(parents=True)
    (installed / "boards" / "pynq-z2.yaml").write_text((ROOT / "boards" / "pynq-z2.yaml").read_text())
    monkeypatch.setattr(yaml_files, "PACKAGE", installed)
    assert yaml_files.data_dir("boards") == installed / "boards"  # a wheel: inside the package
    assert load_board("pynq-z2").part == load_board(ROOT / "boards" / "pynq-z2.yaml").part
    assert yaml_files.data_dir("hls_configs") == tmp_path / "site" / "hls_configs"  # absent: the root layout


def test_a_board_file_is_checked_by_the_run_config_schema(tmp_path):
    """A user's board: one line with file, line and key path, like a run config."""
    import pytest

    from fpgaprune.errors import HlsConfigError

    good = (ROOT / "boards" / "pynq-z2.yaml").read_text()
    cases = {
        "typo": (
            good.replace("clock_period_ns", "clock_period"),
            r":\d+: clock_period: unknown key; "
            r"did you mean 'clock_period_ns'\?",
        ),
        "family": (good.replace("7-series", "Virtex-2"), r":\d+: family: found 'Virtex-2'"),
        "negative": (good.replace("LUT: 53200", "LUT: -5"), r":\d+: resources.LUT: found -5"),
    }
    for name, (text, pattern) in cases.items():
        path = tmp_path / f"{name}.yaml"
        path.write_text(text)
        with pytest.raises(HlsConfigError, match=rf"^{re.escape(str(path))}{pattern}"):
            load_board(path)
