"""The documented ECP5 run, measured (issue 70, item 6): `fpgaprune run examples/digits_ulx3s.yaml`, the default
digits network pruned (60% of conv2's kernels) and quantized, written as RTL and placed and routed by yosys and
nextpnr-ecp5 on the ULX3S's LFE5U-85F against 100 MHz, the dense design and the pruned one one after the other.
Prints, per design, what the run's synth stage measured (LUT4, FF, the clock, each tool's seconds and peak memory,
nextpnr's seconds by phase) and the estimate before place and route beside it; and the run's wall time.

    .venv/bin/python benchmarks/bench_rtl_example.py [--from RUN_DIR]

`--from` reads a finished run's `synth/measured.json` instead of running it (its wall time is then not known).
"""

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXAMPLE = Path(__file__).parent.parent / "examples" / "digits_ulx3s.yaml"


def _run(scratch: Path) -> tuple[Path, float]:
    """The example run in `scratch` (its outputs there): its run directory and its wall seconds."""
    config = scratch / EXAMPLE.name
    shutil.copy(EXAMPLE, config)
    started = time.monotonic()
    command = [str(Path(sys.executable).with_name("fpgaprune")), "run", str(config)]
    subprocess.run(command, cwd=scratch, check=True)
    return scratch / "runs" / "digits_ulx3s", time.monotonic() - started


def _design_lines(name: str, measured: dict) -> list:
    phases = ", ".join(f"{phase} {seconds:.0f} s" for phase, seconds in measured.get("phases", {}).items())
    seconds, peak = measured.get("seconds", {}), measured.get("peak_mb", {})
    return [
        f"{name}: {measured['line']}",
        f"  place and route: yosys {seconds.get('yosys', 0):.0f} s ({peak.get('yosys', 0)} MB), nextpnr "
        f"{seconds.get('nextpnr', 0):.0f} s ({peak.get('nextpnr', 0)} MB); together "
        f"{sum(seconds.values()) / 60:.1f} min",
        f"  nextpnr by phase: {phases}",
        f"  {measured.get('estimate', 'no estimate')}",
    ]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="run_dir", type=Path, help="a finished run of the example to read")
    args = parser.parse_args(argv)
    wall = None
    with tempfile.TemporaryDirectory(prefix="fpgaprune-example-") as scratch:
        run_dir = args.run_dir
        if run_dir is None:
            run_dir, wall = _run(Path(scratch))
        measured = json.loads((run_dir / "synth" / "measured.json").read_text())
        print(f"example: {EXAMPLE.name} (board {measured['board']}, each tool at most {measured['time_limit_s']:g} s)")
        for name in ("dense", "pruned"):
            print("\n".join(_design_lines(name, measured[name])))
    dense, pruned = measured["dense"]["used"]["LUT4"], measured["pruned"]["used"]["LUT4"]
    print(f"pruned / dense LUT4: {pruned / dense:.3f}")
    print(f"run wall time: {wall / 60:.1f} min" if wall else "run wall time: not measured here (--from)")


if __name__ == "__main__":
    from record import run_recorded

    run_recorded(main, __file__)
