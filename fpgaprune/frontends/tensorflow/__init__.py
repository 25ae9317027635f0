"""What the two Keras front ends share, both on TensorFlow: the hold as TensorFlow variables (`holds`), the
training hooks as a Keras callback (`callbacks`), a quiet start (`quiet`), and the contract's answers built on
them (`front_end.TensorFlowKeras`)."""
