"""The HGQ2 front end: Keras 3 models quantized with HGQ2 (per-weight bit widths learned under an EBOPs penalty),
in the HGQ2 environment (`requirements/hgq2.txt`). Its modules: `layers` (HGQ2's classes bound to the kinds),
`holds` (a pruned weight's bit widths held at 0 beside its value), `twin` (a Keras 3 model's HGQ2 twin),
`quantizers` (what a layer's quantizers compute), `hls` (hls4ml's Keras 3 converter), `front_end` (the protocol
object). Only this package imports `hgq`."""
