"""How far C-sim may stand from the HGQ2 model at each traced layer, from the types hls4ml's BitExact pass gave.

BitExact types each node with the bits its readers need: a layer whose reader is an HGQ2 quantizer keeps only the
bits that quantizer can still tell apart: its fraction bits truncated (TRN), and its integer bits wrapped (WRAP:
HGQ2's activation quantizers wrap too, at the same period). So such a layer's traced output equals the HGQ2
model's value modulo 2^I (I: its type's integer bits), within less than one step of its type, and the quantizer
after it gives the same value in both. The logits (the last layer with a kernel) and everything after them must
be bit-exact."""

from fpgaprune.framework import layers_of
from fpgaprune.hls.tolerance import Tolerance

REASON = (
    "hls4ml's BitExact pass keeps the bits of {name} its reader's quantizer needs, {type} (judged modulo "
    "{period:g}, where both wrap)"
)


def layer_tolerances(model, types: dict, input_type=None) -> dict:
    """{layer: one step of its result type (a Tolerance), or None where it must be bit-exact}."""
    layers = layers_of(model)
    with_kernel = [i for i, layer in enumerate(layers) if getattr(layer, "kernel", None) is not None]
    exact_from = with_kernel[-1] if with_kernel else 0
    found = {}
    for index, layer in enumerate(layers):
        fixed = types.get(layer.name, {}).get("result")
        if index >= exact_from or fixed is None:
            found[layer.name] = None
            continue
        period = 2.0**fixed.integer
        reason = REASON.format(name=layer.name, type=fixed.hls(), period=period)
        found[layer.name] = Tolerance(2.0**-fixed.frac, 0.0, reason, "", modulus=period)
    return found


def record_types(hls_model, hls_config: dict) -> None:
    """Write the result type BitExact gave each node into `hls_config` (the export's) over what the config said
    (BitExact overrides it), so that the project's config states the types it was built with."""
    for node in hls_model.get_layers():
        precision = node.get_output_variable().type.precision
        settings = hls_config.setdefault("LayerName", {}).setdefault(node.name, {})
        current = settings.get("Precision")
        if not isinstance(current, dict):
            current = settings["Precision"] = {} if current is None else {"result": current}
        current["result"] = str(precision)
