"""Front ends: the model frameworks and quantization libraries fpgaprune reads, one package each.

- `qkeras`: tf_keras (Keras 2) models and their QKeras twins: the front end that quantizes (QAT) and that
  hls4ml's Keras-2 converter takes.
- `keras3`: Keras 3 models (`import keras`, or `tf.keras` since TensorFlow 2.16): held and pruned as they are,
  quantized and exported through their tf_keras twin.

Each answers the contract of `base.FrontEnd`, and the registry (`fpgaprune/framework.py`) finds them; nothing
else in fpgaprune imports this package or names a framework. A third framework is one more package here (or a
package of its own, registered through the `fpgaprune.front_ends` entry point group).
"""
