"""Resource estimates per layer and per kernel of an exported model, from its actual quantized weights.

Everything here is an estimate (see `rules.py` for the rules and their sources). Weights are indexed by
the original layer's indices, so a stripped channel's kernels are priced like any other pruned kernel.
"""

from dataclasses import dataclass, field

import numpy as np

from fpgaprune.hls.live_weights import KernelOrigin
from fpgaprune.hls.manifest import quantized_kernel
from fpgaprune.resources import rules
from fpgaprune.support.text_table import number

KINDS = ("shift", "lut", "dsp")


@dataclass(frozen=True)
class LayerTypes:
    """What the estimate needs to know about a layer's hardware."""

    weight_bits: int
    weight_frac: int
    input_bits: int
    accum_bits: int
    reuse: int
    strategy: str
    io_type: str
    positions: int  # output pixels (1 for Dense)
    dsp_a_bits: int = 25
    dsp_b_bits: int = 18
    fabric: bool = False  # every product built from LUTs (`Multipliers: fabric`): no DSP


@dataclass
class Cost:
    """An estimate of one layer (or one kernel's share); `source` says where the figures come from. `products`
    counts live weights (one product each per output position), `per_inference` the products of one inference."""

    products: int = 0
    per_inference: int = 0
    multipliers: int = 0
    dsp: int = 0
    lut: int = 0
    ff: int = 0
    bram_18k: int = 0
    latency_cycles: int = 0
    ii_cycles: int = 0
    source: str = "estimate"
    kinds: dict = field(default_factory=dict)

    def minus(self, other: "Cost") -> "Cost":
        keys = ("products", "per_inference", "multipliers", "dsp", "lut", "ff", "bram_18k")
        return Cost(**{k: getattr(self, k) - getattr(other, k) for k in keys})


def adder_share(types: LayerTypes) -> int:
    """How many products share one adder: the reuse factor, except in the Latency strategy, where hls4ml limits
    only the multipliers (`ALLOCATION operation instances=mul`) and every adder is built."""
    return 1 if types.strategy == "latency" else max(types.reuse, 1)


