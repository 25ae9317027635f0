"""A PyTorch replica of bench_pareto.py, to rank pruning ideas quickly on a GPU (not part of fpgaprune).

Same CNN (widths from FP_WIDTHS, default 16,32,32), Glorot init, Adam(1e-3, eps 1e-7), batch 128, 8 pretraining
epochs, then `epochs` with a Zhu-Gupta cubic schedule ending at 60% of them, 30 mask updates, masks that only grow
and pruned weights held at 0 after every step. "element" is tfmot's per-layer magnitude pruning; "kernel" scores
each (co, ci) kernel by L1 as fpgaprune does. Variants (see sweep.py): budget allocations, RigL-style kernel
regrowth, OBS kernel scores with least-squares compensation, kernel + element hybrids, longer training.
Data: the Debian Fashion-MNIST files, or FASHION_MNIST_DIR.
"""

import gzip
import json
import math
import os
import time

import numpy as np
import torch
import torch.nn.functional as F

DATA = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
DEV = "cuda" if torch.cuda.is_available() else "cpu"
NAMES = ("w1", "w2", "w3", "wf")
C1, C2, C3 = (int(v) for v in os.environ.get("FP_WIDTHS", "16,32,32").split(","))
POS = {"w1": 26 * 26, "w2": 11 * 11, "w3": 3 * 3, "wf": 1}


