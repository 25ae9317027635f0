"""fpgaprune's kernel-sparse export against hls4ml 1.3's own ways of building a pruned model, side by side.

One CNN (Fashion-MNIST, `--filters` channels, 16-16 by default, at stride 2, as `bench_sparse_products.py`) is
trained for one epoch, its conv2 kernels and fc weights pruned one-shot by L1 to `--sparsity`, quantized to 8 bits,
and exported as:
- fpgaprune: kernel-sparse, Latency, io_parallel, reuse factor 1;
- stock Latency, io_parallel, RF 1: hls4ml leaves the zeros to the HLS compiler;
- stock Resource, io_parallel, RF `--reuse`: the zeros are stored in ROM and multiplied;
- stock resource_unrolled, io_stream, RF `--reuse`: hls4ml writes one product per nonzero weight (it needs RF > 1,
  where RF 1 silently becomes Resource, and io_stream for convolutions);
- stock distributed_arithmetic, io_parallel, RF 1: da4ml adder graphs, zeros make no logic; it has no products.

Printed per design, measured in this run: products executed per inference (instrumented C-sim) / live weights x
positions, the g++ build time of the C-sim library, C-sim against QKeras, the rules' estimate (DSP, LUT: the
products each design executes, zeros that a Resource design multiplies priced as multipliers) and, for the DA
design, yosys' LUTs of each layer's adder graph (one output pixel; a large layer in parts, `circuit_parts.py`,
which share no logic; their da4ml cost against the whole layer's is printed beside it).
"""

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_sparse_products import cnn, live_products, pruned_qkeras

from fpgaprune import data
from fpgaprune.hls import convert_model, count_products, csim_check, export_config, load_board, load_preset
from fpgaprune.hls.manifest import quantized_kernel
from fpgaprune.pruning.costs import output_positions
from fpgaprune.quantize import input_type
from fpgaprune.record import record_of, resolved
from fpgaprune.resources.estimator import Cost, LayerTypes, layer_cost
from fpgaprune.support.text_table import format_rows
from fpgaprune.tfk import keras

BOARD = "zcu102"
ZERO_AS_MULTIPLIER = 3  # a code that is neither 0 nor a power of two: a stored zero still passes a multiplier


def designs(reuse: int) -> dict:
    """label -> (preset dict, kernel-sparse?)."""

    def preset(name, strategy=None, rf=None):
        config = load_preset(name)
        model = config["HLSConfig"]["Model"]
        if strategy:
            model["Strategy"] = strategy
        if rf:
            model["ReuseFactor"] = rf
        return config

    return {
        "fpgaprune (Latency, io_parallel, RF 1)": (preset("latency_parallel"), True),
        "stock Latency (io_parallel, RF 1)": (preset("latency_parallel"), False),
        f"stock Resource (io_parallel, RF {reuse})": (preset("resource_parallel", rf=reuse), False),
        f"stock resource_unrolled (io_stream, RF {reuse})": (
            preset("resource_stream", "resource_unrolled", reuse),
            False,
        ),
        "stock distributed_arithmetic (io_parallel, RF 1)": (preset("distributed_arithmetic"), False),
    }


def estimate(model, node_types: dict, strategy: str, reuse: int) -> Cost:
    """The rules' price of the products a design executes: the nonzero weights, or (Resource) every weight."""
    total = Cost()
    for layer in model.layers:
        kernel = quantized_kernel(record_of(model).layers[layer.name])
        if kernel is None or layer.name not in node_types:
            continue
        weight_bits, frac, input_bits, accum_bits = node_types[layer.name]
        codes = np.round(kernel.reshape(-1, kernel.shape[-1]) * 2.0**frac).astype(np.int64)
        if strategy == "resource":
            codes = np.where(codes == 0, ZERO_AS_MULTIPLIER, codes)
        rows, outputs = np.nonzero(codes)
        types = LayerTypes(
            weight_bits, frac, input_bits, accum_bits, reuse, strategy, "io_parallel", output_positions(layer), 27, 18
        )
        cost = layer_cost(codes[rows, outputs], outputs, types)
        total.dsp, total.lut = total.dsp + cost.dsp, total.lut + cost.lut
    return total


def node_types(hls_model) -> dict:
    """layer -> (weight bits, weight fraction bits, input bits, accumulator bits) as hls4ml typed it."""
    found = {}
    for node in hls_model.get_layers():
        weights = node.get_weights("weight") if "weight" in node.weights else None
        if weights is None or node.get_attr("accum_t") is None:
            continue
        w = weights.type.precision
        found[node.name] = (
            int(w.width),
            int(w.width - w.integer),
            int(node.get_input_variable().type.precision.width),
            int(node.get_attr("accum_t").precision.width),
        )
    return found


