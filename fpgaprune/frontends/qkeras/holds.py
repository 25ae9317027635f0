"""The hold as a tf_keras constraint (`masking.hold_constraint.HoldLogic`), saved with the model's config."""

from fpgaprune.frontends.qkeras.keras2 import keras, qkeras_objects
from fpgaprune.frontends.tensorflow.holds import TensorFlowHold


@keras.saving.register_keras_serializable(package="fpgaprune")
class HoldConstraint(TensorFlowHold, keras.constraints.Constraint):
    """Keeps the held entries of one tf_keras or QKeras variable at their targets, after its own constraint."""

    def deserialize_inner(self, config: dict):
        return keras.constraints.deserialize(config, custom_objects=qkeras_objects())

    def serialize_inner(self):
        return None if self.inner is None else keras.constraints.serialize(self.inner)
