"""The quantizer libraries' environments: QKeras (the base) and HGQ2 (requirements/hgq2.txt) cannot share one,
because hgq2 installs a top-level `qkeras` package over QKeras'. An environment that holds both is refused when
fpgaprune is imported, in one line that says what to do; one without QKeras says so where QKeras is needed."""

import subprocess
import sys

import pytest


def _distribution(root, name: str, version: str) -> None:
    """An installed distribution's metadata, as pip writes it (what `importlib.metadata` reads)."""
    info = root / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def test_an_environment_with_qkeras_and_hgq2_is_refused_at_import_in_one_line(tmp_path):
    _distribution(tmp_path, "hgq2", "0.2.0")  # beside this environment's QKeras 0.9.0
    done = subprocess.run(
        [sys.executable, "-c", "import fpgaprune"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: fpgaprune: this Python environment holds both QKeras 0.9.0 and hgq2 0.2.0")
    assert "each needs its own venv" in last and "requirements/hgq2.txt" in last


def test_this_environment_holds_one_quantizer_library():
    from fpgaprune.support.environment import clash_line, installed, qkeras_installed

    assert clash_line() is None
    assert qkeras_installed() == (installed("QKeras") is not None)
    assert qkeras_installed() != (installed("hgq2") is not None)


def test_quantizing_with_qkeras_where_it_is_absent_says_so(monkeypatch):
    from fpgaprune.errors import ModelTypeError
    from fpgaprune.support import environment as _env

    monkeypatch.setattr(_env, "qkeras_installed", lambda: False)
    with pytest.raises(ModelTypeError, match=r"^quantization needs QKeras, which this environment does not hold"):
        _env.require_legacy_keras("quantization")
