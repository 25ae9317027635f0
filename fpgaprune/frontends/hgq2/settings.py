"""HGQ2's settings of a run (`quantization.hgq2`), as HGQ2's quantizer configs: initial bits, EBOPs β, and the
granularity of the weights' bit widths."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Hgq2Settings:
    """What HGQ2 starts from and how hard it pushes bits down (its README's defaults, but for β)."""

    weight_bits: int = 8  # initial bits of each weight (b0 of HGQ2's kbi weight quantizer)
    weight_integer_bits: int = 2  # initial integer bits of the weights (i0)
    activation_bits: int = 8  # initial fractional bits of the datalane (f0 of its kif quantizer, with i0 = 2)
    beta0: float = 1e-5  # the EBOPs penalty's starting weight (each layer adds ebops x beta to the loss)
    beta_final: float | None = None  # None: β constant; else β moves log-linearly from beta0 to it over QAT
    granularity: str = "weight"  # "weight": a bit width per weight; "channel": one per output channel
    # "element": a bit width per activation value (HGQ2's default; io_parallel only in hls4ml 1.3); "channel": one
    # per channel of a layer input, the same at every position (the RTL backend streams it); "tensor": one per layer
    # input (hls4ml's io_stream needs it)
    activation_granularity: str = "element"

    @classmethod
    def of(cls, settings: dict | None) -> "Hgq2Settings":
        return cls(**(settings or {}))


def weight_config(settings: Hgq2Settings, rank: int):
    """HGQ2's quantizer config of a kernel of `rank` axes (outputs last)."""
    from hgq.config import QuantizerConfig

    shared = () if settings.granularity == "weight" else tuple(range(rank - 1))
    return QuantizerConfig(
        "kbi", "weight", b0=settings.weight_bits, i0=settings.weight_integer_bits, homogeneous_axis=shared
    )


def bias_config(settings: Hgq2Settings):
    from hgq.config import QuantizerConfig

    return QuantizerConfig("kbi", "bias", b0=settings.weight_bits, i0=settings.weight_integer_bits)


def input_config(settings: Hgq2Settings):
    """The datalane (a layer's input): kif, WRAP, its integer bits traced from data (`trace_minmax`)."""
    from hgq.config import QuantizerConfig

    shared = {
        "element": {"homogeneous_axis": (0,)},
        "channel": {"homogeneous_axis": None, "heterogeneous_axis": (-1,)},
        "tensor": {"homogeneous_axis": None, "heterogeneous_axis": ()},
    }[settings.activation_granularity]
    return QuantizerConfig("kif", "datalane", i0=2, f0=settings.activation_bits, **shared)
