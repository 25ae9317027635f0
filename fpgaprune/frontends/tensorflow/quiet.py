"""TensorFlow's noisy first calls and its loggers, for the CLI's quiet console (`fpgaprune/support/quiet.py`)."""

import logging


def quiet_start() -> None:
    """Make the calls that print while stderr is redirected: the CUDA probe and the first op's set-up."""
    import tensorflow as tf

    tf.config.list_physical_devices()  # the CUDA probe ("failed call to cuInit") runs here
    tf.constant(0.0) + 1.0  # and the first op's device set-up


def quiet_logs() -> None:
    import tensorflow as tf

    tf.get_logger().setLevel(logging.ERROR)
    tf.autograph.set_verbosity(0)
    logging.getLogger("tensorflow").setLevel(logging.ERROR)
