"""The report's figures (matplotlib, Agg), returned as PNG bytes so the HTML can inline them."""

import io

import numpy as np

DPI = 110  # _png's resolution: figure inches x DPI = pixels in the page
CELL_PX = 7  # a kernel map draws each (ci, co) cell at least this wide and high (the page needs >= 6)
TILE = 64  # larger layers are split into TILE x TILE maps, each of which still fits an 800 px page


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    _pyplot().close(fig)
    return buffer.getvalue()


def _used(estimate, key: str) -> bool:
    return any(getattr(layer.dense or layer.pruned, key) or getattr(layer.pruned, key) for layer in estimate.layers)


def resource_bars(estimate) -> bytes:
    """`resource_bars_figure` as PNG bytes."""
    return _png(resource_bars_figure(estimate))


def resource_bars_figure(estimate):
    """Per layer, dense vs pruned, as a fraction of the board's resources, one panel per column of the backend
    (`ResourceEstimate.resources`: DSP, LUT, FF and BRAM_18K for the Xilinx ones; estimates). A resource no layer
    uses gets no panel; the title says it is unused."""
    plt, MaxNLocator = _pyplot(), _integer_locator()
    everything = list(estimate.resources)
    names = [(name, key) for name, key in everything if _used(estimate, key)] or everything[1:2]
    unused = [name for name, key in everything if (name, key) not in names]
    fig, axes = plt.subplots(
        1,
        len(names),
        figsize=(3.4 * len(names), 1.2 + 0.45 * max(len(estimate.layers), 2)),
        sharey=True,
        layout="constrained",
        squeeze=False,
    )
    fig.get_layout_engine().set(w_pad=0.25, wspace=0.15)  # room between panels for their edge tick labels
    axes = axes[0]
    labels = [layer.name for layer in estimate.layers]
    rows = np.arange(len(labels))
    for axis, (name, key) in zip(axes, names):
        capacity = max(estimate.board.resources.get(name, 0), 1)
        dense = [getattr(layer.dense or layer.pruned, key) / capacity * 100 for layer in estimate.layers]
        pruned = [getattr(layer.pruned, key) / capacity * 100 for layer in estimate.layers]
        axis.barh(rows + 0.2, dense, height=0.4, color="#c7c7c7", label="dense")
        axis.barh(rows - 0.2, pruned, height=0.4, color="#1f77b4", label="pruned")
        axis.set_title(f"{name} (% of {capacity})", fontsize=9)
        axis.xaxis.set_major_locator(MaxNLocator(nbins=4))  # few ticks: neighbouring panels' labels never meet
        axis.set_yticks(rows, labels)
        axis.invert_yaxis()
    fig.legend(*axes[0].get_legend_handles_labels(), fontsize=8, loc="outside lower center", ncols=2)
    none = f" ({', '.join(unused)}: none used)" if unused else ""
    fig.suptitle(f"Estimated resources per layer on {estimate.board.name}{none}", fontsize=10)
    return fig


def _integer_locator():
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator


def kernel_cost_map(title: str, costs: np.ndarray, pruned: np.ndarray, origin: tuple = (0, 0)) -> bytes:
    """`kernel_cost_map_figure` as PNG bytes."""
    return _png(kernel_cost_map_figure(title, costs, pruned, origin))


def tiles(shape: tuple, size: int = TILE) -> list:
    """(ci slice, co slice) of each map of a ci x co layer: one map up to size x size, tiles beyond."""
    return [
        (slice(i, min(i + size, shape[0])), slice(j, min(j + size, shape[1])))
        for i in range(0, shape[0], size)
        for j in range(0, shape[1], size)
    ]


def kernel_cost_map_figure(title: str, costs: np.ndarray, pruned: np.ndarray, origin: tuple = (0, 0)):
    """ci x co grid of a conv layer: kept kernels colored by their estimated LUTs, pruned ones marked x. Sized
    so that every cell is CELL_PX on the page; `origin` is the first (ci, co) of a tile, for its tick labels."""
    plt, MaxNLocator = _pyplot(), _integer_locator()
    rows, cols = costs.shape
    width = max(4.8, (cols * CELL_PX + 260) / DPI)  # + the y label, ticks and the colour bar
    height = max(2.6, (rows * CELL_PX + 190) / DPI)  # + the title, the x label and the legend
    fig, axis = plt.subplots(figsize=(width, height), layout="constrained")
    image = axis.imshow(
        np.where(costs > 0, costs, np.nan),
        cmap="viridis",
        aspect="auto",
        extent=(origin[1] - 0.5, origin[1] + cols - 0.5, origin[0] + rows - 0.5, origin[0] - 0.5),
    )
    ys, xs = np.nonzero(pruned)
    if len(xs):
        axis.scatter(
            xs + origin[1],
            ys + origin[0],
            marker="x",
            color="#d62728",
            s=14 if max(rows, cols) <= 32 else 6,
            label="pruned",
        )
        fig.legend(fontsize=7, loc="outside lower center")
    for ticks, count, start in ((axis.set_xticks, cols, origin[1]), (axis.set_yticks, rows, origin[0])):
        values = range(count) if count <= 16 else MaxNLocator(nbins=8, integer=True).tick_values(0, count - 1)
        ticks([int(v) + start for v in values if 0 <= v < count])  # channels: integers inside the map
    axis.set_xlabel("output channel co (original index)")
    axis.set_ylabel("input channel ci (original index)")
    axis.set_title(title, fontsize=9)
    fig.colorbar(image, ax=axis, label="estimated LUTs (multiplier + adders)")
    return fig


def pareto(table: list, board_name: str) -> bytes:
    """`pareto_figure` as PNG bytes."""
    return _png(pareto_figure(table, board_name))


