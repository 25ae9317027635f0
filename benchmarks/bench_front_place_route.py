"""The cheap end of the HGQ2 front priced a second time, by open tools: does the verdict against PQuantML hold?

From `results/hgq2_front/points.jsonl`, the non-dominated points of each method family (fpgaprune's methods, and
PQuantML's) at the cheap end: `--epochs` QAT epochs, 3 seeds, no DSP, mean LUT at most `--max-lut` by the record's
pricing (fp.estimate's rules, ZCU102, `latency_parallel`). Each is trained again at `--seeds` by the front's own
code (`bench_hgq2_front.point_record`, its model saved), then:
- **widened per channel**: HGQ2's datalanes (and PQuantML's HGQ ones) carry a type per value, and a stream reuses
  one circuit over positions, so each channel's input quantizer is set to its widest type over the positions
  (per-tensor types, PQuantML's fixed point, are left as they are). The widened copy is the design; its accuracy
  is measured and reported beside the trained one. Both families are widened alike;
- exported by the RTL backend as a stream (`latency_parallel`, the ULX3S's LFE5U-85F), and C-simulated against
  the widened copy (bit-exact on `--csim-samples` test images, or the point says it was not);
- measured by yosys `synth_xilinx -family xcup` (ZCU102's UltraScale+, synthesis only: LUT6), and placed and routed
  by yosys `synth_ecp5` + nextpnr-ecp5 on the LFE5U-85F (`--pnr-options`, default `--no-tmdriv`: LUT4, FF, clock)
  where its da4ml cost is at most `--place-max-cost`; nextpnr placed a 13,640-cost design in 497 s and no
  18,208-cost one within 1,800 s here (`results/bench_rtl_scale`), so larger ones say "not placed" instead.

The verdict per PQuantML point and measure (the reproduced rule price, synthesis LUT6, placed LUT4): fpgaprune's
most accurate point (the widened copy's accuracy, every measure alike) at or under the peer's count; "level" where
the difference is within the larger of the two points' seed standard deviations in the front's record (3 seeds),
"ahead" or "behind" beyond it. The stream is a different architecture from the priced `latency_parallel` design
(one circuit per layer reused over the positions, not one per position), so its counts are smaller; the verdict
compares the two families under the same measure. Records: `results/front_place_route/points.jsonl`.

    .venv-hgq2/bin/python benchmarks/bench_front_place_route.py [--max-lut 60000] [--seeds 0] [--report]
"""

import argparse
import json
import os
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
FRONT = HERE / "results" / "hgq2_front"
STREAM_BOARD, STREAM_PRESET, XILINX_BOARD = "ulx3s-85f", "latency_parallel", "zcu102"
PLACEABLE_COST = 15000.0  # da4ml cost: above it nextpnr did not finish here within 30 minutes (bench_rtl_scale)
FAMILIES = ("fpgaprune", "PQuantML")
MEASURES = {"rule LUT": "rule_LUT", "synthesis LUT6": "LUT6", "placed LUT4": "LUT4"}


def family(method: str) -> str | None:
    """ "PQuantML", "fpgaprune" (its HGQ2 methods), or None (HGQ2 alone, the QKeras reference, the long QAT)."""
    from bench_hgq2_front import OURS, PQUANT_RUNS, TWICE

    return "PQuantML" if method in PQUANT_RUNS else "fpgaprune" if method in (*OURS, *TWICE) else None


def low_cost_front(records: list, epochs: int, max_lut: float, seeds: int = 3) -> list:
    """Per family, its non-dominated rows (LUT down, accuracy up; `bench_hgq2_front.summary`'s means) of `epochs`
    QAT epochs, `seeds` seeds or more, no DSP and at most `max_lut` LUT."""
    from bench_hgq2_front import summary

    trained = {(r["method"], r["level"]): r["epochs"] for r in records if "epochs" in r}
    rows = [
        {**row, "family": family(row["method"])}
        for row in summary([r for r in records if "accuracy" in r])
        if family(row["method"])
        and trained.get((row["method"], row["level"])) == epochs
        and len(row["seeds"]) >= seeds
        and row["DSP"] == 0
        and row["LUT"] <= max_lut
    ]
    return [row for row in rows if not any(_dominates(other, row) for other in rows)]


