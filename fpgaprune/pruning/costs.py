"""What a weight costs in hardware: one multiplier per output position that uses it."""

import numpy as np


def output_positions(layer) -> int:
    """How many times each weight is used per inference: the output's spatial size (1 for a Dense on vectors),
    from a layer's record (its `output_shape`, batch first)."""
    shape = tuple(layer.output_shape)
    return int(np.prod(shape[1:-1])) if len(shape) > 2 else 1
