"""The front-end contract, in small protocols: everything the rest of fpgaprune asks of a model framework and its
quantization library (`frontends/base.FrontEnd` is all of them). Nothing outside `frontends/` uses a member of a
front end that these do not declare (tests/seam/test_contract.py reads the code for it)."""

from fpgaprune.frontends.contract.export import HlsExport
from fpgaprune.frontends.contract.files import Files
from fpgaprune.frontends.contract.graph import GraphAndWeights
from fpgaprune.frontends.contract.holds import Holds
from fpgaprune.frontends.contract.presence import Presence
from fpgaprune.frontends.contract.quantization import Quantization
from fpgaprune.frontends.contract.quantizers import Quantizers
from fpgaprune.frontends.contract.training import Training

PROTOCOLS = (Presence, GraphAndWeights, Holds, Training, Files, Quantization, Quantizers, HlsExport)
__all__ = [
    "PROTOCOLS",
    "Files",
    "GraphAndWeights",
    "HlsExport",
    "Holds",
    "Presence",
    "Quantization",
    "Quantizers",
    "Training",
]
