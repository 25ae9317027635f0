"""strip(): a smaller model with the dead channels physically removed, and the map back to original indices.

A channel of a Conv/Dense producer goes when
- it is unused: every consumer's kernel slice for it is zero; or
- it is dead (its kernels are all pruned, so after its activation, BatchNormalization and pooling it is a
  constant) and that constant folds exactly into every consumer's bias: a 'valid' conv, a Dense after Flatten
  or global pooling, or any consumer when the constant is exactly 0. Under 'same' padding a nonzero constant
  meets the zero border, so that channel is kept (and noted).
Constants are computed by running the model's own pass-through layers on a constant input.
"""

import numpy as np

from fpgaprune.frontends.layer_graph import output_shape
from fpgaprune.frontends.tensorflow.strip_graph import PASSTHROUGH, ChannelGraph, Region, produces_channels
from fpgaprune.masking import MaskManifest, finalize, hold, maskable_records
from fpgaprune.model.layer_kinds import MERGES, role_of
from fpgaprune.record import resolved
from fpgaprune.strip.result import StripError, StripResult


def strip_model(model, front, on_unsafe: str = "raise") -> StripResult:
    """Remove dead channels of a Keras model (`front`: its front end); `on_unsafe="keep"` leaves channels at a
    disagreeing merge instead of refusing."""
    if on_unsafe not in ("raise", "keep"):
        raise StripError(f"on_unsafe must be 'raise' or 'keep', got {on_unsafe!r}")
    plain, manifest = finalize(model)
    maps = {layer.name: {"in": _identity(layer, "in"), "out": _identity(layer, "out")} for layer in plain.layers}
    result = StripResult(plain, maps)
    current = plain
    while True:
        work = _Work(current, front)
        graph = ChannelGraph(current, front)
        _check_merges(graph, work, on_unsafe, result)
        changed = False
        for producer in graph.producers():
            changed |= _strip_producer(graph, work, graph.region(producer), result)
        if not changed:
            break
        current = work.rebuild()
    result.model = _rehold(current, model, maps) if len(manifest) else current
    return result


class _Work:
    """The weights of one pass, edited in place, and the rebuild of the smaller model from them."""

    def __init__(self, model, front):
        self.model, self.front = model, front
        self.weights = {layer.name: [w.copy() for w in layer.get_weights()] for layer in model.layers}
        self.use_bias = {}

    def kernel(self, name):
        return self.weights[name][0]

    def bias(self, name):
        layer = self.model.get_layer(name)
        if layer.use_bias or name in self.use_bias:
            return self.weights[name][1]
        return np.zeros(self.weights[name][0].shape[-1], np.float32)

    def add_to_bias(self, name, delta):
        if len(self.weights[name]) == 1:
            self.weights[name].append(np.zeros(self.weights[name][0].shape[-1], np.float32))
            self.use_bias[name] = True
        self.weights[name][1] = (self.weights[name][1] + delta).astype(np.float32)

    def rebuild(self):
        def clone_layer(layer):
            config = layer.get_config()
            if layer.name in self.use_bias:
                config["use_bias"] = True
            if produces_channels(layer):
                config[produces_channels(layer)] = int(self.weights[layer.name][0].shape[-1])
            return layer.__class__.from_config(config)

        clone = self.front.keras().models.clone_model(self.model, clone_function=clone_layer)
        for layer in clone.layers:
            layer.set_weights(self.weights[layer.name])
        return clone


def _identity(layer, axis):
    weights = layer.get_weights()
    if not weights or not (produces_channels(layer) or role_of(layer) == "BatchNormalization"):
        return np.arange(0)
    shape = weights[0].shape
    if role_of(layer) == "BatchNormalization":
        return np.arange(shape[0])
    return np.arange(shape[-1] if axis == "out" else shape[-2])


def _strip_producer(graph: ChannelGraph, work: _Work, region: Region, result: StripResult) -> bool:
    name = region.producer
    if region.opaque or not region.paths:
        return False
    kernel = work.kernel(name)
    channels = kernel.shape[-1]
    dead = np.all(kernel.reshape(-1, channels) == 0, axis=0)
    layer = graph.layers[name]
    activation = work.front.keras().activations.get(layer.get_config()["activation"])
    constant = np.asarray(activation(work.bias(name)[None, :]), np.float32)[0]
    unused, foldable, values = np.ones(channels, bool), dead.copy(), {}
    for consumer, path in region.paths.items():
        values[consumer] = _propagate(graph, name, path, constant)
        unused &= _input_unused(work.kernel(consumer), channels)
        foldable &= _foldable(graph.layers[consumer], values[consumer], channels)
    remove = unused | (dead & foldable)
    for index in np.flatnonzero(dead & ~remove):
        result.notes.append(
            f"{name} channel {int(result.index_map[name]['out'][index])} is constant "
            f"({constant[index]:g}) but meets 'same' padding downstream; kept"
        )
    if remove.all():
        remove[np.argmax(~dead) if (~dead).any() else 0] = False  # a layer keeps at least one channel
    if not remove.any():
        return False
    originals, reasons = result.index_map[name]["out"], result.removed.setdefault(name, {})
    for index in np.flatnonzero(remove):
        reasons[int(originals[index])] = (
            "unused by its consumers"
            if unused[index]
            else (f"constant {constant[index]:g}, folded into the bias of {', '.join(region.paths)}")
        )
    fold = remove & ~unused
    for consumer in region.paths:
        if fold.any():
            work.add_to_bias(consumer, _fold_delta(work.kernel(consumer), values[consumer], fold, channels))
        _slice_input(work, result, consumer, ~remove, channels)
    _slice_output(work, result, name, region, ~remove)
    return True


