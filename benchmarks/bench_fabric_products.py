"""The price of a constant product built from LUTs (`Multipliers: fabric`), checked against yosys `-nodsp`.

Sample products: a signed input of 6, 8, 12 or 16 bits times a constant of 6, 8 or 12 bits (random codes of that
width from `--seed`, no zero and no power of two: those cost no multiplier), `--per-pair` of each. Each is
synthesized alone by yosys `synth_xilinx -family xcup -nodsp -flatten -nowidelut` (`resources/fabric_products.py`)
and recorded (`results/fabric_products/products.jsonl`, read back rather than measured again). Printed: per pair
of widths, what the rules price and what yosys measured; the error of each rule per product (lowest, median,
highest) and summed (what a layer's total sees), over all products and over those the rules send to a DSP when
the tool may choose (one operand over 10 bits and the other at least 6): the ones `fabric` moves into LUTs.
- `rules.lut_multiplier_luts`: one adder of the input's width plus the constant's per nonzero CSD digit but one;
- `rules.fabric_multiplier_luts`: the same adders per binary digit of the constant, or per CSD digit and one
  more, whichever is fewer; or one LUT6 per product bit for an input of at most 6 bits, whichever is fewer. Its
  form was chosen on seed 0's products (96, `--per-pair 8 --seed 0`) among four (CSD or binary digits, each
  with the LUT6 bound); seed 1's (48, `--per-pair 4`) hold it out. No coefficient is fitted.
"""

import argparse
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from fpgaprune.resources import rules
from fpgaprune.resources.fabric_products import measure_product
from fpgaprune.resources.yosys import find_yosys
from fpgaprune.support.text_table import format_rows

INPUT_BITS, WEIGHT_BITS = (6, 8, 12, 16), (6, 8, 12)
RECORD = Path(__file__).parent / "results" / "fabric_products" / "products.jsonl"  # each product measured


def samples(per_pair: int, seed: int) -> list[tuple[int, int, int]]:
    """(code, weight bits, input bits): `per_pair` random signed codes of each width pair, none 0 or ±2^k."""
    rng, found = np.random.default_rng(seed), []
    for input_bits in INPUT_BITS:
        for weight_bits in WEIGHT_BITS:
            kept = 0
            while kept < per_pair:
                code = int(rng.integers(-(2 ** (weight_bits - 1)), 2 ** (weight_bits - 1)))
                if code and not rules.is_power_of_two(code):
                    found.append((code, weight_bits, input_bits))
                    kept += 1
    return found


def measured_luts(chosen: list, workers: int) -> list[int]:
    """yosys' LUTs of each product: read from `RECORD` where this yosys measured it, else measured and added."""
    tool = find_yosys().describe()
    known = {}
    if RECORD.exists():
        for line in RECORD.read_text().splitlines():
            found = json.loads(line)
            if found["tool"] == tool:
                known[(found["code"], found["weight_bits"], found["input_bits"])] = found["luts"]
    missing = [s for s in chosen if s not in known]
    with ThreadPoolExecutor(workers) as pool:
        for sample, found in zip(missing, pool.map(lambda s: measure_product(*s), missing)):
            known[sample] = found["luts"]
            RECORD.parent.mkdir(parents=True, exist_ok=True)
            entry = dict(zip(("code", "weight_bits", "input_bits"), sample), luts=found["luts"], tool=tool)
            with RECORD.open("a") as out:
                out.write(json.dumps({**entry, "carry": found["carry"]}) + "\n")
    return [known[s] for s in chosen]


def errors(measured: np.ndarray, priced: np.ndarray) -> str:
    ratio = priced / measured - 1
    total = priced.sum() / measured.sum() - 1
    return f"per product {ratio.min():+.1%} / {np.median(ratio):+.1%} / {ratio.max():+.1%}, summed {total:+.1%}"


RULES = {
    "lut_multiplier_luts": lambda code, wb, ib: rules.lut_multiplier_luts(code, ib),
    "fabric_multiplier_luts": rules.fabric_multiplier_luts,
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-pair", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1, help="0: the products the rule's form was chosen on")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="one product per width pair")
    args = parser.parse_args(argv)
    chosen = samples(1 if args.quick else args.per_pair, args.seed)
    print(f"yosys: {find_yosys().describe()}; {len(chosen)} products of seed {args.seed}")
    luts = np.array(measured_luts(chosen, args.workers), np.float64)
    priced = {name: np.array([rule(*s) for s in chosen], np.float64) for name, rule in RULES.items()}
    rows = []
    for ib in INPUT_BITS:
        for wb in WEIGHT_BITS:
            at = [i for i, (_, w, b) in enumerate(chosen) if (w, b) == (wb, ib)]
            figures = [f"{priced[name][at].mean():.1f}" for name in RULES]
            rows.append((ib, wb, rules.product_kind(3, wb, ib), len(at), *figures, f"{luts[at].mean():.1f}"))
    header = ("input bits", "weight bits", "auto", "products", *RULES, "yosys LUT")
    print("\n".join(format_rows(header, rows)))
    wide = np.array([rules.product_kind(code, wb, ib) == "dsp" for code, wb, ib in chosen])
    for name in RULES:
        print(f"\n{name}, all {len(chosen)}: {errors(luts, priced[name])}")
        print(f"{name}, the {wide.sum()} DSP-bound under auto: {errors(luts[wide], priced[name][wide])}")


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from record import run_recorded

    run_recorded(main, __file__)
