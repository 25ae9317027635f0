import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import fpgaprune  # noqa: E402,F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one worker per core this process may use (psutil may count the host's cores in a container)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
