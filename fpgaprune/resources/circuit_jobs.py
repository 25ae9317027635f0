"""The circuits of a measurement as jobs: each one a worker process (`workers/circuit.py`) run under the
measurement's budgets, or a cached result. A layer's job is its whole matrix, or its parts and then the adders
of their partial sums."""

import json
import sys
import time
from concurrent.futures import Future
from pathlib import Path

import numpy as np

from fpgaprune.resources import circuit_cache
from fpgaprune.resources.circuit_parts import (
    Synthesis,
    Unmeasured,
    column_groups,
    combined,
    layer_parts,
    trace_mb,
    weight_bits,
)
from fpgaprune.support.tools import YOSYS_TIMEOUT_S, ToolError, run_watched

FAMILY_FLAG = {"7-series": "xc7", "UltraScale+": "xcup"}


class _Either:
    """Set when either event is (the measurement's own stop, or the caller's cancel)."""

    def __init__(self, *events):
        self.events = [event for event in events if event is not None]

    def is_set(self) -> bool:
        return any(event.is_set() for event in self.events)


class Runner:
    """Runs circuit jobs in worker processes, one per pool thread, within the budget; keeps a log of each."""

    def __init__(self, tool, family: str, budget, cancel=None):
        import threading

        self.tool, self.family, self.budget = tool, family, budget
        self.stop = threading.Event()
        self.cancel = _Either(self.stop, cancel)
        self.deadline = time.perf_counter() + budget.seconds
        self.scratch, self.pool, self.log, self._count = None, None, [], 0

    def submit(self, label: str, job: dict, arrays: dict) -> Future:
        """A future of the job's result (a dict, or an Unmeasured); cached results come back at once."""
        job = {**job, "family_flag": FAMILY_FLAG[self.family]}
        if job.get("yosys"):
            job["yosys"] = self.tool.command
        key = circuit_cache.circuit_key(job, arrays, self.tool.describe())
        found = circuit_cache.cached(key)
        if found is not None:
            self.log.append({"circuit": label, "cached": True, "seconds": 0.0})
            done = Future()
            done.set_result(found)
            return done
        self._count += 1
        return self.pool.submit(self._execute, label, job, arrays, key, self.scratch / str(self._count))

    def _execute(self, label: str, job: dict, arrays: dict, key: str, directory: Path):

        remaining = self.deadline - time.perf_counter()
        if self.cancel.is_set():
            return Unmeasured("stopped: the measurement was cancelled")
        if remaining <= 0:
            return Unmeasured(f"not started: the time budget ({self.budget.seconds:g} s) was spent")
        directory.mkdir(parents=True)
        (directory / "job.json").write_text(json.dumps(job))
        for name, values in arrays.items():
            np.save(directory / f"{name}.npy", values)
        limit = self.budget.per_circuit()
        watched = run_watched(
            [sys.executable, "-m", "fpgaprune.workers.circuit", str(directory)],
            min(YOSYS_TIMEOUT_S, remaining),
            limit,
            cancel=self.cancel,
        )
        self.log.append(
            {
                "circuit": label,
                "cached": False,
                "seconds": watched.seconds,
                "peak_mb": round(watched.peak_rss / 2**20),
                "stopped": watched.stopped,
            }
        )
        if watched.stopped == "memory":
            return Unmeasured(
                f"stopped: over its share of the memory budget ({limit / 2**20:.0f} MB; it reached "
                f"{watched.peak_rss / 2**20:.0f} MB)"
            )
        if watched.stopped:
            return Unmeasured(
                "stopped: the measurement was cancelled"
                if watched.stopped == "cancelled"
                else f"stopped: past the time budget ({self.budget.seconds:g} s)"
            )
        if watched.returncode != 0:
            lines = [line for line in watched.output.splitlines() if line.strip()]
            detail = next(
                (line for line in reversed(lines) if "yosys" in line or "rror" in line),
                lines[-1] if lines else "no output",
            )
            raise ToolError(
                f"yosys on {label} ({directory / 'rtl' / 'src' / 'layer.v'}): {detail.strip().removeprefix('yosys: ')}"
            )
        result = json.loads((directory / "result.json").read_text())
        circuit_cache.remember(key, result)
        return result


class LayerJob:
    """One layer's circuits: the whole matrix, or its parts, the adders of their partial sums and (when its trace
    fits the memory budget) a trace of the whole for its cost as one circuit."""

    def __init__(self, runner: Runner, name: str, weights, kif, parts, bias, part_cost, synthesize: bool = True):

        self.runner, self.weights, self.kif, self.bias = runner, weights, kif, bias
        self.name = " ".join(name) if isinstance(name, tuple) else str(name)
        self.synthesize = synthesize  # False: trace only, for da4ml's cost
        self.parts = parts or layer_parts(weights, kif, part_cost, runner.budget)
        self.whole_fits = trace_mb(*weights.shape, weight_bits(weights)) <= runner.budget.per_circuit() / 2**20
        self.futures, self.whole = [], None

    def _job(self, rows, cols, yosys: bool = True) -> tuple[dict, dict]:
        arrays = {"matrix": self.weights[rows, cols]}
        if self.bias is not None and (rows.start in (0, None)):  # the bias joins one partial sum of each column
            arrays["bias"] = np.asarray(self.bias, np.float64)[cols]
        kif = [np.asarray(v)[rows].tolist() if np.ndim(v) else v for v in self.kif]  # per input: this part's rows
        return {"kind": "matrix", "kif": kif, "yosys": yosys and self.synthesize}, arrays

    def submit(self) -> None:
        for index, part in enumerate(self.parts):
            label = self.name if len(self.parts) == 1 else f"{self.name} part {index + 1}/{len(self.parts)}"
            self.futures.append(self.runner.submit(label, *self._job(part.rows, part.cols)))
        if len(self.parts) > 1 and self.whole_fits and self.synthesize:
            everything = slice(0, self.weights.shape[0]), slice(0, self.weights.shape[1])
            self.whole = self.runner.submit(f"{self.name} (traced whole)", *self._job(*everything, yosys=False))

    def result(self):

        results = [future.result() for future in self.futures]
        labels = [f"part {index + 1}/{len(self.parts)}" for index in range(len(self.parts))]
        adders = []
        for group in column_groups(self.parts) if len(self.parts) > 1 else []:
            if len(group) > 1 and not any(isinstance(results[i], Unmeasured) for i in group):
                job = {"kind": "adder", "out_kifs": [results[i]["out_kifs"] for i in group], "yosys": self.synthesize}
                labels.append(f"adder of parts {group[0] + 1}-{group[-1] + 1}")
                adders.append(self.runner.submit(f"{self.name} {labels[-1]}", job, {}))
        results += [future.result() for future in adders]
        failed = next(((label, r) for label, r in zip(labels, results) if isinstance(r, Unmeasured)), None)
        if failed is not None:  # the caller names the layer; a part says which part
            label, unmeasured = failed
            return unmeasured if len(self.parts) == 1 else Unmeasured(f"{label}: {unmeasured.reason}")
        if not self.synthesize:
            return float(sum(r["da4ml_cost"] for r in results))
        whole = self.whole.result() if self.whole is not None else None
        source = f"measured: {self.runner.tool.describe()} synth_xilinx of da4ml's adder graph"
        syntheses = [Synthesis(r["luts"], r["carry"], r["ff"], r["da4ml_cost"], source) for r in results]
        layer_cost = whole["da4ml_cost"] if isinstance(whole, dict) else None
        if len(self.parts) == 1:
            layer_cost = syntheses[0].da4ml_cost
        return combined(syntheses, len(self.parts), layer_cost)
