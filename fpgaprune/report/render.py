"""`write_report()`: report.html (self-contained, inline PNGs), report.md and resources.csv, each written atomically."""

import base64
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fpgaprune.hls.csim import CsimResult
from fpgaprune.hls.manifest import quantized_kernel
from fpgaprune.model.task import METRICS
from fpgaprune.record import record_of
from fpgaprune.report import figures
from fpgaprune.resources.estimate import COLUMN_SOURCES, CSYNTH_SOURCE
from fpgaprune.resources.estimate import SOURCE as ESTIMATE_SOURCE
from fpgaprune.resources.estimator import kernel_cost_grid, layer_types, live_products
from fpgaprune.resources.yosys import SOURCE as YOSYS_SOURCE
from fpgaprune.support.atomic import write_text_atomic
from fpgaprune.support.text_table import number

TEMPLATES = Path(__file__).parent / "templates"
TOP_ROWS = 20  # savings rows shown before "show all"; the full list is in savings.csv


@dataclass
class Measurements:
    """Open-source synthesis results to show next to the estimates (all optional)."""

    yosys: dict = field(default_factory=dict)  # hls4ml node -> Synthesis of its DA circuit
    removals: list = field(default_factory=list)  # KernelRemoval
    calibration: object = None  # Calibration
    vendor: dict | None = None
    scope: str | None = None  # "sample" or "all": what yosys measured
    traced: dict = field(default_factory=dict)  # hls4ml node -> da4ml cost of its DA circuit
    samples: dict = field(default_factory=dict)  # sampled circuit -> Synthesis
    unmeasured: dict = field(default_factory=dict)  # circuit -> why it was not measured


def _b64(png: bytes) -> str:
    return base64.b64encode(png).decode("ascii")


def _model_summary(record, quantizer_sources: dict | None = None) -> list:
    """Per layer of a model's record: its class, output shape, parameters and where its quantizers came from (the
    quantize stage's record: its own, kept, or the config's)."""
    return [
        {
            "name": layer.name,
            "cls": layer.class_name,
            "shape": str(layer.output_shape) if layer.output_shape else "",  # a PyTorch module records none
            "params": layer.params,
            "quantizers": (quantizer_sources or {}).get(layer.name, ""),
        }
        for layer in record.layers.values()
    ]


def _heatmaps(exported, estimate, dense) -> dict:
    """{original layer: [(part, PNG)]}: each conv layer's kernel map, split into tiles beyond 64 x 64 (`dense`: the
    dense model's record, where given)."""
    maps, dense = {}, dense.layers if dense is not None else {}
    for layer in estimate.layers:
        record = exported.nodes[layer.node]
        if layer.kind != "conv2d":
            continue
        reference = dense.get(layer.original)
        origin = record.plan.origin
        shape = (
            quantized_kernel(reference).shape[-2:]
            if reference is not None
            else (max(origin.inputs) + 1, max(origin.outputs) + 1)
        )
        costs = kernel_cost_grid(live_products(record), layer_types(record, exported.board), shape)
        pruned = np.zeros(shape, bool)
        if reference is not None:
            pruned = (quantized_kernel(reference) != 0).any(axis=(0, 1)) & (costs == 0)
        for rows, cols in figures.tiles(shape):
            part = (
                ""
                if (rows.stop - rows.start, cols.stop - cols.start) == tuple(shape)
                else f" (ci {rows.start}-{rows.stop - 1}, co {cols.start}-{cols.stop - 1})"
            )
            maps.setdefault(layer.original, []).append(
                (
                    part,
                    _b64(
                        figures.kernel_cost_map(
                            f"{layer.original}{part}: estimated LUTs per kernel",
                            costs[rows, cols],
                            pruned[rows, cols],
                            (rows.start, cols.start),
                        )
                    ),
                )
            )
    return maps


def _layer_sections(estimate, maps: dict) -> list:
    """One section per estimated layer: its totals dense -> pruned, its largest savings and its kernel maps."""
    sections = []
    for layer in estimate.layers:
        dense = layer.dense or layer.pruned
        top = sorted(layer.savings, key=lambda s: (-s.lut, -s.products, s.name))[:3]
        partial = [saving for saving in layer.savings if not saving.whole]
        sections.append(
            {
                "name": layer.name,
                "original": layer.original,
                "kind": layer.kind,
                "dense": dense,
                "pruned": layer.pruned,
                "removed": len(layer.savings) - len(partial),
                "partial": len(partial),
                "partial_weights": sum(saving.products for saving in partial),
                "top": top,
                "group": "output" if layer.kind == "dense" else "kernel",
                "maps": maps.get(layer.original, []),
            }
        )
    return sections


