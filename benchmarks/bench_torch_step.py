"""PyTorch: per-step training time of a CNN with 30% of its conv kernels held at zero, four ways, side by side (P1).

Variants: no masks; fpgaprune holds (a parametrization: `where(mask, 0, original)` at each forward);
`torch.nn.utils.prune.custom_from_mask` (a forward pre-hook: `weight = weight_orig * mask`); and the hand-written
`weight.mul_(mask)` after every optimizer step. The variants run in interleaved rounds in one process, from the
same weights, with Adam; each reports the median time per step after a warm-up epoch, as a ratio to "no masks",
and whether its pruned kernels are exactly 0.0 at the end.
"""

import argparse
import time

import numpy as np
import torch
from torch import nn
from torch.nn.utils import prune as torch_prune

import fpgaprune as fp
from fpgaprune import data

SPARSITY = 0.3
CONVS = ("conv1", "conv2", "conv3")


class CNN(nn.Module):
    """bench_mask_overhead.py's CNN, in PyTorch."""

    def __init__(self, channels: int, side: int):
        super().__init__()
        self.channels, self.side = channels, side
        self.conv1, self.conv2 = nn.Conv2d(channels, 16, 3), nn.Conv2d(16, 32, 3)
        self.conv3 = nn.Conv2d(32, 32, 3)
        size = ((side - 4) // 2 - 2) // 2
        self.fc = nn.Linear(32 * size * size, 10)

    def forward(self, x):
        x = nn.functional.max_pool2d(torch.relu(self.conv2(torch.relu(self.conv1(x)))), 2)
        x = nn.functional.max_pool2d(torch.relu(self.conv3(x)), 2)
        return self.fc(torch.flatten(x, 1))


def kernel_masks(model) -> dict:
    """{conv: True where pruned, PyTorch's layout}: the 30% of (out, in) kernels with the smallest L1 norm."""
    masks = {}
    for name in CONVS:
        norms = getattr(model, name).weight.detach().abs().sum(dim=(2, 3))
        cut = torch.quantile(norms.flatten(), SPARSITY)
        masks[name] = (norms <= cut)[:, :, None, None].expand_as(getattr(model, name).weight).clone()
    return masks


def copy_of(base: CNN) -> CNN:
    model = CNN(base.channels, base.side)
    model.load_state_dict(base.state_dict())
    return model


def variants(base: CNN, masks: dict) -> dict:
    """name -> (model, after-step function or None); all start from `base`'s weights."""
    plain, by_prune, by_hand = copy_of(base), copy_of(base), copy_of(base)
    manifest = fp.MaskManifest()
    for name, mask in masks.items():
        manifest.prune(f"{name}/weight", where=mask.permute(2, 3, 1, 0).numpy())  # where=: fpgaprune's layout
    for name, mask in masks.items():
        torch_prune.custom_from_mask(getattr(by_prune, name), "weight", ~mask)  # its mask: 1 keeps, 0 prunes

    def zero_by_hand():
        with torch.no_grad():
            for name, mask in masks.items():
                getattr(by_hand, name).weight.masked_fill_(mask, 0.0)

    zero_by_hand()
    return {
        "no masks": (plain, None),
        "fpgaprune holds": (fp.hold(copy_of(base), manifest), None),
        "torch.nn.utils.prune": (by_prune, None),
        "weight.mul_(mask) per step": (by_hand, zero_by_hand),
    }


def epoch(model, optimizer, x, y, batch: int, after_step, times: list | None) -> None:
    model.train()
    for start in range(0, len(x), batch):
        began = time.perf_counter()
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x[start : start + batch]), y[start : start + batch]).backward()
        optimizer.step()
        if after_step is not None:
            after_step()
        if times is not None:
            times.append(time.perf_counter() - began)


def pruned_are_zero(model, masks: dict) -> bool:
    return all(bool(torch.all(getattr(model, name).weight[mask] == 0.0)) for name, mask in masks.items())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=12800, help="training samples per epoch")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds (one epoch each)")
    args = parser.parse_args(argv)
    try:
        dataset = data.fashion_mnist()
    except fp.FpgapruneError as exc:
        print(f"{exc}; using the digits instead")
        dataset = data.digits()
    x = torch.from_numpy(np.ascontiguousarray(np.moveaxis(dataset.x_train[: args.samples], -1, 1)))
    y = torch.from_numpy(dataset.y_train[: args.samples].astype(np.int64))
    torch.manual_seed(0)
    base = CNN(x.shape[1], x.shape[-1])
    masks = kernel_masks(base)
    runs = {
        name: (model, after, torch.optim.Adam(model.parameters(), lr=1e-3))
        for name, (model, after) in variants(base, masks).items()
    }
    times = {name: [] for name in runs}
    for name, (model, after, optimizer) in runs.items():
        epoch(model, optimizer, x, y, args.batch, after, None)  # warm-up
    for _ in range(args.rounds):
        for name, (model, after, optimizer) in runs.items():
            epoch(model, optimizer, x, y, args.batch, after, times[name])
    medians = {name: float(np.median(found)) for name, found in times.items()}
    print(
        f"{dataset.name}: {len(x)} samples (NCHW), batch {args.batch}, {args.rounds} interleaved rounds, Adam, "
        f"{SPARSITY:.0%} of conv kernels pruned; torch {torch.__version__}, {torch.get_num_threads()} threads"
    )
    print(f"{'variant':<30}{'ms/step':>10}{'ratio':>9}  pruned kernels exactly 0.0")
    for name, median in medians.items():
        exact = "n/a" if name == "no masks" else "yes" if pruned_are_zero(runs[name][0], masks) else "NO"
        print(f"{name:<30}{median * 1e3:>10.2f}{median / medians['no masks']:>8.2f}x  {exact}")
    ratio = medians["fpgaprune holds"] / medians["no masks"]
    print(f"fpgaprune overhead target <= 1.05x: {'met' if ratio <= 1.05 else 'NOT met'} ({ratio:.3f}x)")


if __name__ == "__main__":
    from record import run_recorded

    run_recorded(main, __file__)