def layer_cost(codes: np.ndarray, outputs: np.ndarray, types: LayerTypes) -> Cost:
    """The estimate of a layer whose live products have weight codes `codes` into outputs `outputs`."""
    codes, outputs = np.asarray(codes, np.int64), np.asarray(outputs)
    kinds = np.array(
        [rules.product_kind(c, types.weight_bits, types.input_bits, types.fabric) for c in codes], dtype=object
    )
    reuse = max(types.reuse, 1)
    per_dsp = rules.dsp_slices(types.weight_bits, types.input_bits, types.dsp_a_bits, types.dsp_b_bits)
    n_dsp, n_lut = int(np.sum(kinds == "dsp")), int(np.sum(kinds == "lut"))
    mult_luts = sum(rules.product_luts(c, types.weight_bits, types.input_bits, types.fabric) for c in codes)
    _, terms = np.unique(outputs, return_counts=True)
    adder_luts = sum(rules.adder_tree_luts(t + 1, types.accum_bits) for t in terms)
    levels = max((rules.adder_tree_levels(t + 1) for t in terms), default=0)
    ff = sum(rules.adder_tree_levels(t + 1) for t in terms) * types.accum_bits
    bram = rules.rom_bram_18k(len(codes), types.weight_bits, reuse) if types.strategy == "resource" else 0
    ii = reuse * types.positions
    share = adder_share(types)
    return Cost(
        products=len(codes),
        per_inference=len(codes) * types.positions,
        multipliers=-(-(n_dsp + n_lut) // reuse),
        dsp=-(-n_dsp * per_dsp // reuse),
        lut=-(-mult_luts // reuse) - (-adder_luts // share),
        ff=-(-ff // share),
        bram_18k=bram,
        latency_cycles=ii + levels + 1,
        ii_cycles=ii,
        kinds={k: int(np.sum(kinds == k)) for k in KINDS},
    )


def layer_types(record, board) -> LayerTypes:
    """The hardware facts of a kernel-sparse node (its `NodeRecord`) on `board`."""
    return LayerTypes(
        record.weight.width,
        record.weight.frac,
        record.input.width,
        record.accum_bits,
        record.reuse,
        record.strategy,
        record.io_type,
        record.positions,
        board.dsp_a_bits,
        board.dsp_b_bits,
        record.fabric,
    )


def live_products(record) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(codes, original input channel/row, original output, window position) of a node's live weights."""
    plan = record.plan
    chans = np.unravel_index(plan.rows, plan.window)[2]
    inputs = np.asarray(plan.origin.inputs)[chans]
    outputs = np.asarray(plan.origin.outputs)[plan.cols]
    spatial = plan.rows // plan.window[2]
    return rules.codes(plan.values, record.weight.frac), inputs, outputs, spatial


def dense_products(layer, frac: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The same for the nonzero quantized weights of an (unpruned) Keras layer, in original indices."""
    kernel = quantized_kernel(layer)
    matrix = kernel.reshape(-1, kernel.shape[-2], kernel.shape[-1])  # (spatial, ci, co)
    spatial, inputs, outputs = np.nonzero(rules.codes(matrix, frac))
    return rules.codes(matrix[spatial, inputs, outputs], frac), inputs, outputs, spatial


def product_cost(code: int, types: LayerTypes) -> tuple[float, float]:
    """(DSP, LUT) of one product with weight code `code`: its multiplier (or shift), shared by the reuse factor,
    and its adder (shared only outside the Latency strategy). A zero code costs nothing. A layer's products sum
    to its estimate up to rounding."""
    kind = rules.product_kind(code, types.weight_bits, types.input_bits, types.fabric)
    if kind == "none":
        return 0.0, 0.0
    reuse = max(types.reuse, 1)
    per_dsp = rules.dsp_slices(types.weight_bits, types.input_bits, types.dsp_a_bits, types.dsp_b_bits)
    multiplier = rules.product_luts(code, types.weight_bits, types.input_bits, types.fabric)
    return (per_dsp / reuse if kind == "dsp" else 0.0), multiplier / reuse + types.accum_bits / adder_share(types)


def kernel_cost_grid(live: tuple, types: LayerTypes, shape: tuple) -> np.ndarray:
    """Estimated LUTs of each kept (ci, co) kernel (multipliers and its adders), on an original-index grid."""
    grid = np.zeros(shape)
    codes, inputs, outputs, _ = live
    for code, ci, co in zip(codes, inputs, outputs):
        grid[ci, co] += product_cost(int(code), types)[1]
    return grid


@dataclass
class KernelSaving:
    """What removing one kernel (conv: a (ci, co) pair; Dense: an output's removed weights) saved (estimate)."""

    layer: str
    name: str
    products: int  # the weights removed: one product each per output position
    dsp: float
    lut: float
    bram_18k: int
    group: tuple = ()  # (ci, co) of a conv kernel in original indices; (None, co) for a Dense output
    per_inference: int = 0  # the products one inference no longer computes
    whole: bool = True  # the whole group (kernel, or Dense output) is removed, not only some of its weights

    def format(self) -> str:
        """One line: the weights removed and what they saved (a saving of nothing reads 0, never -0)."""
        return (
            f"{self.name}: {self.products} weights removed ({self.per_inference} products per inference), "
            f"saving {number(self.dsp)} DSP, {number(self.lut, '%.0f')} LUT, {number(self.bram_18k)} BRAM"
        )


def _items(products: tuple, kind: str) -> list:
    """((group, position), code) per product; group = (ci, co) for a conv, (None, co) for Dense."""
    codes, inputs, outputs, spatial = products
    if kind == "dense":
        return [((None, int(o)), int(i)) for i, o in zip(inputs, outputs)], list(codes)
    return [((int(i), int(o)), int(p)) for i, o, p in zip(inputs, outputs, spatial)], list(codes)


def _group_name(origin: KernelOrigin, group, kind: str) -> str:
    ci, co = group
    return {"dense": origin.named(":", co), "conv1d": origin.named(":", ci, co)}.get(
        kind, origin.named(":", ":", ci, co)
    )


def kernel_savings(
    origin: KernelOrigin | str, kind: str, live: tuple, dense: tuple, types: LayerTypes
) -> list[KernelSaving]:
    """Per pruned kernel of the layer `origin` names (its kernels named in the user's layout): the weights, DSP,
    LUT and BRAM it no longer costs.

    A conv kernel (ci, co) counts when it has products in `dense` and none in `live`; a Dense output counts
    the weights it lost (`whole` when it lost all of them). Each weight is one multiplier (or shift) and one
    adder, so a kernel's share adds up exactly under the rules; the layer's own totals round up after dividing
    by the reuse factor.
    """
    origin = origin if isinstance(origin, KernelOrigin) else KernelOrigin(str(origin), [], [])
    per_dsp = rules.dsp_slices(types.weight_bits, types.input_bits, types.dsp_a_bits, types.dsp_b_bits)
    live_keys = set(_items(live, kind)[0])
    alive = {group for group, _ in live_keys}
    live_groups = alive if kind != "dense" else set()
    removed = {}
    for (group, position), code in zip(*_items(dense, kind)):
        if (group, position) not in live_keys and group not in live_groups:
            removed.setdefault(group, []).append(code)
    reuse, n_live, savings = max(types.reuse, 1), len(live[0]), []
    for group in sorted(removed, key=lambda g: (g[1], -1 if g[0] is None else g[0])):
        codes = removed[group]
        kinds = [rules.product_kind(c, types.weight_bits, types.input_bits, types.fabric) for c in codes]
        mult = sum(rules.product_luts(c, types.weight_bits, types.input_bits, types.fabric) for c in codes)
        bram = 0
        if types.strategy == "resource":
            bram = rules.rom_bram_18k(n_live + len(codes), types.weight_bits, reuse) - rules.rom_bram_18k(
                n_live, types.weight_bits, reuse
            )
        savings.append(
            KernelSaving(
                origin.layer,
                _group_name(origin, group, kind),
                len(codes),
                round(kinds.count("dsp") * per_dsp / reuse, 2),
                round(mult / reuse + len(codes) * types.accum_bits / adder_share(types), 1),
                bram,
                group,
                len(codes) * types.positions,
                group not in alive,
            )
        )
    return savings