def _measured_rows(estimate, measurements: Measurements) -> list:
    """Per layer: the multiplier export's estimate, the DA option's calibrated estimate (scale x da4ml cost) and
    its yosys measurement, or why it was not measured; then each sampled circuit."""
    rows, calibration = [], measurements.calibration
    for layer in estimate.layers:
        synthesis = measurements.yosys.get(layer.node)
        cost = synthesis.da4ml_cost if synthesis else measurements.traced.get(layer.node)
        reason = next((why for name, why in measurements.unmeasured.items() if name.split(" ")[0] == layer.node), None)
        yosys = _measured_luts(synthesis) if synthesis else (f"- ({reason})" if reason else "-")
        if synthesis is None and measurements.scope == "sample" and not reason:
            yosys = "- (sampled below; outputs.measure: all measures every layer)"
        rows.append(
            {
                "layer": layer.name,
                "estimate": layer.pruned.lut,
                "da_estimate": f"{calibration.estimate(cost):.0f}" if cost is not None and calibration else "-",
                "yosys": yosys,
            }
        )
    for name, synthesis in measurements.samples.items():
        rows.append(
            {
                "layer": f"sample: {name}",
                "estimate": "-",
                "yosys": str(synthesis.luts),
                "da_estimate": f"{calibration.estimate(synthesis.da4ml_cost):.0f}" if calibration else "-",
            }
        )
    return rows


def _measured_luts(synthesis) -> str:
    """A layer's measured LUTs; when yosys took it in parts, how many, and the parts' da4ml cost against the
    layer's as one circuit."""
    if synthesis is None:
        return "-"
    if synthesis.parts == 1:
        return str(synthesis.luts)
    change = synthesis.da4ml_cost / synthesis.layer_da4ml_cost - 1
    return f"{synthesis.luts} (in {synthesis.parts} parts; their da4ml cost {change:+.1%} against one circuit)"


def _yosys_source(measurements: Measurements) -> str:
    """The measured figures' source, with the yosys version that produced them when it was recorded."""
    sources = {synthesis.source for synthesis in [*measurements.yosys.values(), *measurements.samples.values()]}
    return sources.pop() if len(sources) == 1 else YOSYS_SOURCE


def removed(value, fmt: str = "%g") -> str:
    """A saving as the table shows it: "−3" for 3 removed, "0" (never "−0") for none."""
    text = number(value, fmt)
    return text if text == "0" else f"\u2212{text}"


def _headline(estimate, measurements: Measurements, csim) -> dict:
    """The first screen: groups, weights and products removed, the resources against the board, what was
    measured, and C-sim (a `CsimResult`, as `fp.csim` returns it, or the csim stage's metrics)."""
    dense, pruned = estimate.total("dense"), estimate.total("pruned")
    measured = sum(s.luts for s in measurements.yosys.values()) if measurements.yosys else None
    if isinstance(csim, dict):
        csim = CsimResult.from_metrics(csim)
    return {
        "groups": estimate.removed_groups(),
        "weights": (dense.products, pruned.products),
        "products": (dense.per_inference, pruned.per_inference),
        "removed_fraction": 1 - pruned.per_inference / dense.per_inference if dense.per_inference else 0.0,
        "lut": (dense.lut, pruned.lut),
        "dsp": (dense.dsp, pruned.dsp),
        "measured_lut": measured,
        "measured_layers": len(measurements.yosys),
        "layers": len(estimate.layers),
        "removal": measurements.removals[0] if measurements.removals and not measurements.yosys else None,
        "samples": measurements.samples if not measurements.removals and not measurements.yosys else {},
        "measured_source": _yosys_source(measurements),
        "csim": csim,
    }


