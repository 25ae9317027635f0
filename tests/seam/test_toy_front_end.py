"""A third framework is one front end: a toy numpy framework (Dense layers) registered from inside this test
runs hold -> prune -> export through the contract (`fpgaprune/frontends/base.FrontEnd`), without touching any
file of the package. Its `to_hls4ml` builds hls4ml's IR from a layer list, as hls4ml's own converters do."""

import copy
import json

import numpy as np
import pytest

import fpgaprune as fp
from fpgaprune.errors import FpgapruneError
from fpgaprune.framework import register_front_end, unregister_front_end
from fpgaprune.frontends.base import FrontEnd
from fpgaprune.masking.held import HeldEntries
from fpgaprune.model.layer_kinds import bind
from fpgaprune.pruning import Pruner


class ToyWeight:
    """A weight: its values, and the hold it carries."""

    def __init__(self, values, hold=None):
        self.value, self.hold = np.asarray(values, np.float32), hold

    @property
    def shape(self):
        return self.value.shape


class ToyDense:
    def __init__(self, name, kernel, bias, relu=False):
        self.name, self.kernel, self.bias, self.relu = name, ToyWeight(kernel), ToyWeight(bias), relu

    @property
    def weights(self):
        return [self.kernel, self.bias]

    def __call__(self, x):
        y = x @ self.kernel.value + self.bias.value
        return np.maximum(y, 0) if self.relu else y


class ToyModel:
    def __init__(self, name, layers):
        self.name, self.layers = name, layers

    def get_layer(self, name):
        return next(layer for layer in self.layers if layer.name == name)

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class ToyHold(HeldEntries):
    pass


class ToyFrontEnd(FrontEnd):
    name = "toy numpy"

    def owns(self, obj):
        cls = obj if isinstance(obj, type) else type(obj)
        return cls in (ToyModel, ToyDense)

    def bind_layers(self):
        bind("Dense", ToyDense)

    def check_model(self, model):
        if not isinstance(model, ToyModel):
            raise FpgapruneError("not a toy model")

    def graph_edges(self, model):
        names = [layer.name for layer in model.layers]
        return list(model.layers), {b: [a] for a, b in zip(names, names[1:])} | {names[0]: []}, {names[-1]}

    def input_name(self, model):
        return "toy_input"

    def array(self, variable):
        return variable.value.copy()

    def hold_of(self, variable):
        return variable.hold

    def with_holds(self, model, groups, keep_holds):
        copied = copy.deepcopy(model)
        for (layer_name, weight_name), entries in groups.items():
            variable = getattr(copied.get_layer(layer_name), weight_name)
            held = ToyHold(entries)
            mask, target = held.compiled(variable.shape)
            variable.value = np.where(mask, target, variable.value).astype(np.float32)
            variable.hold = held if keep_holds else None
        return copied

    def enforce(self, model):
        for layer in model.layers:
            for variable in layer.weights:
                if variable.hold is not None:
                    mask, target = variable.hold.compiled(variable.shape)
                    variable.value = np.where(mask, target, variable.value).astype(np.float32)

    def fit(self, model, x, y, **options):
        raise FpgapruneError("the toy framework does not train")

    def predict(self, model, x, batch_size=256):
        return model(np.asarray(x, np.float32).reshape(len(x), -1))

    def set_seed(self, seed):
        np.random.seed(seed)

    def load(self, path, trust_code=False, compile=True):
        raise FpgapruneError("the toy framework has no files")

    save = load

    def file_policy(self):
        return None

    def quantized_twin(self, model, quantization, batchnorm="fold"):
        return model

    def quantizer_sources(self, model, quantization, default_given=True):
        return {}

    def weight_quantizer(self, layer, role):
        return None

    def activation_quantizer(self, layer):
        return None

    def reference_probe(self, model, batch_size=512):
        raise FpgapruneError("the toy framework has no per-layer reference")

    def exported_model(self, model, input_shape=None):
        return model

    def hls_config(self, model, granularity="name", **kwargs):
        names = ["toy_input", *(layer.name for layer in model.layers)]
        return {
            "Model": {"Precision": "fixed<32,16>", "ReuseFactor": 1, "Strategy": "Latency"},
            "LayerName": {name: {"Precision": "fixed<32,16>", "Trace": False} for name in names},
        }

    def to_hls4ml(self, model, hls_config, output_dir, **kwargs):
        from hls4ml.model.graph import ModelGraph
        from hls4ml.utils.config import create_config

        config = create_config(
            output_dir=str(output_dir),
            project_name=kwargs.pop("project_name", "myproject"),
            backend=kwargs.pop("backend", "Vitis"),
            **kwargs,
        )
        config["HLSConfig"] = copy.deepcopy(hls_config)
        n_in = model.layers[0].kernel.shape[0]
        layers = [{"class_name": "InputLayer", "name": "toy_input", "input_shape": [n_in], "inputs": ["input"]}]
        previous = "toy_input"
        for layer in model.layers:
            kernel, bias = layer.kernel.value, layer.bias.value
            layers.append(
                {
                    "class_name": "Dense",
                    "name": layer.name,
                    "inputs": [previous],
                    "n_in": kernel.shape[0],
                    "n_out": kernel.shape[1],
                    "weight_data": kernel,
                    "bias_data": bias,
                    "weight_quantizer": None,
                    "bias_quantizer": None,
                    "activation": "linear",
                }
            )
            previous = layer.name
            if layer.relu:
                layers.append(
                    {
                        "class_name": "Activation",
                        "name": f"{layer.name}_relu",
                        "activation": "relu",
                        "inputs": [previous],
                        "n_in": kernel.shape[1],
                    }
                )
                previous = f"{layer.name}_relu"
        return ModelGraph.from_layer_list(config, layers)

    def conversion_problem(self, model):
        return None

    def renamed(self, model, names):
        return model


