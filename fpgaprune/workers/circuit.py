"""One circuit, traced by da4ml and synthesized by yosys in this process and its child: `python -m
fpgaprune.workers.circuit JOB_DIR`. The parent (`resources/yosys.py`) watches its memory and time. With
`--warm-up` instead, a tiny trace: da4ml's first call, made before any watched worker starts.

`JOB_DIR/job.json` says what to build: a constant-matrix product `x @ W (+ bias)` (`matrix.npy`, `bias.npy`)
with da4ml's settings of hls4ml's `distributed_arithmetic` pass, or the adder of partial sums of given types
(`out_kifs`). `JOB_DIR/result.json` gets yosys' cell counts, da4ml's cost and the circuit's output types.
"""

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

# hls4ml 1.3's distributed_arithmetic pass (backends/vivado/passes/distributed_arithmetic.py): HWConfig(1, -1, -1)
# and these solver options (DA_HARD_DC defaults to 2 there).
HLS4ML_SOLVER_OPTIONS = {"hard_dc": 2, "search_all_decompose_dc": True}
_CELL = r"LUT\d|INV|CARRY\w*|FD\w*|MUXF\d|DSP\w*"


def matrix_logic(weights: np.ndarray, kif, bias=None, solver_options=None):
    """da4ml's combinational logic for `x @ weights (+ bias)`, `x` of the fixed-point type `kif`: (k, i, f) for every
    input, or one array of each per input (per-value types, as hls4ml's DA pass gives an HGQ2 layer's)."""
    from da4ml.trace import FixedVariableArrayInput, HWConfig, comb_trace

    options = HLS4ML_SOLVER_OPTIONS if solver_options is None else solver_options
    inputs = FixedVariableArrayInput(weights.shape[0], HWConfig(1, -1, -1), solver_options=options)
    kif = [np.asarray(v, np.int16) if np.ndim(v) else v for v in kif]
    outputs = inputs.quantize(*kif) @ np.asarray(weights, np.float64)
    if bias is not None:
        outputs = outputs + np.asarray(bias, np.float64)
    return comb_trace(inputs, outputs)


def partial_sums_logic(out_kifs: list):
    """da4ml's logic adding the partial sums of one column run; `out_kifs[r]` is part r's (3, columns) types."""
    from da4ml.trace import FixedVariableArrayInput, comb_trace

    width = np.asarray(out_kifs[0]).shape[1]
    kifs = np.concatenate([np.asarray(k) for k in out_kifs], axis=1)
    inputs = FixedVariableArrayInput(kifs.shape[1])
    partial = inputs.quantize(kifs[0], kifs[1], kifs[2])
    total = partial[0:width]
    for r in range(1, len(out_kifs)):
        total = total + partial[r * width : (r + 1) * width]
    return comb_trace(inputs, total)


def yosys_script(root: Path, family_flag: str) -> str:
    """The yosys script for the Verilog da4ml wrote under `root/rtl` (paths relative to `root`: yowasp sees the
    working directory)."""
    src = root / "rtl" / "src"
    sources = [src / "layer.v"] + sorted(p for p in (src / "static").glob("*.v") if p.name != "lookup_table.v")
    relative = " ".join(str(p.relative_to(root)) for p in sources)
    return (
        f"read_verilog -sv {relative}; synth_xilinx -family {family_flag} -flatten -nowidelut -top layer; "
        "tee -o stat.txt stat"
    )


def cell_counts(text: str) -> dict:
    """LUT, CARRY and FF counts from `stat`: yosys 0.23 prints "LUT2  8", yosys 0.70 "8   LUT2"."""
    body = text.split("=== design hierarchy ===")[0]
    counts: dict = {}
    for first, second in re.findall(r"^\s+(\w+)\s+(\w+)\s*$", body, re.M):
        name, value = (second, first) if first.isdigit() else (first, second)
        if value.isdigit() and re.fullmatch(_CELL, name):
            counts[name] = counts.get(name, 0) + int(value)
    luts = sum(v for k, v in counts.items() if re.fullmatch(r"LUT\d", k)) + counts.get("INV", 0)
    carry = sum(v for k, v in counts.items() if k.startswith("CARRY"))
    ff = sum(v for k, v in counts.items() if re.fullmatch(r"FD\w*", k))
    return {"luts": luts, "carry": carry, "ff": ff}


def build(job_dir: Path) -> dict:
    """Trace and write the job's circuit; run yosys unless the job only asks for da4ml's cost."""
    from da4ml.codegen import RTLModel

    job = json.loads((job_dir / "job.json").read_text())
    started = time.perf_counter()
    if job["kind"] == "adder":
        comb = partial_sums_logic(job["out_kifs"])
    else:
        bias = np.load(job_dir / "bias.npy") if (job_dir / "bias.npy").exists() else None
        comb = matrix_logic(np.load(job_dir / "matrix.npy"), job["kif"], bias, job.get("solver_options"))
    result = {
        "da4ml_cost": float(comb.cost),
        "out_kifs": np.asarray(comb.out_kifs).tolist(),
        "trace_seconds": round(time.perf_counter() - started, 2),
    }
    if job.get("yosys"):
        RTLModel(comb, "layer", job_dir / "rtl").write()
        del comb
        started = time.perf_counter()
        done = subprocess.run(
            [job["yosys"], "-q", "-p", yosys_script(job_dir, job["family_flag"])],
            cwd=job_dir,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
            detail = next((line for line in lines if "error" in line.lower()), lines[-1] if lines else "no output")
            raise SystemExit(f"yosys: exit code {done.returncode}: {detail.strip()}")
        result.update(
            cell_counts((job_dir / "stat.txt").read_text()), yosys_seconds=round(time.perf_counter() - started, 2)
        )
    return result


def warm_up() -> None:
    """Trace a tiny matrix and the adder of its partial sums (`resources/yosys.compiled_tracer`)."""
    weights = np.array([[1.0, -0.5], [0.25, 0.0], [-0.75, 0.125], [0.5, 1.0]])
    comb = matrix_logic(weights, (1, 3, 4), np.array([0.5, -0.25]))
    partial_sums_logic([np.asarray(comb.out_kifs), np.asarray(comb.out_kifs)])


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--warm-up"]:
        warm_up()
        return 0
    job_dir = Path(argv[0])
    result = build(job_dir)
    (job_dir / "result.json.tmp").write_text(json.dumps(result))
    (job_dir / "result.json.tmp").replace(job_dir / "result.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
