"""Structures, scores, targets and schedules of the pruner; masks only grow and stay at 0 under the optimizer."""

import numpy as np
import pytest
from models import LOSS

import fpgaprune as fp
from fpgaprune.model.architectures import small_cnn
from fpgaprune.pruning import GradualPruning, OneShot, PolynomialDecay, Pruner, Structure, group_scores
from fpgaprune.pruning.structures import parse_structure, structure_for
from fpgaprune.tfk import keras


def test_polynomial_schedule_matches_the_formula():
    schedule = PolynomialDecay(0.1, 0.9, begin_step=100, end_step=1100, frequency=250, exponent=3)
    # s_t = s_f + (s_i - s_f)(1 - (t - t0)/(n dt))^3 with s_i = 0.1, s_f = 0.9, t0 = 100, n dt = 1000
    expected = {100: 0.1, 350: 0.9 - 0.8 * 0.75**3, 600: 0.9 - 0.8 * 0.5**3, 850: 0.9 - 0.8 * 0.25**3, 1100: 0.9}
    for step, sparsity in expected.items():
        update, value = schedule(step)
        assert update and value == pytest.approx(sparsity, abs=1e-12)
    assert schedule(99) == (False, pytest.approx(0.1))
    assert not schedule(351)[0] and not schedule(1350)[0]
    assert schedule(5000)[1] == pytest.approx(0.9)
    assert PolynomialDecay.from_config(schedule.get_config()).get_config() == schedule.get_config()
    assert OneShot(0.5, step=3)(3) == (True, 0.5) and OneShot(0.5, step=3)(4)[0] is False


def test_per_layer_polynomial_schedule_follows_each_layers_curve():
    schedule = PolynomialDecay(
        {"conv2": 0.2, "fc": 0.0}, {"conv2": 0.8, "fc": 0.5}, begin_step=0, end_step=400, frequency=100, exponent=2
    )
    for step in (0, 100, 250, 400, 900):
        decay = (1 - min(step, 400) / 400) ** 2
        expected = {"conv2": 0.8 - 0.6 * decay, "fc": 0.5 - 0.5 * decay}
        assert schedule.sparsity(step) == pytest.approx(expected, abs=1e-12)
    shared = PolynomialDecay(0.1, {"conv2": 0.8, "fc": 0.5}, 0, 400).sparsity(200)
    assert shared == pytest.approx({"conv2": 0.8 - 0.7 / 8, "fc": 0.5 - 0.4 / 8})
    assert PolynomialDecay.from_config(schedule.get_config()).sparsity(250) == schedule.sparsity(250)


@pytest.mark.parametrize(
    "args, message",
    [
        ((0.0, 1.5, 0, 10), "target_sparsity must lie in"),
        ((0.0, 0.5, 10, 10), "begin_step < end_step"),
        ((0.0, 0.5, 0, 10, 0), "frequency must be >= 1"),
        ((0.0, {"conv2": 0.5, "fc": 1.2}, 0, 10), r"target_sparsity\['fc'\] must lie in \[0, 1\], got 1.2"),
        (({"conv2": 0.1}, 0.5, 0, 10), "a per-layer initial_sparsity needs a per-layer target_sparsity"),
    ],
)
def test_bad_schedules(args, message):
    with pytest.raises(fp.FpgapruneError, match=message):
        PolynomialDecay(*args)


def test_structure_labels_by_hand():
    kernel_labels, groups = Structure("kernel").labels((3, 3, 2, 4))
    assert groups == 8 and kernel_labels[2, 1, 1, 3] == 1 * 4 + 3
    assert Structure("filter").labels((3, 3, 2, 4))[0][0, 0, 1, 2] == 2
    assert Structure("input_channel").labels((3, 3, 2, 4))[0][0, 0, 1, 2] == 1
    assert Structure("neuron").labels((5, 3))[0][4, 2] == 2
    block, count = Structure("block", (2, 2)).labels((5, 3))
    assert count == 3 * 2 and block[4, 2] == 2 * 2 + 1 and block[1, 1] == 0


def test_block_pooling_matches_hand_computation():
    weights = np.array([[1, -2, 3], [4, 5, -6], [7, 8, 9]], np.float32)
    labels, count = Structure("block", (2, 2)).labels(weights.shape)
    # blocks: [[1,-2],[4,5]], [[3],[-6]], [[7,8]], [[9]]
    np.testing.assert_allclose(group_scores(weights, labels, count, "avg"), [12 / 4, 9 / 2, 15 / 2, 9])
    np.testing.assert_allclose(group_scores(weights, labels, count, "max"), [5, 6, 8, 9])
    np.testing.assert_allclose(group_scores(weights, labels, count, "l2"), np.sqrt([46, 45, 113, 81]))


