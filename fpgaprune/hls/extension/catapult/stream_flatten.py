"""A transpose before a Flatten into a Dense, folded into the Dense's weights in Catapult's io_stream too.

hls4ml's channels-last conversion puts a Transpose before the Flatten of a channels-first model (PyTorch's
Conv -> Flatten -> Linear). `remove_transpose_before_flatten` folds it into the Dense's weights in io_parallel
only; Catapult has no streaming transpose (its `transpose_3d` takes arrays), so such a model did not compile in
io_stream. The fold is the same permutation of the weights whatever the io type: the stream of channels-last
pixels, flattened in place, meets the Dense's rows in the order they were permuted to.
"""

from hls4ml.model.layers import Dense, Reshape, Transpose
from hls4ml.model.optimizer.passes.convert_to_channels_last import RemoveTransposeBeforeFlatten

PASS_NAME = "fpgaprune_catapult_stream_transpose_before_flatten"
AFTER = "remove_transpose_before_flatten"


class StreamTransposeBeforeFlatten(RemoveTransposeBeforeFlatten):
    """hls4ml's fold of Transpose -> Flatten -> Dense, for Catapult projects in io_stream."""

    def match(self, node):
        config = node.model.config
        if config.backend.name != "Catapult" or config.get_config_value("IOType") != "io_stream":
            return False
        if getattr(node, "_channels_last_keep_transpose", False) or not isinstance(node, Reshape):
            return False
        outputs = node.get_output_nodes()
        return (
            len(node.get_attr("target_shape")) == 1
            and isinstance(node.get_input_node(), Transpose)
            and len(outputs) == 1
            and isinstance(outputs[0], Dense)
        )