@pytest.fixture
def toy():
    front_end = ToyFrontEnd()
    register_front_end(front_end)
    yield front_end
    unregister_front_end(front_end)


def _model():
    rng = np.random.default_rng(0)
    return ToyModel(
        "toy",
        [
            ToyDense("fc1", np.round(rng.normal(size=(12, 8)) * 8) / 8, np.zeros(8), relu=True),
            ToyDense("fc2", np.round(rng.normal(size=(8, 4)) * 8) / 8, np.zeros(4)),
        ],
    )


def test_a_front_end_registered_from_outside_holds_prunes_and_exports(toy, tmp_path):
    held = fp.hold(_model(), prune=["fc1[3, :]"])  # every product of input 3
    assert np.all(held.get_layer("fc1").kernel.value[3] == 0) and held.get_layer("fc1").kernel.hold is not None
    pruned = Pruner(structure="element", layers=["fc1", "fc2"]).prune(held, sparsity=0.5)
    live = {layer.name: int(np.count_nonzero(layer.kernel.value)) for layer in pruned.layers}
    assert live["fc1"] <= 48 and np.all(pruned.get_layer("fc1").kernel.value[3] == 0)
    assert {entry.layer for entry in fp.manifest_of(pruned)} == {"fc1", "fc2"}  # read back through the contract
    x = np.random.default_rng(1).integers(0, 16, size=(64, 12)) / 16.0
    exported = fp.export(pruned, "latency_parallel", "pynq-z2", tmp_path / "prj", x=x, tb_samples=8)
    manifest = json.loads((tmp_path / "prj" / "fpgaprune_manifest.json").read_text())
    assert {name: manifest["hls_nodes"][name]["live_weights"] for name in ("fc1", "fc2")} == live
    exported.hls_model.compile()
    hls_outputs = np.asarray(exported.hls_model.predict(x.astype(np.float32))).reshape(len(x), -1)
    assert np.array_equal(hls_outputs, toy.predict(pruned, x))  # C-sim of the kernel-sparse code, exact here
