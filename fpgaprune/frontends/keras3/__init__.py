"""The Keras 3 front end: models built with `import keras` (or with `tf.keras` since TensorFlow 2.16), held and
pruned as they are, on Keras 3's TensorFlow backend. QAT and hls4ml's export run on their tf_keras twin (same
layer names, weights copied exactly), which the quantizing front end (`frontends/qkeras`) takes. Its modules:
`layers` (the classes of each kind), `holds` (the hold as a Keras 3 constraint), `files` (reading a Keras 3
model file safely), `twin` (the tf_keras twin), `front_end` (the protocol object). This package reads Keras 3's
names; nothing else in fpgaprune does."""
