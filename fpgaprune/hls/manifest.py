"""The export manifest: kernels kept and pruned by original index, the strip's index map, quantizers,
hashes of the weight headers, what code each layer got (with its hardware record, `node_record.py`), the
board, the config, the input type, and the versions of the stack. Later stages reload the export from it."""

import hashlib
import re
from importlib import metadata
from pathlib import Path

import numpy as np

from fpgaprune.hls.attribute_keys import PLAN, SPARSE_SOURCE
from fpgaprune.hls.node_record import node_record, record_json

FORMAT = "fpgaprune.export/4"  # 2: each kernel-sparse node's hardware record and the board's spec; 3: the
# shipped code carries hls4ml's trace calls, and `traced_outputs` gives each traced layer's output size; 4: the
# records carry the bias (the DA circuit adds it), and `names` maps renamed layers to the user's names
STOCK = "hls4ml stock code: zeros left to the HLS compiler"
SPARSE = "kernel-sparse: one multiplication site per live weight"
DA = "distributed arithmetic (da4ml): zero weights make no logic"
SCALE = "hls4ml stock code: one scale per output channel (alpha), no weight matrix"
PACKAGES = ("tensorflow", "tf-keras", "qkeras", "hls4ml", "numpy", "da4ml", "fpgaprune")


def versions() -> dict:
    found = {}
    for package in PACKAGES:
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = None
    return found


def quantized_kernel(layer):
    """The kernel as the hardware holds it (after the layer's quantizer, if any), or None, from the layer's record.
    Per-channel scales (alpha='auto'/'auto_po2') are factored out into `<layer>_alpha`: the kernel is on the alpha=1
    grid."""
    kernel = layer.kernel
    if kernel is None:
        return None
    return kernel.grid if kernel.scaled else kernel.quantized


def _kernels(layer, maps: dict) -> dict:
    """Kept and pruned (ci, co) kernels of a conv layer, or rows/columns of a Dense one, by original index."""
    kernel = quantized_kernel(layer)
    alive = np.abs(kernel).reshape(-1, *kernel.shape[-2:]).sum(axis=0) != 0  # (ci, co)
    ins = maps.get("in", range(alive.shape[0]))
    outs = maps.get("out", range(alive.shape[1]))
    pairs = [(int(ins[i]), int(outs[o])) for i in range(alive.shape[0]) for o in range(alive.shape[1])]
    kept = [list(p) for p, a in zip(pairs, alive.ravel()) if a]
    pruned = [list(p) for p, a in zip(pairs, alive.ravel()) if not a]
    key = "weights" if kernel.ndim == 2 else "kernels"
    return {
        f"{key}_kept": kept,
        f"{key}_pruned": pruned,
        "dead_outputs": [int(outs[o]) for o in range(alive.shape[1]) if not alive[:, o].any()],
    }


def _code(node) -> str:
    if node.get_attr(PLAN) is not None:
        return SPARSE
    if node.class_name == "ApplyAlpha":
        return SCALE
    return DA if str(node.get_attr("strategy", "")).lower() == "distributed_arithmetic" else STOCK


def _header_hashes(project: Path, node) -> dict:
    hashes = {}
    for variable in node.get_weights():
        header = project / "firmware" / "weights" / f"{variable.name}.h"
        if header.exists():
            hashes[variable.name] = hashlib.sha256(header.read_bytes()).hexdigest()
    return hashes


def live_table_entries(source: str) -> int:
    """The `{input, output}` entries of a generated live-weight table: one product each per output position."""
    table = source.split("[2] = {", 1)[1].split("};", 1)[0] if "[2] = {" in source else ""
    return len(re.findall(r"\{\d+, \d+\},(?! // no live weight)", table))


def node_entry(node, project: Path) -> dict:
    """What one hls4ml node with weights became in the project."""
    entry = {"class": node.class_name, "code": _code(node), "weight_headers_sha256": _header_hashes(project, node)}
    plan = node.get_attr(PLAN)
    if plan is not None:
        source = str(node.get_attr(SPARSE_SOURCE))
        entry.update(
            original_layer=plan.origin.layer,
            weights=plan.n_in * plan.n_out,
            live_weights=plan.n_live,
            multiplication_sites=live_table_entries(source),
            notes=plan.notes,
            hardware=record_json(node_record(node)),
        )
    return entry


def build_manifest(record, hls_model, project: Path, index_map: dict, extra: dict) -> dict:
    """The manifest of an exported project (JSON-ready), from the model's record."""
    layers = {}
    for layer in record.layers.values():
        if quantized_kernel(layer) is None or quantized_kernel(layer).ndim not in (2, 3, 4):
            continue
        layers[layer.name] = {"quantizers": layer.quantizer_texts, **_kernels(layer, index_map.get(layer.name, {}))}
    nodes = {
        node.name: node_entry(node, project)
        for node in hls_model.get_layers()
        if node.get_weights() or _code(node) == DA
    }
    maps = {name: {axis: [int(i) for i in values] for axis, values in axes.items()} for name, axes in index_map.items()}
    return {"format": FORMAT, **extra, "versions": versions(), "layers": layers, "hls_nodes": nodes, "index_map": maps}
