import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# Measured circuits are cached by content (resources/circuit_cache.py): the tests keep their own cache, one per
# worker process and session, so that nothing measured before the session counts and the user's cache is left alone.
os.environ.setdefault("FPGAPRUNE_CACHE_DIR", tempfile.mkdtemp(prefix="fpgaprune-test-cache-"))

import fpgaprune  # noqa: E402,F401  (first: it sets TF_USE_LEGACY_KERAS before TensorFlow loads)

# isort: split
import pytest  # noqa: E402


@pytest.fixture(scope="session")
def digits_cnn_and_dense():
    """The valid-padded digits CNN (seed 0, untrained) and its dense QKeras twin: the one base that the resource,
    report and figure tests prune, each in its own way (`hls_helpers.trained(base, selections, None, epochs=0)`)."""
    from hls_helpers import SPEC8, digits_cnn

    from fpgaprune.quantize import to_qkeras
    from fpgaprune.tfk import keras

    keras.utils.set_random_seed(0)
    base = digits_cnn(padding="valid")
    return base, to_qkeras(fpgaprune.hold(base), SPEC8)


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one worker per core this process may use (psutil may count the host's cores in a container)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
