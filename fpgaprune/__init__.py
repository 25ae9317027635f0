"""fpgaprune: remove exactly the kernels you choose, retrain around them, and carry the zeros into hardware.

Importing fpgaprune sets TF_USE_LEGACY_KERAS=1 (so `tf.keras` is tf_keras, which QKeras and hls4ml's Keras-2
converter need) and fails with the fix if TensorFlow was already imported with Keras 3. TensorFlow itself is
imported on first use of the API (`fpgaprune.tfk`), so that the CLI can set up a quiet console first.
"""

from fpgaprune.support.environment import check_quantizer_environment, set_legacy_keras

check_quantizer_environment()
set_legacy_keras()

from fpgaprune import masking  # noqa: E402
from fpgaprune.errors import (  # noqa: E402
    DataError,
    ExportError,
    FpgapruneError,
    HlsConfigError,
    ManifestError,
    ModelFileError,
    ModelTypeError,
    NonFiniteError,
    QuantizationConfigError,
    QuantizerZeroError,
    SelectionError,
    UnsupportedLayerError,
)

# The data path's modules import no framework at module level (each front end's loads when its first model is
# read; hls4ml when the first export converts), so the API imports them here.
from fpgaprune.hls import boards as _boards  # noqa: E402
from fpgaprune.hls import export as _export  # noqa: E402
from fpgaprune.hls.backend import known_backend  # noqa: E402
from fpgaprune.hls.csim import compare_with_qkeras, logits_tolerance_of  # noqa: E402
from fpgaprune.hls.hls4ml_bridge import library_run  # noqa: E402
from fpgaprune.hls.names import map_keys  # noqa: E402
from fpgaprune.hls.tolerance import export_layer_tolerances, node_types  # noqa: E402
from fpgaprune.masking import HoldEntry, MaskManifest, enforce, finalize, hold, manifest_of  # noqa: E402
from fpgaprune.model.loading import load_model, save_model  # noqa: E402
from fpgaprune.pruning import Pruner  # noqa: E402
from fpgaprune.quantize import to_qkeras as _quantized_twin  # noqa: E402
from fpgaprune.quantize.profile import ProfileCollector  # noqa: E402
from fpgaprune.record import resolved  # noqa: E402
from fpgaprune.report import write_report as _write_report  # noqa: E402
from fpgaprune.resources import estimate_resources  # noqa: E402
from fpgaprune.strip import strip as _strip  # noqa: E402


def __getattr__(name: str):
    """`HoldConstraint`, tf_keras' hold constraint: it imports TensorFlow, so only when asked for."""
    if name == "HoldConstraint":
        return masking.HoldConstraint
    raise AttributeError(f"module 'fpgaprune' has no attribute {name!r}")


# The top-level API, in the order of the data path. Names differ from the sub-packages (`fpgaprune.strip`,
# `.quantize`, `.report`), which importing would otherwise shadow. See docs/reference/api.md.


def prune(model, sparsity=None, *, structure="kernel", score="l1", layers=None, selections=(), **options):
    """A held copy of `model`: the `selections` held at 0, then the lowest-scoring groups (`pruning.Pruner`)."""
    held = hold(model, prune=list(selections))
    if sparsity is None:
        return held
    return Pruner(structure=structure, score=score, layers=layers, **options).prune(held, sparsity=sparsity)


def strip_model(model, on_unsafe: str = "raise"):
    """`fpgaprune.strip.strip`: a smaller model with dead channels removed, and the index map."""
    return _strip(model, on_unsafe=on_unsafe)


def quantized_twin(model, spec=None, batchnorm: str = "fold"):
    """The quantized twin of `model` that QAT trains and the export reads, holds carried over: a Keras model's
    QKeras twin, a PyTorch module's Brevitas twin. `spec`: {"default": {role: quantizer text}, "layers": ...};
    None: the built-in default for float layers (a quantized layer keeps its own quantizers)."""
    return _quantized_twin(model, spec, batchnorm=batchnorm)


def to_qkeras(model, spec=None, batchnorm: str = "fold"):
    """`fpgaprune.quantize.to_qkeras`: the QKeras twin of `model`, holds carried over (`quantized_twin`)."""
    return quantized_twin(model, spec, batchnorm)


def export(*args, **kwargs):
    """`fpgaprune.hls.export`: a complete hls4ml project for a quantized model (imports hls4ml on first use)."""
    return _export(*args, **kwargs)


def csim(exported, model, x, task=None):
    """The C-simulation of an export (its backend's `simulator`) against the quantized model on every sample of `x`,
    at the logits (a `CsimResult`): bit-exact, or within the tolerance its types give where hls4ml is not exact,
    and every layer before them too;
    the decisions of `task` (`fpgaprune.model.task.Task`; default: the argmax); the numerical profile of the pass."""
    bound, names = resolved(model), exported.manifest.get("names", {})
    collector = ProfileCollector(bound, map_keys(node_types(exported.config), names), exported.input_type)
    tolerances = export_layer_tolerances(bound, exported.config, names, exported.input_type)
    backend = known_backend(exported.manifest["backend"])  # None: an hls4ml backend of the codegen seam alone
    run = backend.simulator(exported, bound, x) if backend else library_run(exported.hls_model, bound, x, names)
    return compare_with_qkeras(
        run,
        bound,
        x,
        exported.input_type,
        task=task,
        tolerance=logits_tolerance_of(bound.record, tolerances),
        collector=collector,
        tolerances=tolerances,
    )


def estimate(exported, dense_model=None):
    """`fpgaprune.resources.estimate_resources`: per-layer and per-kernel resource estimates (`dense_model`: the
    quantized model before pruning, for the dense figures and the savings)."""
    return estimate_resources(exported, dense_model)


def write_report(out_dir, exported, estimate, model, **options):
    """`fpgaprune.report.write_report`: report.html, report.md and resources.csv."""
    return _write_report(out_dir, exported, estimate, model, **options)


def boards() -> list:
    """The FPGA boards fpgaprune ships (`fpgaprune.hls.boards`)."""
    return _boards()


__version__ = "0.1.0"

__all__ = [
    "ExportError",
    "FpgapruneError",
    "HlsConfigError",
    "HoldConstraint",
    "HoldEntry",
    "ManifestError",
    "MaskManifest",
    "ModelFileError",
    "ModelTypeError",
    "NonFiniteError",
    "DataError",
    "QuantizationConfigError",
    "QuantizerZeroError",
    "SelectionError",
    "UnsupportedLayerError",
    "boards",
    "csim",
    "enforce",
    "estimate",
    "export",
    "finalize",
    "hold",
    "load_model",
    "manifest_of",
    "prune",
    "quantized_twin",
    "save_model",
    "strip_model",
    "to_qkeras",
    "write_report",
]
