"""Place and route at scale, and what the estimates were worth (issue 70, items 6 and 7).

Designs: four single QDense layers of 512 to 3,072 products (6-bit weights and inputs, unrolled: about 20 LUT4 a
product), up to about 70% of the ULX3S's LFE5U-85F, the digits network's stream (`bench_rtl_clock.py`) and a wider
one (16 and 28 filters: about 66% of the 85F by the rule). Each
is exported once by the RTL backend (latency cutoff 2), then measured on the same Verilog:
- placed and routed on the LFE5U-85F by yosys `synth_ecp5` + nextpnr-ecp5 against 100 MHz (with `--pnr-options`,
  as `--no-tmdriv`), with a time cap per tool: LUT4, FF, the clock, each tool's seconds and peak memory, and
  nextpnr's seconds by phase;
- synthesized for the ZCU102's UltraScale+ by yosys `synth_xilinx`, flattened (synthesis only): LUT6.
The digits stream is also placed and routed with the nextpnr options given by `--options`, side by side.

Estimates against those counts, per family: `LUTs = scale x da4ml cost`, its scale fitted on two of the designs
(FIT) and its error measured on the others (held out); and the Xilinx scale fpgaprune already records
(`resources.calibration.recorded()`, fitted on single layers) on every design. `--estimates-from` recomputes them
from records of this benchmark (a later record's counts replacing an earlier's).

    .venv/bin/python benchmarks/bench_rtl_scale.py [--designs ...] [--cap-s 2400] [--pnr-options=--no-tmdriv]
        [--options=--no-tmdriv ...] [--synth-only] [--estimates-from RECORD ...]
"""

import argparse
import re
import shlex
import sys
import tempfile
from pathlib import Path

import numpy as np

DESIGNS = {"mlp-512": (32, 16), "mlp-1024": (64, 16), "mlp-2048": (64, 32), "mlp-3072": (96, 32), "digits": None}
STREAMS = {"digits": (8, 16), "digits-16x28": (16, 28)}  # the digits stream's filters; the wider one: ~66% by the rule
DESIGNS["digits-16x28"] = None
FIT = ("mlp-512", "mlp-2048")  # the ECP5 scale is fitted on these; every other design is held out
CUTOFF = 2.0  # the ECP5 default latency cutoff (the backend's LATENCY_CUTOFF)
BITS = "quantized_bits(6,0,alpha=1)"


def _dense(n_in: int, n_out: int):
    import qkeras

    from fpgaprune.tfk import keras

    keras.utils.set_random_seed(n_in * n_out)
    return keras.Sequential(
        [keras.Input((n_in,)), qkeras.QDense(n_out, kernel_quantizer=BITS, bias_quantizer=BITS, name="fc")]
    )


def _exported(name: str, scratch: Path):
    """The design `name` exported by the RTL backend for the ULX3S, with its live products."""
    import fpgaprune as fp

    config = {"RTL": {"LatencyCutoff": CUTOFF}}
    if DESIGNS[name] is None:
        sys.path.insert(0, str(Path(__file__).parent))
        from bench_rtl_clock import _network
        from sklearn.datasets import load_digits

        x = (np.round(load_digits().data / 16 * 8) / 8).reshape(-1, 8, 8, 1)
        model = fp.prune(_network(STREAMS[name]), selections=["conv2[:, :, 3, 5]", "conv2[:, :, :, 7]"])
        exported = fp.export(model, config, "ulx3s-85f", scratch / name, x=x[:100], backend="RTL")
        return exported, _stream_products(exported.manifest)
    n_in, n_out = DESIGNS[name]
    x = np.random.default_rng(0).integers(0, 64, (64, n_in)) / 64
    exported = fp.export(_dense(n_in, n_out), config, "ulx3s-85f", scratch / name, x=x, backend="RTL")
    return exported, exported.manifest["live_weights"]


def _stream_products(manifest: dict) -> int:
    """Live products over a stream's output positions: each stage's live weights times its positions."""
    return sum(stage["live_weights"] * int(np.prod(stage["output"][:-1])) for stage in manifest["stages"])


def _measured(name: str, exported, cap: float, options=()) -> dict:
    from fpgaprune.rtl.place_route import measure
    from fpgaprune.support.tools import ToolError

    try:
        placed = measure(exported.path, timeout_s=cap, options=options)
    except ToolError as error:
        print(f"  {name}: not placed: {error}")
        return {}
    print(f"  {name}: {placed.line()}")
    print(f"    seconds {placed.seconds}, peak MB {placed.peak_mb}, nextpnr phases {placed.phases}")
    return {"lut4": placed.used["LUT4"], "ff": placed.used["TRELLIS_FF"], "mhz": placed.fmax_mhz, **placed.as_dict()}


def _synthesized(exported, cap: float) -> int | None:
    from fpgaprune.rtl.place_route import measure
    from fpgaprune.support.tools import ToolError

    try:
        return measure(exported.path, board="zcu102", timeout_s=cap).used["LUT"]
    except ToolError as error:
        print(f"    synth_xilinx: {error}")
        return None


