"""Checks of a run config that need fpgaprune itself: files, boards, presets, selections, quantizers."""

from pathlib import Path

from fpgaprune.budget import parse_budget
from fpgaprune.errors import FpgapruneError, FpgapruneNote
from fpgaprune.framework import front_end_of_suffix, library_front_end
from fpgaprune.hls import load_board, load_preset
from fpgaprune.hls.backend import backend_names, known_backend
from fpgaprune.hls.exporter import preset_problems
from fpgaprune.hls.hls4ml_backends import Hls4mlBackend
from fpgaprune.masking.input_zeros import unheld_zeros
from fpgaprune.model.files import OTHER_FRAMEWORKS
from fpgaprune.pipeline.schema import ConfigError, Located, RunConfig
from fpgaprune.pipeline.settings import hls_preset
from fpgaprune.pruning.structures import parse_structure
from fpgaprune.record import resolved
from fpgaprune.selection import parse_selector, resolve
from fpgaprune.strip import STRIP_KERAS_ONLY


def _fail(where: str, message: str):
    raise ConfigError(f"{where}: {message}")


def check_files(config: RunConfig, at: Located) -> None:
    model = config.model
    if model.file and model.json:
        _fail(at.at("model", "json"), "give model.file, or model.json with model.weights, not both")
    if bool(model.json) != bool(model.weights):
        key = "json" if model.json else "weights"
        _fail(at.at("model", key), "model.json (the architecture) and model.weights (its HDF5 weights) go together")
    for key in ("file", "json", "weights"):
        path = getattr(model, key)
        if path and not Path(path).exists():
            _fail(at.at("model", key), f"found {path!r}; no such file")
    if model.file and Path(model.file).suffix in OTHER_FRAMEWORKS and not (model.module or model.trust_code):
        _fail(
            at.at("model", "file"),
            f"found {model.file!r}; a PyTorch state dict needs its architecture (model.module: "
            "'models.py:ClassName'), and a whole pickled module (torch.save(model)) runs code when read: pass "
            "--trust-model-code for one you trust; a Keras model file ends in .keras or .h5",
        )
    if model.torch and config.pruning.strip:
        _fail(at.at("pruning", "strip"), STRIP_KERAS_ONLY)
    if config.data.dataset == "npz" and not (config.data.file and Path(config.data.file).exists()):
        _fail(at.at("data", "file"), f"found {config.data.file!r}; dataset 'npz' needs an existing .npz file")


def check_hls(config: RunConfig, at: Located) -> None:
    for path, call in (
        (("board",), lambda: load_board(config.board)),
        (("hls", "preset"), lambda: load_preset(config.hls.preset)),
        (("hls", "config"), lambda: load_preset({"HLSConfig": config.hls.config})),
    ):
        try:
            call()
        except FpgapruneError as error:
            _fail(at.at(*path), str(error))
    backend = known_backend(config.hls.backend)
    if backend is not None:
        try:
            backend.check_board(load_board(config.board))
        except FpgapruneError as error:
            _fail(at.at("board"), str(error))


def texts_front_end(config: RunConfig, at: Located):
    """The front end that reads the run's quantizer texts: PyTorch's for a PyTorch model (Brevitas), else the
    run's quantizer library's (QKeras); None where that library takes no texts (HGQ2, whose settings have a
    schema). One line naming `quantization.library` where this environment does not hold it."""
    if config.model.torch:
        return front_end_of_suffix(".pt")
    try:
        library = library_front_end(config.quantization.library)
    except FpgapruneError as error:
        _fail(at.at("quantization", "library"), str(error).split(": ", 1)[-1])
    if library.library_key == "qkeras":
        return library
    for key in ("default", "layers"):
        if getattr(config.quantization, key):
            _fail(
                at.at("quantization", key),
                f"QKeras quantizer texts, but the run quantizes with {library.quantizer_library}; set "
                "quantization.hgq2 instead (docs/hgq2.md)",
            )
    return None


def check_quantizers(config: RunConfig, at: Located) -> None:
    """Every quantizer text parses, and each weight quantizer keeps 0 (pruned weights stay 0 after it)."""
    front = texts_front_end(config, at)
    if front is None:
        return
    entries = [(("quantization", "default", role), text) for role, text in (config.quantization.default or {}).items()]
    entries += [
        (("quantization", "layers", layer, role), text)
        for layer, roles in config.quantization.layers.items()
        for role, text in roles.items()
    ]
    for path, text in entries:
        problem = front.quantizer_text_problem(text, path[-1], ".".join(path))
        if problem:
            _fail(at.at(*path), problem)


