"""A quiet console for the CLI: the frameworks' C++ and Python logs (each front end's `quiet_start`:
TensorFlow's, its CUDA probe) and known harmless warnings are silenced, so that only fpgaprune's
progress and results remain. `--verbose` keeps them.

`TF_CPP_MIN_LOG_LEVEL` alone does not silence TF 2.21's oneDNN and CUDA lines (they are written while the
library loads), and `TF_ENABLE_ONEDNN_OPTS=0` would change numerics. So the C-level stderr is redirected to
/dev/null around the TensorFlow import only; the Python library never does this.
"""

import contextlib
import logging
import os
import sys
import warnings

from fpgaprune.errors import FpgapruneNote
from fpgaprune.framework import bind_with

HARMLESS_WARNINGS = (
    r".*keras\.constraints\.serialize.*",  # QKeras serializing its constraints
    r".*is deprecated.*",
    r".*tf\.function retracing.*",
    r".*compiled metrics have yet to be built.*",
    r".*You are saving your model as an HDF5 file.*",
    r".*`build\(\)` was called on layer.*",
)


@contextlib.contextmanager
def stderr_to_devnull():
    """Point file descriptor 2 at /dev/null (C++ writers included) for the duration, then restore it."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def show_notes() -> None:
    """fpgaprune's notes (`errors.FpgapruneNote`: a quantizer converted, say) as one `note: ...` line each on
    stderr; other warnings as Python shows them."""
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, FpgapruneNote):
            print(f"note: {message}", file=file or sys.stderr, flush=True)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def quiet_console(verbose: bool) -> None:
    """Have each framework fpgaprune loads (a front end's, when the registry binds it) silence its noise, and
    known harmless warnings stay unshown, unless verbose. `import fpgaprune` itself loads no framework."""
    if verbose:
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    for pattern in HARMLESS_WARNINGS:
        warnings.filterwarnings("ignore", message=pattern)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    bind_with(_bind_quietly)  # each framework loads when its first model is read, not before
    for name in ("absl", "h5py", "hls4ml", "numexpr"):
        logging.getLogger(name).setLevel(logging.ERROR)


def _bind_quietly(front_end) -> None:
    """Bind a front end (its framework imported) with stderr silenced, then quiet its loggers."""
    with stderr_to_devnull():
        front_end.bind_layers()  # its framework loads here
        front_end.quiet_start()  # its first, noisy calls (TensorFlow's CUDA probe), and its loggers quiet
