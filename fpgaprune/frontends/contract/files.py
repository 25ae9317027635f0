"""Model files: safe load (an allow-list walked before anything is deserialized) and atomic save."""

from abc import ABC, abstractmethod

from fpgaprune.errors import ModelFileError


class Files(ABC):
    """Model files."""

    keras_major: int | None = None  # Keras model files: the major version that wrote them
    file_suffixes: tuple = ()  # the model files it claims by suffix (PyTorch's `.pt`), besides Keras' own
    builds_architectures: bool = False  # `build` makes a model from an architecture named in a config

    @abstractmethod
    def load(self, path, trust_code: bool = False, compile: bool = True):
        """A model file, checked against an allow-list before anything is deserialized."""

    @abstractmethod
    def save(self, model, path):
        """A model file, written atomically."""

    @abstractmethod
    def file_policy(self):
        """The allow-list (`model_files.FilePolicy`) its model files are checked against."""

    def from_json(self, path, text: str, weights, trust_code: bool = False):
        """The model of a JSON architecture (already checked against `file_policy`) with its HDF5 weights."""
        raise ModelFileError(f"{path}: {self.name} models are not read from a JSON architecture")

    def build(self, architecture: str, arguments=None, trust_code: bool = False):
        """A new model of the `architecture` a config names (where `builds_architectures`)."""
        raise ModelFileError(f"{architecture}: {self.name} builds no model from an architecture's name")
