"""Small example networks of the kind that go onto FPGAs (named layers): tf_keras models, or Keras 3 ones
(`keras=`, the module to build them with: an HGQ2 run's)."""

from fpgaprune.frontends.qkeras.keras2 import keras as tf_keras


def small_cnn(
    input_shape=(8, 8, 1),
    filters=(16, 32),
    classes: int = 10,
    batch_norm: bool = False,
    pool: bool = True,
    keras=tf_keras,
):
    """conv1 (3x3) -> ReLU -> conv2 (3x3) -> ReLU -> [max-pool] -> flatten -> fc. Layers named conv1, conv2, fc."""
    layers = [keras.Input(input_shape)]
    for i, count in enumerate(filters, start=1):
        layers.append(keras.layers.Conv2D(count, 3, use_bias=not batch_norm, name=f"conv{i}"))
        if batch_norm:
            layers.append(keras.layers.BatchNormalization(name=f"bn{i}"))
        layers.append(keras.layers.ReLU(name=f"relu{i}"))
    if pool:
        layers.append(keras.layers.MaxPooling2D(2, name="pool"))
    layers += [keras.layers.Flatten(name="flatten"), keras.layers.Dense(classes, name="fc")]
    return keras.Sequential(layers, name="small_cnn")


def original_question_cnn(input_shape=(8, 8, 1), classes: int = 10, keras=tf_keras):
    """The question's network: conv2 is a [3, 3, 32, 32] layer. conv1 (3x3, same) -> conv2 (3x3) -> pool -> fc."""
    L = keras.layers
    return keras.Sequential(
        [
            keras.Input(input_shape),
            L.Conv2D(32, 3, padding="same", name="conv1"),
            L.ReLU(name="relu1"),
            L.Conv2D(32, 3, name="conv2"),
            L.ReLU(name="relu2"),
            L.MaxPooling2D(2, name="pool"),
            L.Flatten(name="flatten"),
            L.Dense(classes, name="fc"),
        ],
        name="original_question_cnn",
    )
