"""A quiet console for the CLI: the frameworks' C++ and Python logs (each front end's `quiet_start` and
`quiet_logs`: TensorFlow's, its CUDA probe) and known harmless warnings are silenced, so that only fpgaprune's
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


def import_quietly(verbose: bool):
    """Import fpgaprune (and with it TensorFlow), silencing the import's and the libraries' noise unless verbose."""
    if verbose:
        import fpgaprune

        return fpgaprune
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    for pattern in HARMLESS_WARNINGS:
        warnings.filterwarnings("ignore", message=pattern)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    with stderr_to_devnull():
        import fpgaprune
        from fpgaprune.framework import front_ends

        installed = front_ends()  # each front end's framework loads here
        for front_end in installed:
            front_end.quiet_start()  # and makes its first, noisy calls (TensorFlow's CUDA probe)
    for front_end in installed:
        front_end.quiet_logs()
    for name in ("absl", "h5py", "hls4ml", "numexpr"):
        logging.getLogger(name).setLevel(logging.ERROR)
    return fpgaprune