def load(limit=None):
    def idx(name, offset):
        return np.frombuffer(gzip.open(os.path.join(DATA, name)).read(), np.uint8, offset=offset)

    xtr = idx("train-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28) / 256.0
    ytr = idx("train-labels-idx1-ubyte.gz", 8)
    xte = idx("t10k-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28) / 256.0
    yte = idx("t10k-labels-idx1-ubyte.gz", 8)
    if limit:
        xtr, ytr, xte, yte = xtr[:limit], ytr[:limit], xte[:limit], yte[:limit]

    def t(array, dtype):
        return torch.tensor(array, dtype=dtype, device=DEV)

    return t(xtr, torch.float32), t(ytr, torch.long), t(xte, torch.float32), t(yte, torch.long)


def glorot(shape, fan_in, fan_out, gen):
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    return (torch.rand(shape, generator=gen) * 2 - 1) * limit


def init(seed):
    gen = torch.Generator().manual_seed(seed)
    p = {
        "w1": glorot((C1, 1, 3, 3), 9, 9 * C1, gen),
        "b1": torch.zeros(C1),
        "w2": glorot((C2, C1, 3, 3), 9 * C1, 9 * C2, gen),
        "b2": torch.zeros(C2),
        "w3": glorot((C3, C2, 3, 3), 9 * C2, 9 * C3, gen),
        "b3": torch.zeros(C3),
        "wf": glorot((10, 9 * C3), 9 * C3, 10, gen),
        "bf": torch.zeros(10),
    }
    return {k: v.to(DEV).requires_grad_() for k, v in p.items()}


def forward(p, x):
    x = F.max_pool2d(F.relu(F.conv2d(x, p["w1"], p["b1"])), 2)
    x = F.max_pool2d(F.relu(F.conv2d(x, p["w2"], p["b2"])), 2)
    x = F.relu(F.conv2d(x, p["w3"], p["b3"]))
    return F.linear(x.flatten(1), p["wf"], p["bf"])


@torch.no_grad()
def accuracy(p, x, y):
    correct = 0
    for i in range(0, len(y), 2000):
        correct += (forward(p, x[i : i + 2000]).argmax(1) == y[i : i + 2000]).sum().item()
    return correct / len(y)


def groups_of(name, w, structure):
    """labels (same shape as w) and count: kernel = (co, ci) pair, element = each entry."""
    if structure == "kernel" and w.dim() == 4:
        co, ci = w.shape[:2]
        labels = torch.arange(co * ci, device=w.device).reshape(co, ci, 1, 1).expand_as(w)
        return labels, co * ci
    return torch.arange(w.numel(), device=w.device).reshape(w.shape), w.numel()


def choose(score, sizes, already, sparsity):
    """Boolean per group: already-pruned first, then lowest score, until `sparsity` of the entries is reached."""
    key = score.double() + already.double() * -1e30
    order = torch.argsort(key)
    cum = torch.cumsum(sizes[order].double(), 0)
    take = order[(cum - sizes[order] / 2.0) < sparsity * sizes.sum()]
    chosen = already.clone()
    chosen[take] = True
    return chosen


def select_mask(name, w, mask, structure, sparsity):
    """The new mask (1 = live): the lowest-L1 groups pruned to `sparsity`, those already pruned first."""
    labels, count = groups_of(name, w, structure)
    flat = labels.reshape(-1)
    mag = w.detach().abs().reshape(-1).double()
    score = torch.zeros(count, device=w.device, dtype=torch.float64).index_add_(0, flat, mag)
    sizes = torch.zeros(count, device=w.device, dtype=torch.float64).index_add_(0, flat, torch.ones_like(mag))
    zeros = (mask.reshape(-1) == 0).double()
    pruned = torch.zeros(count, device=w.device, dtype=torch.float64).index_add_(0, flat, zeros)
    already = pruned == sizes
    chosen = choose(score, sizes, already, sparsity)
    return (~chosen[labels]).float()


def poly(step, s_f, end, s_i=0.0, exponent=3):
    progress = min(1.0, max(0.0, step / end))
    return s_f + (s_i - s_f) * (1 - progress) ** exponent


def train(p, data, epochs, seed, masks=None, on_step=None, lr=1e-3):
    """Adam on batches of 128; `on_step` may change the masks; masked weights are zeroed after every step."""
    xtr, ytr = data[0], data[1]
    opt = torch.optim.Adam(list(p.values()), lr=lr, eps=1e-7)
    gen = torch.Generator(device=DEV).manual_seed(seed)
    n = len(ytr)
    step = 0
    for epoch in range(epochs):
        perm = torch.randperm(n, device=DEV, generator=gen)
        for i in range(0, n, 128):
            idx = perm[i : i + 128]
            if on_step is not None:
                on_step(step, p, masks, xtr[idx], ytr[idx])
            loss = F.cross_entropy(forward(p, xtr[idx]), ytr[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if masks is not None:
                with torch.no_grad():
                    for k, m in masks.items():
                        p[k].mul_(m)
            step += 1
    return p


def clone(p):
    return {k: v.detach().clone().requires_grad_() for k, v in p.items()}


def gradual(variant, base, data, sparsities, seed, prune_epochs, end_frac=0.6):
    """Zhu-Gupta gradual pruning of each layer in `sparsities` with the variant's structure and score."""
    p = clone(base)
    steps = math.ceil(len(data[1]) / 128)
    end = int(end_frac * prune_epochs * steps)
    freq = max(1, end // 30)
    structure = variant.get("structure", "kernel")
    masks = {k: torch.ones_like(p[k]) for k in sparsities}

    def on_step(step, p, masks, xb, yb):
        if (
            variant.get("rigl")
            and step > end
            and step <= variant["rigl_end"] * prune_epochs * steps
            and step % variant.get("rigl_every", 100) == 0
        ):
            rigl_update(p, masks, sparsities, xb, yb, variant, step, prune_epochs * steps)
            return
        if not (step <= end and (step % freq == 0 or step == end)):
            return
        with torch.no_grad():
            for k, s_f in sparsities.items():
                s = poly(step, s_f, end)
                st = structure if k != "wf" else "element"
                if variant.get("obs") and k in ("w2", "w3"):
                    xcal = data[0][torch.randint(0, len(data[1]), (variant.get("ncal", 2048),), device=DEV)]
                    obs_prune(p, masks, k, s, xcal, variant.get("obs_score", "obs"), variant.get("compensate", True))
                    continue
                if variant.get("hybrid") and k in ("w2", "w3"):
                    # kernel pruning to a lower kernel sparsity, then element pruning inside live kernels
                    ks = 1 - math.sqrt(1 - s)
                    m = select_mask(k, p[k], masks[k], "kernel", ks)
                    m = m * select_mask(k, p[k] * m, masks[k] * m, "element", s)
                    masks[k] = torch.minimum(masks[k], m)
                else:
                    masks[k] = torch.minimum(masks[k], select_mask(k, p[k], masks[k], st, s))
                p[k].mul_(masks[k])

    train(p, data, prune_epochs, seed, masks, on_step, lr=variant.get("lr", 1e-3))
    return p, masks


def rigl_update(p, masks, sparsities, xb, yb, variant, step, total):
    """Drop the weakest live kernels and grow the dead kernels with the largest gradient norm (RigL, kernels)."""
    q = clone(p)
    loss = F.cross_entropy(forward(q, xb), yb)
    grads = torch.autograd.grad(loss, [q[k] for k in sparsities])
    frac = variant.get("rigl_alpha", 0.3) / 2 * (1 + math.cos(math.pi * step / (variant["rigl_end"] * total)))
    with torch.no_grad():
        for k, g in zip(sparsities, grads):
            if k == "wf":
                continue
            labels, count = groups_of(k, p[k], "kernel")
            flat = labels.reshape(-1)
            live = torch.zeros(count, device=DEV).index_add_(0, flat, masks[k].reshape(-1)) > 0
            n = int(frac * live.sum().item())
            if n == 0:
                continue
            w_score = torch.zeros(count, device=DEV).index_add_(0, flat, p[k].abs().reshape(-1))
            g_score = torch.zeros(count, device=DEV).index_add_(0, flat, g.abs().reshape(-1))
            drop = torch.argsort(torch.where(live, w_score, torch.full_like(w_score, 1e30)))[:n]
            grow = torch.argsort(torch.where(~live, -g_score, torch.full_like(g_score, 1e30)))[:n]
            group_mask = live.clone()
            group_mask[drop] = False
            group_mask[grow] = True
            masks[k] = group_mask[labels].float()
            p[k].mul_(masks[k])


def multipliers(p):
    total = sum(p[k].numel() * POS[k] for k in NAMES)
    live = sum(int((p[k] != 0).sum().item()) * POS[k] for k in NAMES)
    return total, live


BUDGET = {"w2": 9 * C1 * C2 * 121, "w3": 9 * C2 * C3 * 9, "wf": 90 * C3}


def allocation(s, kind, w3=None, w1=None):
    """Per-layer sparsities removing s of the conv2+conv3+fc multipliers (conv1 may pay a share: w1)."""
    total = sum(BUDGET.values())
    if kind == "uniform":
        return {"w2": s, "w3": s, "wf": s}
    removed = s * total
    if w1 is not None:
        removed -= w1 * 9 * C1 * 676
        conv = removed / (BUDGET["w2"] + BUDGET["w3"])
        return {"w1": w1, "w2": conv, "w3": conv}
    if w3 is None:
        conv = removed / (BUDGET["w2"] + BUDGET["w3"])
        return {"w2": conv, "w3": conv}
    return {"w2": (removed - w3 * BUDGET["w3"]) / BUDGET["w2"], "w3": w3}


def run_job(job, data, pretrained):
    seed, name, variant = job["seed"], job["name"], job["variant"]
    base = pretrained[seed]
    t0 = time.time()
    epochs = variant.get("epochs", 10)
    if variant.get("dense"):
        p = train(clone(base), data, epochs, seed + 1)
        acc = accuracy(p, data[2], data[3])
        return {"seed": seed, "name": name, "acc": acc, "removed": 0.0, "sec": time.time() - t0}
    sp = allocation(variant["s"], variant.get("alloc", "convs"), variant.get("w3"), variant.get("w1"))
    torch.manual_seed(seed + 1)
    p, masks = gradual(variant, base, data, sp, seed + 1, epochs, variant.get("end_frac", 0.6))
    total, live = multipliers(p)
    acc = accuracy(p, data[2], data[3])
    return {
        "seed": seed,
        "name": name,
        "acc": acc,
        "removed": 1 - live / total,
        "sec": time.time() - t0,
        "sparsities": sp,
    }


def worker(rank, queue, seeds, limit, pre_epochs, out):
    torch.set_num_threads(1)
    data = load(limit)
    pretrained = {}
    for seed in seeds:
        path = os.path.join(out, f"pre{seed}.pt")
        pretrained[seed] = {k: v.to(DEV).requires_grad_() for k, v in torch.load(path).items()}
    with open(os.path.join(out, "results.jsonl"), "a") as f:
        while True:
            job = queue.get()
            if job is None:
                break
            r = run_job(job, data, pretrained)
            f.write(json.dumps(r) + "\n")
            f.flush()
            print(json.dumps(r), flush=True)


def pretrain(seed, limit, epochs, out):
    torch.set_num_threads(1)
    data = load(limit)
    p = train(init(seed), data, epochs, seed)
    torch.save({k: v.detach().cpu() for k, v in p.items()}, os.path.join(out, f"pre{seed}.pt"))
    print(f"pretrained seed {seed}: {accuracy(p, data[2], data[3]):.4f}", flush=True)


def layer_input(p, x, k):
    """The tensor that conv `k` (w2 or w3) reads, computed with the current (masked) weights."""
    with torch.no_grad():
        h = F.max_pool2d(F.relu(F.conv2d(x, p["w1"], p["b1"])), 2)
        if k == "w2":
            return h
        return F.max_pool2d(F.relu(F.conv2d(h, p["w2"], p["b2"])), 2)


def obs_prune(p, masks, k, sparsity, xcal, score="obs", compensate=True, damp=0.01):
    """Kernel pruning with the layer's input Hessian H = X^T X (OBS/OBC for groups of 9 weights): the score of
    kernel (co, ci) is w^T [(H^-1)_ci]^-1 w, the output error its removal costs after the other kernels of that
    output channel compensate; with `compensate`, they do (least squares on the calibration inputs)."""
    w = p[k]
    co, ci, kh, kw = w.shape
    with torch.no_grad():
        cols = F.unfold(layer_input(p, xcal, k), (kh, kw))  # N, ci*9, positions
        X = cols.transpose(1, 2).reshape(-1, ci * kh * kw).double()
        H = X.T @ X / X.shape[0]
        H += damp * H.diagonal().mean() * torch.eye(H.shape[0], device=H.device, dtype=H.dtype)
        Hinv = torch.linalg.inv(H)
        W = w.reshape(co, ci, kh * kw).double()
        if score == "obs":
            blocks = Hinv.reshape(ci, kh * kw, ci, kh * kw).diagonal(dim1=0, dim2=2).permute(2, 0, 1)  # ci,9,9
            B = torch.linalg.inv(blocks)
            scores = torch.einsum("oce,ced,ocd->oc", W, B, W)  # co, ci
        else:
            scores = W.abs().sum(-1)
        alive = masks[k].reshape(co, ci, -1)[..., 0] > 0
        sizes = torch.full((co * ci,), float(kh * kw), device=w.device, dtype=torch.float64)
        chosen = choose(scores.reshape(-1), sizes, ~alive.reshape(-1), sparsity).reshape(co, ci)
        keep = ~chosen
        new_mask = keep[:, :, None, None].expand_as(w).float()
        if compensate:
            target = H @ W.reshape(co, -1).T  # (features, co): H w_old per output channel
            Wn = torch.zeros_like(W.reshape(co, -1))
            feat_keep = keep[:, :, None].expand(co, ci, kh * kw).reshape(co, -1)
            for o in range(co):
                L = feat_keep[o].nonzero().squeeze(1)
                if L.numel():
                    Wn[o, L] = torch.linalg.solve(H[L][:, L], target[L, o])
            w.copy_(Wn.reshape(w.shape).float())
        masks[k] = torch.minimum(masks[k], new_mask)
        w.mul_(masks[k])
