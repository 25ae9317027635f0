import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import fpgaprune  # noqa: E402,F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)