def _scores(accuracies: dict | None, metric: str, task) -> dict:
    """The headline metric of each stage, formatted: {"name": "accuracy", "values": {stage: "97.33%"}, ...}."""
    shown = (
        task.format_score
        if task is not None
        else ((lambda v: f"{v:.2%}") if "accuracy" in metric else (lambda v: f"{v:.4g}"))
    )
    return {
        "name": METRICS.get(metric, metric),
        "values": {k: shown(v) for k, v in (accuracies or {}).items()},
        "lower_is_better": metric in ("rmse", "mae"),
        "task": task.describe() if task is not None else None,
    }


def report_context(
    exported,
    estimate,
    record,
    *,
    dense_model=None,
    accuracies=None,
    metric: str = "accuracy",
    task=None,
    measurements: Measurements | None = None,
    title="fpgaprune report",
    csim=None,
    budget: list | None = None,
    profile=None,
    saturation: list | None = None,
    saturation_threshold: float | None = None,
    quantizer_sources: dict | None = None,
    ebops: dict | None = None,
) -> dict:
    measurements = measurements or Measurements()
    return {
        "ebops": _ebops_rows(ebops),
        "ebops_source": EBOPS_SOURCE,
        "hgq2_advice": HGQ2_ADVICE if ebops else "",
        "headline": _headline(estimate, measurements, csim),
        "budget": budget or [],
        "title": title,
        "board": exported.board,
        "project": str(exported.path),
        "model_summary": _model_summary(record, quantizer_sources),
        "quantizer_sources": quantizer_sources or {},
        "accuracies": accuracies or {},
        "scores": _scores(accuracies, metric, task),
        "profile": _profile_section(profile, saturation, saturation_threshold),
        "resource_rows": estimate.rows(),
        "dense_total": estimate.total("dense"),
        "pruned_total": estimate.total("pruned"),
        "board_fraction": estimate.board_fraction(estimate.total("pruned")),
        "fits": estimate.fits(),
        "verdict": estimate.verdict(),
        "fit_lines": [v.text() for v in estimate.fit_verdicts()],
        "notes": estimate.notes,
        "savings": sorted(estimate.savings(), key=lambda s: (-s.lut, -s.products, s.name)),
        "top_rows": TOP_ROWS,
        "estimate_source": ESTIMATE_SOURCE,
        "column_sources": COLUMN_SOURCES,
        "csynth_rows": estimate.csynth,
        "csynth_source": CSYNTH_SOURCE,
        "yosys_source": _yosys_source(measurements),
        "measured_rows": _measured_rows(estimate, measurements),
        "measured_in_parts": any(s.parts > 1 for s in measurements.yosys.values()),
        "removals": measurements.removals,
        "vendor": measurements.vendor,
        "scope": measurements.scope,
        "unmeasured": measurements.unmeasured,
        "calibration": measurements.calibration.format() if measurements.calibration else None,
        "figures": {"bars": _b64(figures.resource_bars(estimate))},
        "layers": _layer_sections(estimate, _heatmaps(exported, estimate, dense_model)),
    }


EBOPS_SOURCE = (
    "effective bit operations, HGQ2's own cost measure (each product's input bits x weight bits, summed, as HGQ2 "
    "computes it to penalize its training), not a count of LUTs or DSPs"
)


