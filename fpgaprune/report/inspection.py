"""Inspection: a per-layer sparsity table and kernel heatmaps (L1 norm and mask, ci x co) for conv layers."""

from pathlib import Path

import numpy as np

from fpgaprune.masking import maskable_records
from fpgaprune.model.layer_kinds import kind_of
from fpgaprune.pruning.costs import output_positions
from fpgaprune.pruning.scores import kernel_scores
from fpgaprune.pruning.structures import prunable, structure_for
from fpgaprune.record import resolved
from fpgaprune.support.atomic import atomic_target
from fpgaprune.support.text_table import format_rows

_COLUMNS = ("layer", "class", "shape", "structure", "groups", "pruned", "products_before", "products_after")


def _has_kernels(layer) -> bool:
    """Conv layers: their weights group into (ci, co) kernels."""
    kind = kind_of(layer)
    return kind is not None and "kernel" in kind.structures


def _weight_matrices(record):
    """(layer, weight, values) of every kernel fpgaprune can prune (biases left out), recurrent ones too, from a
    model's record (values as the framework holds them, float32)."""
    for layer, weight in maskable_records(record):
        if weight.name != "bias":
            yield layer, weight, np.asarray(weight.values, np.float32)


def sparsity_table(model, structures=None) -> list[dict]:
    """One row per prunable weight of `model` (or of a bound model, `record.resolved`): groups and pruned groups of
    its structure (recurrent weights: elements), and its products per inference dense -> now (one per weight and
    output position; a 0 weight needs none)."""
    rows = []
    for layer, weight, kernel in _weight_matrices(resolved(model).record):
        name, class_name = weight.name, layer.class_name
        if not prunable(layer):
            structure = structure_for(None, layer.name, layer)
        elif isinstance(structures, dict):
            structure = structure_for(structures.get(layer.name), layer.name, layer)
        else:
            structure = structure_for(structures, layer.name, layer, strict=False)
        labels, count = structure.labels(kernel.shape)
        live = np.bincount(labels.ravel(), (kernel != 0).ravel(), count) > 0
        positions = output_positions(layer)
        rows.append(
            {
                "layer": layer.name if name in ("kernel", "depthwise_kernel") else f"{layer.name}/{name}",
                "class": class_name,
                "shape": "x".join(map(str, weight.own_shape)),  # the user's layout
                "structure": str(structure),
                "groups": int(count),
                "pruned": int(count - live.sum()),
                "products_before": int(kernel.size * positions),
                "products_after": int(np.count_nonzero(kernel) * positions),
            }
        )
    return rows


def format_table(rows: list[dict]) -> str:
    """The sparsity table as aligned text, with a total line."""
    total_before = sum(r["products_before"] for r in rows)
    total_after = sum(r["products_after"] for r in rows)
    body = [tuple(r[c] for c in _COLUMNS) for r in rows]
    body.append(("total", "", "", "", "", "", total_before, total_after))
    return "\n".join(format_rows(_COLUMNS, body))


def pruned_fractions(model) -> dict:
    """What pruning removed: the fraction of prunable weights that are 0, and, when the model has conv layers,
    the fraction of conv (ci, co) kernels that are 0 as a whole (partly pruned kernels are not counted)."""
    zero = total = dead = kernels = 0
    for layer, weight, kernel in _weight_matrices(resolved(model).record):
        zero, total = zero + int(np.sum(kernel == 0)), total + kernel.size
        if _has_kernels(layer) and weight.name == "kernel":
            whole = ~kernel.reshape(-1, *kernel.shape[-2:]).any(axis=0)
            dead, kernels = dead + int(whole.sum()), kernels + whole.size
    fractions = {"weights_pruned": zero / max(total, 1)}
    if kernels:
        fractions["conv_kernels_pruned"] = dead / kernels
    return fractions


def kernel_heatmaps(model, out_dir) -> list[Path]:
    """For each Conv1D/Conv2D, a PNG of its kernel L1 norms and its kernel mask on the (ci, co) grid."""
    import matplotlib.pyplot as plt

    paths = []
    for layer in resolved(model).record.layers.values():
        if not _has_kernels(layer):
            continue
        figure = kernel_figure(layer)
        tmp, final = atomic_target(Path(out_dir) / f"{layer.name}_kernels.png")
        figure.savefig(tmp, dpi=90)
        plt.close(figure)
        tmp.replace(final)
        paths.append(final)
    return paths


def kernel_figure(layer):
    """One conv layer's kernel L1 norms and kept kernels on the (ci, co) grid, channels ticked as integers (from
    the layer's record)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    kernel = np.asarray(layer.kernel.values, np.float32)
    norms = kernel_scores(kernel, "l1")
    alive = kernel_scores(kernel, "max") > 0
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2), constrained_layout=True)
    image = left.imshow(norms, cmap="viridis", aspect="auto", interpolation="nearest")
    figure.colorbar(image, ax=left, label="L1 norm")
    left.set_title(f"{layer.name}: kernel L1 norms")
    right.imshow(alive, cmap="Greys", vmin=0, vmax=1, aspect="auto", interpolation="nearest")
    right.set_title(f"{layer.name}: kept kernels (black) {int(alive.sum())}/{alive.size}")
    for axis in (left, right):
        axis.set_xlabel("output channel co")
        axis.set_ylabel("input channel ci")
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))  # channels are integers
        axis.yaxis.set_major_locator(MaxNLocator(integer=True))
    return figure
