"""The exact zeros a model comes in with (pruned elsewhere: tfmot, `torch.nn.utils.prune`, a paper's "70% pruned,
retrained" model), held at 0 as pruned entries, so that fine-tuning cannot train them back.

What counts, decided here:
- the weights that make products (kernels, depthwise, pointwise, recurrent kernels); biases are left free: a
  bias costs no multiplier, and a zero bias is often only its initializer's value;
- the float weights as the model stores them (a QKeras model's too): a weight that its quantizer rounds to 0 is
  free to move in training, and the export drops it anyway while it quantizes to 0;
- a weight whose zeros are under `MIN_SHARE` of its entries is left free: such zeros are chance (a trained
  float32 weight is exactly 0 almost never), not a decision;
- a weight whose quantizer maps 0 elsewhere (binary, quantized_po2) is left free: a held zero would not stay
  0 after quantization (`check_quantizers_keep_zero`).
Variables that already carry holds (a model fpgaprune saved) keep theirs. Whole channels that end up zero are
pruned channels like any other: `pruning.strip` removes them where it is safe. A kernel of a layer fpgaprune
cannot hold (a kind it does not know, such as QKeras' QDepthwiseConv2DBatchnorm) is named with its zeros, never
passed over: fine-tuning may train them back.
"""

from dataclasses import dataclass, field

from fpgaprune.masking.hold import maskable_records
from fpgaprune.masking.manifest import PRUNE, HoldEntry, MaskManifest
from fpgaprune.record import resolved
from fpgaprune.selection import maskable_weights

MIN_SHARE = 0.05  # of a weight's entries: fewer exact zeros than this are chance, and stay free


@dataclass
class InputZeros:
    """The zeros found: per held weight (zeros, entries), and per weight left free, why."""

    held: dict = field(default_factory=dict)  # (layer, weight) -> (zeros, entries)
    left: dict = field(default_factory=dict)  # (layer, weight) -> why its zeros stay free
    unheld: dict = field(default_factory=dict)  # (layer, weight) -> the line naming zeros no hold can keep

    def line(self) -> str:
        """One console line: how many zeros were found and held, in which weights, and what stayed free."""
        if not self.held and not self.left:
            return ""
        total = sum(zeros for zeros, _ in self.held.values())
        shares = ", ".join(f"{'/'.join(key)} {zeros / entries:.0%}" for key, (zeros, entries) in self.held.items())
        held = f"{total} exact zeros held at 0 as pruned ({shares})" if self.held else "no exact zeros held"
        free = "; ".join(f"{'/'.join(key)} ({why})" for key, why in self.left.items())
        return (
            f"the model's own zeros: {held}{'; left free: ' + free if free else ''}; pruning.keep_input_zeros: "
            "false releases them"
        )

    def to_json(self) -> dict:
        return {
            "held": {"/".join(key): list(counts) for key, counts in self.held.items()},
            "left": {"/".join(key): why for key, why in self.left.items()},
        }


def input_zeros(model, min_share: float = MIN_SHARE) -> tuple[MaskManifest, InputZeros]:
    """(the holds that keep the exact zeros of `model` (or a bound model's, `record.resolved`) at 0, what was
    found) by the rules of this module."""
    record = resolved(model).record
    found, entries = InputZeros(), []
    for key, line in unheld_zeros(record, min_share).items():
        found.unheld[key] = found.left[key] = line
    for layer, weight in maskable_records(record):
        if weight.role == "bias" or weight.held is not None:
            continue
        zero = weight.values == 0
        key, count = (layer.name, weight.name), int(zero.sum())
        if count == 0:
            continue
        if count < min_share * zero.size:
            found.left[key] = f"{count} zeros, {count / zero.size:.1%}: under {min_share:.0%}, by chance"
        elif weight.zero != 0.0:
            found.left[key] = f"its quantizer {weight.quantizer} maps 0 to {weight.zero:g}"
        else:
            found.held[key] = (count, int(zero.size))
            entries.append(HoldEntry(layer.name, weight.name, PRUNE, where=zero))
    return MaskManifest(entries), found


def unheld_zeros(record, min_share: float = MIN_SHARE) -> dict:
    """{(layer, weight): one line} for each kernel of a layer no hold can mask that holds exact zeros (at least
    `min_share` of its entries), from the model's record."""
    found = {}
    for layer in record.layers.values():
        if maskable_weights(layer) is not None:
            continue
        for name in (name for name in layer.weights if "kernel" in name):
            zero = layer.weights[name].values == 0
            if not (zero.size and zero.sum() >= min_share * zero.size):
                continue
            found[(layer.name, name)] = (
                f"{layer.class_name}, which fpgaprune cannot hold: {int(zero.sum())} exact zeros "
                f"({zero.mean():.0%}) that fine-tuning may train back"
            )
    return found
