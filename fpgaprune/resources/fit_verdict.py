"""Whether the design fits the board, per resource, from the estimate checked against vendor results for this
design's tool and layer kinds where one exists (a C-synthesis model of `csynth.py` with a row for every
estimated layer), with that model's held-out error as the verdict's uncertainty; else from fpgaprune's rules,
labelled unchecked. fpgaprune's own code has no vendor result: its figure is the model's with the zero-weight
sites dropped (the `fpgaprune_*` columns of `estimate.csynth`), keeping the per-product terms."""

import math
from dataclasses import dataclass

from fpgaprune.errors import HlsConfigError
from fpgaprune.hls.backend import backend_named
from fpgaprune.resources import csynth

FITS, DOES_NOT_FIT, WITHIN_ERROR = "fits", "does NOT fit", "within the model's held-out error of the limit"
CANNOT_JUDGE = "cannot be judged"


@dataclass
class ResourceVerdict:
    resource: str
    fraction: float  # of the board
    source: str
    error: tuple | None  # (lowest, highest) model / published - 1 of the source, held out; None: unchecked
    verdict: str

    def text(self) -> str:
        if self.error is None:
            return f"{self.resource} {self.fraction:.1%} of the board: {self.verdict} ({self.source})"
        low, high = self.error
        return (
            f"{self.resource} {self.fraction:.1%} of the board by {self.source} (held-out error {low:+.1%} to "
            f"{high:+.1%}): {self.verdict}"
        )


def verdict_of(fraction: float, error: tuple | None) -> str:
    """fits / does NOT fit / within the error: the true fraction lies in [f / (1 + high), f / (1 + low)]."""
    if error is None:
        return FITS if fraction <= 1 else DOES_NOT_FIT
    low, high = error
    most = fraction / (1 + low) if low > -1 else math.inf
    if most <= 1:
        return FITS
    return DOES_NOT_FIT if fraction / (1 + high) > 1 else WITHIN_ERROR


def cost_models(backend: str) -> tuple:
    """The checked C-synthesis models that may judge `backend`'s designs, its own (`Backend.cost_models`); none:
    the rules only (a backend fpgaprune does not know included)."""
    try:
        return backend_named(backend).cost_models
    except HlsConfigError:
        return ()


def checked_model(estimate, backend: str, resource: str):
    """The backend's own C-synthesis model that prices every estimated layer and has a held-out error for
    `resource`."""
    layers = {layer.name for layer in estimate.layers}
    for model in cost_models(backend):
        rows = {r["layer"] for r in estimate.csynth if r["tool"] == model.tool}
        if resource in model.errors and layers and rows >= layers:
            return model
    return None


def design_model(layers: list, backend: str, resource: str):
    """As `checked_model`, before export: the backend's model that prices every one of `layers` ((kind, io_type,
    strategy, fabric) tuples, `csynth.models_for`) and models `resource`; None if none does."""
    for model in cost_models(backend):
        if resource in model.errors and layers and all(model in csynth.models_for(*layer) for layer in layers):
            return model
    return None


def checked_usage(estimate) -> tuple[dict, dict]:
    """({resource: count}, {resource: source}) of the pruned design as its fit verdict reads it: the checked
    model's figure where one judges the resource, else the rules'."""
    verdicts = estimate.fit_verdicts()
    return (
        {v.resource: v.fraction * estimate.board.resources[v.resource] for v in verdicts},
        {v.resource: v.source for v in verdicts},
    )


def fit_verdicts(estimate, backend: str) -> list[ResourceVerdict]:
    """LUT and DSP (and the rest from the rules), each from its checked source where one exists. A design with a
    layer that runs stock code (not estimated) cannot be judged, naming it: its figures would count that layer as
    zero. Only where the estimated layers alone exceed the board does it not fit."""
    rules = estimate.board_fraction(estimate.total("pruned"))
    if estimate.unestimated:
        return [_partial(resource, fraction, estimate, backend) for resource, fraction in rules.items()]
    verdicts = []
    for resource, fraction in rules.items():
        model = checked_model(estimate, backend, resource) if resource in ("LUT", "DSP") else None
        if model is None:
            verdicts.append(
                ResourceVerdict(
                    resource,
                    fraction,
                    f"rule estimate; {_no_model(backend)}",
                    None,
                    verdict_of(fraction, None),
                )
            )
            continue
        total = sum(r[f"fpgaprune_{resource}"] for r in estimate.csynth if r["tool"] == model.tool)
        share = total / estimate.board.resources[resource]
        error = model.errors[resource]
        verdicts.append(
            ResourceVerdict(resource, share, f"the {model.tool} C-synthesis model", error, verdict_of(share, error))
        )
    return verdicts


def _partial(resource: str, fraction: float, estimate, backend: str) -> ResourceVerdict:
    """A resource of a design some of whose layers are not estimated: the estimated layers' share is a floor."""
    stock = ", ".join(estimate.unestimated)
    stock += f" run{'s' if len(estimate.unestimated) == 1 else ''} hls4ml's stock {backend} code"
    if not estimate.layers:
        source = f"no layer estimated: {stock}"
        return ResourceVerdict(resource, fraction, source, None, CANNOT_JUDGE)
    source = f"rule estimate of the estimated layers only, a floor: {stock}, not estimated"
    return ResourceVerdict(resource, fraction, source, None, DOES_NOT_FIT if fraction > 1 else CANNOT_JUDGE)


def _no_model(backend: str) -> str:
    """Why the rules judge: the backend has no checked model at all, or none for these layer kinds."""
    if not cost_models(backend):
        return f"rules only: no vendor-checked C-synthesis model for {backend}"
    return f"no vendor-checked model for {backend} on these layer kinds"


def overall(verdicts: list) -> str:
    """does NOT fit if any resource does not; cannot be judged, then within the error, if any is; else fits."""
    kinds = {v.verdict for v in verdicts}
    return next((kind for kind in (DOES_NOT_FIT, CANNOT_JUDGE, WITHIN_ERROR) if kind in kinds), FITS)
