"""Run a module or a script as `python -m` would, and write which frameworks the process imported, as JSON, to the
file named by $FPGAPRUNE_IMPORTS (for the tests that check that a PyTorch process never loads TensorFlow, and a
Keras one never torch):

    python tests/watch_imports.py -m fpgaprune.cli run config.yaml
    python tests/watch_imports.py script.py
"""

import atexit
import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

FRAMEWORKS = ("tensorflow", "tf_keras", "keras", "qkeras", "hgq", "torch", "brevitas")
KERAS = ("tensorflow", "tf_keras", "keras", "qkeras", "hgq")


def _record() -> None:
    Path(os.environ["FPGAPRUNE_IMPORTS"]).write_text(json.dumps(sorted(m for m in FRAMEWORKS if m in sys.modules)))


def run_watched(args, tmp_path, **options) -> tuple[subprocess.CompletedProcess, set]:
    """(the finished process of `python -m ...`/`python script.py` as `args` give it, the frameworks it imported)."""
    record = Path(tmp_path) / f"imports-{os.getpid()}-{len(list(Path(tmp_path).glob('imports-*')))}.json"
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "FPGAPRUNE_IMPORTS": str(record), **options.pop("env", {})}
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, env=env, **options)
    return done, set(json.loads(record.read_text())) if record.exists() else set()


if __name__ == "__main__":
    atexit.register(_record)
    if sys.argv[1] == "-m":  # as `python -m`: the working directory first on the path, not this file's
        sys.argv, sys.path[0] = [sys.argv[2], *sys.argv[3:]], os.getcwd()
        runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
    else:
        sys.argv, sys.path[0] = sys.argv[1:], str(Path(sys.argv[1]).resolve().parent)
        runpy.run_path(sys.argv[0], run_name="__main__")
