"""The hls4ml HLSConfig of a QKeras model: hls4ml's own, then fpgaprune's derived precisions, then overrides."""

import copy

from fpgaprune.hls.adapter import config_from_model
from fpgaprune.quantize.fixed_types import FixedType, input_type
from fpgaprune.record import resolved


def merge_config(base: dict, override: dict) -> dict:
    """A deep merge of two hls4ml config dicts; `override` wins."""
    merged = copy.deepcopy(base)
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_config(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def derived_hls_config(
    model, data_or_type, overrides: dict | None = None, preset: dict | None = None, **config_kwargs
) -> tuple[dict, list]:
    """(HLSConfig with granularity='name', notes on nodes whose precisions were left to hls4ml) of a bound model
    (`record.resolved`).

    Merged in this order, later winning: hls4ml's own config for the model, `preset` (an HLSConfig-shaped
    dict), the precisions derived from the quantizers, then `overrides`. `data_or_type` is sample input
    data (its exact grid and range give the input type) or a FixedType.
    """
    fixed = data_or_type if isinstance(data_or_type, FixedType) else input_type(data_or_type)
    bound = resolved(model)
    plan = bound.front.derive_types(bound, fixed)
    config = merge_config(config_from_model(bound, granularity="name", **config_kwargs), preset or {})
    config = merge_config(config, {"LayerName": plan.hls_layer_config()})
    return merge_config(config, overrides or {}), plan.notes