def check_pruning(config: RunConfig, at: Located, bound) -> None:
    """Selections, structures and the layers pruning names fit the bound model's record."""
    record = bound.record
    names = set(record.layers)
    for i, text in enumerate(config.pruning.selections):
        try:
            resolve(record, parse_selector(text))
        except FpgapruneError as error:
            _fail(at.at("pruning", "selections", i), f"found {text!r}; {error}")
    structure = config.pruning.structure
    structures = structure if isinstance(structure, dict) else {"*": structure}
    if structures == {"*": "hybrid"}:  # kernels, then elements: both fit every layer
        structures = {}
    for layer, spec in structures.items():
        try:
            parse_structure(spec)
        except FpgapruneError as error:
            _fail(at.at("pruning", "structure", *(() if layer == "*" else (layer,))), str(error))
    for key in ("targets", "do_not_prune"):
        listed = getattr(config.pruning, key)
        for layer in listed:
            if layer not in names:
                _fail(at.at("pruning", key, layer), f"found layer {layer!r}; the model has {', '.join(sorted(names))}")
    for layer, sparsity in config.pruning.targets.items():
        if not 0.0 <= sparsity < 1.0:
            _fail(at.at("pruning", "targets", layer), f"found {sparsity}; a sparsity is in [0, 1)")
    if config.pruning.scope == "global" and len(set(config.pruning.targets.values())) > 1:
        _fail(
            at.at("pruning", "targets"),
            f"found {dict(config.pruning.targets)}; a global scope ranks every "
            "listed layer to one sparsity, so give them all the same value",
        )


def check_budget(config: RunConfig, at: Located) -> None:
    """A budget names LUT/DSP of the run's board, and replaces per-layer targets and lottery rounds."""
    if not config.pruning.budget:
        return
    if config.pruning.targets:
        _fail(at.at("pruning", "budget"), "give pruning.targets (sparsities) or pruning.budget, not both")
    if config.pruning.lottery_rounds:
        _fail(at.at("pruning", "budget"), "a budget prunes by knapsack; lottery_rounds takes sparsities (targets)")
    try:
        budget = parse_budget(config.pruning.budget, load_board(config.board), where=at.at("pruning", "budget"))
    except FpgapruneError as error:
        raise ConfigError(str(error)) from None
    backend = known_backend(config.hls.backend)
    if budget.dsp_free and backend is not None and not backend.lut_products:
        _fail(
            at.at("pruning", "budget"),
            f"DSP: 0 builds every product from LUTs, which the {config.hls.backend} backend cannot ask of its tool; "
            f"use {', '.join(name for name in backend_names() if known_backend(name).lut_products)}",
        )


def check_quantized_layers(config: RunConfig, at: Located, record) -> None:
    """Per-layer quantizers name layers of the model's graph (a PyTorch forward's functional activations
    included), and an activation quantizer computes its layer's function (`record`: the model's)."""
    front = texts_front_end(config, at)
    if front is None:
        return
    layers = record.layers
    for layer, roles in config.quantization.layers.items():
        if layer not in layers:
            _fail(
                at.at("quantization", "layers", layer),
                f"found layer {layer!r}; the model has {', '.join(sorted(layers))}",
            )
        problem = front.activation_mismatch(layers[layer], roles["activation"]) if roles.get("activation") else None
        if problem:
            _fail(at.at("quantization", "layers", layer, "activation"), problem)


def check_layers(config: RunConfig, at: Located, model, front) -> None:
    """hls4ml can convert every layer: its class, its name, and its shapes in hls4ml's handlers (before training)."""
    problem = front.conversion_problem(model)
    if problem:
        where = at.at("model", "file") if config.model.file else at.at("model", "json") if config.model.json else None
        _fail(where or at.at("model"), problem)


def check_against_model(config: RunConfig, at: Located, bound, x=None) -> None:
    """The checks that need the run's starting model (bound to its front end where it was built or read:
    `pipeline.training.build_model`): its layers, selections, pruning keys, quantizers; with held-out inputs `x`,
    what hls4ml cannot build of it at the run's preset; and a note naming each layer whose exact zeros no hold can
    keep."""
    front = bound.front
    note_unheld_zeros(config, bound.record)
    check_layers(config, at, bound.model, front)
    if x is not None:
        check_buildable(config, at, bound, x)
    check_pruning(config, at, bound)
    check_quantized_layers(config, at, bound.record)


def check_buildable(config: RunConfig, at: Located, bound, x) -> None:
    """hls4ml can build the model at the run's preset and backend: none of its headers' preconditions fails, and
    nothing it would compute wrongly (`hls/buildable.py`), before any training. A model this environment exports
    only once quantized (a Keras 3 model beside HGQ2: its HGQ2 twin) is checked by the export instead, as is a
    backend that is not hls4ml's (RTL: its export names the layer it cannot write)."""
    if not isinstance(known_backend(config.hls.backend), Hls4mlBackend):
        return
    try:
        problems = preset_problems(
            bound, hls_preset(config), x, overrides=config.hls.config or None, backend=config.hls.backend
        )
    except FpgapruneError:
        return
    if problems:
        _fail(at.at("hls", "preset"), problems[0])


def note_unheld_zeros(config: RunConfig, record) -> None:
    """One note per kernel whose exact zeros fpgaprune cannot hold (a layer of a kind it does not know), where the
    run keeps the model's own zeros (`record`: the model's)."""
    import warnings

    if not (config.model.given() and config.pruning.keep_input_zeros):
        return
    for (layer, weight), line in unheld_zeros(record).items():
        warnings.warn(f"{layer}/{weight}: {line}", FpgapruneNote, stacklevel=2)


def check_config(config: RunConfig, at: Located, model=None) -> None:
    """Every check; `model` (the run's starting model, bare or bound) enables the checks against it."""
    check_files(config, at)
    check_hls(config, at)
    check_budget(config, at)
    check_quantizers(config, at)
    if model is not None:
        check_against_model(config, at, resolved(model))
