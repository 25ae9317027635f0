"""The main job, end to end on real digits: pruning half of conv2 and retraining recovers the accuracy."""

import json

import fpgaprune as fp
from fpgaprune import demo


def test_demo_prunes_retrains_and_writes_outputs(tmp_path):
    result = demo.run(tmp_path / "demo", fraction=0.5, epochs=12)
    assert result["drift"] == 0
    assert result["dense"] > 0.9
    assert result["pruned + retrained"] > 0.9
    assert result["pruned + retrained"] >= result["pruned, no retraining"] - 0.01
    model = fp.load_model(tmp_path / "demo" / "pruned.keras")
    entry = fp.MaskManifest.load(tmp_path / "demo" / "masks.json").entries[0]
    kernel = model.get_layer("conv2").kernel.numpy()
    assert entry.where.sum() == kernel.size // 2 and (kernel[entry.where] == 0).all()
    assert json.loads((tmp_path / "demo" / "masks.json").read_text())["format"] == "fpgaprune.masks/1"
