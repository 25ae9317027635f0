"""Run replica.py jobs over worker processes sharing one GPU: pretraining per seed, then every variant of a plan
for every seed. Prints each variant's multipliers removed and its test accuracy, mean and per seed.

    FP_WIDTHS=16,32,32 python benchmarks/torch_replica/sweep.py --plan base --workers 14 --out /tmp/sweep

Variant names: D dense, U unstructured (tfmot), K kernel, H kernel + element inside live kernels; 75/90 is the
share of the conv2+conv3+fc multipliers removed; w1=/w3= gives conv1/conv3 that sparsity (the convs make up the
rest); e20: 20 epochs instead of 10; rigl: kernel drop-and-grow after the schedule; obs: OBS kernel scores with
least-squares compensation (obsscore: scores only; l1comp: L1 scores, compensated).
"""

import argparse
import collections
import json
import os
import sys
import time

import torch.multiprocessing as mp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import replica  # noqa: E402

SPARSITIES = (0.75, 0.9)


def _pair(s, **extra):
    return {"U": {"s": s, "structure": "element", **extra}, "K": {"s": s, "structure": "kernel", **extra}}


def _plan_base(s):
    v = {f"{m}_w1={w1}": c for w1 in (0.25, 0.5) for m, c in _pair(s, w1=w1).items()}
    v.update({f"{m}_w3={w3}": c for w3 in (0.6, 0.8, 0.95) for m, c in _pair(s, w3=w3).items()})
    v["K_rigl"] = {"s": s, "structure": "kernel", "rigl": True, "rigl_end": 0.9, "rigl_alpha": 0.3}
    v["H"] = {"s": s, "structure": "kernel", "hybrid": True}
    return v


def _plan_obs(s):
    kernel = {"s": s, "structure": "kernel", "obs": True}
    return {
        "K_obs": kernel,
        "K_obsscore": {**kernel, "compensate": False},
        "K_l1comp": {**kernel, "obs_score": "l1"},
        "K_obs_w1=0.5": {**kernel, "w1": 0.5},
        "U_w1=0.5": _pair(s, w1=0.5)["U"],
        "K_obs_e20": {**kernel, "epochs": 20},
        "U_e20": _pair(s, epochs=20)["U"],
    }


PLANS = {
    "base": _plan_base,
    "long": lambda s: {f"{m}_e20": c for m, c in _pair(s, epochs=20).items()},
    "obs": _plan_obs,
    "width": lambda s: {},
}


def variants(plan: str) -> dict:
    """{name: variant}: the dense reference and U/K at each sparsity first, then the plan's own variants."""
    found = {"D10": {"dense": True, "epochs": 10}}
    for s in SPARSITIES:
        found.update({f"{m}{int(100 * s)}": c for m, c in _pair(s).items()})
    for s in SPARSITIES:
        for name, variant in PLANS[plan](s).items():
            method, _, rest = name.partition("_")
            found[f"{method}{int(100 * s)}_{rest}" if rest else f"{method}{int(100 * s)}"] = variant
    if plan == "long":
        found["D20"] = {"dense": True, "epochs": 20}
    return found


def run(args) -> list[dict]:
    results = os.path.join(args.out, "results.jsonl")
    if os.path.exists(results):
        os.remove(results)
    procs = [mp.Process(target=replica.pretrain, args=(s, args.limit, args.pre_epochs, args.out)) for s in args.seeds]
    [p.start() for p in procs]
    [p.join() for p in procs]
    queue = mp.Queue()
    for name, variant in variants(args.plan).items():  # the most important first
        for seed in args.seeds:
            epochs = {"epochs": args.epochs} if args.epochs else {}
            queue.put({"seed": seed, "name": name, "variant": {**variant, **epochs}})
    for _ in range(args.workers):
        queue.put(None)
    procs = [
        mp.Process(target=replica.worker, args=(r, queue, args.seeds, args.limit, args.pre_epochs, args.out))
        for r in range(args.workers)
    ]
    [p.start() for p in procs]
    [p.join() for p in procs]
    return [json.loads(line) for line in open(results)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plan", choices=sorted(PLANS), default="base")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--workers", type=int, default=12)
    parser.add_argument("--pre-epochs", type=int, default=8)
    parser.add_argument("--limit", type=int, default=None, help="use only this many images (smoke tests)")
    parser.add_argument("--epochs", type=int, default=None, help="override every variant's epochs (smoke tests)")
    parser.add_argument("--out", default="/tmp/sweep")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    mp.set_start_method("spawn")
    started = time.time()
    by_name = collections.defaultdict(dict)
    for row in run(args):
        by_name[row["name"]][row["seed"]] = row
    print(f"\nwidths {os.environ.get('FP_WIDTHS', '16,32,32')}, {time.time() - started:.0f} s")
    print(f"{'variant':<16}{'removed':>9}{'mean acc':>10}  per seed")
    for name in sorted(by_name):
        accuracies = [by_name[name][s]["acc"] for s in sorted(by_name[name])]
        removed = by_name[name][min(by_name[name])]["removed"]
        print(
            f"{name:<16}{removed:>9.4f}{100 * sum(accuracies) / len(accuracies):>10.2f}  "
            + " ".join(f"{100 * a:.2f}" for a in accuracies)
        )


if __name__ == "__main__":
    main()
