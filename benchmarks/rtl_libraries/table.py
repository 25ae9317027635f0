import glob
import json
import os

rows = []
for f in sorted(
    g
    for g in glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "out", "*", "result.json"))
    if "conv_reuse" not in g
):
    r = json.load(open(f))
    y = {}
    yf = os.path.join(os.path.dirname(f), "yosys.json")
    if os.path.exists(yf):
        y = json.load(open(yf))
    fields = [
        f"{r['mat']:9} {r['lib']:6} live={r['live']:5} solve={r['solve_s']:7.2f}s cost={r['cost']:8.0f}",
        f"fused={r.get('cost_after_ternary_fuse', '-')} stages={r['n_stages']} regbits={r['pipe_reg_bits']}",
        f"LUT4={y.get('LUT4', '-')} FF={y.get('TRELLIS_FF', '-')} CCU2C={y.get('CCU2C', '-')}",
        f"yosys={round(y['yosys_s'], 1) if y else '-'} exact={r['exact']}",
        f"pipe={r.get('pipe_exact_200', r.get('pipe_exact_20'))}",
    ]
    print(" ".join(fields))