def _dominates(other: dict, row: dict) -> bool:
    same = other["family"] == row["family"] and other is not row
    better = other["LUT"] <= row["LUT"] and other["accuracy"] >= row["accuracy"]
    return same and better and (other["LUT"], other["accuracy"]) != (row["LUT"], row["accuracy"])


def widened(model) -> int:
    """Each HGQ2 datalane quantizer (a layer's `iq`, or a standalone `Quantizer`) set, in place, to its channel's
    widest (k, i, f) over the positions; how many quantizers changed."""
    from fpgaprune.frontends.hgq2.types import lane_quantizer

    changed = 0
    for quantizer in filter(None, map(lane_quantizer, model.layers)):
        for name in ("_k", "_i", "_f"):
            variable = getattr(quantizer.quantizer, name, None)
            values = None if variable is None else np.asarray(variable)
            if values is None or values.ndim < 2:
                continue
            widest = np.broadcast_to(values.reshape(-1, values.shape[-1]).max(axis=0), values.shape)
            changed += int(not np.array_equal(widest, values))
            variable.assign(widest.astype(values.dtype))
    return changed


def measured_point(path: Path, key: dict, args) -> dict:
    """One trained point, widened, streamed, C-simulated, synthesized and (where small enough) placed and routed."""
    import keras

    import fpgaprune as fp
    from fpgaprune import data
    from fpgaprune.rtl.place_route import measure
    from fpgaprune.support.tools import ToolError

    test = data.fashion_mnist()
    model = fp.load_model(path, compile=False)
    model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    found = {**key, "quantizers_widened": widened(model)}
    found["accuracy_widened"] = float(model.evaluate(test.x_test, test.y_test, verbose=0)[1])
    with tempfile.TemporaryDirectory(prefix="front-pr-") as scratch:
        exported = fp.export(
            model, STREAM_PRESET, STREAM_BOARD, Path(scratch) / "rtl", x=test.x_test[:100], backend="RTL"
        )
        check = fp.csim(exported, model, test.x_test[: args.csim_samples])
        found.update(da4ml_cost=float(exported.manifest["da4ml_cost"]), bit_exact=bool(check.bit_exact))
        found["csim_samples"] = int(check.samples)
        synthesized = measure(exported.path, board=XILINX_BOARD, timeout_s=args.cap_s)
        found.update(LUT6=float(synthesized.used["LUT"]), synthesis=synthesized.line())
        if found["da4ml_cost"] > args.place_max_cost:
            return {**found, "placed": f"not placed: da4ml cost above {args.place_max_cost:g}"}
        try:
            placed = measure(exported.path, timeout_s=args.cap_s, options=args.pnr_options.split())
        except ToolError as error:
            return {**found, "placed": f"not placed: {error}"}
    used = placed.used
    return {**found, "LUT4": float(used["LUT4"]), "FF": float(used["TRELLIS_FF"]), **_placed(placed)}


def _placed(placed) -> dict:
    return {"MHz": placed.fmax_mhz, "placed": placed.line(), "seconds": placed.seconds}


def place_left(args, records: list, log: Path) -> list:
    """`--place-left`: the recorded points not placed, placed and routed again where their da4ml cost is from
    `--place-min-cost` to `--place-max-cost` (`--cap-s`), each record replaced by its new one (the file rewritten
    whole, atomically)."""
    from bench_hgq2_front import _parallel, model_file

    front = _front_arguments(args)
    left = [r for r in records if "LUT4" not in r and args.place_min_cost <= r["da4ml_cost"] <= args.place_max_cost]
    calls = [(model_file(front.models, _widths(r), r["seed"], r["method"], r["level"]), r, args) for r in left]
    for record in _parallel(args.workers, measured_point, [(path, _measured_key(r), a) for path, r, a in calls]):
        records = [r for r in records if _key(r) + (r["seed"],) != _key(record) + (record["seed"],)] + [record]
        partial = log.with_suffix(".partial")
        partial.write_text("".join(json.dumps(r) + "\n" for r in records))
        partial.replace(log)
        print(f"{record['method']} {record['level']} seed {record['seed']}: {record.get('placed')}")
    return records


def _widths(record: dict) -> tuple:
    return tuple(int(w) for w in record["cnn"].split(","))


