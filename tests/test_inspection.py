import numpy as np

import fpgaprune as fp
from fpgaprune.record import record_of
from fpgaprune.report.inspection import format_table, kernel_heatmaps, sparsity_table
from fpgaprune.tfk import keras


def model():
    keras.utils.set_random_seed(0)
    return keras.Sequential(
        [
            keras.Input((6, 6, 2)),
            keras.layers.Conv2D(3, 3, name="conv"),
            keras.layers.Flatten(),
            keras.layers.Dense(4, name="fc"),
        ]
    )


def test_sparsity_table_counts_by_hand():
    held = fp.hold(model(), prune=["conv[:, :, 0, 1]", "conv[:, :, 1, 2]", "fc[0:5, :]"])
    rows = {row["layer"]: row for row in sparsity_table(held, {"conv": "kernel", "fc": "neuron"})}
    conv, fc = rows["conv"], rows["fc"]
    assert (conv["groups"], conv["pruned"]) == (6, 2)
    assert conv["products_before"] == 3 * 3 * 2 * 3 * 16  # 4x4 output positions
    assert conv["products_after"] == 3 * 3 * 4 * 16
    assert (fc["groups"], fc["pruned"]) == (4, 0)
    assert (fc["products_before"], fc["products_after"]) == (48 * 4, 43 * 4)
    text = format_table(list(rows.values()))
    assert text.splitlines()[-1].split() == ["total", str(3 * 3 * 2 * 3 * 16 + 48 * 4), str(3 * 3 * 4 * 16 + 43 * 4)]


def test_heatmaps_are_real_pngs(tmp_path):
    held = fp.hold(model(), prune=["conv[:, :, 0, 1]"])
    paths = kernel_heatmaps(held, tmp_path)
    assert [p.name for p in paths] == ["conv_kernels.png"]
    data = paths[0].read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    width, height = np.frombuffer(data[16:24], ">u4")
    assert width > 400 and height > 200
    assert not list(tmp_path.glob(".*"))  # no temporary file left behind


def test_the_kernel_maps_tick_channels_as_integers():
    """`fpgaprune inspect` draws its maps on the (ci, co) grid: no -0.50, -0.25, ... ticks, none outside it."""
    import matplotlib.pyplot as plt

    from fpgaprune.report.inspection import kernel_figure

    built = model()
    figure = kernel_figure(record_of(built).layers["conv"])  # 2 input x 3 output channels
    for axis in figure.axes[:2]:  # the two maps (then the colour bar)
        figure.canvas.draw()
        low, high = sorted(axis.get_xlim()), sorted(axis.get_ylim())
        shown = (
            [t for t in axis.get_xticks() if low[0] <= t <= low[1]],
            [t for t in axis.get_yticks() if high[0] <= t <= high[1]],
        )
        assert shown[0] == [0, 1, 2] and shown[1] == [0, 1], shown
    plt.close(figure)
