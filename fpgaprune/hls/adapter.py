"""hls4ml's IR (its ModelGraph and HLSConfig) from a model, through the model's front end: each framework's
converter is its front end's business (`FrontEnd.to_hls4ml`, `hls_config`, `conversion_problem`); the hls
stage works on what comes back."""

from fpgaprune.framework import front_end_of


def config_from_model(model, granularity: str = "name", *, front=None, **kwargs) -> dict:
    """hls4ml's HLSConfig of `model` (its front end's converter, `granularity` as hls4ml's; `front`: the model's
    front end, where the caller holds it)."""
    return (front or front_end_of(model)).hls_config(model, granularity=granularity, **kwargs)


def convert_model(model, hls_config: dict, output_dir, *, front=None, **kwargs):
    """An unbuilt hls4ml ModelGraph of `model`, with fpgaprune's passes registered on the backends (`front`: the
    model's front end, where the caller holds it)."""
    from fpgaprune.hls.extension import register

    register()
    return (front or front_end_of(model)).to_hls4ml(model, hls_config, output_dir, **kwargs)


def conversion_problem(model) -> str | None:
    """Why hls4ml cannot convert `model` (one line naming the layer), or None: its front end's converter asked
    before any training."""
    return front_end_of(model).conversion_problem(model)
