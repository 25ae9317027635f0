"""The attribute keys fpgaprune's hls4ml passes set on nodes. No hls4ml import: the manifest, the hardware
records and the estimates read these keys without loading the extension or a backend."""

PLAN = "fpgaprune_live_plan"  # the node's LivePlan: its live weights as the header holds them
SPARSE_SOURCE = "fpgaprune_sparse_codegen"  # the generated product class (C++ source)
RECURRENT_QUANTIZED = "fpgaprune_quantized"  # a recurrent node whose weights the quantizer pass rewrote
FABRIC = "fpgaprune_fabric"  # the node's products are bound to LUTs (`Multipliers: fabric`, hls/multipliers.py)
