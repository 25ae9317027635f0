"""`estimate_resources()`: per-layer and per-kernel estimates of an exported project, dense vs pruned, vs the board."""

import csv
import io
from dataclasses import dataclass, field

import numpy as np

from fpgaprune.hls.backend import DEFAULT_BACKEND, XILINX_RESOURCES, Backend, known_backend
from fpgaprune.hls.names import original_name
from fpgaprune.record import record_of
from fpgaprune.resources import csynth, fit_verdict, rules
from fpgaprune.resources.estimator import (
    Cost,
    dense_products,
    kernel_savings,
    layer_cost,
    layer_types,
    live_products,
)
from fpgaprune.support.text_table import format_rows, number

RESOURCES = tuple((name, key) for key, name in XILINX_RESOURCES.items())  # the Xilinx backends' columns
SAVED = {"dsp": "%g", "lut": "%.0f", "bram_18k": "%g"}  # the resources a removal saves, and how they are written
SOURCE = "estimate (fpgaprune rules, see fpgaprune/resources/rules.py)"
# Where each estimated column stands against published vendor results of stock hls4ml designs
# (benchmarks/bench_published.py on benchmarks/published/; docs/resources.md).
COLUMN_SOURCES = {
    "DSP": "rule estimate. Dense layers (io_parallel): checked against Vivado HLS 2019.2 C-synthesis of 4 published "
    "hls4ml designs (held-out error -3.1% and +4.9%, resources/csynth.py); Vitis HLS 2024.1 builds 34-72% of "
    "constant products from LUTs, which no rule here predicts. Convolutions: this rule was not fitted on "
    "them; as it is, against published Vivado HLS 2020.1 io_stream designs of the hls4ml tutorial's part-6 "
    "CNN (benchmarks/bench_published_cnn.py): +3% to +45% per layer at 16 bits, and at 6 bits it does not "
    "predict which products the tool puts in DSPs. The C-synthesis model fitted on those designs (the "
    "table below) holds out at -14% to +7% at 16 bits. io_parallel convolutions: unchecked",
    "LUT": "rule estimate (multipliers and adders of the live products), not calibrated. C-synthesis reports more: "
    "its per-tool model (resources/csynth.py, two coefficients fitted on published Dense layers) holds out "
    "at -4.6% and +2.5% (Vivado HLS 2019.2) and -2.5% and +21% (Vitis HLS 2024.1); on the part-6 CNN's "
    "io_stream convolutions (Vivado HLS 2020.1), as it is, -7% to +6% at 16 bits and -9% to +96% at 6 "
    "bits; io_parallel convolutions: unchecked",
    "FF": "rule estimate (adder-tree pipeline registers), not calibrated: 12-40% of Vivado HLS and 65-220% of "
    "Vitis HLS C-synthesis FF figures",
    "BRAM_18K": "rule estimate (the Resource strategy's weight ROM), not checked against a vendor tool",
}
CSYNTH_SOURCE = (
    "C-synthesis model per tool (fpgaprune/resources/csynth.py), shown only for the layer kinds and io "
    "types it was fitted and held out on (Dense in io_parallel: the jet tagger's published designs; "
    "convolutions and Dense in io_stream: the part-6 CNN's, Vivado HLS 2020.1): two or three "
    "coefficients fitted on published reports of stock hls4ml designs, the rest rules. Stock hls4ml "
    "leaves each zero to the HLS compiler; fpgaprune's figure assumes what its code does, no site for a "
    "zero, which no vendor tool has checked here"
)


@dataclass
class LayerEstimate:
    name: str  # the hls4ml node, by the user's layer name
    original: str  # the user's layer whose kernels it holds (its name before a strip or a split)
    kind: str
    pruned: Cost
    dense: Cost | None = None
    savings: list = field(default_factory=list)
    node: str = ""  # the hls4ml node's own name (a C++ identifier), where the export renamed the layer

    def __post_init__(self):
        self.node = self.node or self.name


