"""hls4ml's Keras 3 converter on an HGQ2 model: hls4ml 1.3 parses HGQ2's layers itself (`converters/keras_v3/
hgq2`), loads the quantized weights (a zero or 0-bit weight is exactly 0 in the IR) and types every node with its
BitExact pass, from HGQ2's quantizers."""

from fpgaprune.errors import ExportError, ModelTypeError
from fpgaprune.frontends.hgq2.tolerance import record_types


def _unhandled(model):
    """The first layer that neither hls4ml's Keras 3 handlers nor its Keras 2 fallback know, or None."""
    from hls4ml.converters.keras_v2_to_hls import get_supported_keras_layers
    from hls4ml.converters.keras_v3._base import registry

    known = set(registry) | set(get_supported_keras_layers()) | {"InputLayer"}
    for layer in model.layers:
        cls = type(layer)
        if f"{cls.__module__}.{cls.__name__}" not in known and cls.__name__ not in known:
            return layer
    return None


def conversion_problem(model) -> str | None:
    """Why hls4ml's Keras 3 converter cannot take the model (one line naming the layer), or None."""
    import hls4ml

    layer = _unhandled(model)
    if layer is not None:
        return (
            f"layer '{layer.name}' is a {type(layer).__name__}, which hls4ml {hls4ml.__version__}'s Keras 3 "
            "converter cannot convert; replace it"
        )

    try:
        hls4ml.utils.config_from_keras_model(model, granularity="name")
    except Exception as error:  # noqa: BLE001 - hls4ml's handlers raise bare Exceptions and asserts
        text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return f"hls4ml {hls4ml.__version__}'s Keras 3 converter cannot convert it from HGQ2: {text}"
    return None


# the backends hls4ml 1.3's HGQ2 proxy pass accepts (`hgq_proxy_model.py`: any other is "not tested")
HLS4ML_HGQ_BACKENDS = ("oneapi", "quartus", "vivado", "vitis")


def relu_layer_problem(model) -> str | None:
    """One line naming a Keras ReLU layer of an HGQ2 model (its quantized twin writes each as Activation('relu')),
    or None: hls4ml 1.3 converts it to a thresholded ReLU that BitExact types unsigned without clamping its
    negative inputs, so C-sim differs (by up to its input's range, measured on digits CNNs)."""
    import hls4ml

    relu = next((layer for layer in model.layers if type(layer).__name__ == "ReLU"), None)
    if relu is None:
        return None
    return (
        f"layer '{relu.name}' is a ReLU layer, which hls4ml {hls4ml.__version__} converts from an HGQ2 model to a "
        "thresholded ReLU that C-sim shows differs; export fp.quantized_twin(model) (it writes each as "
        "Activation('relu')), or write keras.layers.Activation('relu')"
    )


def require_convertible(model) -> None:
    problem = conversion_problem(model) or relu_layer_problem(model)
    if problem:
        raise ModelTypeError(f"model '{model.name}': {problem}")


def config_from_model(model, granularity: str = "name", **kwargs) -> dict:
    import hls4ml

    require_convertible(model)
    return hls4ml.utils.config_from_keras_model(model, granularity=granularity, **kwargs)


def convert_model(model, hls_config: dict, output_dir, **kwargs):
    """hls4ml's unbuilt ModelGraph of the HGQ2 model (its BitExact pass on: the types come from HGQ2); the types
    BitExact gave are written into `hls_config` (the export's: `tolerance.record_types`)."""
    import hls4ml

    require_convertible(model)
    backend = str(kwargs.get("backend", "Vitis"))
    if backend.lower() not in HLS4ML_HGQ_BACKENDS:  # hls4ml asserts "Backend Catapult not tested"
        raise ExportError(
            f"model '{model.name}': hls4ml {hls4ml.__version__} does not export HGQ2 models to {backend} "
            f"(it has not tested them there); export to Vitis or Vivado (hls.backend: Vitis)"
        )
    try:
        hls_model = hls4ml.converters.convert_from_keras_model(
            model, hls_config=hls_config, output_dir=str(output_dir), bit_exact=True, **kwargs
        )
    except NotImplementedError as error:  # hls4ml 1.3: per-value activation quantizers need io_parallel
        raise ExportError(
            f"model '{model.name}': hls4ml {hls4ml.__version__} cannot export it with {kwargs.get('io_type')}: "
            f"{error} (quantize the activations per tensor: quantization.hgq2.activation_granularity: tensor)"
        ) from None
    record_types(hls_model, hls_config)
    return hls_model


def renamed(model, names: dict):
    """A copy of the model whose layers named in `names` carry their new names (weights shared by copy)."""
    import keras

    if not names:
        return model

    def rename(layer):
        config = layer.get_config()
        config["name"] = names.get(layer.name, layer.name)
        return layer.__class__.from_config(config)

    twin = keras.models.clone_model(model, clone_function=rename)
    twin.set_weights(model.get_weights())
    return twin