def _propagate(graph: ChannelGraph, producer: str, path: list, constant: np.ndarray) -> np.ndarray:
    """The producer's constant channels as they arrive at a consumer, through the model's own layers."""
    shape = (1,) + tuple(output_shape(graph.layers[producer])[1:])
    x = np.broadcast_to(constant, shape).astype(np.float32)
    for step in path:
        x = graph.layers[step](x, training=False)
    return np.asarray(x)[0]


def _rows_per_channel(kernel: np.ndarray, channels: int) -> np.ndarray:
    """Dense consumer: the producer channel of each kernel row (rows are position-major after Flatten)."""
    return np.arange(kernel.shape[0]) % channels


def _input_unused(kernel: np.ndarray, channels: int) -> np.ndarray:
    if kernel.ndim >= 3:
        return np.all(np.moveaxis(kernel, -2, 0).reshape(channels, -1) == 0, axis=1)
    live = np.any(kernel != 0, axis=1)
    return np.bincount(_rows_per_channel(kernel, channels), live, channels) == 0


def _foldable(consumer, values: np.ndarray, channels: int) -> np.ndarray:
    if produces_channels(consumer) == "units":  # Dense
        return np.ones(channels, bool)  # every row gets its own exact value
    flat = values.reshape(-1, channels)
    if consumer.padding == "valid":
        return np.all(flat == flat[0], axis=0)
    return np.all(flat == 0, axis=0)


def _fold_delta(kernel: np.ndarray, values: np.ndarray, fold: np.ndarray, channels: int) -> np.ndarray:
    """What the folded constant channels add to each output of the consumer, in float64."""
    kernel = kernel.astype(np.float64)
    if kernel.ndim >= 3:
        per_channel = values.reshape(-1, channels)[0] * fold
        return np.einsum("c,tco->o", per_channel, kernel.reshape(-1, channels, kernel.shape[-1]))
    rows = values.reshape(-1).astype(np.float64) * fold[_rows_per_channel(kernel, channels)]
    return rows @ kernel


def _slice_input(work: _Work, result: StripResult, consumer: str, keep: np.ndarray, channels: int) -> None:
    kernel = work.kernel(consumer)
    keep = keep if kernel.ndim >= 3 else keep[_rows_per_channel(kernel, channels)]
    work.weights[consumer][0] = kernel[..., keep, :] if kernel.ndim >= 3 else kernel[keep]
    result.index_map[consumer]["in"] = result.index_map[consumer]["in"][keep]


def _slice_output(work: _Work, result: StripResult, name: str, region: Region, keep: np.ndarray) -> None:
    work.weights[name] = [w[..., keep] for w in work.weights[name]]
    result.index_map[name]["out"] = result.index_map[name]["out"][keep]
    for step in region.passthrough:
        if work.weights[step]:  # BatchNormalization: gamma, beta, moving mean and variance per channel
            work.weights[step] = [w[keep] for w in work.weights[step]]
            result.index_map[step]["out"] = result.index_map[step]["out"][keep]
            result.index_map[step]["in"] = result.index_map[step]["out"]


def _feeding_producer(graph: ChannelGraph, name: str):
    while graph.class_of(name) in PASSTHROUGH and len(graph.inbound[name]) == 1:
        name = graph.inbound[name][0]
    return name if name in graph.producers() else None


def _check_merges(graph: ChannelGraph, work: _Work, on_unsafe: str, result: StripResult) -> None:
    """Refuse (or note) an elementwise merge whose branches have different dead channels."""
    for name in graph.topological():
        if graph.class_of(name) not in MERGES or graph.class_of(name) == "Concatenate":
            continue
        dead = {}
        for source in graph.inbound[name]:
            producer = _feeding_producer(graph, source)
            if producer is not None:
                kernel = work.kernel(producer)
                flat = kernel.reshape(-1, kernel.shape[-1])
                dead[producer] = [int(c) for c in np.flatnonzero(np.all(flat == 0, axis=0))]
        if len({tuple(v) for v in dead.values()}) > 1:
            detail = "; ".join(f"'{p}' has dead channels {v}" for p, v in dead.items())
            message = (
                f"{graph.class_of(name)} layer '{name}' joins branches whose pruned channels disagree "
                f"({detail}): strip cannot rewire it safely; prune the same channels in every branch"
            )
            if on_unsafe == "raise":
                raise StripError(message)
            result.notes.append(message + "; kept")


def _rehold(stripped, original, maps: dict):
    """Hold, on the stripped model, the original holds that survive, sliced to the new shapes."""
    entries = MaskManifest()
    for layer, weight in maskable_records(resolved(original).record):
        if weight.held is None:
            continue
        keras_layer = original.get_layer(layer.name)
        mask, target = (
            _slice_like(a, keras_layer, weight.name, maps[layer.name]) for a in (weight.held, weight.targets)
        )
        path = f"{layer.name}/{weight.name}"
        if (mask & (target == 0)).any():
            entries.prune(path, where=mask & (target == 0))
        if (mask & (target != 0)).any():
            entries.freeze(path, value=target, where=mask & (target != 0))
    return hold(stripped, entries)


def _slice_like(array: np.ndarray, layer, weight_name: str, maps: dict) -> np.ndarray:
    if not produces_channels(layer):
        return array
    if weight_name == "bias":
        return array[maps["out"]]
    return array[..., maps["in"], :][..., maps["out"]]
