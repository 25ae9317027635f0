"""Which front end reads a model: the registry of front ends (`fpgaprune/frontends/base.FrontEnd`).

The rest of fpgaprune asks a model's framework for everything through the front end this returns, and never
imports a front end's package: every front end, built-in or a user's, comes in through the `fpgaprune.front_ends`
entry point group (the built-in ones are declared in pyproject.toml) or `register_front_end`, and one whose
framework is not installed is left out. So a framework is one package, nothing outside `frontends/` imports
TensorFlow, Keras, QKeras or PyTorch, and no module here names a front end's (tests/seam).

A front end's framework is imported only when the front end is first handed out (`_bound`): which one owns a
model is decided from class names, so a PyTorch process never imports TensorFlow and a Keras one never torch.
"""

import importlib.util
import sys
from importlib.metadata import entry_points
from pathlib import Path

from fpgaprune.errors import ModelTypeError

ENTRY_POINTS = "fpgaprune.front_ends"  # each names a module's FRONT_END; asked in the order of their `asked_order`
QUANTIZER_LIBRARY = "qkeras"  # the `library_key` of the front end that checks a run config's quantizer texts
_REGISTERED: list = []  # front ends registered at run time, asked first
_LOADED: list = []  # [tuple of the installed front ends], once loaded
_BOUND: list = []  # the front ends whose layer classes are bound (their frameworks imported)
_BINDER: list = []  # how a front end is bound: [callable(front_end)] (the CLI's quiet console), else bind_layers
_SEED: list = []  # [the seed every framework is to start from], once a run sets it


def register_front_end(front_end) -> None:
    """Add a front end (a `frontends.base.FrontEnd`), asked before the built-in ones; registering it again is a
    no-op."""
    if front_end not in _REGISTERED:
        _REGISTERED.insert(0, front_end)
        _bound(front_end)


def unregister_front_end(front_end) -> None:
    if front_end in _REGISTERED:
        _REGISTERED.remove(front_end)


def front_ends() -> tuple:
    """The front ends of the installed frameworks: registered, then the entry points' in their `asked_order`
    (QKeras, HGQ2, Keras 3, PyTorch, then a user's). Loading them imports no framework (`FrontEnd.installed` asks
    the package metadata)."""
    if not _LOADED:
        found = []
        for entry in entry_points(group=ENTRY_POINTS):
            try:
                front_end = entry.load()
            except ImportError:
                continue
            if _installed(front_end) and front_end not in found:
                found.append(front_end)
        _LOADED.append(tuple(sorted(found, key=lambda front_end: front_end.asked_order)))
    return (*_REGISTERED, *_LOADED[0])


def _installed(front_end) -> bool:
    """Whether the front end's framework is installed, from the package index alone (`framework_modules`); one
    that names none is bound to find out (ImportError: not installed)."""
    if front_end.framework_modules:
        return all(importlib.util.find_spec(module) is not None for module in front_end.framework_modules)
    try:
        front_end.bind_layers()
    except ImportError:
        return False
    return True


def _loaded(front_end) -> bool:
    """Whether this process has imported the front end's framework."""
    return any(module in sys.modules for module in front_end.framework_modules[:1])


def _bound(front_end):
    """`front_end`, its layer classes bound to fpgaprune's kinds (`FrontEnd.bind_layers`, which imports its
    framework) on first use. Every front end the registry hands out goes through here."""
    if not any(front_end is done for done in _BOUND):
        if _BINDER:
            _BINDER[0](front_end)
        else:
            front_end.bind_layers()
        _BOUND.append(front_end)
        if _SEED:
            front_end.set_seed(_SEED[0])
    return front_end


def seed_frameworks(seed: int) -> None:
    """Seed the random generators of every framework this process uses: those bound now, and each later one as
    it is bound (so a run seeds no framework its model does not use)."""
    _SEED[:] = [seed]
    for front_end in _BOUND:
        front_end.set_seed(seed)


def bind_with(binder) -> None:
    """Bind front ends with `binder(front_end)` from now on (the CLI silences the frameworks' import noise)."""
    _BINDER[:] = [binder]


def owner(model_or_layer):
    """The front end that owns `model_or_layer` (bound), or None; only its framework is imported."""
    found = next((front_end for front_end in front_ends() if front_end.owns(model_or_layer)), None)
    return _bound(found) if found is not None else None


def bind_all(of=None) -> None:
    """The installed front ends' layer classes bound to fpgaprune's kinds: only the one that owns `of` (a layer or
    a class; only its framework is imported), or every one where `of` is None or a class name."""
    if of is not None and not isinstance(of, str):
        owner(of if isinstance(of, type) else type(of))
        return
    for front_end in front_ends():
        try:
            _bound(front_end)
        except ImportError:
            continue


