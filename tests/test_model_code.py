"""Loading a model file never runs code from it: Lambda functions, Lambda output shapes and Lambdas inside a
nested sub-model, in .h5 and .keras, are refused before anything is deserialized. The opt-in runs them."""

import pytest

import fpgaprune as fp
from fpgaprune.tfk import keras

MARKER_CODE = "open({path!r}, 'w').write('ran')"


def _writes(path):
    """A function whose bytecode (marshalled into the model file) writes `path` when called."""
    namespace = {}
    exec(f"def side_effect(t):\n    {MARKER_CODE.format(path=str(path))}\n    return t", namespace)  # noqa: S102
    return namespace["side_effect"]


def _shape_writes(path):
    namespace = {}
    exec(f"def shape(s):\n    {MARKER_CODE.format(path=str(path))}\n    return s", namespace)  # noqa: S102
    return namespace["shape"]


def _lambda_function(marker):
    return keras.Sequential(
        [keras.Input((4,)), keras.layers.Lambda(_writes(marker), name="payload"), keras.layers.Dense(2)]
    )


def _lambda_output_shape(marker):
    return keras.Sequential(
        [
            keras.Input((4,)),
            keras.layers.Lambda(lambda t: t, output_shape=_shape_writes(marker), name="payload"),
            keras.layers.Dense(2),
        ]
    )


def _nested(marker):
    inner = keras.Sequential([keras.Input((4,)), keras.layers.Lambda(_writes(marker), name="payload")], name="inner")
    inputs = keras.Input((4,))
    return keras.Model(inputs, keras.layers.Dense(2)(inner(inputs)))


BUILDERS = {"function": _lambda_function, "output_shape": _lambda_output_shape, "nested": _nested}


@pytest.mark.parametrize("suffix", [".h5", ".keras"])
@pytest.mark.parametrize("kind", list(BUILDERS))
def test_code_in_a_model_file_does_not_run(tmp_path, kind, suffix):
    marker = tmp_path / "ran.txt"
    path = tmp_path / f"model{suffix}"
    BUILDERS[kind](marker).save(path)
    marker.unlink(missing_ok=True)  # building and saving may have called the function
    with pytest.raises(fp.ModelFileError, match=r"layer 'payload' is a Lambda.*refused"):
        fp.load_model(path)
    assert not marker.exists()


@pytest.mark.parametrize("suffix", [".h5", ".keras"])
def test_the_opt_in_runs_it(tmp_path, suffix):
    """The positive control: loading the same files runs their code when the user trusts them."""
    for kind in ("function", "nested"):
        marker = tmp_path / f"{kind}.txt"
        path = tmp_path / f"{kind}{suffix}"
        BUILDERS[kind](marker).save(path)
        marker.unlink(missing_ok=True)
        fp.load_model(path, trust_code=True)
        assert marker.exists(), kind
