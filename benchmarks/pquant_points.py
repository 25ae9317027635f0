"""PQuantML's points of the accuracy-at-equal-hardware front (`bench_hgq2_front.py`, the HGQ2 environment).

Each point: the seed's float CNN through PQuantML as its code documents it (`add_compression_layers`, then Keras'
`fit` with its `PQuantCallback`, "the Keras callback equivalent of train_model()", which runs each phase's hooks
and `apply_final_compression`; a method's penalty reaches the loss as the layer's own `add_loss`, as `fit`
expects; its other path, `train_model` with an eager train step, had not finished one point in 9 minutes here),
one pruning method at one sparsity, its fixed-point quantizers (weights at PQuantML's default 8 bits; data lanes
`--pquant-data`, see below), trained the same epochs as every other point, split over its phases (pretraining,
pruning, fine-tuning) in the method's default proportions. The trained model reaches hls4ml 1.3 as its HGQ2 copy
(`pquant_route.py`: the same arithmetic, checked equal to PQuantML's own forward on the whole test set, recorded
per point) and is priced by the same export and `fp.estimate` as every other point.

Methods: PDP and Wanda (`sparsity`) and MDMM (`target_sparsity`), the three of PQuantML's that take a sparsity
target, as fpgaprune's kernel removal does; DST and AutoSparse take only penalty weights, CS none. Per method,
what a short run needs of the schedule (its defaults assume 100 to 200 epochs) is set and recorded:
- PDP ramps its target by `epsilon` per epoch (0.015: about 67 epochs); here `epsilon` = 1 / its pruning epochs;
- Wanda starts collecting at epoch `t_start_collecting_batch` (100) and prunes `t_delta` (100) batches later;
  here from the first pruning epoch, pruning after 20 batches; its `M`/`N` are unset (their default is broken, a tuple);
- MDMM: its defaults.

Quantization, either of PQuantML's two kinds (`quantizers`), from the same initial widths:
- "fixed": its fixed-point quantizers, its default (`use_high_granularity_quantization` False), one width per
  tensor;
- "hgq": its high-granularity quantizers (HGQ2's, trained by the same optimizer), at `per_weight` granularity
  (a width per weight, bias and activation element, HGQ's point: its default `per_tensor` would learn one width
  per tensor, and its `per_channel` is refused for HGQ), with its default penalty `hgq_beta` (1e-5) on each
  layer's EBOPs. Its layers add that loss themselves (`add_loss`), so `fit` trains it.
Weights and biases start at its default (1, 0, 7), 8 bits. Its data lanes default to (0, 0, 7): unsigned, no
integer bit, so every activation saturates at 0.99, which this CNN's ReLUs pass well beyond; here (0, 2, 4)
instead, unsigned 6 bits with 2 integer bits, the QKeras reference's `quantized_relu(6,2)` (fpgaprune's bits).
"""

import numpy as np

METHODS = {"pdp": "sparsity", "wanda": "sparsity", "mdmm": "target_sparsity"}
HGQ_GRANULARITY = "per_weight"
LEARNING_RATE = 1e-3  # PQuantML's examples train with Adam at 1e-3; its loop takes the user's optimizer
BATCH = 64
WANDA_BATCHES = 20


def phase_epochs(defaults: tuple, epochs: int) -> tuple:
    """`epochs` split over (pretraining, pruning, fine-tuning) in the proportions of `defaults`, by the largest
    remainder, with at least one pruning epoch."""
    total = sum(defaults)
    shares = [epochs * d / total for d in defaults]
    split = [int(s) for s in shares]
    for index in sorted(range(3), key=lambda i: shares[i] - split[i], reverse=True)[: epochs - sum(split)]:
        split[index] += 1
    if split[1] == 0:
        donor = max((0, 2), key=lambda i: split[i])
        split[donor], split[1] = split[donor] - 1, 1
    return tuple(split)