def _measured_key(record: dict) -> dict:
    """The fields of a record that its training gave (what `measured_point` starts from)."""
    return {n: record[n] for n in ("cnn", "seed", "method", "level", "epochs", "family", "trained")}


def _front_arguments(args):
    """`bench_hgq2_front`'s defaults (`--quick`: its quick ones), its float models read from its record, the trained
    models saved here."""
    from bench_hgq2_front import _quick, arguments

    front = arguments().parse_args([])
    if args.quick:
        _quick(front)
    front.out, front.models = args.front, HERE / "out" / f"{args.out.name}_models"
    front.models.mkdir(parents=True, exist_ok=True)
    return front


def run(args, chosen: list, records: list, log: Path) -> list:
    """Each chosen point of each seed not yet in `records`: trained (2 at a time on Ray), then measured."""
    from bench_hgq2_front import _parallel, model_file, point_record

    front = _front_arguments(args)
    done = {(r["method"], r["level"], r["seed"]) for r in records}
    pending = [(row, seed) for row in chosen for seed in args.seeds if (row["method"], row["level"], seed) not in done]
    calls = [(front, row["cnn"], seed, row["method"], row["level"]) for row, seed in pending]
    measures = []
    for point in _parallel(args.workers, point_record, calls):
        if "accuracy" not in point:  # a budget not met, or a failure: its line, and nothing to measure
            print(f"{point['method']} {point['level']} seed {point['seed']}: {point}")
            continue
        key = {name: point[name] for name in ("cnn", "seed", "method", "level", "epochs")}
        key.update(family=family(point["method"]), trained={n: point.get(n) for n in ("accuracy", "LUT", "DSP")})
        measures.append(
            (model_file(front.models, _widths(point), point["seed"], point["method"], point["level"]), key, args)
        )
    for record in _parallel(args.workers, measured_point, measures):
        records.append(record)
        with log.open("a") as out:
            out.write(json.dumps(record) + "\n")
        print(f"{record['method']} {record['level']} seed {record['seed']}: {record.get('placed')}")
    return records


def verdicts(records: list, front_records: list) -> list:
    """Per PQuantML point and measure: fpgaprune's most accurate measured point at or under its count."""
    spread = _seed_spreads(front_records)
    rows = []
    for peer in (r for r in records if r["family"] == "PQuantML"):
        for measure, field in MEASURES.items():
            cost = _count(peer, field)
            under = [r for r in records if r["family"] == "fpgaprune" and r["seed"] == peer["seed"]]
            under = [r for r in under if cost is not None and _count(r, field) is not None and _count(r, field) <= cost]
            best = max(under, key=lambda r: r["accuracy_widened"], default=None)
            rows.append(_verdict(peer, measure, cost, best, spread))
    return rows


def _count(record: dict, field: str):
    return record["trained"]["LUT"] if field == "rule_LUT" else record.get(field)


def _verdict(peer: dict, measure: str, cost, best, spread: dict) -> dict:
    from bench_hgq2_front import _peer_name, verdict_of

    row = {"peer": _peer_name(peer), "measure": measure, "count": cost}
    if cost is None:
        return {**row, "verdict": "not measured"}
    if best is None:
        return {**row, "verdict": "none at or under"}
    difference = best["accuracy_widened"] - peer["accuracy_widened"]
    within = max(spread.get(_key(peer), 0.0), spread.get(_key(best), 0.0))
    return {**row, "ours": _peer_name(best), "ours_count": _count(best, MEASURES[measure]), "difference": difference,
            "spread": within, "verdict": verdict_of(difference, within)}  # fmt: skip


def _key(record: dict) -> tuple:
    return record["cnn"], record["method"], record["level"]


def _seed_spreads(front_records: list) -> dict:
    """{(cnn, method, level): the population standard deviation of its accuracy over its seeds} in the front's
    record."""
    from bench_hgq2_front import _by_seed

    groups = _by_seed([r for r in front_records if "accuracy" in r])
    return {key: float(np.std([r["accuracy"] for r in points.values()])) for key, points in groups.items()}


