"""The hold as a Keras 3 constraint (`masking.hold_constraint.HoldLogic`), saved with the model's config.

Keras 3's optimizers apply a variable's constraint after every update (weight decay, then the update, then the
constraint), like tf_keras'. The mask and target are TensorFlow variables: holds need Keras 3's TensorFlow
backend (`frontends/keras3/front_end.py` checks it).
"""

import keras

from fpgaprune.frontends.tensorflow.holds import TensorFlowHold


@keras.saving.register_keras_serializable(package="fpgaprune")
class HoldConstraint(TensorFlowHold, keras.constraints.Constraint):
    """Keeps the held entries of one Keras 3 variable at their targets, after its own constraint."""

    def deserialize_inner(self, config: dict):
        return keras.constraints.deserialize(config)

    def serialize_inner(self):
        return None if self.inner is None else keras.constraints.serialize(self.inner)