def da_luts(model, x, family: str) -> str:
    """yosys LUTs of every conv/dense layer's DA adder graph (one output pixel), summed; a large layer is measured in
    parts (no logic shared between parts), and the text says so."""
    from fpgaprune.hls.precision import derive_precisions
    from fpgaprune.resources.yosys import fixed_kif, synthesize_all

    plan = derive_precisions(record_of(model), input_type(x))
    circuits = {
        layer.name: (kernel.reshape(-1, kernel.shape[-1]), fixed_kif(_input_of(model, layer, plan, x)))
        for layer in model.layers
        if (kernel := quantized_kernel(record_of(model).layers[layer.name])) is not None
    }
    layers = dict(synthesize_all(circuits, family))
    # a layer in parts: its parts' da4ml cost against the whole layer's says how far the sum may be from one circuit
    parts = [
        f"{name} in {s.parts} parts, da4ml cost {s.da4ml_cost:.0f} vs {s.layer_da4ml_cost:.0f} whole"
        for name, s in layers.items()
        if s.parts > 1
    ]
    return f"{sum(s.luts for s in layers.values())} LUT" + (f" ({'; '.join(parts)})" if parts else "")


def _input_of(model, layer, plan, x):
    """The fixed type feeding `layer` (a Sequential model): the nearest earlier layer with a result type."""
    names = [entry.name for entry in model.layers]
    for name in reversed(names[: names.index(layer.name)]):
        if "result" in plan.types.get(name, {}):
            return plan.types[name]["result"]
    return input_type(x)


def _measured_da(model, x) -> str:
    from fpgaprune.support.tools import ToolError

    try:
        return f"{da_luts(model, x, load_board(BOARD).family)}, yosys"
    except ToolError as error:  # a wide layer's adder graph can outlast yosys' time limit
        return f"not measured: {error}"


def measure(model, x, label, preset, sparse, workdir: Path, yosys: bool) -> tuple:
    config, io_type, _ = export_config(resolved(model), preset, x, kernel_sparse=sparse)
    hls_model = convert_model(resolved(model), config, workdir / label.split()[0], io_type=io_type, backend="Vitis")
    started = time.perf_counter()
    hls_model.compile()
    build = time.perf_counter() - started
    check = csim_check(hls_model, resolved(model), x, input_type(x))
    strategy = str(preset["HLSConfig"]["Model"]["Strategy"]).lower()
    if strategy == "distributed_arithmetic":
        products = "none (adder graphs)"
        cost = "-"
        measured = _measured_da(model, x) if yosys else "not run"
    else:
        products = f"{sum(count_products(hls_model, x[:2]).values()) / live_products(model):.2f}"
        rf = int(preset["HLSConfig"]["Model"]["ReuseFactor"])
        priced = estimate(model, node_types(hls_model), strategy, rf)  # only Resource multiplies stored zeros
        cost, measured = f"{priced.dsp} DSP, {priced.lut} LUT", "-"
    return (
        label,
        products,
        f"{build:.1f}",
        "bit-exact" if check.bit_exact else f"{check.mismatches} differ",
        cost,
        measured,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sparsity", type=float, default=0.75)
    parser.add_argument("--reuse", type=int, default=4)
    parser.add_argument("--no-yosys", action="store_true")
    parser.add_argument("--filters", default="16,16", help="conv1,conv2 channels (8,8: small enough for yosys)")
    args = parser.parse_args()
    dataset = data.fashion_mnist()
    pretrained = cnn(tuple(int(f) for f in args.filters.split(",")))
    pretrained.compile(keras.optimizers.Adam(1e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    pretrained.fit(dataset.x_train, dataset.y_train, batch_size=128, epochs=1, verbose=0)
    model, x = pruned_qkeras(pretrained, dataset, args.sparsity), dataset.x_test[:50]
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for label, (preset, sparse) in designs(args.reuse).items():
            rows.append(measure(model, x, label, preset, sparse, Path(scratch), not args.no_yosys))
            print("  " + " | ".join(rows[-1]), flush=True)
    header = (
        "design",
        "executed / (live x positions)",
        "C-sim build s",
        "C-sim vs QKeras",
        "estimate (rules)",
        "measured",
    )
    print(
        f"\nfilters {args.filters}, sparsity {args.sparsity}, {live_products(model)} live products per inference, "
        f"board {BOARD}"
    )
    print("\n".join(format_rows(header, rows)))


if __name__ == "__main__":
    from record import run_recorded

    run_recorded(main, __file__)
