"""The distributed-arithmetic price of `bench_hgq2_front`'s points: each saved point's kernel layers as the DA
circuit hls4ml's `distributed_arithmetic` strategy builds (da4ml's adder graph of the live weights, with hls4ml's
solver settings; an HGQ2 layer's inputs typed per row as hls4ml's DA pass types them), priced by da4ml's cost x the
recorded calibration (`fpgaprune.resources.calibration.RECORD`), and, for a sample, measured by yosys.

Why a second price: at reuse 1 a DA circuit is built from the weights' values alone (no multipliers, no DSPs),
so HGQ2's per-weight bits and per-value activation types count in full; the first price (`fp.estimate` of the
`latency_parallel` export) is fpgaprune's rules for hls4ml's Latency multipliers.
"""

import json
import tempfile
from pathlib import Path

PRESET, BOARD = "latency_parallel", "zcu102"


def da_matrices(model, exported) -> dict:
    """{node: (live matrix, input types, None, bias)} of the export's kernel layers, typed as a run's yosys
    measurement types them (`measurement_plan.input_types`: an HGQ2 layer's inputs one type per row, as hls4ml's
    DA pass gives them; any other layer's its node's one input type)."""
    from fpgaprune.record import record_of
    from fpgaprune.resources.measure import live_matrix
    from fpgaprune.resources.measurement_plan import input_types

    record = record_of(model)
    return {r.name: (live_matrix(r), input_types(r, record), None, r.bias) for r in exported.nodes.values()}


def exported_matrices(model, x) -> dict:
    import fpgaprune as fp

    with tempfile.TemporaryDirectory(prefix="hgq2-front-da-") as scratch:
        exported = fp.export(model, PRESET, BOARD, Path(scratch) / "prj", x=x[:100], tb_samples=10)
        return da_matrices(model, exported)


def da_costs(model, x) -> dict:
    """{node: da4ml's cost} of the model's DA circuits, each traced whole (no yosys)."""
    from fpgaprune.resources.yosys import trace_costs

    return {name: float(cost) for name, cost in trace_costs(exported_matrices(model, x), float("inf")).items()}


def da_record(path: Path, key: dict, x) -> dict:
    """A saved point's DA price: da4ml's cost per layer, and the calibrated LUT estimate of their sum."""
    import time

    import fpgaprune as fp
    from fpgaprune.resources.calibration import recorded

    started = time.perf_counter()
    costs = da_costs(fp.load_model(path, compile=False), x)
    calibration = recorded()
    return {
        **key,
        "da4ml_cost": costs,
        "DA_LUT": calibration.estimate(sum(costs.values())),
        "da_source": f"calibrated estimate: {calibration.scale:.3f} x da4ml cost ({calibration.source})",
        "seconds": round(time.perf_counter() - started, 1),
    }


def measured_record(path: Path, key: dict, x, workers: int, layer: str) -> dict:
    """yosys on `layer`'s DA circuit of a saved point (in parts where large), with the calibrated estimate's
    error on it (the parts' da4ml cost where it went in parts: no logic is shared between parts)."""
    import fpgaprune as fp
    from fpgaprune.hls import load_board
    from fpgaprune.resources.calibration import recorded
    from fpgaprune.resources.yosys import Unmeasured, synthesize_all

    matrices = {n: m for n, m in exported_matrices(fp.load_model(path, compile=False), x).items() if n == layer}
    if not matrices:
        raise SystemExit(f"{path}: no kernel layer {layer!r} in its export")
    family, calibration = load_board(BOARD).family, recorded()
    layers = {}
    for name, synthesis in synthesize_all(matrices, family, workers=workers):
        if isinstance(synthesis, Unmeasured):
            raise SystemExit(f"{path}: yosys on {name}: {synthesis.reason}")
        layers[name] = {
            "yosys_LUT": synthesis.luts,
            "parts": synthesis.parts,
            "da4ml_cost": synthesis.da4ml_cost,
            "da4ml_cost_whole": synthesis.layer_da4ml_cost,
            "error": calibration.estimate(synthesis.da4ml_cost) / synthesis.luts - 1,
        }
    return {**key, "layers": layers, "source": synthesis.source}


def load(path: Path) -> list:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def append(path: Path, record: dict) -> None:
    with path.open("a") as out:
        out.write(json.dumps(record) + "\n")
