"""The hardware facts of one kernel-sparse hls4ml node, kept in the project's manifest.

The estimates, the yosys measurements and the report read these records, from the manifest of the project
that ships, instead of converting the model again. A record holds the node's live weights as the header
holds them (its `LivePlan`) and the types, reuse factor, strategy and positions that price them.
"""

from dataclasses import dataclass

import numpy as np

from fpgaprune.hls.attribute_keys import FABRIC, PLAN
from fpgaprune.hls.live_weights import KernelOrigin, LivePlan, header_values
from fpgaprune.quantize.fixed_types import FixedType


@dataclass
class NodeRecord:
    """One kernel-sparse node: its live weights and the hardware types that price them."""

    name: str
    plan: LivePlan
    weight: FixedType
    input: FixedType
    accum_bits: int
    reuse: int
    strategy: str  # "latency", "resource" or "resource_unrolled"
    io_type: str
    positions: int  # output pixels (1 for Dense)
    bias: np.ndarray | None = None  # the bias as the header holds it (None: no bias, or an older manifest)
    fabric: bool = False  # every product built from LUTs (`Multipliers: fabric`, hls/multipliers.py)


def _fixed(precision) -> FixedType:
    return FixedType(int(precision.width), int(precision.integer), bool(precision.signed))


def node_record(node) -> NodeRecord:
    """The record of an hls4ml node that fpgaprune's pass made kernel-sparse."""
    positions = int(node.get_attr("out_height", 1) * node.get_attr("out_width", 1)) if node.get_attr("out_width") else 1
    bias = node.weights.get("bias")
    return NodeRecord(
        node.name,
        node.get_attr(PLAN),
        _fixed(node.get_weights("weight").type.precision),
        _fixed(node.get_input_variable().type.precision),
        int(node.get_attr("accum_t").precision.width),
        int(node.get_attr("reuse_factor", 1)),
        str(node.get_attr("strategy", "latency")).lower(),
        node.model.config.get_config_value("IOType"),
        positions,
        header_values(bias, np.asarray(bias.data).ravel()) if bias is not None else None,
        bool(node.get_attr(FABRIC, False)),
    )


def record_json(record: NodeRecord) -> dict:
    """JSON-ready; the header values are kept exactly (floats written with all their digits)."""
    plan = record.plan
    return {
        "kind": plan.kind,
        "window": list(plan.window),
        "n_out": plan.n_out,
        "origin": {
            "layer": plan.origin.layer,
            "in": list(map(int, plan.origin.inputs)),
            "out": list(map(int, plan.origin.outputs)),
            "layout": plan.origin.layout,
        },
        "rows": plan.rows.tolist(),
        "cols": plan.cols.tolist(),
        "values": plan.values.tolist(),
        "weight_type": record.weight.hls(),
        "input_type": record.input.hls(),
        "accum_bits": record.accum_bits,
        "reuse_factor": record.reuse,
        "strategy": record.strategy,
        "io_type": record.io_type,
        "positions": record.positions,
        "bias": None if record.bias is None else record.bias.tolist(),
        "multipliers": "fabric" if record.fabric else "auto",
    }


def record_from_json(name: str, data: dict) -> NodeRecord:
    """The inverse of `record_json`."""
    found = data["origin"]
    origin = KernelOrigin(found["layer"], found["in"], found["out"], found.get("layout"))
    plan = LivePlan(
        tuple(data["window"]),
        int(data["n_out"]),
        np.asarray(data["rows"], np.int64),
        np.asarray(data["cols"], np.int64),
        np.asarray(data["values"], np.float64),
        origin,
        data["kind"],
    )
    return NodeRecord(
        name,
        plan,
        FixedType.parse(data["weight_type"]),
        FixedType.parse(data["input_type"]),
        int(data["accum_bits"]),
        int(data["reuse_factor"]),
        data["strategy"],
        data["io_type"],
        int(data["positions"]),
        None if data.get("bias") is None else np.asarray(data["bias"]),
        data.get("multipliers") == "fabric",
    )
