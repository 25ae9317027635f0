"""Holds travel with the model: .keras and .h5 round-trips keep them working; manifests re-apply exactly."""

import json

import numpy as np
import pytest
from models import LOSS, OPTIMIZERS, build

import fpgaprune as fp
from fpgaprune.tfk import keras


def held_and_trained(kind="Conv2D"):
    model, x, y = build(kind)
    rng = np.random.default_rng(7)
    where = rng.random((3, 3, 2, 4)) < 0.4 if kind == "Conv2D" else None
    manifest = fp.MaskManifest().prune("layer[:, :, 1, 2]").freeze("head[0, :]", value=0.25)
    if where is not None:
        manifest.prune("layer/kernel", where=where)
    held = fp.hold(model, manifest)
    held.compile(OPTIMIZERS["AdamW"](), LOSS)
    held.fit(x, y, epochs=1, verbose=0)
    return held, x, y


def held_values(model):
    return {
        (entry.layer, entry.variable): model.get_layer(entry.layer).kernel.numpy()[
            entry.mask(model.get_layer(entry.layer).kernel.shape)
        ]
        for entry in fp.manifest_of(model)
    }


@pytest.mark.parametrize("suffix", [".keras", ".h5"])
@pytest.mark.parametrize("kind", ["Conv2D", "QConv2D"])
def test_save_load_keeps_holds_in_further_training(tmp_path, suffix, kind):
    held, x, y = held_and_trained(kind)
    path = fp.save_model(held, tmp_path / f"model{suffix}")
    loaded = fp.load_model(path)
    assert json.dumps(fp.manifest_of(loaded).to_json()) == json.dumps(fp.manifest_of(held).to_json())
    before = loaded.get_weights()
    loaded.fit(x, y, epochs=2, verbose=0)  # the optimizer state was saved with the model
    assert any(np.count_nonzero(a != b) for a, b in zip(before, loaded.get_weights()))
    kernel = loaded.get_layer("layer").kernel.numpy()
    assert np.count_nonzero(kernel[:, :, 1, 2]) == 0
    np.testing.assert_array_equal(loaded.get_layer("head").kernel.numpy()[0], np.float32(0.25))
    assert [type(layer) for layer in loaded.layers] == [type(layer) for layer in held.layers]


def test_h5_keeps_a_large_mask(tmp_path):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((256,)), keras.layers.Dense(256, name="fc")])
    where = np.random.default_rng(0).random((256, 256)) < 0.5
    held = fp.hold(model, fp.MaskManifest().prune("fc", where=where))
    loaded = fp.load_model(fp.save_model(held, tmp_path / "big.h5"))
    np.testing.assert_array_equal(fp.manifest_of(loaded).entries[0].where, where)


def test_manifest_round_trip_reapplies_to_a_fresh_architecture(tmp_path):
    held, _, _ = held_and_trained()
    targets = held.get_layer("layer").kernel.constraint.compiled((3, 3, 2, 4))
    path = fp.manifest_of(held).save(tmp_path / "masks.json")
    fresh, _, _ = build("Conv2D", seed=99)  # same architecture, other weights
    reheld = fp.hold(fresh, fp.MaskManifest.load(path))
    mask, target = targets
    kernel = reheld.get_layer("layer").kernel.numpy()
    np.testing.assert_array_equal(kernel[mask].view(np.uint32), target[mask].view(np.uint32))
    np.testing.assert_array_equal(reheld.get_layer("head").kernel.numpy()[0], np.float32(0.25))
    assert fp.MaskManifest.load(path).to_json() == fp.manifest_of(reheld).to_json()


def test_freeze_at_current_value_is_stored_exactly(tmp_path):
    model, _, _ = build("Dense")
    held = fp.hold(model, freeze=["layer[1:3, :]"])
    entry = fp.MaskManifest.load(fp.manifest_of(held).save(tmp_path / "m.json")).entries[0]
    original = model.get_layer("layer").kernel.numpy()[1:3, :].ravel()
    np.testing.assert_array_equal(np.asarray(entry.value, np.float32).view(np.uint32), original.view(np.uint32))


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "not valid JSON (line 1"),
        ('{"entries": 3}', "expected an object with an 'entries' list"),
        ('{"entries": [{"layer": "fc"}]}', "entry 0: missing key 'mode'"),
        ('{"entries": [{"layer": "fc", "mode": "zap"}]}', "entry 0: mode 'zap' is not one of"),
        ('{"entries": [{"layer": "fc", "mode": "freeze"}]}', "entry 0: a freeze entry needs a 'value'"),
        ('{"entries": [{"layer": "fc", "mode": "prune", "idx": "[0]"}]}', "entry 0: unknown key(s) ['idx']"),
        ('{"entries": [{"layer": "fc", "mode": "prune", "index": "[0"}]}', "is malformed"),
    ],
)
def test_bad_manifests_name_the_file_and_entry(tmp_path, content, message):
    path = tmp_path / "masks.json"
    path.write_text(content)
    with pytest.raises(fp.FpgapruneError) as info:
        fp.MaskManifest.load(path)
    assert message in str(info.value) and "\n" not in str(info.value)
    assert str(path) in str(info.value) or "selection" in str(info.value)


def test_missing_files_are_named(tmp_path):
    with pytest.raises(fp.ManifestError, match="no such mask manifest"):
        fp.MaskManifest.load(tmp_path / "nope.json")
    with pytest.raises(fp.FpgapruneError, match="no such model file"):
        fp.load_model(tmp_path / "nope.keras")
    with pytest.raises(fp.FpgapruneError, match="must end in .keras or .h5"):
        fp.save_model(build("Dense")[0], tmp_path / "model.pb")
    (tmp_path / "model.bin").write_bytes(b"weights")
    with pytest.raises(fp.FpgapruneError, match=r"end in .keras or .h5 \(Keras\), or .pt or .pth \(a PyTorch state"):
        fp.load_model(tmp_path / "model.bin")  # every format read is named, the state dicts of model.module too
