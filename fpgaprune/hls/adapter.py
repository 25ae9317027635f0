"""The one place that routes tf_keras and QKeras models to hls4ml's Keras-2 converter.

hls4ml 1.3 picks its Keras parser from `keras.__version__` of the installed `keras` package (3.x), not from
the model, and sends tf_keras models to the Keras-3 parser, which fails on them. hls4ml's own Keras-2 path
(`keras_v2_to_hls`, `parse_keras_model`) handles them. So its entry points run here with `import keras`
resolving to tf_keras, after hls4ml itself is fully imported; nothing outside these calls sees the switch.
"""

import sys
from contextlib import contextmanager

import tf_keras

from fpgaprune.tfk import require_tf_keras_model


@contextmanager
def _keras2_for_hls4ml():
    import hls4ml  # noqa: F401  (import everything first, so no module binds tf_keras for good)
    import hls4ml.converters  # noqa: F401
    import hls4ml.utils.config  # noqa: F401

    saved = sys.modules.get("keras")
    sys.modules["keras"] = tf_keras
    try:
        yield
    finally:
        if saved is None:
            sys.modules.pop("keras", None)
        else:
            sys.modules["keras"] = saved


def config_from_model(model, granularity: str = "name", **kwargs) -> dict:
    """hls4ml's `config_from_keras_model` for a tf_keras/QKeras model."""
    import hls4ml

    require_tf_keras_model(model)
    with _keras2_for_hls4ml():
        return hls4ml.utils.config_from_keras_model(model, granularity=granularity, **kwargs)


def convert_model(model, hls_config: dict, output_dir, **kwargs):
    """hls4ml's `convert_from_keras_model` for a tf_keras/QKeras model (an unbuilt hls4ml ModelGraph)."""
    import hls4ml

    from fpgaprune.hls.extension import register

    require_tf_keras_model(model)
    register()
    with _keras2_for_hls4ml():
        return hls4ml.converters.convert_from_keras_model(
            model, hls_config=hls_config, output_dir=str(output_dir), **kwargs
        )
