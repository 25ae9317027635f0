"""Strip: physically remove dead channels, folding constant channels into the next layer's bias."""

from fpgaprune.strip.graph import ChannelGraph, StripError
from fpgaprune.strip.strip import StripResult, strip

__all__ = ["ChannelGraph", "StripError", "StripResult", "strip"]
