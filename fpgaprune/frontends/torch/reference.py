"""The reference forward of a module for C-sim's layer diff and the numerical profile: every layer's output in
one forward pass (forward hooks), in hls4ml's channels-last layout (`(n, c, h, w)` -> `(n, h, w, c)`), as the
shipped code traces it; and the input of each activation quantizer.

The module is computed exactly: a float64 copy (`.double()`: Brevitas' quantizers then compute in float64 too, with
no cast to float32), so that a sum of products of up to 53 bits is exact, as hls4ml's accumulator is; in float32
such a sum rounds past 24 bits, and a quantizer after it may round the other way."""

import copy

import numpy as np
import torch

from fpgaprune.frontends.torch.layers import layer_views
from fpgaprune.frontends.torch.training import input_tensor
from fpgaprune.quantize.layer_values import LayerValues


def channels_last(values: np.ndarray) -> np.ndarray:
    """A PyTorch activation `(n, c, ...)` in hls4ml's layout `(n, ..., c)`."""
    return np.moveaxis(values, 1, -1) if values.ndim >= 3 else values


class ModuleProbe:
    """`probe(x)`: the LayerValues of a module for inputs `x` (in its own layout, NCHW)."""

    def __init__(self, model, batch_size: int = 512, quantizing=lambda view: False):
        quantizing_names = {view.name for view in layer_views(model) if quantizing(view)}
        self.model, self.batch_size = copy.deepcopy(model).double(), batch_size
        self.views = layer_views(self.model)
        self.quantizing = quantizing_names

    def __call__(self, x) -> LayerValues:
        outputs, inputs, finals = {}, {}, []
        handles = [view.module.register_forward_hook(self._hook(view.name, outputs, inputs)) for view in self.views]
        self.model.eval()
        try:
            with torch.no_grad():
                x = input_tensor(x).double()
                for start in range(0, len(x), self.batch_size):
                    finals.append(self.model(x[start : start + self.batch_size]).cpu().numpy())
        finally:
            for handle in handles:
                handle.remove()
        joined = {name: channels_last(np.concatenate(parts)) for name, parts in outputs.items()}
        quantizer_inputs = {name: channels_last(np.concatenate(parts)) for name, parts in inputs.items()}
        return LayerValues(channels_last(np.concatenate(finals)), joined, {}, quantizer_inputs)

    def _hook(self, name: str, outputs: dict, inputs: dict):
        def keep(module, args, output):
            if isinstance(output, torch.Tensor):
                outputs.setdefault(name, []).append(output.detach().cpu().numpy())
            if name in self.quantizing and args and isinstance(args[0], torch.Tensor):
                inputs.setdefault(name, []).append(args[0].detach().cpu().numpy())

        return keep
