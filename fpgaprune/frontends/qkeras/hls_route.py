"""hls4ml's Keras-2 converter as a front end's route to hls4ml's IR: tf_keras and QKeras models as they are,
Keras 3 models as their tf_keras twin (`hls.py` does the work; imported on first use)."""


class KerasTwoRoute:
    """The `to_hls4ml` part of the front-end contract, for the Keras front ends."""

    @staticmethod
    def hls_config(model, granularity: str = "name", **kwargs) -> dict:
        from fpgaprune.frontends.qkeras.hls import config_from_model

        return config_from_model(model, granularity=granularity, **kwargs)

    @staticmethod
    def to_hls4ml(model, hls_config: dict, output_dir, **kwargs):
        """hls4ml's ModelGraph of the model, by its Keras-2 converter; the TensorFlow objects the conversion leaves
        (a Keras 3 model's twin, hls4ml's copies) collected here, not in the stages after it."""
        import gc

        from fpgaprune.frontends.qkeras.hls import convert_model

        converted = convert_model(model, hls_config, output_dir, **kwargs)
        gc.collect()
        return converted

    @staticmethod
    def conversion_problem(model) -> str | None:
        from fpgaprune.frontends.qkeras.hls import conversion_problem

        return conversion_problem(model)

    @staticmethod
    def renamed(model, names: dict):
        """A copy of the model whose layers named in `names` ({original: new}) carry their new names."""
        from fpgaprune.frontends.qkeras.hls import renamed

        return renamed(model, names)