def pareto_figure(table: list, board_name: str):
    """The task's metric (accuracy, or an error) against the LUT and the DSP share of the board, one dot per
    finished point; the non-dominated points ringed and joined. Measured DA figures (yosys), where a point has
    them, as hollow triangles."""
    plt = _pyplot()
    done = [row for row in table if row["status"] == "ok"]
    metric = next((row["metric"] for row in done), "accuracy")
    scale = 100 if "accuracy" in metric else 1
    panels = [("LUT", "LUT_fraction", "pareto_LUT")]
    if any(row["DSP"] for row in done):
        panels.append(("DSP", "DSP_fraction", "pareto_DSP"))
    fig, axes = plt.subplots(
        1, len(panels), figsize=(4.6 * len(panels), 3.6), layout="constrained", squeeze=False, sharey=True
    )
    for axis, (name, cost, front) in zip(axes[0], panels):
        x = [100 * row[cost] for row in done]
        y = [scale * row["score_quantized"] for row in done]
        axis.scatter(x, y, s=22, color="#7f7f7f", label="point (estimate)", zorder=2)
        best = sorted((100 * row[cost], scale * row["score_quantized"]) for row in done if row[front])
        if best:
            axis.plot(*zip(*best), color="#d62728", lw=1, zorder=1)
            axis.scatter(*zip(*best), s=70, facecolors="none", edgecolors="#d62728", label="non-dominated", zorder=3)
        measured = [
            (100 * row["measured_LUT_fraction"], scale * row["score_quantized"])
            for row in done
            if name == "LUT" and row.get("measured_LUT_fraction") is not None
        ]
        if measured:
            axis.scatter(
                *zip(*measured),
                marker="^",
                s=30,
                facecolors="none",
                edgecolors="#2ca02c",
                label="measured (yosys, DA circuit)",
                zorder=2,
            )
        axis.set_xlabel(f"{name} (% of {board_name}, estimate)")
        axis.grid(alpha=0.3)
    label = (
        f"{metric.replace('_', ' ')} after QAT (%)" if scale == 100 else f"{metric.upper()} after QAT (lower is better)"
    )
    axes[0][0].set_ylabel(label)
    handles = {label: handle for axis in axes[0] for handle, label in zip(*axis.get_legend_handles_labels())}
    fig.legend(list(handles.values()), list(handles), fontsize=8, loc="outside lower center", ncols=len(handles))
    fig.suptitle(
        f"Sweep: {metric.replace('_', ' ') if scale == 100 else metric.upper()} against hardware"
        + ("" if len(panels) > 1 else " (DSP: none used)"),
        fontsize=10,
    )
    return fig


def profile_boxes(profile, threshold: float | None = None) -> bytes:
    """`profile_figure` as PNG bytes."""
    return _png(profile_figure(profile, threshold))


def profile_figure(profile, threshold: float | None = None):
    """One box per profile row (whiskers at the 1st and 99th percentiles, dots at the extremes) over a grey band:
    the range its quantizer or type holds. After QAT and after export side by side; a row with more than
    `threshold` of its values outside is labelled in red with that share."""
    plt = _pyplot()
    panels = [where for where in ("after QAT", "after export") if any(r.where == where for r in profile.rows)]
    tallest = max(sum(r.where == where for r in profile.rows) for where in panels)
    fig, axes = plt.subplots(
        1, len(panels), figsize=(5.2 * len(panels), 1.0 + 0.34 * tallest), squeeze=False, layout="constrained"
    )
    for axis, where in zip(axes[0], panels):
        rows = [row for row in profile.rows if row.where == where and row.quantiles]
        _profile_panel(axis, rows, threshold)
        axis.set_title(f"{where}: values against their range (held-out data)", fontsize=9)
    return fig


def _profile_panel(axis, rows: list, threshold: float | None) -> None:
    positions = np.arange(len(rows))
    for y, row in zip(positions, rows):
        axis.barh(y, row.hi - row.lo, left=row.lo, height=0.8, color="#e3e3e3", zorder=0)
    stats = [
        {
            "whislo": r.quantiles[1],
            "q1": r.quantiles[2],
            "med": r.quantiles[3],
            "q3": r.quantiles[4],
            "whishi": r.quantiles[5],
            "fliers": [r.quantiles[0], r.quantiles[6]],
        }
        for r in rows
    ]
    if stats:
        axis.bxp(
            stats,
            positions=positions,
            vert=False,
            widths=0.5,
            showfliers=True,
            patch_artist=True,
            boxprops={"facecolor": "#9ecae1"},
            flierprops={"marker": ".", "markersize": 4},
        )
    over = [threshold is not None and row.clipped > threshold for row in rows]
    labels = [
        f"{r.layer}{'' if r.what == r.layer else ' ' + r.what} ({r.limit})"
        + (f": {r.clipped:.1%} outside" if flagged else "")
        for r, flagged in zip(rows, over)
    ]
    axis.set_yticks(positions, labels, fontsize=7)
    for tick, flagged in zip(axis.get_yticklabels(), over):
        tick.set_color("#d62728" if flagged else "#222222")
    from matplotlib.ticker import FuncFormatter, SymmetricalLogLocator

    axis.set_xscale("symlog", linthresh=1.0)
    axis.xaxis.set_major_locator(SymmetricalLogLocator(base=10, linthresh=1.0))
    axis.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.tick_params(axis="x", labelsize=7)
    axis.invert_yaxis()
    axis.grid(axis="x", alpha=0.3)
    axis.set_xlabel("value (linear in [-1, 1], log beyond); grey: what its type holds", fontsize=8)