@dataclass
class ResourceEstimate:
    board: object
    layers: list
    notes: list = field(default_factory=list)
    csynth: list = field(default_factory=list)  # `csynth_rows`: the C-synthesis models' view of the layers
    backend: str = DEFAULT_BACKEND  # the export's: which tool's C-synthesis model may judge the fit
    unestimated: list = field(default_factory=list)  # the layers with weights that run hls4ml's stock code
    resources: tuple = RESOURCES  # the backend's resource columns (`Backend.resource_columns`)

    def total(self, which: str) -> Cost:
        total = Cost()
        for layer in self.layers:
            cost = getattr(layer, which) or layer.pruned
            for key in ("products", "per_inference", "multipliers", "dsp", "lut", "ff", "bram_18k", "latency_cycles"):
                setattr(total, key, getattr(total, key) + getattr(cost, key))
        return total

    def board_fraction(self, cost: Cost) -> dict:
        return {
            name: getattr(cost, key) / self.board.resources[name]
            for name, key in self.resources
            if self.board.resources.get(name)
        }

    def fit_verdicts(self) -> list:
        """Per resource, whether the pruned design fits: from the vendor-checked estimate where one exists for
        the backend's tool and these layer kinds, with its held-out error (`fit_verdict.py`), else the rules."""
        return fit_verdict.fit_verdicts(self, self.backend)

    def verdict(self) -> str:
        """fits / does NOT fit / within the model's held-out error of the limit (`fit_verdicts` together)."""
        return fit_verdict.overall(self.fit_verdicts())

    def fits(self) -> bool:
        """Whether the pruned design fits the board for certain (`verdict`; the rules' estimate where no
        vendor-checked model covers the design)."""
        return self.verdict() == fit_verdict.FITS

    def savings(self) -> list:
        return [saving for layer in self.layers for saving in layer.savings]

    def removed_groups(self) -> int:
        """Kernels (conv) and outputs (Dense) removed as a whole; partly pruned ones are not counted."""
        return sum(saving.whole for saving in self.savings())

    def rows(self) -> list:
        rows = []
        for layer in self.layers:
            for label, cost in (("dense", layer.dense), ("pruned", layer.pruned)):
                if cost is not None:
                    rows.append(
                        {
                            "layer": layer.name,
                            "original_layer": layer.original,
                            "model": label,
                            "live_weights": cost.products,
                            "products_per_inference": cost.per_inference,
                            "multipliers": cost.multipliers,
                            **{name: getattr(cost, key) for name, key in self.resources},
                            "latency_cycles": cost.latency_cycles,
                            "II_cycles": cost.ii_cycles,
                            "source": SOURCE,
                        }
                    )
        return rows

    def to_csv(self) -> str:
        rows = self.rows()
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=list(rows[0]) if rows else ["layer"])
        writer.writeheader()
        writer.writerows(rows)
        return out.getvalue()

    def savings_csv(self) -> str:
        """Every kernel's saving, largest LUT saving first: the full list behind the report's table."""
        out = io.StringIO()
        writer = csv.writer(out)
        saved = [(name, key) for name, key in self.resources if key in SAVED]  # what a removal saves, per resource
        head = ("layer", "group", "removed_whole", "weights_removed", "products_per_inference_removed")
        writer.writerow((*head, *(f"{name}_saved" for name, _ in saved), "source"))
        for s in sorted(self.savings(), key=lambda s: (-s.lut, -s.products, s.name)):
            figures = [number(getattr(s, key), SAVED[key]) for _, key in saved]
            writer.writerow((s.layer, s.name, s.whole, s.products, s.per_inference, *figures, SOURCE))
        return out.getvalue()

    def format(self) -> str:
        names = [name for name, _ in self.resources]
        header = ("layer", "model", "live weights", "products/inference", "multipliers", *names, "latency", "II")
        table = [
            (
                r["layer"],
                r["model"],
                r["live_weights"],
                r["products_per_inference"],
                r["multipliers"],
                *(r[name] for name in names),
                r["latency_cycles"],
                r["II_cycles"],
            )
            for r in self.rows()
        ]
        pruned = self.total("pruned")
        share = ", ".join(f"{name} {fraction:.1%}" for name, fraction in self.board_fraction(pruned).items())
        lines = [f"Resources ({SOURCE}) on {self.board.name} ({self.board.part})"]
        lines += format_rows(header, table)
        lines.append(f"pruned design: {share} of the board; it {self.verdict()} on {self.board.name} (estimate)")
        lines += [f"fit: {v.text()}" for v in self.fit_verdicts()]
        return "\n".join(lines + [f"note: {note}" for note in self.notes])


