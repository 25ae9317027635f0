"""The code's style is checked by a tool, not by review: ruff (pyflakes, pycodestyle and import order, 120
columns) and `ruff format` over the package, the tests, the benchmarks, the notebook and the docs' scripts, with
the settings in pyproject.toml."""

import ast
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKED = ("fpgaprune", "tests", "benchmarks", "notebooks", "docs")


def _ruff(*args: str) -> subprocess.CompletedProcess:
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff is a dev dependency (pip install -e '.[dev]')"
    return subprocess.run([ruff, *args, *CHECKED], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_ruff_finds_nothing():
    result = _ruff("check", "--output-format", "concise")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-1000:]


def test_ruff_format_leaves_everything_as_it_is():
    result = _ruff("format", "--check")
    assert result.returncode == 0, "run `ruff format` on:\n" + result.stdout[-3000:] + result.stderr[-1000:]


def test_conftest_imports_fpgaprune_before_any_other_package():
    """fpgaprune sets TF_USE_LEGACY_KERAS before TensorFlow loads: the suite imports it before anything else."""
    tree = ast.parse((ROOT / "tests" / "conftest.py").read_text())
    imported = [alias.name for node in tree.body if isinstance(node, ast.Import) for alias in node.names]
    packages = [name for name in imported if name not in sys.stdlib_module_names]
    assert packages[0] == "fpgaprune", packages