def test_structure_errors_name_the_layer():
    with pytest.raises(fp.FpgapruneError, match="layer 'fc' \\(Dense\\) cannot be pruned by structure 'kernel'"):
        structure_for("kernel", "fc", "Dense")
    assert structure_for("kernel", "fc", "Dense", strict=False) == Structure("element")
    assert parse_structure("block(4, 2, max)") == Structure("block", (4, 2), "max")
    with pytest.raises(fp.FpgapruneError, match="unknown structure 'kernal'; known: block, depthwise"):
        Pruner(structure="kernal")
    with pytest.raises(fp.FpgapruneError, match="layer 'fc' \\(Dense\\) cannot be pruned by structure 'filter'"):
        Pruner(structure={"fc": "filter"}).prune(small_cnn(), sparsity=0.5)


def pruned_kernels(model, name):
    kernel = model.get_layer(name).kernel.numpy()
    return np.all(kernel.reshape(-1, *kernel.shape[-2:]) == 0, axis=0)


def test_per_layer_kernel_pruning_picks_the_weakest():
    model = small_cnn()
    norms = np.abs(model.get_layer("conv2").kernel.numpy()).sum(axis=(0, 1))
    pruned = Pruner(structure="kernel", layers=["conv2"]).prune(model, sparsity=0.25)
    dead = pruned_kernels(pruned, "conv2")
    assert dead.sum() == 128
    assert norms[dead].max() <= norms[~dead].min()
    assert np.count_nonzero(pruned.get_layer("conv1").kernel.numpy() == 0) == 0


def test_per_layer_sparsity_dict_and_do_not_prune():
    model = small_cnn()
    pruner = Pruner(do_not_prune=["conv1"])
    pruned = pruner.prune(model, sparsity={"conv2": 0.5, "fc": 0.1})
    assert pruned_kernels(pruned, "conv2").mean() == 0.5
    assert np.mean(pruned.get_layer("fc").kernel.numpy() == 0) == pytest.approx(0.1, abs=1 / 1280)
    assert np.count_nonzero(pruned.get_layer("conv1").kernel.numpy() == 0) == 0
    with pytest.raises(fp.SelectionError, match="no layer named 'conv9'"):
        Pruner(do_not_prune=["conv9"]).prune(model, sparsity=0.5)


def test_global_scope_ranks_normalised_scores_across_layers():
    model = small_cnn()
    conv2 = model.get_layer("conv2")
    conv2.kernel.assign(conv2.kernel * 100.0)  # a scale change must not shift pruning onto the other layers
    pruned = Pruner(structure="kernel", scope="global", layers=["conv1", "conv2"]).prune(model, sparsity=0.5)
    shares = [pruned_kernels(pruned, name).mean() for name in ("conv1", "conv2")]
    assert 0.2 < shares[1] < 0.8, shares
    total = 16 * 9 + 512 * 9
    zeros = sum(np.count_nonzero(pruned.get_layer(n).kernel.numpy() == 0) for n in ("conv1", "conv2"))
    assert abs(zeros - 0.5 * total) <= 9


def test_threshold_target():
    model = small_cnn()
    norms = np.abs(model.get_layer("conv2").kernel.numpy()).sum(axis=(0, 1))
    threshold = float(np.median(norms))
    pruned = Pruner(layers=["conv2"]).prune(model, threshold=threshold)
    np.testing.assert_array_equal(pruned_kernels(pruned, "conv2"), norms < threshold)


def test_frozen_groups_are_never_pruned():
    model = fp.hold(small_cnn(), freeze=["conv2[:, :, 0, :]"])
    pruned = Pruner(layers=["conv2"]).prune(model, sparsity=0.9)
    assert not pruned_kernels(pruned, "conv2")[0].any()
    np.testing.assert_array_equal(
        pruned.get_layer("conv2").kernel.numpy()[:, :, 0, :], model.get_layer("conv2").kernel.numpy()[:, :, 0, :]
    )


