"""The report's figures read cleanly: no two pieces of text overlap (checked on matplotlib's renderer), no empty
panels, and channel axes carry integer ticks, for the digits-sized model and for 1- and 64-channel layers."""

import itertools

import numpy as np
import pytest
from matplotlib.text import Text

from fpgaprune.record import record_of
from fpgaprune.report import figures


def _texts(fig) -> list:
    """Every visible, non-empty text of the figure with its box on the renderer."""
    renderer = fig.canvas.get_renderer()
    found, seen = [], set()
    for text in fig.findobj(Text):  # tick labels, titles, axis labels, legend and colour-bar texts
        if id(text) not in seen and text.get_visible() and text.get_text().strip() and text.figure is fig:
            seen.add(id(text))
            found.append((text.get_text(), text.get_window_extent(renderer)))
    return found


def _overlaps(fig) -> list:
    fig.canvas.draw()
    return [
        (a, b)
        for (a, box_a), (b, box_b) in itertools.combinations(_texts(fig), 2)
        if box_a.overlaps(box_b) and min(box_a.width, box_b.width) > 1
    ]  # (0,0,1,1): a label not drawn


def _integer_ticks(values) -> bool:
    return len(values) > 0 and all(float(v).is_integer() for v in values)


@pytest.mark.parametrize("shape", [(1, 8), (8, 16), (64, 64)])
def test_kernel_maps_have_no_overlapping_text_and_integer_channel_ticks(shape):
    rng = np.random.default_rng(0)
    costs = rng.integers(100, 250, shape).astype(float)
    pruned = rng.random(shape) < 0.4
    costs[pruned] = 0
    fig = figures.kernel_cost_map_figure(f"conv: {shape[0]}x{shape[1]} kernels", costs, pruned)
    axis = fig.axes[0]
    assert _overlaps(fig) == []
    assert _integer_ticks(axis.get_xticks()) and _integer_ticks(axis.get_yticks())
    assert len(axis.get_yticks()) <= 16 and min(axis.get_yticks()) >= 0 and max(axis.get_yticks()) < shape[0]
    legend = fig.legends[0]  # outside the data: its box does not meet the axes'
    fig.canvas.draw()
    assert not legend.get_window_extent().overlaps(axis.get_window_extent())


def test_resource_bars_have_no_overlapping_text_and_no_empty_panel(report_estimate):
    fig = figures.resource_bars_figure(report_estimate)
    assert _overlaps(fig) == []
    for axis in fig.axes:  # every panel shows a resource some layer uses
        assert any(patch.get_width() > 0 for patch in axis.patches), axis.get_title()
    assert "none used" in fig._suptitle.get_text()  # the digits CNN uses no DSP or BRAM: said, not drawn


@pytest.fixture(scope="module")
def report_estimate(digits_cnn_and_dense, tmp_path_factory):
    from hls_helpers import X8, trained

    import fpgaprune as fp
    from fpgaprune.resources import estimate_resources

    base, dense = digits_cnn_and_dense
    pruned = trained(base, ["conv2[:, :, 1, :]", "fc[0:30, 4]"], None, epochs=0)
    exported = fp.export(pruned, "latency_parallel", "pynq-z2", tmp_path_factory.mktemp("figures") / "prj", x=X8)
    return estimate_resources(exported, record_of(dense))


@pytest.mark.parametrize("shape", [(64, 64), (1, 64), (64, 3)])
def test_every_kernel_map_cell_is_at_least_6_px_in_the_page(shape):
    costs = np.random.default_rng(1).integers(1, 50, shape).astype(float)
    fig = figures.kernel_cost_map_figure("conv", costs, np.zeros(shape, bool))
    fig.canvas.draw()
    box = fig.axes[0].get_window_extent()  # pixels at the figure's dpi ...
    scale = figures.DPI / fig.dpi  # ... as the report's PNG draws them
    assert box.width * scale / shape[1] >= 6 and box.height * scale / shape[0] >= 6, (box, shape)
    assert fig.get_size_inches()[0] * figures.DPI <= 736  # the map fits an 800 px page without shrinking


def test_layers_wider_than_a_tile_are_split_into_tiles_with_original_channel_ticks():
    parts = figures.tiles((100, 130))
    assert [(r.start, r.stop, c.start, c.stop) for r, c in parts] == [
        (0, 64, 0, 64),
        (0, 64, 64, 128),
        (0, 64, 128, 130),
        (64, 100, 0, 64),
        (64, 100, 64, 128),
        (64, 100, 128, 130),
    ]
    assert figures.tiles((64, 64)) == [(slice(0, 64), slice(0, 64))]
    costs = np.ones((36, 64))
    fig = figures.kernel_cost_map_figure("conv tile", costs, np.zeros((36, 64), bool), origin=(64, 64))
    xticks, yticks = fig.axes[0].get_xticks(), fig.axes[0].get_yticks()
    assert _integer_ticks(xticks) and min(xticks) >= 64 and max(xticks) <= 127
    assert _integer_ticks(yticks) and min(yticks) >= 64 and max(yticks) <= 99
    assert _overlaps(fig) == []


def test_the_profile_has_no_overlapping_text_and_marks_the_rows_over_the_threshold():
    from fpgaprune.quantize.profile import Profile, ProfileRow
    from fpgaprune.report.figures import profile_figure

    rng = np.random.default_rng(0)
    rows = []
    for where in ("after QAT", "after export"):
        for i, (lo, hi, scale) in enumerate([(-1.0, 0.96875, 0.4), (0.0, 3.9375, 60.0), (-64.0, 63.99, 20.0)]):
            row = ProfileRow(f"layer{i}", "pre-activation", f"quantized_relu(6,{i})", where, lo, hi)
            row.add(rng.normal(0, scale, 5000))
            rows.append(row.finish())
    fig = profile_figure(Profile(rows), 0.05)
    assert _overlaps(fig) == []
    labels = [tick.get_text() for axis in fig.axes for tick in axis.get_yticklabels()]
    flagged = [text for text in labels if text.endswith("outside")]
    assert len(flagged) == 2 and all(text.startswith("layer1 pre-activation") for text in flagged), labels
