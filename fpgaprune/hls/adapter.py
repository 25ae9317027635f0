"""hls4ml's IR (its ModelGraph and HLSConfig) from a bound model (`record.resolved`), through its front end: each
framework's converter is its front end's business (`FrontEnd.to_hls4ml`, `hls_config`, `conversion_problem`); the
hls stage works on what comes back."""


def config_from_model(bound, granularity: str = "name", **kwargs) -> dict:
    """hls4ml's HLSConfig of a bound model (its front end's converter, `granularity` as hls4ml's)."""
    return bound.front.hls_config(bound.model, granularity=granularity, **kwargs)


def convert_model(bound, hls_config: dict, output_dir, **kwargs):
    """An unbuilt hls4ml ModelGraph of a bound model, with fpgaprune's passes registered on the backends."""
    from fpgaprune.hls.extension import register

    register()
    return bound.front.to_hls4ml(bound.model, hls_config, output_dir, **kwargs)


def conversion_problem(bound) -> str | None:
    """Why hls4ml cannot convert a bound model (one line naming the layer), or None: its front end's converter
    asked before any training."""
    return bound.front.conversion_problem(bound.model)
