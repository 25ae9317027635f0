"""The front-end contract, in small protocols: everything the rest of fpgaprune asks of a model framework and its
quantization library (`frontends/base.FrontEnd` is all of them). Nothing outside `frontends/` uses a member of a
front end that these do not declare (tests/seam/test_contract.py reads the code for it). What a front end reads of
its own framework to describe a model (`reading.FrameworkReading`) is not the contract: the rest reads the record."""

from fpgaprune.frontends.contract.export import HlsExport
from fpgaprune.frontends.contract.files import Files
from fpgaprune.frontends.contract.graph import GraphAndWeights
from fpgaprune.frontends.contract.holds import Holds
from fpgaprune.frontends.contract.presence import Presence
from fpgaprune.frontends.contract.quantization import Quantization
from fpgaprune.frontends.contract.reading import FrameworkReading
from fpgaprune.frontends.contract.training import Training

PROTOCOLS = (Presence, GraphAndWeights, Holds, Training, Files, Quantization, HlsExport)
__all__ = [
    "PROTOCOLS",
    "Files",
    "FrameworkReading",
    "GraphAndWeights",
    "HlsExport",
    "Holds",
    "Presence",
    "Quantization",
    "Training",
]
