"""The Python API on Keras 3 models, with the same names and selection strings as on tf_keras: `fp.prune` and
`Pruner` choose the same entries as on the model's tf_keras twin, `GradualPruning` runs in a Keras 3 `fit`, a
lottery ticket rewinds exactly, a budget fit prices the model, and `fp.export` of the Keras 3 model C-simulates
bit-exactly against its QKeras twin."""

import keras
import numpy as np
import pytest

import fpgaprune as fp
from fpgaprune import data
from fpgaprune.budget import HardwareCosts, fit_to_budget, parse_budget
from fpgaprune.frontends.keras3.twin import tf_keras_twin
from fpgaprune.hls import load_board, load_preset
from fpgaprune.pruning import GradualPruning, LotteryTicket, PolynomialDecay, Pruner
from fpgaprune.pruning.lottery import survivors_match
from fpgaprune.quantize import input_type
from fpgaprune.record import record_of, resolved

SPEC = {
    "default": {
        "kernel": "quantized_bits(8,0,alpha=1)",
        "bias": "quantized_bits(8,0,alpha=1)",
        "activation": "quantized_relu(8,3)",
    }
}
LOSS = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def keras3_cnn(seed=0):
    keras.utils.set_random_seed(seed)
    image = keras.Input((8, 8, 1), name="image")
    a = keras.layers.Conv2D(6, 3, padding="same", activation="relu", name="conv1")(image)
    b = keras.layers.Conv2D(6, 3, padding="same", name="conv2")(a)
    merged = keras.layers.ReLU(name="relu2")(keras.layers.Add(name="add")([a, b]))
    out = keras.layers.Dense(10, name="fc")(keras.layers.Flatten(name="flatten")(merged))
    return keras.Model(image, out)


def test_a_keras3_functional_model_is_read_as_its_graph_with_one_output_or_several():
    """Keras 3 writes a functional model's calls as {"args": tensors} and one output as [name, 0, 0], not tf_keras'
    lists: the record reads both (an HGQ2 functional model failed to export on them)."""
    model = keras3_cnn()
    record = record_of(model)
    inbound = {name: layer.inbound for name, layer in record.layers.items()}
    assert inbound["conv2"] == ("conv1",) and inbound["add"] == ("conv1", "conv2") and inbound["fc"] == ("flatten",)
    assert record.outputs == ("fc",)
    both = keras.Model(model.input, [model.get_layer("relu2").output, model.output])
    assert set(record_of(both).outputs) == {"relu2", "fc"}


@pytest.fixture(scope="module")
def digits():
    return data.digits()


@pytest.mark.parametrize("structure", ["kernel", "filter", "element"])
def test_the_same_selection_and_pruner_choose_the_same_entries_as_on_the_tf_keras_twin(structure):
    model = keras3_cnn()
    twin = tf_keras_twin(model)
    selections = ["conv2[:, :, 1, 2]", "fc[:7, 3]"]
    ours = Pruner(structure=structure, layers=["conv1", "conv2"]).prune(fp.prune(model, selections=selections), 0.5)
    theirs = Pruner(structure=structure, layers=["conv1", "conv2"]).prune(fp.prune(twin, selections=selections), 0.5)
    assert fp.manifest_of(ours).to_json() == fp.manifest_of(theirs).to_json()
    assert type(ours) is type(model) and not ours.get_layer("conv2").kernel.numpy()[:, :, 1, 2].any()


def test_gradual_pruning_runs_in_a_keras3_fit(digits):
    pruner = Pruner(structure="kernel", layers=["conv1", "conv2"])
    model = pruner.attach(keras3_cnn())
    model.compile(keras.optimizers.AdamW(1e-2, weight_decay=0.05), LOSS)
    schedule = PolynomialDecay(0.0, 0.6, begin_step=0, end_step=20, frequency=5)
    gradual = GradualPruning(pruner, schedule)
    model.fit(digits.x_train[:640], digits.y_train[:640], batch_size=32, epochs=2, verbose=0, callbacks=[gradual])
    assert gradual.history[-1][1] == pytest.approx(0.6) and abs(gradual.history[-1][2] - 0.6) < 0.05
    kernel = model.get_layer("conv2").kernel.numpy()
    removed = np.all(kernel == 0, axis=(0, 1))
    assert 0.4 < removed.mean() < 0.8