def report(records: list, front_records: list) -> None:
    from bench_hgq2_front import _peer_name

    from fpgaprune.support.text_table import format_rows

    head = ["family", "point", "seed", "acc", "widened", "rule LUT", "da4ml", "LUT6 synth", "LUT4 placed", "FF", "MHz"]
    table = [
        [
            r["family"],
            _peer_name(r),
            r["seed"],
            f"{r['trained']['accuracy']:.4f}",
            f"{r['accuracy_widened']:.4f}{'' if r.get('bit_exact') else ' (C-sim not exact)'}",
            f"{r['trained']['LUT']:.0f}",
            f"{r['da4ml_cost']:.0f}",
            f"{r['LUT6']:.0f}",
            f"{r['LUT4']:.0f}" if "LUT4" in r else "not placed",
            f"{r.get('FF', 0):.0f}",
            f"{r['MHz']:.1f}" if r.get("MHz") else "-",
        ]  # fmt: skip
        for r in sorted(records, key=lambda r: (r["family"], r["trained"]["LUT"]))
    ]
    print("\n".join(format_rows(head, table)))
    for line in {r["synthesis"] for r in records} | {r["placed"] for r in records if "LUT4" in r}:
        print("  " + line)
    print("\nVerdict per PQuantML point and measure (fpgaprune's most accurate point at or under its count):")
    head = [
        "PQuantML point",
        "measure",
        "its count",
        "fpgaprune's point",
        "its count",
        "difference",
        "spread",
        "verdict",
    ]
    rows = [
        [
            v["peer"],
            v["measure"],
            f"{v['count']:.0f}" if v["count"] is not None else "-",
            v.get("ours", "-"),
            f"{v['ours_count']:.0f}" if "ours_count" in v else "-",
            f"{v['difference']:+.4f}" if "difference" in v else "-",
            f"{v['spread']:.4f}" if "spread" in v else "-",
            v["verdict"],
        ]  # fmt: skip
        for v in verdicts(records, front_records)
    ]
    print("\n".join(format_rows(head, rows)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=6, help="the front's QAT epochs of the points")
    parser.add_argument("--max-lut", type=float, default=60000.0, help="the cheap end: mean LUT by the record's rules")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--csim-samples", type=int, default=200)
    parser.add_argument("--place-max-cost", type=float, default=PLACEABLE_COST)
    parser.add_argument("--place-min-cost", type=float, default=0.0, help="--place-left: from this da4ml cost")
    parser.add_argument("--cap-s", type=float, default=1800.0, help="each tool's time cap")
    parser.add_argument("--pnr-options", default="--no-tmdriv", help="nextpnr-ecp5's options")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "front_place_route")
    parser.add_argument("--report", action="store_true", help="run nothing: the table and the verdicts")
    parser.add_argument("--place-left", action="store_true", help="place and route again the points not placed")
    parser.add_argument("--front", type=Path, default=FRONT, help="the front's record (its points.jsonl)")
    parser.add_argument(
        "--quick", action="store_true", help="on `bench_hgq2_front --quick`'s record (--front): its 1 epoch and seed"
    )
    args = parser.parse_args(argv)
    if args.quick:
        # the quick CNN's streams are 7,000-11,000 da4ml cost (minutes of nextpnr each): synthesis only
        args.epochs, args.seeds, args.max_lut, args.place_max_cost, args.csim_samples = 1, [0], 1e9, 0.0, 50
        args.out = (
            HERE / "out" / "front_place_route_quick" if args.out == HERE / "results" / "front_place_route" else args.out
        )
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    args.out.mkdir(parents=True, exist_ok=True)
    front_records = [json.loads(line) for line in (args.front / "points.jsonl").read_text().splitlines()]
    chosen = low_cost_front(front_records, args.epochs, args.max_lut, seeds=1 if args.quick else 3)
    if args.quick:  # the cheapest point of each family
        chosen = [min((r for r in chosen if r["family"] == name), key=lambda r: r["LUT"]) for name in FAMILIES]
    print("the cheap end's non-dominated points (the front's record, its seeds, rules):")
    for row in chosen:
        print(f"  {row['family']}: {row['method']} {row['level']}: {row['LUT']:.0f} LUT, {row['accuracy']:.4f}")
    log = args.out / "points.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    if args.place_left:
        records = place_left(args, records, log)
    elif not args.report:
        records = run(args, chosen, records, log)
    report(records, front_records)


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(HERE))
    from record import run_recorded

    run_recorded(main, __file__)
