"""fpgaprune's quantizer texts (QKeras' language: `quantized_bits(6,0,alpha=1)`): checked with Python's `ast`,
never evaluated, and read by each front end into its own library's quantizers (`frontends/qkeras/spec.py` builds
QKeras', `frontends/torch/quantizers.py` Brevitas')."""

import ast
import re

from fpgaprune.errors import QuantizationConfigError

QUANTIZERS = (
    "quantized_bits",
    "quantized_relu",
    "quantized_tanh",
    "quantized_sigmoid",
    "quantized_po2",
    "quantized_relu_po2",
    "quantized_ulaw",
    "ternary",
    "stochastic_ternary",
    "binary",
    "stochastic_binary",
    "bernoulli",
    "quantized_hard_tanh",
    "quantized_linear",
)
ROLES = ("kernel", "recurrent", "bias", "activation")
WEIGHT_ROLES = ("kernel", "depthwise", "pointwise", "recurrent")  # the roles whose pruned entries must stay 0
# A run's quantizers unless its config says otherwise (`quantization.default`)
DEFAULT_QUANTIZERS = {
    "kernel": "quantized_bits(6,0,alpha=1)",
    "bias": "quantized_bits(8,3,alpha=1)",
    "activation": "quantized_relu(6,2)",
}
_WIDTH = re.compile(r"^(\w+\()\s*(\d+)")  # the first argument of quantized_bits(6,0,...) / quantized_relu(6,2)


def check_quantizer_text(text, where: str) -> str:
    """`quantized_bits(6,0,alpha=1)`: a known quantizer called with literal arguments only; returns the text."""
    if not isinstance(text, str):
        raise QuantizationConfigError(f"{where}: expected a QKeras quantizer string, got {type(text).__name__}")
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise QuantizationConfigError(f"{where}: cannot parse quantizer {text!r} ({exc.msg})") from None
    call = node if isinstance(node, ast.Call) else None
    name_node = call.func if call else node
    name = name_node.id if isinstance(name_node, ast.Name) else None
    if name not in QUANTIZERS:
        raise QuantizationConfigError(f"{where}: {text!r} is not a QKeras quantizer; known: {', '.join(QUANTIZERS)}")
    for arg in (call.args + [k.value for k in call.keywords]) if call else ():
        if not _is_literal(arg):
            raise QuantizationConfigError(
                f"{where}: quantizer {text!r} may only take literal arguments, found {ast.unparse(arg)!r}"
            )
    return text.strip()


def _is_literal(node) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _is_literal(node.operand)
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool, type(None)))


def quantizer_call(text: str) -> tuple[str, list, dict]:
    """(name, positional arguments, keyword arguments) of a checked quantizer text."""
    node = ast.parse(text.strip(), mode="eval").body
    if not isinstance(node, ast.Call):
        return node.id, [], {}
    args = [ast.literal_eval(arg) for arg in node.args]
    return node.func.id, args, {k.arg: ast.literal_eval(k.value) for k in node.keywords}


def with_width(text: str, bits: int) -> str | None:
    """The quantizer `text` with its width (the first argument) set to `bits`; None when it has no width."""
    if not _WIDTH.match(text):
        return None
    return _WIDTH.sub(lambda m: f"{m[1]}{bits}", text, count=1)


class QuantizationSpec:
    """Quantizers by role (kernel, recurrent, bias, activation): a model-wide default, per-layer overrides."""

    def __init__(self, default: dict | None = None, layers: dict | None = None, origin: str = "quantization"):
        self.origin = origin
        self.default = self._checked(default or {}, f"{origin}.default")
        self.layers = {name: self._checked(roles, f"{origin}.layers.{name}") for name, roles in (layers or {}).items()}

    @classmethod
    def from_dict(cls, data: dict, origin: str = "quantization") -> "QuantizationSpec":
        if not isinstance(data, dict):
            raise QuantizationConfigError(f"{origin}: expected a mapping with 'default' and 'layers'")
        unknown = set(data) - {"default", "layers", "library", "hgq2"}  # the last two choose and set HGQ2
        if unknown:
            raise QuantizationConfigError(
                f"{origin}: unknown key(s) {sorted(unknown)}; allowed: default, layers, library, hgq2"
            )
        return cls(data.get("default"), data.get("layers"), origin)

    def _checked(self, roles, where: str) -> dict:
        if not isinstance(roles, dict):
            raise QuantizationConfigError(f"{where}: expected a mapping of {', '.join(ROLES)} to quantizers")
        for role, text in roles.items():
            if role not in ROLES:
                raise QuantizationConfigError(f"{where}: unknown role '{role}'; allowed: {', '.join(ROLES)}")
            if text is not None:
                check_quantizer_text(text, f"{where}.{role}")
        return dict(roles)

    def for_layer(self, name: str) -> dict:
        """The quantizer strings of one layer: its overrides on top of the default."""
        return {**self.default, **self.layers.get(name, {})}

    def check_layers(self, names) -> None:
        unknown = sorted(set(self.layers) - set(names))
        if unknown:
            raise QuantizationConfigError(f"{self.origin}.layers: no layer named {', '.join(map(repr, unknown))}")
