"""The code's style is checked by a tool, not by review: ruff (pyflakes and pycodestyle, 120 columns) over the
package, the tests, the benchmarks, the notebook and the docs' scripts, with the settings in pyproject.toml."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff is a dev dependency (pip install -e '.[dev]')"
    result = subprocess.run([ruff, "check", "--output-format", "concise", "fpgaprune", "tests", "benchmarks",
                             "notebooks", "docs"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-1000:]
