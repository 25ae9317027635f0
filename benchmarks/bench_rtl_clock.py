"""The RTL backend's stream of the digits network's shape (QKeras: conv 3x3 x8 -> ReLU -> conv 3x3 x16 -> ReLU ->
max-pool -> flatten -> dense 10; 6-bit weights, two of conv2's kernels removed) placed and routed on the ULX3S's
LFE5U-85F by yosys and nextpnr-ecp5 against 100 MHz, at several latency cutoffs: LUT4, FF and the clock achieved,
side by side. Each place and route takes minutes on 2 cores.

    .venv/bin/python benchmarks/bench_rtl_clock.py [--cutoffs 5 2 1] [--options=--no-tmdriv]
"""

import argparse
import tempfile
from pathlib import Path

import numpy as np


def _network(filters=(8, 16)):
    import qkeras

    from fpgaprune.tfk import keras

    bits = "quantized_bits(6,0,alpha=1)"
    keras.utils.set_random_seed(0)
    relu = "quantized_relu(6,2)"
    return keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            qkeras.QConv2D(filters[0], 3, kernel_quantizer=bits, bias_quantizer=bits, name="conv1"),
            qkeras.QActivation(relu, name="relu1"),
            qkeras.QConv2D(filters[1], 3, kernel_quantizer=bits, bias_quantizer=bits, name="conv2"),
            qkeras.QActivation(relu, name="relu2"),
            keras.layers.MaxPooling2D(2, name="pool"),
            keras.layers.Flatten(name="flatten"),
            qkeras.QDense(10, kernel_quantizer=bits, bias_quantizer=bits, name="fc"),
        ]
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cutoffs", type=float, nargs="+", default=[5.0, 2.0, 1.0])
    parser.add_argument("--options", default="", help="nextpnr's options (as --no-tmdriv) for every cutoff")
    args = parser.parse_args(argv)
    from sklearn.datasets import load_digits

    import fpgaprune as fp
    from fpgaprune.rtl.place_route import measure

    x = (np.round(load_digits().data / 16 * 8) / 8).reshape(-1, 8, 8, 1)
    model = fp.prune(_network(), selections=["conv2[:, :, 3, 5]", "conv2[:, :, :, 7]"])
    print("cutoff  LUT4   FF     MHz (target 100)  da4ml cost  yosys s  nextpnr s")
    with tempfile.TemporaryDirectory() as scratch:
        for cutoff in args.cutoffs:
            config = {"RTL": {"LatencyCutoff": cutoff}}
            exported = fp.export(model, config, "ulx3s-85f", Path(scratch) / f"c{cutoff:g}", x=x[:100], backend="RTL")
            found = measure(exported.path, timeout_s=3600, options=args.options.split())
            print(
                f"{cutoff:<7g} {found.used['LUT4']:<6} {found.used['TRELLIS_FF']:<6} {found.fmax_mhz:<17.1f} "
                f"{exported.manifest['da4ml_cost']:<11g} {found.seconds['yosys']:<8} {found.seconds['nextpnr']}"
            )
        print(found.line())


if __name__ == "__main__":
    from record import run_recorded

    run_recorded(main, __file__)
