"""What a framework is to fpgaprune: whether it is installed and loaded, which objects are its own, and its
modules that users import through fpgaprune."""

from abc import ABC, abstractmethod

from fpgaprune.errors import ModelTypeError


class Presence(ABC):
    """What a framework is to fpgaprune."""

    name: str  # "tf_keras + QKeras", "Keras 3", "PyTorch": named in messages
    asked_order: int = 100  # the registry asks front ends in this order (built-in: 10-40; a user's: 100)
    # The framework's top-level packages: whether it is installed, and whether this process has imported it (the
    # registry asks the package index and `sys.modules`; a front end that names none is bound to find out)
    framework_modules: tuple = ()

    @abstractmethod
    def owns(self, model_or_layer) -> bool:
        """Whether the framework built this model, layer, class or quantizer; decided without importing the
        framework (the registry asks every front end)."""

    @abstractmethod
    def bind_layers(self) -> None:
        """Bind its layer classes to fpgaprune's layer kinds (`layer_kinds.bind`), importing its framework; the
        registry calls it once, when it first hands the front end out."""

    def check_available(self, what: str) -> None:
        """Raise one line with the fix when `what` (quantization, export) cannot run in this process."""

    def quiet_start(self) -> None:
        """The framework's first, noisy calls, made while the CLI's stderr is silenced, and its loggers silenced
        (`support/quiet.py`: the CLI, unless --verbose)."""

    @abstractmethod
    def check_model(self, model) -> None:
        """Raise one ModelTypeError line unless fpgaprune can read the model (its graph rebuildable)."""

    def user_module(self, name: str):
        """A module of its own that users import through fpgaprune (`fpgaprune.tfk`: "tfk",
        `fpgaprune.model.architectures`: "architectures", `fp.HoldConstraint`: "holds"); one line where it has
        none."""
        raise ModelTypeError(f"the {self.name} front end has no {name!r} module for users")