def _estimates(rows: dict) -> None:
    """Per family, the scale from da4ml cost to LUTs fitted on FIT and its errors on the designs held out
    (`resources.calibration`'s own fit); then the scale fpgaprune records for Xilinx (fitted on single layers) on
    every design."""
    from fpgaprune.resources.calibration import Calibration, fit, recorded

    for key, unit, tool in (("lut4", "LUT4", "placed and routed"), ("lut6", "LUT6", "synth_xilinx")):
        counts = _counts(rows, key)
        fitted = [name for name in FIT if name in counts]
        if not fitted:
            continue
        calibration = fit({name: counts[name] for name in fitted})
        print(f"\n{unit} = {calibration.scale:.3f} x da4ml cost (least squares on {', '.join(fitted)})")
        _errors(calibration, {n: c for n, c in counts.items() if n not in fitted}, tool, "held out ")
    xilinx = recorded()
    print(f"\nfpgaprune's recorded LUT6 = {xilinx.scale:.3f} x da4ml cost ({xilinx.source}); every design held out")
    _errors(Calibration(xilinx.scale, []), _counts(rows, "lut6"), "synth_xilinx", "")


def _counts(rows: dict, key: str) -> dict:
    """{design: its da4ml cost and LUT count} where `key`'s count was measured, as `calibration.fit` reads them."""
    from types import SimpleNamespace

    return {n: SimpleNamespace(da4ml_cost=r["cost"], luts=r[key]) for n, r in rows.items() if r.get(key)}


def _errors(calibration, counts: dict, tool: str, label: str) -> None:
    from fpgaprune.resources.calibration import held_out_errors

    checked = held_out_errors(calibration, counts).held_out
    for name, (estimate, measured, error) in checked.items():
        print(f"  {label}{name}: estimate {estimate:.0f}, {tool} {measured}, error {error:+.1%}")
    if checked:
        errors = [error for _, _, error in checked.values()]
        print(f"  errors: mean {np.mean(errors):+.1%}, spread (std) {np.std(errors):.1%}, over {len(errors)} designs")


def _recorded_rows(path: Path) -> dict:
    """The designs' da4ml cost, LUT4 and LUT6 as a record of this benchmark printed them."""
    rows, name = {}, None
    for line in path.read_text().splitlines():
        if (found := re.match(r"(\S+): \d+ live products, .*da4ml cost ([\d.]+)", line)) is not None:
            name = found[1]
            rows[name] = {"cost": float(found[2])}
        elif name and (found := re.match(rf"  {re.escape(name)}: measured after .*: (\d+) LUT4,", line)):
            rows[name]["lut4"] = int(found[1])
        elif name and (found := re.match(r"    synth_xilinx LUT6: (\d+)", line)):
            rows[name]["lut6"] = int(found[1])
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--designs", nargs="+", default=list(DESIGNS), choices=list(DESIGNS))
    parser.add_argument("--cap-s", type=float, default=2400.0, help="time cap per tool and design")
    parser.add_argument("--options", action="append", default=[], help="nextpnr options tried on the digits stream")
    parser.add_argument("--pnr-options", default="", help="nextpnr options for every design (as --no-tmdriv)")
    parser.add_argument("--synth-only", action="store_true", help="only yosys synth_xilinx, no place and route")
    parser.add_argument(
        "--estimates-from", type=Path, nargs="+", help="only the estimates, from records of this benchmark (a later "
        "record's counts replace an earlier's)"
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.estimates_from:
        rows = {}
        for path in args.estimates_from:
            print(f"the measurements of {path.name}")
            for name, row in _recorded_rows(path).items():
                rows.setdefault(name, {}).update(row)
        return _estimates(rows)
    rows = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name in args.designs:
            exported, products = _exported(name, Path(scratch))
            row = {"cost": exported.manifest["da4ml_cost"], "products": products}
            print(f"{name}: {products} live products, {exported.manifest['live_weights']} live weights in its "
                  f"circuits, da4ml cost {row['cost']:g}")  # fmt: skip
            if not args.synth_only:
                row.update(_measured(name, exported, args.cap_s, shlex.split(args.pnr_options)))
            row["lut6"] = _synthesized(exported, args.cap_s)
            print(f"    synth_xilinx LUT6: {row['lut6']}")
            rows[name] = row
            if name == "digits" and not args.synth_only:
                for options in args.options:
                    tried = _measured(f"digits {options}", exported, args.cap_s, shlex.split(options))
                    rows[f"digits {options}"] = {"cost": row["cost"], **tried}
    if args.synth_only:
        return _estimates(rows)
    print("\ndesign               live products  da4ml cost  LUT4   FF     MHz    yosys s  nextpnr s  nextpnr MB")
    for name, row in rows.items():
        if "lut4" in row:
            print(
                f"{name:<20} {row.get('products', ''):<14} {row['cost']:<11g} {row['lut4']:<6} {row['ff']:<6} "
                f"{row['mhz']:<6.1f} {row['seconds']['yosys']:<8} {row['seconds']['nextpnr']:<10} "
                f"{row['peak_mb']['nextpnr']}"
            )
        else:
            print(f"{name:<20} {row.get('products', ''):<14} {row['cost']:<11g} not placed within the cap")
    _estimates({name: row for name, row in rows.items() if " " not in name})


if __name__ == "__main__":
    from record import run_recorded

    run_recorded(main, __file__)