def config(method: str, sparsity: float, epochs: int, data_kif: tuple, quantizers: str = "fixed"):
    """PQuantML's config of `method` (its own defaults, loaded from its YAML) at `sparsity`, its phases splitting
    `epochs`, its `quantizers` ("fixed" or "hgq") with data lanes at `data_kif` = (keep negatives, integer,
    fractional)."""
    import pquant

    found = getattr(pquant, f"{method}_config")()
    training = found.training_parameters
    defaults = (training.pretraining_epochs, training.epochs * training.rounds, training.fine_tuning_epochs)
    training.pretraining_epochs, main, training.fine_tuning_epochs = phase_epochs(defaults, epochs)
    training.epochs, training.rounds = main, 1
    pruning = found.pruning_parameters
    setattr(pruning, METHODS[method], sparsity)
    if method == "pdp":
        pruning.epsilon = 1.0 / main
    if method == "wanda":
        pruning.M, pruning.N = None, None
        pruning.t_start_collecting_batch, pruning.t_delta = 0, WANDA_BATCHES  # epochs of its pruning phase
    quantization = found.quantization_parameters
    quantization.use_high_granularity_quantization = quantizers == "hgq"
    if quantizers == "hgq":
        quantization.granularity = HGQ_GRANULARITY
    (
        quantization.default_data_keep_negatives,
        quantization.default_data_integer_bits,
        quantization.default_data_fractional_bits,
    ) = map(float, data_kif)
    return found


def functional(keras, model):
    """`model` as a functional model of the same layers: PQuantML's `add_compression_layers` starts from
    `model.layers[0]`, an InputLayer in a functional model but the first layer in a Sequential one (which it would
    then leave as it is, unquantized)."""
    x = inputs = keras.Input(model.input_shape[1:])
    for layer in model.layers:
        x = layer(x)
    return keras.Model(inputs, x, name=model.name)


def trained(keras, model, data, found):
    """The float `model` through PQuantML: its layers replaced, trained by Keras' `fit` with PQuantML's callback
    (its Keras equivalent of `train_model`: the phases' hooks at each epoch's ends, `apply_final_compression`
    at the end), at the benchmark's batch size."""
    from pquant import add_compression_layers
    from pquant.core.keras.train import PQuantCallback

    compressed = add_compression_layers(functional(keras, model), found, (1, *data.x_train.shape[1:]))
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    compressed.compile(keras.optimizers.Adam(LEARNING_RATE), loss)
    callback = PQuantCallback(found, log_ebops=False, log_keep_ratio=False)
    compressed.fit(
        data.x_train, data.y_train, batch_size=BATCH, epochs=callback.total_epochs, callbacks=[callback], verbose=0
    )
    return compressed


def accuracy(model, data) -> float:
    x = data.x_test
    logits = np.concatenate([np.asarray(model(x[i : i + 1024], training=False)) for i in range(0, len(x), 1024)])
    return float(np.mean(logits.argmax(1) == data.y_test))


def kernel_bits(model) -> dict:
    """{layer: the mean width of its kernel's quantizer} of a PQuantML model (per weight for HGQ ones)."""
    found = {}
    for layer in model.layers:
        if type(layer).__name__ in ("PQDense", "PQConv2d"):
            k, i, f = (np.asarray(v, dtype=np.float64) for v in layer.weight_quantizer.get_quantization_bits())
            found[layer.name] = float(np.mean(np.maximum(k + i + f, 0)))
    return found


def pquant_point(keras, model, data, settings: tuple, price) -> dict:
    """One PQuantML point of `settings` = (method, quantizers, sparsity, epochs, data lanes' kif): accuracy
    (PQuantML's own forward), its kernels' zeros and widths, the HGQ2 copy's check and price (`price(copy)`: the
    benchmark's one measure)."""
    from pquant_route import hgq2_copy, kernel_zeros, same_forward

    method, quantizers, sparsity, epochs, data_kif = settings
    found = config(method, sparsity, epochs, data_kif, quantizers)
    compressed = trained(keras, model, data, found)
    copy = hgq2_copy(compressed)
    exact, largest = same_forward(compressed, copy, data.x_test)
    if not exact:
        where = f"PQuantML {method} + {quantizers} {sparsity}"
        raise AssertionError(f"{where}: the HGQ2 copy differs by {largest:g} on the test set")
    training, quantization = found.training_parameters, found.quantization_parameters
    hgq = {"hgq_granularity": quantization.granularity, "hgq_beta": quantization.hgq_beta}
    return {
        "accuracy": accuracy(compressed, data),
        "kernel_zeros": kernel_zeros(compressed),
        "kernel_bits": kernel_bits(compressed),
        "phases": [training.pretraining_epochs, training.epochs, training.fine_tuning_epochs],
        "copy_exact_on_test_set": exact,
        **(hgq if quantizers == "hgq" else {}),
        **price(copy),
    }