def test_a_lottery_ticket_rewinds_a_keras3_model_exactly(digits):
    def train(model, callbacks):
        model.compile(keras.optimizers.Adam(3e-3), LOSS)
        model.fit(digits.x_train[:640], digits.y_train[:640], epochs=1, batch_size=64, verbose=0, callbacks=callbacks)

    ticket = LotteryTicket(Pruner(structure="kernel", layers=["conv2"]), rounds=2, rate=0.4)
    model = ticket.start(keras3_cnn())
    for round_index in range(2):
        ticket.train_round(model, train, round_index)
        ticket.prune_and_rewind(model, round_index)
        assert survivors_match(model, ticket.rewind_weights, ticket.pruner)
    assert ticket.sparsities[-1] == pytest.approx(1 - 0.6**2, abs=0.06)


def test_a_budget_fit_prices_and_prunes_a_keras3_model(digits):
    model = keras3_cnn()
    pruner = Pruner(structure="kernel")
    costs = HardwareCosts(
        SPEC, load_preset("latency_parallel")["HLSConfig"], input_type(digits.x_test), load_board("pynq-z2")
    )
    attached = pruner.attach(fp.hold(model))
    budget = parse_budget({"LUT": 0.5}, load_board("pynq-z2"))
    masks, step = fit_to_budget(pruner, attached, costs, budget, margin=0.1)
    pruner.apply(attached, masks)
    assert budget.fractions(costs(attached).total())[0] <= budget.limits()[0]


def test_export_of_a_keras3_model_csimulates_bit_exactly(digits, tmp_path):
    held = fp.prune(keras3_cnn(), selections=["conv2[:, :, 1, :]", "fc[:50, 3]"])
    quantized = fp.to_qkeras(held, SPEC)
    exported = fp.export(quantized, output_dir=tmp_path / "project", x=digits.x_test[:40])
    result = fp.csim(exported, quantized, digits.x_test[:40])
    assert result.bit_exact and result.mismatches == 0
    assert not quantized.get_layer("conv2").kernel.numpy()[:, :, 1, :].any()


def test_a_keras3_layer_whose_sums_pass_24_bits_is_bit_exact_against_the_exact_reference(tmp_path):
    """Inputs on a 2^-16 grid into a Dense of 64 inputs: 8 + 19 + 7 bits of products, past float32's 24, so the
    QKeras twin's float32 sums may differ from hls4ml's exact ones. C-sim compares with the twin computed exactly
    (float64): no bound is needed, and the design is bit-exact (before issue 68: judged by the float32 bound)."""
    from fpgaprune.hls.tolerance import export_layer_tolerances

    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((64,)), keras.layers.Dense(32, activation="relu", name="fc1"), keras.layers.Dense(5, name="fc2")]
    )
    x = (np.round(np.random.default_rng(0).normal(size=(300, 64)) * 2**16) / 2**16).astype(np.float32)
    quantized = fp.to_qkeras(fp.prune(model, 0.5, structure="element", layers=["fc1"]), SPEC)
    exported = fp.export(quantized, output_dir=tmp_path / "project", x=x)
    tolerances = export_layer_tolerances(
        resolved(quantized), exported.config, exported.manifest.get("names"), exported.input_type
    )
    assert tolerances["fc1"] is None and tolerances["fc2"] is None  # exact in float64: no bound needed
    result = fp.csim(exported, quantized, x)
    assert result.passed and result.bit_exact, result.format()


def test_strip_removes_dead_filters_of_a_keras3_model_and_keeps_its_outputs(digits):
    """Strip reads a Dense layer's input shape as Keras 3 gives it (`input.shape`): a conv → Flatten → Dense
    model loses its dead filters, and the smaller model computes what the masked one does."""
    from fpgaprune.strip import strip

    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            keras.layers.Conv2D(4, 3, name="conv1"),
            keras.layers.Conv2D(6, 3, name="conv2"),
            keras.layers.Flatten(name="flatten"),
            keras.layers.Dense(10, name="fc"),
        ]
    )
    pruned = Pruner(structure="filter", layers=["conv2"]).prune(fp.hold(model), sparsity=0.5)
    result = strip(pruned)
    assert result.model.get_layer("conv2").kernel.shape[-1] == 3 and len(result.index_map["conv2"]["out"]) == 3
    x = digits.x_test[:50]
    np.testing.assert_allclose(result.model.predict(x, verbose=0), pruned.predict(x, verbose=0), atol=1e-5)
