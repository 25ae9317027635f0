"""HGQ2's layer classes, bound to fpgaprune's layer kinds (`layer_kinds.py`)."""

import hgq.layers as q

from fpgaprune.model.layer_kinds import bind

# Conv1D, Conv2D and Dense are held, pruned and exported kernel-sparse; Conv3D and EinsumDense held and pruned
CLASSES = {
    "Conv1D": q.QConv1D,
    "Conv2D": q.QConv2D,
    "Dense": q.QDense,
    "Conv3D": q.QConv3D,
    "EinsumDense": q.QEinsumDense,
}
# HGQ2 layers with weights that fpgaprune does not hold, prune or export kernel-sparse
OTHER_LAYERS = (q.QConvT1D, q.QConvT2D, q.QEinsumDenseBatchnorm, q.QBatchNormDense)

for _kind, _class in CLASSES.items():
    bind(_kind, _class)
bind(None, *OTHER_LAYERS)
