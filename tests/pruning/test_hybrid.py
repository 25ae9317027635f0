"""The hybrid structure by sparsity: whole kernels make their share, single weights of the kept kernels the rest."""

import numpy as np
import pytest
import yaml
from models import LOSS

import fpgaprune as fp
from fpgaprune import data
from fpgaprune.cli import DEFAULT_CONFIG
from fpgaprune.model.architectures import small_cnn
from fpgaprune.pipeline.checks import check_config
from fpgaprune.pipeline.pruning_policy import pruner_of, scheduled
from fpgaprune.pipeline.schema import parse_config
from fpgaprune.pruning import GradualPruning, HybridPruner, LotteryTicket, PolynomialDecay, Pruner
from fpgaprune.pruning.lottery import survivors_match
from fpgaprune.record import resolved
from fpgaprune.tfk import keras


def dead_kernels(model, name):
    kernel = model.get_layer(name).kernel.numpy()
    return np.all(kernel.reshape(-1, *kernel.shape[-2:]) == 0, axis=0)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("sparsity, share", [(0.3, 0.5), (0.6, 0.5), (0.9, 0.5), (0.6, 0.25), (0.6, 1.0)])
def test_kernels_make_their_share_and_the_weakest_weights_of_kept_kernels_the_rest(seed, sparsity, share):
    keras.utils.set_random_seed(seed)
    model = small_cnn()  # conv2: 16 x 32 = 512 kernels of 9 taps
    pruned = HybridPruner(layers=["conv2", "fc"], first_share=share).prune(model, sparsity=sparsity)
    chosen = dead_kernels(
        Pruner(structure="kernel", layers=["conv2"]).prune(model, sparsity=share * sparsity), "conv2"
    )  # the kernel pruner's own choice at the kernels' share
    assert abs(chosen.mean() - share * sparsity) <= 1 / 512
    kernel, original = pruned.get_layer("conv2").kernel.numpy(), model.get_layer("conv2").kernel.numpy()
    assert dead_kernels(pruned, "conv2")[chosen].all()
    assert abs(np.mean(kernel == 0) - sparsity) <= 1 / kernel.size
    inside = (kernel == 0) & ~chosen[None, None]  # single weights pruned in the kernels the first step kept
    assert abs(inside.mean() - (sparsity - chosen.mean())) <= 1 / kernel.size
    if inside.any():  # the weakest of those kernels' weights (all taps of a kernel may go: then it is dead too)
        assert np.abs(original[inside]).max() <= np.abs(original[kernel != 0]).min()
    np.testing.assert_array_equal(kernel[kernel != 0], original[kernel != 0])
    element = Pruner(structure="element", layers=["fc"]).prune(model, sparsity=sparsity)
    np.testing.assert_array_equal(pruned.get_layer("fc").kernel.numpy(), element.get_layer("fc").kernel.numpy())
    assert np.count_nonzero(pruned.get_layer("conv1").kernel.numpy() == 0) == 0


@pytest.mark.parametrize("optimizer", ["adam", "sgd_momentum", "adamw"])
def test_gradual_hybrid_pruning_only_grows_holds_and_reaches_each_layers_target(optimizer):
    keras.utils.set_random_seed(3)
    rng = np.random.default_rng(3)
    x, y = rng.random((256, 8, 8, 1), dtype=np.float32), rng.integers(0, 10, 256)
    pruner = HybridPruner(layers=["conv2", "fc"])
    model = pruner.attach(small_cnn())
    model.compile(
        {
            "adam": keras.optimizers.Adam(1e-2),
            "sgd_momentum": keras.optimizers.SGD(0.05, momentum=0.9),
            "adamw": keras.optimizers.AdamW(1e-2, weight_decay=0.05),
        }[optimizer],
        LOSS,
    )
    targets = {"conv2": 0.8, "fc": 0.5}
    schedule = PolynomialDecay(0.0, targets, begin_step=0, end_step=24, frequency=4)
    gradual = GradualPruning(pruner, schedule)
    zeros = []

    class Record(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            zeros.append(model.get_layer("conv2").kernel.numpy() == 0)

    model.fit(x, y, batch_size=32, epochs=4, verbose=0, callbacks=[gradual, Record()])
    assert all((after | ~before).all() for before, after in zip(zeros, zeros[1:]))  # pruned entries stay 0
    for step, scheduled_sparsity, achieved in gradual.history:
        assert scheduled_sparsity == pytest.approx(schedule.sparsity(step))
        assert all(abs(achieved[layer] - scheduled_sparsity[layer]) <= 1 / 512 for layer in targets)
    assert dead_kernels(model, "conv2").mean() >= 0.4 - 1 / 512  # element steps may empty a few more kernels
    assert np.mean(model.get_layer("conv2").kernel.numpy() == 0) == pytest.approx(0.8, abs=1 / 4608)


def test_a_hybrid_lottery_ticket_rewinds_its_survivors_and_keeps_its_pruned_at_zero():
    keras.utils.set_random_seed(4)
    dataset = data.digits()

    def train(model, callbacks):
        model.compile(keras.optimizers.Adam(3e-3), LOSS)
        model.fit(dataset.x_train[:512], dataset.y_train[:512], epochs=1, verbose=0, callbacks=callbacks)

    ticket = LotteryTicket(HybridPruner(layers=["conv2"]), rounds=2, rate=0.5)
    model = ticket.start(small_cnn())
    zeros = []
    for round_index in range(2):
        ticket.train_round(model, train, round_index)
        ticket.prune_and_rewind(model, round_index)
        assert survivors_match(model, ticket.rewind_weights, ticket.pruner)
        zeros.append(model.get_layer("conv2").kernel.numpy() == 0)
    assert (zeros[1] | ~zeros[0]).all()
    assert ticket.sparsities == pytest.approx([0.5, 0.75], abs=1 / 4608)
    assert dead_kernels(model, "conv2").mean() >= 0.375 - 1 / 512


def test_hybrid_refuses_a_threshold_and_a_share_outside_0_1():
    with pytest.raises(fp.FpgapruneError, match="hybrid pruning takes a sparsity, not a threshold"):
        HybridPruner().select(small_cnn(), threshold=0.1)
    with pytest.raises(fp.FpgapruneError, match="hybrid first_share 1.5 is not a fraction"):
        HybridPruner(first_share=1.5)


@pytest.mark.parametrize("share", [None, 0.25, 0.8])
def test_a_run_prunes_hybrid_to_its_targets(share):
    """`structure: hybrid` with targets (no budget) passes the checks and prunes kernels, then single weights;
    `pruning.hybrid_first_share` (default 0.5) is the whole kernels' share of the sparsity."""
    raw = yaml.safe_load(DEFAULT_CONFIG.read_text())
    raw["pruning"].update(structure="hybrid", targets={"conv2": 0.6})
    if share is not None:
        raw["pruning"]["hybrid_first_share"] = share
    config, at = parse_config(yaml.safe_dump(raw), "run.yaml")
    model = small_cnn((8, 8, 1), (4, 8), 10)
    check_config(config, at, model=model)
    pruner = pruner_of(config)
    assert isinstance(pruner, HybridPruner) and pruner.first_share == (share or 0.5)
    held = fp.hold(model)
    pruned = scheduled(config, resolved(held), None)  # one shot: no data needed
    kernel = pruned.get_layer("conv2").kernel.numpy()
    assert dead_kernels(pruned, "conv2").mean() == pytest.approx((share or 0.5) * 0.6, abs=1 / 32)
    assert np.mean(kernel == 0) == pytest.approx(0.6, abs=1 / kernel.size)