def front_end_of(model_or_layer):
    """The front end whose framework built `model_or_layer` (a model, a layer, or a class)."""
    found = owner(model_or_layer)
    if found is not None:
        return found
    cls = model_or_layer if isinstance(model_or_layer, type) else type(model_or_layer)
    frameworks = " or ".join(front_end.name for front_end in front_ends()) or "no installed framework"
    raise ModelTypeError(
        f"{cls.__module__}.{cls.__name__} is not a {frameworks} object; fpgaprune takes Keras models (Sequential "
        "or functional) and PyTorch modules"
    )


def front_end_of_file(path, keras_major=None):
    """The installed front end that reads the model file at `path` (bound): one that claims its suffix
    (PyTorch's `.pt`), else the one that reads Keras files of the major version `keras_major(path)` gives (read
    only when asked); None where none is installed."""
    suffix = Path(str(path)).suffix
    found = next((f for f in front_ends() if suffix and suffix in f.reads), None)
    if found is None and keras_major is not None:
        major = keras_major(path)
        found = next((f for f in front_ends() if f"keras-{major}" in f.reads), None)
    return _bound(found) if found is not None else None


def architecture_builder():
    """The installed front end that builds a model from an architecture a config names (PyTorch's
    `models.py:ClassName`), bound; None where none is installed."""
    found = next((f for f in front_ends() if "architectures" in f.reads), None)
    return _bound(found) if found is not None else None


def front_end_of_suffix(suffix: str):
    """The installed front end whose model files end in `suffix` (PyTorch's `.pt`), bound; one line naming the
    install that adds it where none is installed."""
    for front_end in front_ends():
        if suffix in front_end.reads:
            return _bound(front_end)
    raise ModelTypeError(
        f"a {suffix} model is read by the PyTorch front end, which this environment does not hold: "
        "pip install torch==2.13.0 && pip install -e '.[torch]'"
    )


def keras_front_end(major: int):
    """The installed front end that reads Keras `major` models (bound); one line naming the install where none is."""
    found = next((f for f in front_ends() if f"keras-{major}" in f.reads), None)
    if found is None:
        raise ModelTypeError(f"no installed front end reads Keras {major} models (`pip install -e .`)")
    return _bound(found)


def quantizing_front_end():
    """The front end of the quantizer library a run config names (QKeras): the one that checks its quantizer
    texts. One line with the fix where it cannot run in this process."""
    found = next((f for f in front_ends() if f.library_key == QUANTIZER_LIBRARY), None)
    if found is None:
        raise ModelTypeError(
            "quantization: the QKeras front end is not installed in this environment (`pip install -e .`)"
        )
    front_end = _bound(found)
    front_end.check_available("quantization")
    return front_end


LIBRARIES = ("qkeras", "hgq2")  # `quantization.library`, besides "auto" (the first of these installed)


def library_front_end(library: str = "auto"):
    """The front end that quantizes with `library` ("qkeras", "hgq2", or "auto": the one this environment can
    use, else QKeras, whose own check then says what is missing when it is reached); one line where the library
    named is not installed or cannot run in this process."""
    libraries = {f.library_key: f for f in front_ends() if f.library_key}
    if library == "auto":
        usable = [name for name in LIBRARIES if name in libraries and _problem(libraries[name]) is None]
        chosen = libraries.get(usable[0] if usable else "qkeras")
        if chosen is not None:
            return _bound(chosen)
        library = "qkeras"
    problem = _problem(libraries[library]) if library in libraries else "this environment does not hold it"
    if problem:
        raise ModelTypeError(
            f"quantization.library {library!r}: {problem}; QKeras is the base install (`pip install -e .`), HGQ2 "
            "its own venv (requirements/hgq2.txt)"
        )
    return _bound(libraries[library])


def _problem(front_end) -> str | None:
    """Why the front end cannot quantize in this process (its own one line), or None."""
    try:
        _bound(front_end).check_available("quantization")
    except ModelTypeError as error:
        return str(error)
    return None


def hook_callback():
    """The Keras callback class that drives a `hooks.TrainingHook` in `fit`, from the first front end that has
    one and whose framework this process has imported (None otherwise: hooks are driven by their front end's
    own loop, and a PyTorch process imports no Keras for them)."""
    for front_end in front_ends():
        callback = _bound(front_end).hook_callback() if _loaded(front_end) else None
        if callback is not None:
            return callback
    return None


def model_name(model) -> str:
    """The model's name (Keras' `name`; a PyTorch module's class name)."""
    return getattr(model, "name", None) or type(model).__name__
