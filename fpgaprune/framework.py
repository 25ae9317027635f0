"""Which front end reads a model: the registry of front ends (`fpgaprune/frontends/base.FrontEnd`).

The rest of fpgaprune asks a model's framework for everything through the front end this returns, and never
imports a front end's package: the built-in ones are named here as strings and loaded on first use (a front
end whose framework is not installed is left out), third-party ones come in through the `fpgaprune.front_ends`
entry point group or `register_front_end`. So a framework is one package, and nothing outside `frontends/`
imports TensorFlow, Keras, QKeras or PyTorch (tests/seam).
"""

import importlib
from importlib.metadata import entry_points

from fpgaprune.errors import ModelTypeError

# The built-in front ends, in the order they are asked: the module that holds each one's FRONT_END.
BUILT_IN = (
    "fpgaprune.frontends.qkeras.front_end",
    "fpgaprune.frontends.hgq2.front_end",  # the HGQ2 environment; asked before Keras 3, whose models it quantizes
    "fpgaprune.frontends.keras3.front_end",
    "fpgaprune.frontends.torch.front_end",  # the `torch` extra
)
ENTRY_POINTS = "fpgaprune.front_ends"
QUANTIZER_LIBRARY = "fpgaprune.frontends.qkeras.front_end"  # the quantizer texts of a run config (QKeras)
_REGISTERED: list = []  # front ends registered at run time, asked first
_LOADED: list = []  # [tuple of the installed front ends], once loaded


def register_front_end(front_end) -> None:
    """Add a front end (a `frontends.base.FrontEnd`), asked before the built-in ones; registering it again is a
    no-op."""
    if front_end not in _REGISTERED:
        _REGISTERED.insert(0, front_end)
        front_end.bind_layers()


def unregister_front_end(front_end) -> None:
    if front_end in _REGISTERED:
        _REGISTERED.remove(front_end)


def front_ends() -> tuple:
    """The front ends of the installed frameworks: registered, built-in, then entry points."""
    if not _LOADED:
        loaders = [lambda module=module: importlib.import_module(module).FRONT_END for module in BUILT_IN]
        loaders += [entry.load for entry in entry_points(group=ENTRY_POINTS)]
        found = []
        for load in loaders:
            try:
                front_end = load()
                front_end.bind_layers()  # imports its framework: a front end without one is left out
            except ImportError:
                continue
            found.append(front_end)
        _LOADED.append(tuple(found))
    return (*_REGISTERED, *_LOADED[0])


def front_end_of(model_or_layer):
    """The front end whose framework built `model_or_layer` (a model, a layer, or a class)."""
    for front_end in front_ends():
        if front_end.owns(model_or_layer):
            return front_end
    cls = model_or_layer if isinstance(model_or_layer, type) else type(model_or_layer)
    frameworks = " or ".join(front_end.name for front_end in front_ends()) or "no installed framework"
    raise ModelTypeError(
        f"{cls.__module__}.{cls.__name__} is not a {frameworks} object; fpgaprune takes Keras models (Sequential "
        "or functional) and PyTorch modules"
    )


def quantizer_library():
    """fpgaprune's quantizer texts (`quantize/spec.py`, QKeras' language): checked with no framework, so configs
    validate anywhere; each front end reads them into its own library's quantizers."""
    return importlib.import_module("fpgaprune.quantize.spec")


def quantizing_front_end():
    """The front end of the quantizer library a run config names (QKeras): the one that checks its quantizer
    texts. One line with the fix where it cannot run in this process."""
    front_end = importlib.import_module(QUANTIZER_LIBRARY).FRONT_END
    front_end.check_available("quantization")
    return front_end


LIBRARIES = ("qkeras", "hgq2")  # `quantization.library`, besides "auto" (the first of these installed)


def library_front_end(library: str = "auto"):
    """The front end that quantizes with `library` ("qkeras", "hgq2", or "auto": the one this environment can
    use, else QKeras, whose own check then says what is missing when it is reached); one line where the library
    named is not installed or cannot run in this process."""
    libraries = {f.library_key: f for f in front_ends() if getattr(f, "library_key", None)}
    if library == "auto":
        usable = [name for name in LIBRARIES if name in libraries and _problem(libraries[name]) is None]
        chosen = libraries.get(usable[0] if usable else "qkeras")
        if chosen is not None:
            return chosen
        library = "qkeras"
    problem = _problem(libraries[library]) if library in libraries else "this environment does not hold it"
    if problem:
        raise ModelTypeError(
            f"quantization.library {library!r}: {problem}; QKeras is the base install (`pip install -e .`), HGQ2 "
            "its own venv (requirements/hgq2.txt)"
        )
    return libraries[library]


def _problem(front_end) -> str | None:
    """Why the front end cannot quantize in this process (its own one line), or None."""
    try:
        front_end.check_available("quantization")
    except ModelTypeError as error:
        return str(error)
    return None


def default_quantizers() -> dict:
    """The quantizer texts a run uses unless its config names others (`quantization.default`)."""
    return dict(quantizer_library().DEFAULT_QUANTIZERS)


def with_width(text: str, bits: int) -> str | None:
    """A quantizer text with its width set to `bits` (a sweep's `bits` axis); None when it has no width."""
    return quantizer_library().with_width(text, bits)


class _Owner:
    """`OWNER.method(obj, *args)` is `front_end_of(obj).method(obj, *args)`: the front end of the object asked
    about (a layer, a quantizer) answers for it, so a model's quantizers are read by its own front end."""

    def __getattr__(self, name: str):
        def asked(obj, *args, **kwargs):
            if obj is None:  # no quantizer at all: any front end that answers the question says what that means
                owner = next(f for f in front_ends() if hasattr(f, name))
            else:
                owner = front_end_of(obj)
            return getattr(owner, name)(obj, *args, **kwargs)

        asked.__name__ = name
        return asked


OWNER = _Owner()


def hook_callback():
    """The Keras callback class that drives a `hooks.TrainingHook` in `fit`, from the first front end that has
    one (None without a Keras front end: hooks are driven by their front end's own loop)."""
    for front_end in front_ends():
        adapter = front_end.hook_callback() if hasattr(front_end, "hook_callback") else None
        if adapter is not None:
            return adapter
    return None


def hold_on(layer, variable):
    """The hold (`masking.held.HeldEntries`) that `layer`'s weight `variable` carries, or None."""
    return front_end_of(layer).hold_of(variable)


def array_of(layer, variable):
    """`layer`'s weight `variable` as a numpy array (in fpgaprune's layout: a kernel's outputs last)."""
    return front_end_of(layer).array(variable)


def layers_of(model) -> list:
    """The model's layers in order, as its front end presents them (each with a `name`)."""
    return front_end_of(model).layers(model)


def model_name(model) -> str:
    """The model's name (Keras' `name`; a PyTorch module's class name)."""
    return getattr(model, "name", None) or type(model).__name__


def layer_named(model, name: str):
    """The model's layer called `name`."""
    return front_end_of(model).get_layer(model, name)
