"""The front-end contract: everything the rest of fpgaprune asks of a model framework and its quantization
library, as the protocols of `frontends/contract/` (presence, graph and weights, holds, training, files,
quantization, export to hls4ml's IR). A front end is one object (`FRONT_END` in
`fpgaprune/frontends/<name>/front_end.py`, declared as a `fpgaprune.front_ends` entry point, or registered with
`fpgaprune.framework.register_front_end`) that subclasses `FrontEnd`.

Its module may not import its framework at the top: the registry loads every front end, and `bind_layers`
(which imports the framework) says whether it is installed. The rest of fpgaprune reads a model through these
members only (tests/seam/test_contract.py) and meets the hls stage through hls4ml's IR (`to_hls4ml`).
"""

import importlib
import json
from pathlib import Path

from fpgaprune.frontends.contract import (
    PROTOCOLS,
    Files,
    FrameworkReading,
    GraphAndWeights,
    HlsExport,
    Holds,
    Presence,
    Quantization,
    Training,
)


class FrontEnd(Presence, GraphAndWeights, Holds, Training, Files, Quantization, HlsExport, FrameworkReading):
    """What fpgaprune asks of a model framework and its quantization library (every protocol of the contract),
    and what the front end reads of its framework to describe a model (`FrameworkReading`)."""


def declared_members() -> set:
    """The names the contract declares: the only members of a front end used outside `frontends/`."""
    names = set()
    for protocol in PROTOCOLS:
        names |= {name for name in [*vars(protocol), *protocol.__annotations__] if not name.startswith("_")}
    return names


class ModelFiles:
    """A front end's model files, from its `files` module (`files_module`), imported on first use: the
    allow-list policy, the objects a file may name, load and atomic save."""

    files_module: str

    def _files(self):
        return importlib.import_module(self.files_module)

    def custom_objects(self) -> dict:
        return self._files().model_objects()

    def load(self, path, trust_code: bool = False, compile: bool = True, weights=None):
        if weights is not None:
            return self._from_json(path, weights, trust_code)
        return self._files().load_model(path, compile=compile, trust_code=trust_code)

    def save(self, model, path):
        return self._files().save_model(model, path)

    def _from_json(self, path, weights, trust_code: bool = False):
        """The model of a JSON architecture (already read and size-checked: `model/keras_json.py`), its config
        checked against the allow-list of this front end's files (`model/files.py`) first, with its HDF5
        weights."""
        from fpgaprune.model.files import check_model_config

        text = Path(path).read_text(encoding="utf-8")
        check_model_config(Path(path), json.loads(text), self._files().POLICY, trust_code)
        return self._files().model_from_json(path, text, weights, trust_code=trust_code)
