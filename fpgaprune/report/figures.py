"""The report's figures (matplotlib, Agg), returned as PNG bytes so the HTML can inline them."""

import io

import numpy as np


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    _pyplot().close(fig)
    return buffer.getvalue()


def resource_bars(estimate) -> bytes:
    """Per layer, dense vs pruned, as a fraction of the board's DSP, LUT, FF and BRAM_18K (estimates)."""
    plt = _pyplot()
    names = [("DSP", "dsp"), ("LUT", "lut"), ("FF", "ff"), ("BRAM_18K", "bram_18k")]
    fig, axes = plt.subplots(1, len(names), figsize=(3.2 * len(names), 0.5 + 0.45 * max(len(estimate.layers), 2)),
                             sharey=True)
    labels = [layer.name for layer in estimate.layers]
    rows = np.arange(len(labels))
    for axis, (name, key) in zip(axes, names):
        capacity = max(estimate.board.resources.get(name, 0), 1)
        dense = [getattr(layer.dense or layer.pruned, key) / capacity * 100 for layer in estimate.layers]
        pruned = [getattr(layer.pruned, key) / capacity * 100 for layer in estimate.layers]
        axis.barh(rows + 0.2, dense, height=0.4, color="#c7c7c7", label="dense")
        axis.barh(rows - 0.2, pruned, height=0.4, color="#1f77b4", label="pruned")
        axis.set_title(f"{name} (% of {capacity})", fontsize=9)
        axis.set_yticks(rows, labels)
        axis.invert_yaxis()
    axes[0].legend(fontsize=8, loc="lower right")
    fig.suptitle(f"Estimated resources per layer on {estimate.board.name}", fontsize=10)
    return _png(fig)


def kernel_cost_map(title: str, costs: np.ndarray, pruned: np.ndarray) -> bytes:
    """ci x co grid of a conv layer: kept kernels colored by their estimated LUTs, pruned ones marked x."""
    plt = _pyplot()
    fig, axis = plt.subplots(figsize=(4.4, 3.6))
    image = axis.imshow(np.where(costs > 0, costs, np.nan), cmap="viridis", aspect="auto")
    ys, xs = np.nonzero(pruned)
    if len(xs):
        axis.scatter(xs, ys, marker="x", color="#d62728", s=14, label="pruned")
        axis.legend(fontsize=7, loc="upper right")
    axis.set_xlabel("output channel co (original index)")
    axis.set_ylabel("input channel ci (original index)")
    axis.set_title(title, fontsize=9)
    fig.colorbar(image, ax=axis, label="estimated LUTs (multiplier + adders)")
    return _png(fig)
