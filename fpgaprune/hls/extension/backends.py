"""The seam between fpgaprune's hls4ml extension and hls4ml's backends.

A `BackendExtension` says what fpgaprune adds to one hls4ml backend: the kernel-sparse pass (with that
backend's code generator), where in its flows the pass runs, the templates that point layers at the
generated code, and the static C++ headers. `register_backend_extension` records it and registers it with
hls4ml, idempotently. `vivado/` registers the Vivado family (Vivado and Vitis) this way; a second backend
(Catapult, oneAPI, ...) is a sibling folder that does the same.
"""

from dataclasses import dataclass
from pathlib import Path

EXTENSIONS: dict = {}  # backend name (lower case) -> BackendExtension


@dataclass(frozen=True)
class BackendExtension:
    backend: str  # the hls4ml backend the pass and templates are registered with, e.g. "vivado"
    # A SparseKernels subclass whose `source` writes this backend's C++, the flow it joins and the pass there
    # it follows; None for a backend that runs another's pass (one derived from Vivado runs Vivado's flows).
    sparse_pass: type | None = None
    pass_flow: str = ""
    pass_after: str = ""
    templates: tuple = ()  # Template classes
    headers: tuple = ()  # static C++ headers (Path), copied into nnet_utils/
    header_backends: tuple = ()  # backends whose projects get the headers (default: `backend`)
    # Where the templates apply: None for the backend's own 'apply_templates' flow; else a flow of the `ip`
    # flow's requirements after which fpgaprune's templates run (so that stock templates cannot overwrite them).
    templates_after: str | None = None
    # (name, OptimizerPass class, the pass it follows) in hls4ml's backend-independent 'convert' flow: fixes of
    # the IR this backend needs; each matches this backend's models only
    convert_passes: tuple = ()


def register_backend_extension(extension: BackendExtension) -> None:
    """Record `extension` and register it with hls4ml (safe to call any number of times)."""
    EXTENSIONS[extension.backend.lower()] = extension
    _register(extension)


def _register(extension: BackendExtension) -> None:
    from hls4ml.backends import get_backend
    from hls4ml.model.flow import get_flow
    from hls4ml.model.optimizer import get_available_passes

    from fpgaprune.hls.extension.sparse_kernels import PASS_NAME

    backend, name = get_backend(extension.backend), extension.backend.lower()
    available = get_available_passes()
    if extension.sparse_pass is not None:
        if f"{name}:{PASS_NAME}" not in available:
            backend.register_pass(PASS_NAME, extension.sparse_pass)
        flow = get_flow(extension.pass_flow).optimizers
        if f"{name}:{PASS_NAME}" not in flow:
            flow.insert(flow.index(extension.pass_after) + 1, f"{name}:{PASS_NAME}")
    for template in extension.templates:
        if f"{name}:{template().get_name()}" not in available:
            backend.register_template(template)
    if extension.templates_after:
        _templates_flow(extension, name)
    for header in extension.headers:
        for target in extension.header_backends or (extension.backend,):
            get_backend(target).register_source(Path(header))
    _register_convert_passes(extension.convert_passes)


def _register_convert_passes(passes: tuple) -> None:
    from hls4ml.model.flow import get_flow
    from hls4ml.model.optimizer import get_available_passes, register_pass

    convert = get_flow("convert").optimizers
    for name, cls, after in passes:
        if name not in get_available_passes():
            register_pass(name, cls)
        if name not in convert:
            convert.insert(convert.index(after) + 1, name)


def _templates_flow(extension: BackendExtension, name: str) -> None:
    """A flow of fpgaprune's templates alone, required by the backend's `ip` flow after `templates_after`."""
    from hls4ml.model.flow import get_flow, register_flow

    flow_name = f"{name}:fpgaprune_templates"
    try:
        get_flow(flow_name)
    except Exception:  # hls4ml raises a bare Exception for an unknown flow
        templates = [f"{name}:{template().get_name()}" for template in extension.templates]
        register_flow("fpgaprune_templates", templates, backend=name)
    requires = get_flow(f"{name}:ip").requires
    if flow_name not in requires:
        requires.insert(requires.index(extension.templates_after) + 1, flow_name)
