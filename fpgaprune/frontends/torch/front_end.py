"""The PyTorch front end as the contract (`frontends.base.FrontEnd`): holds, pruning and fine-tuning of a
`torch.nn.Module` as it is, in the user's own loop or the pipeline's; quantization with Brevitas (constant
power-of-two quantizers, `quantize.py`); the export through hls4ml's PyTorch converter (`export.py`,
`hls_route.py`); model files that run no code (`files.py`)."""

import numpy as np

from fpgaprune.errors import FpgapruneError, ModelTypeError, QuantizationConfigError
from fpgaprune.frontends.base import FrontEnd
from fpgaprune.frontends.layer_reading import variable_of
from fpgaprune.frontends.torch.quantizers import ScaledQuantizer, from_text, read_proxy
from fpgaprune.hls.precision import derive_precisions
from fpgaprune.quantize.spec import DEFAULT_QUANTIZERS
from fpgaprune.support.extras import require_extra


def _torch_module():
    from torch import nn

    return nn.Module


class TorchFrontEnd(FrontEnd):
    name = "PyTorch"
    asked_order = 40
    quantizer_library = "Brevitas"
    float32_reference = False  # C-sim's reference is the module computed in float64 (`reference.py`)
    indexes_own_layout = True  # "features.3[5, 3, :, :]" is PyTorch's (out, in, kh, kw)

    @staticmethod
    def owns(model_or_layer) -> bool:
        cls = model_or_layer if isinstance(model_or_layer, type) else type(model_or_layer)
        modules = [c.__module__ for c in cls.__mro__]
        return any(m == "torch" or m.startswith(("torch.", "fpgaprune.frontends.torch.")) for m in modules)

    framework_modules = ("torch",)

    @staticmethod
    def bind_layers() -> None:
        """PyTorch's classes bound to the kinds: the registry binds them when it first hands out this front end
        (a module is read), so a Keras process never imports torch."""
        from fpgaprune.frontends.torch.layers import bind_all

        bind_all()

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
    def index_shape(layer, weight) -> tuple:
        return variable_of(weight, layer).torch_shape

    @staticmethod
    def own_weight_name(name: str) -> str:
        from fpgaprune.frontends.torch.layers import PARAMETERS

        return PARAMETERS.get(name, "")

    @staticmethod
    def index_layout(layer) -> tuple | None:
        kernel = getattr(layer, "kernel", None)
        return tuple(kernel.layout) if kernel is not None else None

    @staticmethod
    def to_fpgaprune_layout(layer, weight, mask):
        return mask.transpose(variable_of(weight, layer).layout)

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
    def fit(model, x, y, **settings) -> None:
        """`FrontEnd.fit`: `settings` are its keyword arguments (task, optimizer, ..., hooks)."""
        from fpgaprune.frontends.torch.training import fit

        fit(model, x, y, **settings)

    @staticmethod
    def state_token(model) -> bytes:
        """A fingerprint of the module's whole state (parameters and buffers: running statistics, Brevitas'
        scales), the holds' own arrays left out."""
        from fpgaprune.frontends.contract.graph import fingerprint
        from fpgaprune.frontends.torch.training import model_weights

        return fingerprint(model_weights(model).values())

    @staticmethod
    def model_weights(model) -> dict:
        from fpgaprune.frontends.torch.training import model_weights

        return model_weights(model)

    @staticmethod
    def set_model_weights(model, weights) -> None:
        from fpgaprune.frontends.torch.training import set_model_weights

        set_model_weights(model, weights)

    @staticmethod
    def predict(model, x, batch_size: int = 256):
        from fpgaprune.frontends.torch.training import predict

        return predict(model, x, batch_size)

    @staticmethod
    def set_seed(seed: int) -> None:
        import torch

        torch.manual_seed(seed)

    # -- quantization (Brevitas, constant power-of-two scales) and what a layer's quantizers are
    @staticmethod
    def check_available(what: str) -> None:
        require_extra("brevitas", f"{what} of a PyTorch model")

    # The run config's quantizer texts, as this front end reads them (`pipeline/checks.py`)
    WEIGHT_ROLES = ("kernel",)  # the roles whose pruned entries must stay 0

    @property
    def DEFAULT_QUANTIZERS(self) -> dict:  # noqa: N802 - the name the quantizing front ends give it

        return DEFAULT_QUANTIZERS

    @staticmethod
    def build_quantizer(text: str, where: str):
        """The quantizer a text makes (one line naming `where` where it has no exact route)."""
        return from_text(text, where)

    @staticmethod
    def zero_of(quantizer) -> float:
        return float(quantizer(np.zeros(1))[0])

    @staticmethod
    def activation_mismatch(layer, text: str) -> str | None:
        """Why the activation quantizer `text` cannot stand for the function of a layer (its record): a ReLU needs
        quantized_relu, a QuantIdentity quantized_bits; None for a fitting text or a layer of no such function."""
        function = "relu" if layer.role == "ReLU" or "ReLU" in layer.class_name else None
        if function is None and layer.class_name == "QuantIdentity":
            function = "identity"
        expected = {"relu": "quantized_relu", "identity": "quantized_bits"}.get(function)
        if expected is None or text.split("(")[0].strip() == expected:
            return None
        return f"{text!r} does not compute {function!r}, the function of layer '{layer.name}'; expected {expected}"

    def dense_reference(self, quantized, trained, spec, batchnorm: str = "fold"):
        """The quantized module with its pruned entries given back (`frontends/dense_reference.py`), each
        module's weight and bias read and written as PyTorch holds them."""
        from fpgaprune.frontends.dense_reference import dense_reference
        from fpgaprune.frontends.torch.layers import parameters_of, write_parameters

        def read(layer):
            return parameters_of(layer.module)

        def write(layer, values):
            write_parameters(layer.module, values)

        return dense_reference(self, quantized, trained, spec, batchnorm, read, write)

    def quantized_twin(self, model, quantization, batchnorm: str = "fold"):
        from fpgaprune.frontends.torch.quantize import quantized_twin

        self.check_model(model)
        self.check_available("quantization")
        return quantized_twin(model, quantization, batchnorm)

    @staticmethod
    def quantizer_sources(model, quantization, default_given: bool = True) -> dict:
        from fpgaprune.frontends.torch.quantize import quantizer_sources

        return quantizer_sources(model, quantization, default_given)

    @staticmethod
    def weight_quantizer(layer, role: str):
        proxy = getattr(layer.module, _PROXIES.get(role, ""), None) if hasattr(layer, "module") else None
        return read_proxy(proxy, f"layer '{layer.name}' ({role})") if proxy is not None else None

    @staticmethod
    def activation_quantizer(layer):
        if not _is_activation_quantizer(layer):
            return None
        return read_proxy(layer.module.act_quant, f"layer '{layer.name}' (activation)")

    def quantized(self, layer, role: str, values):
        quantizer = self.weight_quantizer(layer, role)
        return quantizer(values) if quantizer is not None else np.asarray(values, np.float64)

    def is_quantized(self, layer) -> bool:
        return self.weight_quantizer(layer, "kernel") is not None or self.activation_quantizer(layer) is not None

    def is_quantized_activation(self, layer) -> bool:
        return self.activation_quantizer(layer) is not None

    def quantizer_texts(self, layer) -> dict:
        found = {role: self.weight_quantizer(layer, role) for role in ("kernel", "bias")}
        return {role: str(quantizer) for role, quantizer in found.items() if quantizer is not None}

    @staticmethod
    def quantizer_type(quantizer, activation: bool = False):
        fixed = getattr(quantizer, "fixed", None)
        if fixed is None:  # a float tensor, or a float scale
            return None
        return type(fixed)(fixed.width, fixed.integer, fixed.signed, activation)

    def quantizer_bits(self, layer, role: str, default: int = 32) -> int:
        quantizer = self.weight_quantizer(layer, role)
        return quantizer.bits if quantizer is not None else default

    @staticmethod
    def derive_types(bound, input_type):
        """The hls4ml types derived from the quantizers and the input type (`hls.precision`)."""
        return derive_precisions(bound.record, input_type)

    def reference_probe(self, model, batch_size: int = 512):
        from fpgaprune.frontends.torch.reference import ModuleProbe

        return ModuleProbe(model, batch_size, quantizing=self.is_quantized_activation)

    # -- export: hls4ml's PyTorch converter, channels-last inside
    @staticmethod
    def input_name(model) -> str:
        from fpgaprune.frontends.torch.export import input_name

        return input_name(model)

    def exported_model(self, model, input_shape=None):
        from fpgaprune.frontends.torch.export import exported_graph
        from fpgaprune.frontends.torch.layers import check_not_recurrent

        self.check_model(model)
        check_not_recurrent(model, "the export")
        self._check_quantizers(model)
        return exported_graph(model, input_shape)

    def _check_quantizers(self, model) -> None:
        """One line naming the first layer whose quantizers have no exact fixed-point type (Brevitas' float
        scales, which the quantized twin converts), whose kernel is quantized and its bias not (hls4ml would
        type the bias at its default), or a BatchNorm of a quantized model that is left unfolded."""
        from fpgaprune.frontends.torch.quantize import unfoldable_batchnorm

        quantized = any(self.is_quantized(layer) for layer in self.layers(model))
        problem = unfoldable_batchnorm(model) if quantized else None
        if problem:
            raise QuantizationConfigError(problem)
        for layer in self.layers(model):
            found = {role: self.weight_quantizer(layer, role) for role in ("kernel", "bias")}
            found["activation"] = self.activation_quantizer(layer)
            for role, quantizer in found.items():
                if isinstance(quantizer, ScaledQuantizer):
                    raise QuantizationConfigError(
                        f"layer '{layer.name}' ({role}): {quantizer}, which no fixed-point type holds; quantize the "
                        "model with fp.quantized_twin(model) (the run's quantize stage), which converts it to the "
                        "nearest power-of-two quantizer of its bits"
                    )
            if found["kernel"] is not None and layer.use_bias and found["bias"] is None:
                raise QuantizationConfigError(
                    f"layer '{layer.name}': its kernel is quantized and its bias is float, which hls4ml types at its "
                    "default (not exact); quantize the bias too (quantization.default.bias)"
                )

    @staticmethod
    def output_shape(model) -> tuple:
        from fpgaprune.frontends.torch.layers import model_output_shape

        return model_output_shape(model)

    @staticmethod
    def hardware_layout(model, x):
        from fpgaprune.frontends.torch.export import channels_last

        return channels_last(x)

    @staticmethod
    def hls_config(model, granularity: str = "name", **kwargs) -> dict:
        from fpgaprune.frontends.torch.hls_route import config_from_model

        return config_from_model(model, granularity, **kwargs)

    @staticmethod
    def to_hls4ml(model, hls_config: dict, output_dir, **kwargs):
        from fpgaprune.frontends.torch.hls_route import convert_model

        return convert_model(model, hls_config, output_dir, **kwargs)

    def conversion_problem(self, model):
        from fpgaprune.frontends.torch.hls_route import unsupported_layer
        from fpgaprune.frontends.torch.layers import check_not_recurrent
        from fpgaprune.frontends.torch.quantize import unfoldable_batchnorm

        try:
            self.check_model(model)
            check_not_recurrent(model, "the export")
            return unsupported_layer(model) or unfoldable_batchnorm(model)
        except FpgapruneError as error:
            return str(error)

    @staticmethod
    def renamed(model, names: dict):
        from fpgaprune.frontends.torch.export import renamed

        return renamed(model, names)

    # -- files: a state dict, read with weights_only, and the architecture the user names (`files.py`)
    reads = (".pt", ".pth", "architectures")  # state dicts; `build`: a module from `models.py:ClassName`

    @staticmethod
    def load(path, trust_code: bool = False, compile: bool = True, weights=None, architecture=None, arguments=None):
        from fpgaprune.frontends.torch.files import load_model

        return load_model(path, architecture, arguments, trust_code)

    @staticmethod
    def build(architecture: str, arguments=None, trust_code: bool = False):
        """A new module of the named architecture (`models.py:ClassName`), imported only when trusted."""
        from fpgaprune.frontends.torch.files import build

        return build(architecture, arguments, trust_code)

    @staticmethod
    def save(model, path):
        from fpgaprune.frontends.torch.files import save_model

        return save_model(model, path)


_PROXIES = {"kernel": "weight_quant", "bias": "bias_quant"}


def _is_activation_quantizer(layer) -> bool:
    """A Brevitas activation layer (QuantReLU, QuantIdentity) with its quantizer on."""
    proxy = getattr(getattr(layer, "module", None), "act_quant", None)
    return proxy is not None and bool(getattr(proxy, "is_quant_enabled", False))


FRONT_END = TorchFrontEnd()
