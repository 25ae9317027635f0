"""What the two Keras front ends share, both on TensorFlow: the hold as TensorFlow variables (`holds`), the
training hooks as a Keras callback (`callbacks`), and a quiet start (`quiet`)."""