# What the Pareto front against HGQ2 alone measured (benchmarks/bench_hgq2_front.py): shown with an HGQ2 model's
# EBOPs, as advice on whether to remove kernels at all.
HGQ2_ADVICE = (
    "Measured against HGQ2 alone (benchmarks/results/hgq2_front: two Fashion-MNIST CNNs, 3 seeds, each point "
    "priced by fp.estimate of its latency_parallel export): at or under the LUT and DSP of each HGQ2-alone point, "
    "removing kernels before HGQ2's QAT (by target or by budget) was ahead at 9 of 10 points (+0.01 to +0.56 "
    "points) and level at one (-0.01). There, at HGQ2's smallest beta, the layers not pruned took DSPs for wide "
    "activations, so a budget on LUT and DSP could not be met by removing kernels: where DSPs are the limit, "
    "raise quantization.hgq2.beta0 (or prune those layers too), and give pruning.budget a DSP count as well as LUT. "
    "On the larger CNN, fpgaprune with QKeras 6-bit (its own environment) was 0.6 to 1.6 points more accurate than "
    "every HGQ2 point with as many LUTs or more. Priced as the distributed_arithmetic circuit instead "
    "(benchmarks/results/hgq2_front_da: the smaller CNN, one seed), removing kernels first was ahead at 4 of 5 "
    "HGQ2-alone points (+0.01 to +0.63) and level at one. At HGQ2's low-cost end (16 epochs at beta 3e-7 to 3e-6, "
    "0.2M to 2.7M EBOPs; three seeds) HGQ2 alone fell to 68-75%, and removing 90% of the kernels first kept 82.1% "
    "at fewer LUTs (+14.1 and +7.3 points). Against PQuantML (its PDP, Wanda and MDMM at sparsity 0.5 to 0.9, with "
    "its fixed-point and its HGQ quantizers, the smaller CNN, 3 seeds), removing kernels before HGQ2's QAT was "
    "ahead of MDMM wherever it had a point as cheap (+1.4 to +3.5 points) and level with PDP and Wanda at sparsity "
    "0.5 (within the seeds' spread). Its cheap end, with no DSP, is fpgaprune's too: with a budget of DSP: 0 "
    "(every product built from LUTs, priced by a rule checked against yosys) pruning every layer (pruning.targets "
    "or the budget naming each layer), fpgaprune had a point at or under each of PQuantML's 30 (6 and 12 epochs, 3 "
    "seeds): ahead at 25, level at 5 (PDP with HGQ at 0.7 among them), behind at none; under PDP's and Wanda's "
    "cheapest (77.3-77.7% at 42,000-61,000 LUT) it kept 80.8-84.3%. Where DSPs must stay unused, give the budget "
    "DSP: 0 and name every layer; a larger beta buys fewer LUTs for accuracy (at 12 epochs beta 1e-6 fell to 81.9%, "
    "1e-7 kept 84.8%). By the rules on the ZCU102, not yet by place and route."
)


def _ebops_rows(ebops: dict | None) -> list:
    """[(layer, EBOPs)] and the total, for an HGQ2 model (empty otherwise)."""
    if not ebops:
        return []
    return [(name, f"{value:,}") for name, value in ebops.items()] + [("total", f"{sum(ebops.values()):,}")]


def _profile_section(profile, saturation: list | None, threshold: float | None) -> dict | None:
    """The profile's box plot and its rows over the threshold (None without a profile)."""
    if profile is None or not profile.rows:
        return None
    over = profile.over(threshold) if threshold is not None else []
    return {
        "figure": _b64(figures.profile_boxes(profile, threshold)),
        "over": over,
        "threshold": threshold,
        "lines": saturation or [],
        "rows": profile.rows,
    }


def write_report(out_dir, exported, estimate, model, **options) -> dict:
    """Write report.html, report.md, resources.csv and savings.csv into `out_dir`, from the quantized model (bound,
    bare or its record); returns their paths.

    Options: `dense_model` (the model before pruning, as `model`: dense figures and savings), `accuracies`
    ({stage: the task's metric}) with `metric` ("accuracy", "label_accuracy", "rmse", "mae") and `task`
    (`fpgaprune.model.task.Task`), `csim` (what `fp.csim` returns, or the csim stage's metrics), `measurements`,
    `budget`, `profile` (`quantize.profile.Profile`) with `saturation` (its console lines) and
    `saturation_threshold`, `quantizer_sources` ({layer: where its quantizers came from}), `ebops` ({layer: HGQ2's
    EBOPs}, for an HGQ2 model) and `title`."""
    import jinja2

    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=jinja2.select_autoescape(["html", "html.j2"]),
        keep_trailing_newline=True,
    )
    environment.filters["removed"] = removed
    if options.get("dense_model") is not None:
        options["dense_model"] = record_of(options["dense_model"])
    context = report_context(exported, estimate, record_of(model), **options)
    out_dir = Path(out_dir)
    return {
        "html": write_text_atomic(out_dir / "report.html", environment.get_template("report.html.j2").render(context)),
        "md": write_text_atomic(out_dir / "report.md", environment.get_template("report.md.j2").render(context)),
        "csv": write_text_atomic(out_dir / "resources.csv", estimate.to_csv()),
        "savings_csv": write_text_atomic(out_dir / "savings.csv", estimate.savings_csv()),
    }
