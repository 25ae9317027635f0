"""fpgaprune's budget mode against hls4ml's Optimization API (`dsp_aware_pruning`) on the same work.

Same model (the digits CNN, or Fashion-MNIST with --data fashion_mnist), same trained weights, same data,
same epochs, 12-bit weights and activations (hls4ml's DSP estimator counts no DSP below 9-bit weights;
fpgaprune's rules put a product on DSPs when both operands are wider than 10 bits).

hls4ml's API takes no budget: it prunes until validation accuracy falls below `rtol` x the baseline, capped
by the scheduler's final sparsity. So the mapping is: run hls4ml first (ConstantScheduler, `tuner='Manual'`,
`knapsack_solver='dynamic'`: its default tuner binds to Keras 3 and its default solver needs ortools), price
its result with fpgaprune's estimator, then give fpgaprune that DSP count as its budget. Printed side by side:
accuracy after QAT (both quantized with the same QKeras spec and QAT epochs) and the estimated DSP and LUT of
both, each from fpgaprune's rules (`resources/entry_costs.py`) and from hls4ml's own DSP objective.
"""

import argparse
import tempfile

import numpy as np

import fpgaprune as fp
from fpgaprune import data
from fpgaprune.record import resolved
from fpgaprune.support.text_table import format_rows
from fpgaprune.tfk import keras

BITS = 12
SPEC = {
    "default": {
        "kernel": f"quantized_bits({BITS},0,alpha=1)",
        "bias": f"quantized_bits({BITS},3,alpha=1)",
        "activation": f"quantized_relu({BITS},4)",
    },
    "layers": {},
}