def estimate_resources(exported, dense_model=None) -> ResourceEstimate:
    """Estimates for every kernel-sparse node of `exported` (an `Export`, fresh or reloaded: read from its
    manifest); with `dense_model` (the same quantized model before pruning, original layer names: bound, bare or
    its record), the dense figures and the per-kernel savings too."""
    layers = []
    stock = {
        original_name(name, exported.manifest): entry["class"]
        for name, entry in exported.manifest["hls_nodes"].items()
        if name not in exported.nodes
    }
    notes = [f"{name}: {kind} runs hls4ml's stock code; not estimated" for name, kind in stock.items()]
    fabric = [original_name(r.name, exported.manifest) for r in exported.nodes.values() if r.fabric]
    if fabric:
        notes.append(
            f"{', '.join(fabric)}: every product built from LUTs (Multipliers: fabric), no DSP; "
            f"{rules.FABRIC_RULE_SOURCE}"
        )
    dense = record_of(dense_model).layers if dense_model is not None else {}
    for record in exported.nodes.values():
        plan, types = record.plan, layer_types(record, exported.board)
        live = live_products(record)
        estimate = LayerEstimate(
            original_name(record.name, exported.manifest),
            plan.origin.layer,
            plan.kind,
            layer_cost(live[0], live[2], types),
            node=record.name,
        )
        if plan.origin.layer in dense:
            products = dense_products(dense[plan.origin.layer], types.weight_frac)
            estimate.dense = layer_cost(products[0], products[2], types)
            estimate.savings = kernel_savings(plan.origin, plan.kind, live, products, types)
        layers.append(estimate)
    backend = exported.manifest.get("backend", DEFAULT_BACKEND)
    columns = (known_backend(backend) or Backend(backend)).resource_columns()
    return ResourceEstimate(exported.board, layers, notes, csynth_rows(exported), backend, list(stock), columns)


def csynth_rows(exported) -> list[dict]:
    """Per node and per C-synthesis model checked on its kind, io type and strategy (`csynth.models_for`), the
    model's figures for stock hls4ml of the same weights, which leaves every zero a site for the HLS compiler,
    and for fpgaprune's export, whose code has no site for a zero."""
    rows = []
    for record in exported.nodes.values():
        models = csynth.models_for(record.plan.kind, record.io_type, record.strategy, record.fabric)
        if not models:
            continue
        types = layer_types(record, exported.board)
        live = live_products(record)[0]
        stock = np.concatenate([live, np.zeros(record.plan.n_in * record.plan.n_out - live.size, np.int64)])
        for model in models:
            stock_figures, export_figures = (
                csynth.csynth_estimate(
                    csynth.layer_features(
                        codes,
                        types.weight_bits,
                        types.input_bits,
                        types.reuse,
                        types.dsp_a_bits,
                        types.dsp_b_bits,
                        model.dsp_min_width,
                    ),
                    model,
                )
                for codes in (stock, live)
            )
            rows.append(
                {
                    "layer": original_name(record.name, exported.manifest),
                    "tool": model.tool,
                    "stock_LUT": round(stock_figures["LUT"]),
                    "fpgaprune_LUT": round(export_figures["LUT"]),
                    "stock_DSP": stock_figures["DSP"],
                    "fpgaprune_DSP": export_figures["DSP"],
                    "held_out": model.held_out,
                }
            )
    return rows
