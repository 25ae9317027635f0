"""The PyTorch front end as the contract (`frontends.base.FrontEnd`): holds, pruning and fine-tuning of a
`torch.nn.Module` as it is, in the user's own loop or the pipeline's. Its model files, quantization (Brevitas,
through QONNX) and export are not here yet: they answer with one line saying so."""

from fpgaprune.errors import FpgapruneError, ModelTypeError
from fpgaprune.frontends.base import FrontEnd

NOT_YET = "PyTorch models: {} is not supported yet (holds, pruning and fine-tuning are)"


def _torch_module():
    from torch import nn

    return nn.Module


class TorchFrontEnd(FrontEnd):
    name = "PyTorch"
    indexes_own_layout = True  # "features.3[5, 3, :, :]" is PyTorch's (out, in, kh, kw)

    @staticmethod
    def owns(model_or_layer) -> bool:
        cls = model_or_layer if isinstance(model_or_layer, type) else type(model_or_layer)
        modules = [c.__module__ for c in cls.__mro__]
        return any(m == "torch" or m.startswith(("torch.", "fpgaprune.frontends.torch.")) for m in modules)

    @staticmethod
    def bind_layers() -> None:
        """Whether torch is installed; its classes are bound when a module is first read (`_bound`): importing
        torch costs a Keras user's every command about a second and a half."""
        import importlib.util

        if importlib.util.find_spec("torch") is None:
            raise ImportError("torch is not installed")

    @staticmethod
    def _bound() -> None:
        from fpgaprune.frontends.torch.layers import bind_all

        bind_all()

    def check_model(self, model) -> None:
        self._bound()
        if not isinstance(model, _torch_module()):
            raise ModelTypeError(f"expected a torch.nn.Module, got {type(model).__module__}.{type(model).__name__}")
        for name, module in model.named_modules():
            if getattr(module, "groups", 1) != 1:
                raise ModelTypeError(
                    f"module '{name}' ({type(module).__name__}) has groups={module.groups}; "
                    "fpgaprune holds and exports convolutions with groups=1"
                )

    # -- the model as layers
    def layers(self, model) -> list:
        from fpgaprune.frontends.torch.layers import layer_views

        self._bound()
        return layer_views(model)

    @staticmethod
    def graph_edges(model) -> tuple:
        from fpgaprune.frontends.torch.graph import graph_edges

        return graph_edges(model)

    @staticmethod
    def input_name(model) -> str:
        return "x"

    @staticmethod
    def index_shape(layer, weight) -> tuple:
        return weight.variable(layer).torch_shape

    @staticmethod
    def to_fpgaprune_layout(layer, weight, mask):
        return mask.transpose(weight.variable(layer).layout)

    # -- weights and holds
    @staticmethod
    def array(variable):
        return variable.numpy()

    @staticmethod
    def hold_of(variable):
        from fpgaprune.frontends.torch.holds import hold_of

        return hold_of(variable)

    @staticmethod
    def with_holds(model, groups: dict, keep_holds: bool):
        from fpgaprune.frontends.torch.holds import with_holds

        return with_holds(model, groups, keep_holds)

    @staticmethod
    def enforce(model) -> None:
        from fpgaprune.frontends.torch.holds import enforce

        enforce(model)

    # -- training
    @staticmethod
    def fit(model, x, y, *, task, optimizer, learning_rate, epochs, batch_size, hooks=()) -> None:
        from fpgaprune.frontends.torch.training import fit

        fit(
            model,
            x,
            y,
            task=task,
            optimizer=optimizer,
            learning_rate=learning_rate,
            epochs=epochs,
            batch_size=batch_size,
            hooks=hooks,
        )

    @staticmethod
    def predict(model, x, batch_size: int = 256):
        from fpgaprune.frontends.torch.training import predict

        return predict(model, x, batch_size)

    @staticmethod
    def set_seed(seed: int) -> None:
        import torch

        torch.manual_seed(seed)

    # -- what is not here yet: one line each
    def _not_yet(self, what: str):
        raise FpgapruneError(NOT_YET.format(what))

    def load(self, path, trust_code: bool = False, compile: bool = True):
        self._not_yet("reading a model file")

    def save(self, model, path):
        self._not_yet("writing a model file")

    def file_policy(self):
        self._not_yet("reading a model file")

    def quantized_twin(self, model, quantization, batchnorm: str = "fold"):
        self._not_yet("quantization")

    def quantizer_sources(self, model, quantization, default_given: bool = True) -> dict:
        self._not_yet("quantization")

    @staticmethod
    def weight_quantizer(layer, role: str):
        return None

    @staticmethod
    def activation_quantizer(layer):
        return None

    def reference_probe(self, model, batch_size: int = 512):
        self._not_yet("C-simulation")

    def exported_model(self, model):
        self._not_yet("the hls4ml export")

    def hls_config(self, model, granularity: str = "name", **kwargs) -> dict:
        self._not_yet("the hls4ml export")

    def to_hls4ml(self, model, hls_config: dict, output_dir, **kwargs):
        self._not_yet("the hls4ml export")

    def conversion_problem(self, model):
        return NOT_YET.format("the hls4ml export")

    def renamed(self, model, names: dict):
        self._not_yet("the hls4ml export")


FRONT_END = TorchFrontEnd()
