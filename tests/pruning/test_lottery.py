import numpy as np
import pytest
from models import LOSS

import fpgaprune as fp
from fpgaprune import data
from fpgaprune.model.architectures import small_cnn
from fpgaprune.pruning import LotteryTicket, Pruner
from fpgaprune.pruning.lottery import survivors_match
from fpgaprune.tfk import keras


def make_train(dataset, epochs=2):
    def train(model, callbacks):
        model.compile(keras.optimizers.Adam(3e-3), LOSS)
        model.fit(dataset.x_train, dataset.y_train, epochs=epochs, verbose=0, callbacks=callbacks)

    return train


@pytest.mark.parametrize("rewind_epoch", [0, 1])
def test_rewind_restores_exact_values_of_survivors(rewind_epoch):
    keras.utils.set_random_seed(0)
    dataset = data.digits()
    ticket = LotteryTicket(
        Pruner(structure="kernel", layers=["conv1", "conv2"]), rounds=2, rate=0.4, rewind_epoch=rewind_epoch
    )
    model = ticket.start(small_cnn())
    initial = [w.copy() for w in model.get_weights()]
    for round_index in range(2):
        ticket.train_round(model, make_train(dataset), round_index)
        assert not survivors_match(model, ticket.rewind_weights, ticket.pruner)  # training moved them
        ticket.prune_and_rewind(model, round_index)
        assert survivors_match(model, ticket.rewind_weights, ticket.pruner)
        for ours, rewind in zip(model.get_weights(), ticket.rewind_weights):
            live = ours != 0
            np.testing.assert_array_equal(ours[live], rewind[live])
    assert (rewind_epoch == 0) == all(np.array_equal(a, b) for a, b in zip(ticket.rewind_weights, initial))
    assert ticket.sparsities == pytest.approx([0.4, 0.64], abs=0.01)


def test_full_run_trains_the_ticket():
    keras.utils.set_random_seed(1)
    dataset = data.digits()
    ticket = LotteryTicket(Pruner(layers=["conv2"]), rounds=1, rate=0.5)
    model = ticket.run(small_cnn(), make_train(dataset, epochs=4))
    accuracy = np.mean(np.argmax(model.predict(dataset.x_test, verbose=0), 1) == dataset.y_test)
    assert accuracy > 0.85
    assert np.mean(np.all(model.get_layer("conv2").kernel.numpy() == 0, axis=(0, 1))) == 0.5


def test_per_layer_ticket_reaches_each_target_and_rewinds_exactly():
    keras.utils.set_random_seed(2)
    dataset = data.digits()
    pruner = Pruner(structure="kernel", layers=["conv1", "conv2"])
    ticket = LotteryTicket.reaching(pruner, rounds=2, sparsity={"conv1": 0.25, "conv2": 0.75})
    assert ticket.rate == pytest.approx({"conv1": 1 - 0.75**0.5, "conv2": 0.5})
    model = ticket.start(small_cnn())
    for round_index in range(2):
        ticket.train_round(model, make_train(dataset, epochs=1), round_index)
        ticket.prune_and_rewind(model, round_index)
        assert survivors_match(model, ticket.rewind_weights, pruner)
    assert ticket.sparsities[0] == pytest.approx({"conv1": 2 / 16, "conv2": 0.5}, abs=1 / 16)
    assert ticket.sparsities[-1] == pytest.approx({"conv1": 0.25, "conv2": 0.75})


def test_bad_arguments():
    with pytest.raises(fp.FpgapruneError, match="rounds >= 1, 0 <= rate < 1"):
        LotteryTicket(Pruner(), rounds=0, rate=0.5)
    with pytest.raises(fp.FpgapruneError, match="0 <= rate < 1"):
        LotteryTicket(Pruner(), rounds=2, rate={"conv1": 0.5, "conv2": 1.0})