def test_gradual_pruning_masks_only_grow_and_stay_zero(tmp_path):
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x, y = rng.random((256, 8, 8, 1), dtype=np.float32), rng.integers(0, 10, 256)
    pruner = Pruner(structure={"conv1": "kernel", "conv2": "kernel", "fc": "block(4,2,avg)"}, scope="global")
    model = pruner.attach(small_cnn())
    model.compile(keras.optimizers.AdamW(1e-2, weight_decay=0.05), LOSS)
    masks = []

    class Record(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            masks.append({n: model.get_layer(n).kernel.numpy() == 0 for n in ("conv1", "conv2", "fc")})

    schedule = PolynomialDecay(0.0, 0.75, begin_step=0, end_step=24, frequency=4)
    gradual = GradualPruning(pruner, schedule)
    model.fit(x, y, batch_size=32, epochs=4, verbose=0, callbacks=[gradual, Record()])
    for before, after in zip(masks, masks[1:]):
        for name in before:
            assert (after[name] | ~before[name]).all(), f"{name}: a pruned entry came back"
    for step, scheduled, achieved in gradual.history:
        assert scheduled == pytest.approx(schedule.sparsity(step))
        assert abs(achieved - scheduled) < 0.01
    assert gradual.history[-1][1] == pytest.approx(0.75)
    held = fp.manifest_of(model)
    loaded = fp.load_model(fp.save_model(model, tmp_path / "m.keras"))
    assert fp.manifest_of(loaded).to_json() == held.to_json()


def test_gradual_pruning_takes_each_layer_to_its_own_target():
    keras.utils.set_random_seed(2)
    rng = np.random.default_rng(2)
    x, y = rng.random((256, 8, 8, 1), dtype=np.float32), rng.integers(0, 10, 256)
    pruner = Pruner(structure="kernel", layers=["conv1", "conv2", "fc"])
    model = pruner.attach(small_cnn())
    model.compile(keras.optimizers.Adam(1e-2), LOSS)
    targets = {"conv1": 0.25, "conv2": 0.75, "fc": 0.5}
    schedule = PolynomialDecay(0.0, targets, begin_step=0, end_step=24, frequency=4)
    gradual = GradualPruning(pruner, schedule)
    kernels = []

    class Record(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            kernels.append(model.get_layer("conv2").kernel.numpy() == 0)

    model.fit(x, y, batch_size=32, epochs=4, verbose=0, callbacks=[gradual, Record()])
    assert all((after | ~before).all() for before, after in zip(kernels, kernels[1:]))  # the mask only grows
    for step, scheduled, achieved in gradual.history:
        assert scheduled == pytest.approx(schedule.sparsity(step))
        assert set(achieved) == set(targets)
        assert all(abs(achieved[layer] - scheduled[layer]) <= 1 / 16 for layer in targets)  # conv1: 16 groups
    assert pruned_kernels(model, "conv1").mean() == 0.25 and pruned_kernels(model, "conv2").mean() == 0.75
    assert np.mean(model.get_layer("fc").kernel.numpy() == 0) == pytest.approx(0.5, abs=1e-3)
    with pytest.raises(fp.FpgapruneError, match=r"sparsity names \['conv9'\], which this pruner does not prune"):
        pruner.select(model, {"conv2": 0.8, "conv9": 0.5})


def test_gradual_pruning_needs_an_attached_model():
    model = small_cnn()
    model.compile("adam", LOSS)
    with pytest.raises(fp.FpgapruneError, match="build the model with pruner.attach"):
        model.fit(np.zeros((4, 8, 8, 1)), np.zeros(4), verbose=0, callbacks=[GradualPruning(Pruner(), OneShot(0.5))])


def test_global_multiplier_budget_counts_output_positions():
    from fpgaprune.report.inspection import sparsity_table

    model = small_cnn()  # conv1 weights are used at 6x6 positions, conv2 at 4x4, fc once
    pruner = Pruner(structure="kernel", scope="global", cost="multipliers", layers=["conv1", "conv2", "fc"])
    rows = sparsity_table(pruner.prune(model, sparsity=0.6))
    before = sum(r["products_before"] for r in rows)
    after = sum(r["products_after"] for r in rows)
    assert abs((before - after) / before - 0.6) < 0.01
    with pytest.raises(fp.FpgapruneError, match="pruning cost 'flops'"):
        Pruner(cost="flops")


def test_a_fit_at_equal_prices_keeps_lamps_global_ranking():
    """Every entry priced 1: the knapsack keeps the groups with the highest LAMP scores over all layers, so the
    narrow first layer (16 kernels, each one of its 16 feature maps) keeps more than the wide second layer."""
    from fpgaprune.pruning.pruner import MIN_KEPT_FRACTION, _GroupView
    from fpgaprune.pruning.scores import lamp_scores

    model = small_cnn()
    pruner = Pruner(structure="kernel", layers=["conv1", "conv2"])
    views = [_GroupView(target, "l1") for target in pruner.targets(model)]
    capacity = 0.3 * sum(v.target.record.values.size for v in views)
    masks, result = pruner.select_to_fit(model, lambda t: np.ones((1, *t.record.shape)), [capacity])
    assert result.optimal and result.cost[0] <= capacity
    lamp = np.concatenate([lamp_scores(v.scores, np.ones(v.scores.size, bool)) for v in views])
    forced = np.concatenate([v.strongest(MIN_KEPT_FRACTION) for v in views])  # each layer's strongest 10%
    kept = result.keep
    assert kept.sum() == capacity // 9  # as many kernels as fit
    assert lamp[kept & ~forced].min() >= lamp[~kept].max() - 1e-12  # the rest: the highest LAMP scores
    shares = [
        np.mean(~masks[(name, "kernel")].reshape(-1, *masks[(name, "kernel")].shape[-2:]).any(axis=0))
        for name in ("conv1", "conv2")
    ]
    assert shares[0] > shares[1], shares
