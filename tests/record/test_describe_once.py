"""A model is described once per state of its weights (`record/binding.py`): `fp.export`, `fp.csim` and a budget's
pricing each read the record the binding keeps, and training between two calls makes the next one describe the
model again, once."""

import numpy as np
import pytest
import qkeras

import fpgaprune as fp
from fpgaprune.budget.fit import HardwareCosts
from fpgaprune.frontends.contract import export as contract_export
from fpgaprune.hls import load_board, load_preset
from fpgaprune.quantize import input_type
from fpgaprune.record import resolved
from fpgaprune.tfk import keras

BITS = "quantized_bits(6,0,alpha=1)"


@pytest.fixture
def described(monkeypatch):
    """The models described, one entry per `FrontEnd.describe` call."""
    calls, describe = [], contract_export.describe

    def counting(front_end, model):
        calls.append(model.name)
        return describe(front_end, model)

    monkeypatch.setattr(contract_export, "describe", counting)
    return calls


def _mlp(name: str):
    keras.utils.set_random_seed(0)
    return keras.Sequential(
        [
            keras.Input((16,)),
            qkeras.QDense(8, kernel_quantizer=BITS, bias_quantizer=BITS, name="fc1"),
            qkeras.QActivation("quantized_relu(6,2)", name="relu1"),
            qkeras.QDense(4, kernel_quantizer=BITS, bias_quantizer=BITS, name="fc2"),
        ],
        name=name,
    )


def test_export_and_csim_describe_a_model_once_and_again_after_training(described, tmp_path):
    model, x = _mlp("mlp"), np.random.default_rng(0).random((64, 16)).astype(np.float32)
    exported = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "prj", x=x)
    assert described == ["mlp"]  # the export's config, precisions, manifest and checks read one record
    assert fp.csim(exported, model, x).bit_exact and described == ["mlp"]  # the binding kept it
    model.compile("adam", "mse")
    model.fit(x, np.zeros((64, 4)), epochs=1, verbose=0)  # the weights change: the record follows them
    fresh = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "again", x=x)
    assert described == ["mlp", "mlp"]
    assert fp.csim(fresh, model, x).bit_exact and described == ["mlp", "mlp"]


def test_a_budget_pricing_describes_once_per_state(described):
    model, x = _mlp("priced"), np.random.default_rng(1).random((32, 16)).astype(np.float32)
    costs = HardwareCosts({}, load_preset("latency_parallel")["HLSConfig"], input_type(x), load_board("pynq-z2"))
    first = costs(model).total()
    assert costs(resolved(model)).total() == first and described == ["priced"]
    weights = model.get_weights()
    model.set_weights([w * 0.5 for w in weights])  # set by hand between two calls: described again
    costs(model)
    assert described == ["priced", "priced"]
