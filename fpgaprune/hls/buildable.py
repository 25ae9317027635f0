"""What hls4ml 1.3 cannot build from a model, read off its IR before anything is built: the preconditions its C++
headers `assert` (active in every g++ C-simulation: no build script defines NDEBUG, and a failed one aborts the
process), and what it computes wrongly with no assert. One line per layer, naming the header and the way out.

`fpgaprune validate` runs it on the starting model's IR at the run's preset (before any training), the export on
the quantized model's (where the types are known). What each rule guards, measured with hls4ml 1.3.0 and g++:
- io_stream pooling takes no padding, and 2-D windows that tile the input (pool = stride);
- max pooling fills its padding with its input type's top bit: the lowest value of a signed type, but the
  highest of an unsigned one (after a ReLU), so the border outputs are wrong, in io_parallel too;
- depthwise convolutions take a depth multiplier of 1, and no Resource strategy;
- io_stream softmax takes the last axis only (`axis=-1`), io_stream upsampling integer factors only;
- the encoded (not line-buffer) implementation takes square kernels, and Vitis none at all for pooling.
"""

from dataclasses import dataclass

_POOLING = ("Pooling1D", "Pooling2D")
_DEPTHWISE = ("DepthwiseConv1D", "DepthwiseConv2D", "SeparableConv1D", "SeparableConv2D")
_PADS = ("pad_top", "pad_bottom", "pad_left", "pad_right")
_STREAM_WAY = "an io_parallel preset (latency_parallel or resource_parallel)"


@dataclass(frozen=True)
class Node:
    """One IR node as the rules read it: its hls4ml class, attributes, and whether its input is unsigned."""

    name: str
    kind: str  # hls4ml's node class: Pooling2D, DepthwiseConv2D, Softmax, ...
    attributes: dict
    unsigned_input: bool

    def get(self, key, default=None):
        return self.attributes.get(key, default)


def ir_nodes(hls_model) -> list:
    """The nodes of an hls4ml ModelGraph, as the rules read them. A node's input is unsigned where its type says
    so, or (before quantization, at validate) where a ReLU gives it."""
    nodes = []
    for node in hls_model.get_layers():
        source = node.get_input_node() if node.inputs else None
        precision = getattr(getattr(node.get_input_variable(), "type", None), "precision", None) if source else None
        relu = source is not None and str(source.get_attr("activation", "")).lower() in ("relu", "quantized_relu")
        unsigned = relu or (precision is not None and getattr(precision, "signed", True) is False)
        attributes = {key: node.get_attr(key) for key in node.attributes.keys()}
        nodes.append(Node(node.name, _base_kind(node), attributes, unsigned))
    return nodes


def _base_kind(node) -> str:
    """hls4ml's own class of the node (a backend's subclass, VivadoPooling2D, read as Pooling2D)."""
    from hls4ml.model import layers

    for cls in type(node).__mro__:
        if cls.__module__ == layers.__name__:
            return cls.__name__
    return type(node).__name__


def build_problems(nodes: list, io_type: str, backend: str = "Vivado", names: dict | None = None) -> list:
    """One line per node that hls4ml 1.3 cannot build or computes wrongly (`names`: {node: the user's layer})."""
    stream, found = io_type == "io_stream", []
    for node in nodes:
        for rule in _RULES:
            problem = rule(node, stream, backend)
            if problem:
                found.append(f"layer '{(names or {}).get(node.name, node.name)}': {problem}")
                break
    return found


def _padding(node) -> tuple:
    return tuple(int(node.get(key, 0) or 0) for key in _PADS)


def _stream_pooling_padding(node, stream, backend):
    if node.kind not in _POOLING or not stream or not any(_padding(node)):
        return None
    return (
        f"hls4ml's io_stream pooling takes no padding (nnet_pooling_stream.h asserts pad == 0; top, bottom, left, "
        f"right here: {', '.join(map(str, _padding(node)))}); use {_STREAM_WAY}, or no padding (padding=0, "
        "'valid', or an input size the stride divides)"
    )


