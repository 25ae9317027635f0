"""The C-synthesis cost models a backend owns: each is fitted to one HLS tool's published reports of stock hls4ml
layers, with its held-out error per resource (`resources/csynth.py` prices layers with them, and
`benchmarks/bench_published.py` / `bench_published_cnn.py` refit and hold them out). A backend's `cost_models` are
the only ones that may judge its designs."""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CsynthModel:
    tool: str
    lut_per_site: float
    lut_per_product: float
    generic_lut_multipliers: bool  # a LUT product costs w * i LUTs (else the CSD rule)
    shares_under_reuse: bool  # Latency strategy, R > 1: multipliers shared behind multiplexers
    dsp_modelled: bool
    held_out: str  # the fit's error on the designs held out, as bench_published.py printed it
    # A product the rules put in a DSP stays there only when its constant's odd part is at least this wide
    # (`csynth.odd_width`); narrower constants become LUT multipliers (None: every such product is a DSP).
    dsp_min_width: int | None = None
    io_type: str = "io_parallel"  # the designs it was fitted and held out on
    kinds: tuple = ("dense",)  # ... and their layer kinds
    errors: dict = field(default_factory=dict)  # resource -> (lowest, highest) model / published - 1, held out


BUILT_IN = {
    "vivado_hls 2019.2": CsynthModel(
        "Vivado HLS 2019.2",
        11.277,
        8.547,
        True,
        True,
        True,
        "dense-layer LUT: reuse 2 -4.6%, 6-bit QKeras +2.5%; DSP -3.1%, +4.9%",
        errors={"LUT": (-0.046, 0.025), "DSP": (-0.031, 0.049)},
    ),
    "vitis 2024.1": CsynthModel(
        "Vitis HLS 2024.1",
        1.770,
        20.439,
        False,
        False,
        False,
        "dense-layer LUT: reuse 2 -2.5%, 6-bit QKeras +21.1%; DSP not modelled",
        errors={"LUT": (-0.025, 0.211)},
    ),
    # Fitted on the hls4ml tutorial's part-6 CNN at 16 bits (benchmarks/bench_published_cnn.py), reuse factor 1
    "vivado_hls 2020.1 io_stream": CsynthModel(
        "Vivado HLS 2020.1 (io_stream)",
        5.246,
        7.808,
        False,
        False,
        True,
        "io_stream, held out on a 16-bit replicate: conv DSP -14%..+7%, LUT -24%..-3%; Dense DSP -29%..-10%, LUT "
        "+1%..+13%; at 6 bits conv LUT -29%..+10%, Dense LUT -65%..+48%, DSP not predicted (0 for 5-105)",
        dsp_min_width=7,
        io_type="io_stream",
        kinds=("dense", "conv2d"),
        errors={"LUT": (-0.654, 0.483), "DSP": (-1.0, 3.675)},
    ),  # every layer held out, 16 and 6 bits
}
