"""Model files: safe load (an allow-list walked before anything is deserialized) and atomic save."""

from abc import ABC, abstractmethod

from fpgaprune.errors import ModelFileError


class Files(ABC):
    """Model files."""

    # What it reads: model files by suffix (PyTorch's ".pt"), Keras files by the major version that wrote them
    # ("keras-2", "keras-3"), and "architectures" (`build`: a model of an architecture a config names)
    reads: tuple = ()

    @abstractmethod
    def load(self, path, trust_code: bool = False, compile: bool = True, weights=None):
        """A model file, checked against an allow-list before anything is deserialized; with `weights`, the JSON
        architecture at `path` (its config checked first) with those HDF5 weights."""

    @abstractmethod
    def save(self, model, path):
        """A model file, written atomically."""

    def build(self, architecture: str, arguments=None, trust_code: bool = False):
        """A new model of the `architecture` a config names (where it `reads` "architectures")."""
        raise ModelFileError(f"{architecture}: {self.name} builds no model from an architecture's name")