def _stream_pooling_windows(node, stream, backend):
    if node.kind != "Pooling2D" or not stream:
        return None
    pool = (node.get("pool_height"), node.get("pool_width"))
    strides = (node.get("stride_height"), node.get("stride_width"))
    if pool == strides:
        return None
    return (
        f"hls4ml's io_stream 2-D pooling takes windows that tile the input (nnet_pooling_stream.h asserts pool == "
        f"stride; pool {pool}, stride {strides} here); use {_STREAM_WAY}, or strides equal to the pool size"
    )


def _padded_max_pooling(node, stream, backend):
    if node.kind not in _POOLING or "Max" not in str(node.get("pool_op", node.get("class_name", ""))):
        return None
    if not any(_padding(node)) or not node.unsigned_input:
        return None
    return (
        "hls4ml 1.3 fills a max pooling's padding with its input type's top bit (nnet_pooling.h pad_val), which "
        "for an unsigned input (after a ReLU) is its largest value, not its lowest: the border outputs would be "
        "wrong; use no padding (padding=0, 'valid', or an input size the stride divides), or pool before the ReLU"
    )


def _depth_multiplier(node, stream, backend):
    if node.kind not in _DEPTHWISE:
        return None
    multiplier = node.get("depth_multiplier") or 1
    if node.kind.startswith("Depthwise") and node.get("n_filt") and node.get("n_chan"):
        multiplier = max(multiplier, node.get("n_filt") // node.get("n_chan"))
    if multiplier == 1:
        return None
    return (
        f"hls4ml 1.3's depthwise convolution takes a depth multiplier of 1 only (nnet_sepconv2d_latency.h and "
        f"nnet_sepconv2d_stream.h assert it; Vitis computes it wrongly); {multiplier} here: use depth_multiplier=1, "
        "and a 1x1 Conv after it for more channels"
    )


def _depthwise_resource(node, stream, backend):
    if node.kind not in _DEPTHWISE or str(node.get("strategy", "")).lower() not in ("resource", "resource_unrolled"):
        return None
    if stream and backend.lower() != "catapult":
        return None
    return (
        "hls4ml 1.3 has no Resource strategy for depthwise convolutions (nnet_sepconv2d.h asserts it); use a "
        "Latency preset, or Strategy: Latency for this layer (hls.config LayerName)"
    )


def _stream_softmax_axis(node, stream, backend):
    axis = node.get("axis", -1)
    if node.kind != "Softmax" or not stream or axis in (-1, None):
        return None
    return (
        f"hls4ml's io_stream softmax takes axis=-1 only (nnet_activation_stream.h asserts it; axis={axis} here, "
        "even where that is the last axis); write Softmax(axis=-1), or use " + _STREAM_WAY
    )


def _stream_upsampling(node, stream, backend):
    if node.kind != "Resize" or not stream:
        return None
    sizes = [(node.get(f"out_{d}"), node.get(f"in_{d}")) for d in ("height", "width")]
    if all(new is None or old in (None, 0) or new % old == 0 for new, old in sizes):
        return None
    return (
        "hls4ml's io_stream upsampling takes integer factors only (nnet_image_stream.h asserts it); use an integer "
        "scale factor, or " + _STREAM_WAY
    )


def _encoded(node, stream, backend):
    if not stream or str(node.get("implementation", "")).lower() != "encoded":
        return None
    if node.kind in _POOLING and backend.lower() == "vitis":
        return (
            "Vitis HLS takes the line-buffer pooling only (nnet_pooling_stream.h asserts it); set its "
            "ConvImplementation to LineBuffer (hls.config)"
        )
    square = node.get("filt_height", node.get("pool_height", 1)) == node.get("filt_width", node.get("pool_width", 1))
    if node.kind in (*_POOLING, "Conv2D", "DepthwiseConv2D") and not square:
        return (
            "hls4ml's encoded convolution takes square kernels only (nnet_conv2d_stream.h asserts it); set its "
            "ConvImplementation to LineBuffer (hls.config)"
        )
    return None


_RULES = (
    _stream_pooling_padding,
    _stream_pooling_windows,
    _padded_max_pooling,
    _depth_multiplier,
    _depthwise_resource,
    _stream_softmax_axis,
    _stream_upsampling,
    _encoded,
)