def _compile(model, learning_rate=1e-3):
    model.compile(
        keras.optimizers.Adam(learning_rate),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def trained(dataset, filters, epochs, seed):
    from fpgaprune.model.architectures import small_cnn

    keras.utils.set_random_seed(seed)
    model = _compile(small_cnn(dataset.x_train.shape[1:], filters, dataset.classes), 3e-3)
    model.fit(dataset.x_train, dataset.y_train, epochs=epochs, batch_size=32, verbose=0)
    return model


def _serializable_regularizers():
    """hls4ml 1.3's regularizers return their structure as an Enum from get_config; tf_keras 2.21's to_json fails
    on it ("TypeError: Cannot serialize object SUPPORTED_STRUCTURES.UNSTRUCTURED"). Their __init__ takes the
    string, so give get_config the enum's value."""
    from hls4ml.optimization.dsp_aware_pruning.keras import regularizers

    for cls in (regularizers.DenseRegularizer, regularizers.Conv2DRegularizer):
        if getattr(cls.get_config, "fpgaprune_patched", False):
            continue
        original = cls.get_config

        def get_config(self, _original=original):
            config = _original(self)
            config["structure_type"] = getattr(config["structure_type"], "value", config["structure_type"])
            return config

        get_config.fpgaprune_patched = True
        cls.get_config = get_config


def hls4ml_optimized(model, dataset, epochs, rtol):
    """hls4ml's dsp_aware_pruning on a copy of `model`: (optimized float model, its own DSP estimate)."""
    from hls4ml.optimization.dsp_aware_pruning import optimize_keras_model_for_hls4ml
    from hls4ml.optimization.dsp_aware_pruning.objectives.vivado_objectives import VivadoDSPEstimator
    from hls4ml.optimization.dsp_aware_pruning.scheduler import PolynomialScheduler

    from fpgaprune.hls import config_from_model

    _serializable_regularizers()
    copy = keras.models.clone_model(model)
    copy.set_weights(model.get_weights())
    hls_config = config_from_model(resolved(copy), granularity="name", default_precision=f"ap_fixed<{BITS},4>")
    hls_config["IOType"] = "io_parallel"
    for layer in hls_config["LayerName"].values():  # its objective reads explicit types, not 'auto'
        if isinstance(layer.get("Precision"), dict):
            layer["Precision"].update(weight=f"ap_fixed<{BITS},1>", result=f"ap_fixed<{BITS},4>")
    split = len(dataset.x_train) * 4 // 5
    with tempfile.TemporaryDirectory() as directory:
        optimized = optimize_keras_model_for_hls4ml(
            copy,
            hls_config,
            VivadoDSPEstimator,
            PolynomialScheduler(5, final_sparsity=0.9),
            dataset.x_train[:split],
            dataset.y_train[:split],
            dataset.x_train[split:],
            dataset.y_train[split:],
            32,
            epochs,
            keras.optimizers.Adam(1e-3),
            keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            keras.metrics.SparseCategoricalAccuracy(),
            True,
            rtol,
            directory=directory,
            tuner="Manual",
            knapsack_solver="dynamic",
            regularization_range=[1e-5],
        )
    # Its DSP model for unstructured pruning at reuse factor 1: one DSP per nonzero weight of 9 bits or more.
    dsp = sum(
        int(np.count_nonzero(layer.kernel.numpy()))
        for layer in optimized.layers
        if getattr(layer, "kernel", None) is not None
    )
    return optimized, dsp


def quantized_accuracy(float_model, dataset, qat_epochs):
    """The same QKeras spec and QAT for both methods (pruned weights held at 0)."""
    from fpgaprune.quantize import to_qkeras

    quantized = _compile(to_qkeras(fp.hold(float_model, _zeros(float_model)), SPEC))
    if qat_epochs:
        quantized.fit(dataset.x_train, dataset.y_train, epochs=qat_epochs, batch_size=32, verbose=0)
    return quantized, float(quantized.evaluate(dataset.x_test, dataset.y_test, verbose=0)[1])


def _zeros(model):
    """Selections of every exact zero of every kernel: pruned weights stay pruned through QAT."""
    from fpgaprune.masking import MaskManifest

    manifest = MaskManifest()
    for layer in model.layers:
        kernel = getattr(layer, "kernel", None)
        if kernel is not None and np.any(kernel.numpy() == 0):
            manifest.prune(f"{layer.name}/kernel", where=kernel.numpy() == 0)
    return manifest


def _fpgaprune(model, dataset, costs, budget, structure, epochs):
    """fpgaprune's budget mode: fit, fine-tune with the pruned groups held, then repair to the budget."""
    from fpgaprune.budget import BudgetFit, repair
    from fpgaprune.pruning import Pruner

    fit = BudgetFit((Pruner(structure=structure),), costs, budget, margin=0.0)
    ours = fit.attach(fp.hold(model))
    fit(ours)
    _compile(ours).fit(dataset.x_train, dataset.y_train, epochs=epochs, batch_size=32, verbose=0)
    repair(fit.pruners[0], ours, costs, budget)  # fine-tuning moved the weights: prune to the budget again
    return ours


def one_seed(args, seed) -> list:
    from fpgaprune.budget import HardwareCosts, parse_budget
    from fpgaprune.hls import load_board, load_preset
    from fpgaprune.quantize import input_type

    dataset = data.digits(seed=seed) if args.data == "digits" else data.fashion_mnist()
    model = trained(dataset, tuple(int(f) for f in args.filters.split(",")), 10, seed)
    board = load_board("zcu102")
    costs = HardwareCosts(SPEC, load_preset("latency_parallel")["HLSConfig"], input_type(dataset.x_test), board)
    peer, peer_own = hls4ml_optimized(model, dataset, args.epochs, args.rtol)
    peer_cost = costs(peer).total()
    budget = parse_budget({"DSP": max(peer_cost["DSP"], 1.0) / board.resources["DSP"]}, board)
    rows = [
        ("dense (no pruning)", "-", costs(model).total(), quantized_accuracy(model, dataset, 2)[1]),
        (
            f"hls4ml dsp_aware_pruning (its own DSP model: {peer_own})",
            f"rtol {args.rtol}",
            peer_cost,
            quantized_accuracy(peer, dataset, 2)[1],
        ),
    ]
    for structure in ("element", "kernel"):
        ours = _fpgaprune(model, dataset, costs, budget, structure, args.epochs)
        rows.append(
            (
                f"fpgaprune budget, {structure}",
                "DSP <= hls4ml's",
                costs(ours).total(),
                quantized_accuracy(ours, dataset, 2)[1],
            )
        )
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="digits", choices=["digits", "fashion_mnist"])
    parser.add_argument("--filters", default="8,16")
    parser.add_argument("--epochs", type=int, default=6, help="fine-tuning epochs for each method")
    parser.add_argument("--rtol", type=float, default=0.97)
    parser.add_argument("--seeds", type=int, default=1)
    args = parser.parse_args()
    runs = [one_seed(args, seed) for seed in range(args.seeds)]
    table = []
    for i, (method, budget, _, _) in enumerate(runs[0]):
        dsp = np.mean([run[i][2]["DSP"] for run in runs])
        lut = np.mean([run[i][2]["LUT"] for run in runs])
        accuracy = [run[i][3] for run in runs]
        table.append((method, budget, f"{dsp:.0f}", f"{lut:.0f}", f"{np.mean(accuracy):.4f} +- {np.std(accuracy):.4f}"))
    print(
        f"{args.data}, CNN {args.filters}, {BITS}-bit, ZCU102, {args.epochs} fine-tuning epochs, 2 QAT epochs, "
        f"mean of {args.seeds} seed(s); DSP and LUT: fpgaprune's rules on the quantized weights"
    )
    print("\n".join(format_rows(("method", "budget", "DSP (est.)", "LUT (est.)", "accuracy after QAT"), table)))


if __name__ == "__main__":
    from record import run_recorded

    run_recorded(main, __file__)
