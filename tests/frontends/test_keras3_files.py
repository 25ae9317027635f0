"""Keras 3 model files: told apart from tf_keras ones by their metadata, checked against Keras 3's allow-list
before anything is deserialized (dtype policies are data; `Lambda`, `__lambda__` and registered custom classes
are refused, without the trust hint), loaded in Keras 3, and saved so that plain Keras 3 loads them."""

import zipfile

import keras
import numpy as np
import pytest
import tf_keras

import fpgaprune as fp
from fpgaprune.model.files import keras_major


def _keras3_cnn():
    keras.utils.set_random_seed(0)
    return keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            keras.layers.Conv2D(4, 3, name="conv1"),
            keras.layers.Flatten(name="flatten"),
            keras.layers.Dense(3, name="fc"),
        ]
    )


def _tf_keras_cnn():
    return tf_keras.Sequential(
        [
            tf_keras.Input((8, 8, 1)),
            tf_keras.layers.Conv2D(4, 3, name="conv1"),
            tf_keras.layers.Flatten(name="flatten"),
            tf_keras.layers.Dense(3, name="fc"),
        ]
    )


@pytest.mark.parametrize("suffix", [".keras", ".h5"])
def test_the_file_says_which_keras_wrote_it(tmp_path, suffix):
    _keras3_cnn().save(tmp_path / f"k3{suffix}")
    _tf_keras_cnn().save(tmp_path / f"k2{suffix}")
    assert keras_major(tmp_path / f"k3{suffix}") == 3
    assert keras_major(tmp_path / f"k2{suffix}") == 2
    assert isinstance(fp.load_model(tmp_path / f"k3{suffix}"), keras.Model)
    assert isinstance(fp.load_model(tmp_path / f"k2{suffix}"), tf_keras.Model)


def test_a_keras3_cnn_with_dtype_policies_loads_with_its_weights(tmp_path):
    model = _keras3_cnn()
    model.save(tmp_path / "model.keras")
    loaded = fp.load_model(tmp_path / "model.keras")
    for ours, theirs in zip(loaded.get_weights(), model.get_weights()):
        assert np.array_equal(ours, theirs)


def _writes(path):
    namespace = {}
    exec(f"def side_effect(t):\n    open({str(path)!r}, 'w').write('ran')\n    return t", namespace)  # noqa: S102
    return namespace["side_effect"]


@pytest.mark.parametrize("trust_code", [False, True])
def test_a_keras3_lambda_is_refused_without_the_trust_hint_and_does_not_run(tmp_path, trust_code):
    marker = tmp_path / "ran.txt"
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Lambda(_writes(marker), name="payload"), keras.layers.Dense(2)]
    )
    model.save(tmp_path / "model.keras")
    marker.unlink(missing_ok=True)
    with pytest.raises(fp.ModelFileError) as caught:
        fp.load_model(tmp_path / "model.keras", trust_code=trust_code)
    message = str(caught.value)
    assert "'payload'" in message and "Lambda" in message and "\n" not in message
    assert "trust" not in message
    assert not marker.exists()


def test_a_registered_custom_class_is_refused_by_its_registered_name(tmp_path):
    @keras.saving.register_keras_serializable(package="mine")
    class ScaledDense(keras.layers.Dense):
        pass

    model = keras.Sequential([keras.Input((4,)), ScaledDense(2, name="custom")])
    model.save(tmp_path / "model.keras")
    with pytest.raises(fp.ModelFileError, match=r"layer 'custom' names module 'test_keras3_files'") as caught:
        fp.load_model(tmp_path / "model.keras")
    assert "trust" not in str(caught.value)
    # Keras 3 resolves `registered_name` before `module`: a file that names Keras' module is still refused
    _edit_config(
        tmp_path / "model.keras", lambda text: text.replace('"module": "test_keras3_files"', '"module": "keras.layers"')
    )
    with pytest.raises(fp.ModelFileError, match=r"'custom'.*mine>ScaledDense") as caught:
        fp.load_model(tmp_path / "model.keras")
    assert "trust" not in str(caught.value)


def _edit_config(path, edit):
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    members["config.json"] = edit(members["config.json"].decode()).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def test_a_held_keras3_model_round_trips_with_its_holds(tmp_path):
    held = fp.prune(_keras3_cnn(), selections=["conv1[:, :, 0, 1]", "fc[:5, 0]"])
    fp.save_model(held, tmp_path / "held.keras")
    loaded = fp.load_model(tmp_path / "held.keras")
    assert fp.manifest_of(loaded).to_json() == fp.manifest_of(held).to_json()
    loaded.compile(keras.optimizers.Adam(0.1, use_ema=True), "mse")
    loaded.fit(np.ones((8, 8, 8, 1)), np.ones((8, 3)), epochs=2, verbose=0)
    assert not loaded.get_layer("conv1").kernel.numpy()[:, :, 0, 1].any()
    assert not loaded.get_layer("fc").kernel.numpy()[:5, 0].any()


def test_a_finalized_keras3_model_loads_in_plain_keras_with_its_zeros(tmp_path):
    held = fp.prune(_keras3_cnn(), selections=["conv1[:, :, 0, 1]"])
    held.compile("adam", "mse")
    held.fit(np.ones((8, 8, 8, 1)), np.ones((8, 3)), epochs=1, verbose=0)
    plain, manifest = fp.finalize(held)
    fp.save_model(plain, tmp_path / "pruned.keras")
    loaded = keras.saving.load_model(tmp_path / "pruned.keras")  # Keras' own loader, safe mode, no custom objects
    assert all(w.constraint is None for w in loaded.weights)
    assert not loaded.get_layer("conv1").kernel.numpy()[:, :, 0, 1].any()
    assert len(manifest) == 1


def test_a_keras3_file_with_a_layer_hls4ml_cannot_take_is_one_line_from_validate(tmp_path, capsys):
    """`fpgaprune validate` names the layer and why, and never the trust hint."""
    import yaml

    from fpgaprune.cli import entry

    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            keras.layers.Conv2D(4, 3, name="conv1"),
            keras.layers.AdaptiveAveragePooling2D((2, 2), name="adaptive"),
            keras.layers.Flatten(name="flatten"),
            keras.layers.Dense(10, name="fc"),
        ]
    )
    model.save(tmp_path / "model.keras")
    config = {"model": {"file": str(tmp_path / "model.keras")}, "outputs": {"dir": str(tmp_path / "run")}}
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(config))
    code, err = entry(["validate", str(tmp_path / "run.yaml")]), capsys.readouterr().err
    assert code == 2
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "'adaptive'" in errors[0] and "AdaptiveAveragePooling2D" in errors[0], err
    assert "trust" not in err


def test_a_keras3_lora_layer_is_one_line():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, name="fc")])
    model.get_layer("fc").enable_lora(2)
    with pytest.raises(fp.ModelTypeError, match=r"layer 'fc' \(Dense\) has LoRA enabled \(lora_rank=2\)") as caught:
        fp.hold(model, prune=["fc[0, 0]"])
    assert "\n" not in str(caught.value)
