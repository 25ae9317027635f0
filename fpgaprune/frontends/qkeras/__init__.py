"""The tf_keras + QKeras front end: tf_keras (Keras 2) models, their QKeras twins for QAT, and the Keras-2 model
files. Its modules, in the data path's order: `layers` (the classes of each kind), `files` (reading a model file
safely), `spec` (quantizer strings), `quantizers` (what a QKeras quantizer holds), `alpha` (per-channel scales),
`convert` (the QKeras twin), `front_end` (the protocol object). This package reads QKeras' names; nothing else
in fpgaprune does."""
