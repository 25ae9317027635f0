"""Importance scores: one number per group of a weight (L1, L2 or max-abs; AVG/MAX pooling for blocks), and
LAMP, which makes them comparable across layers."""

import numpy as np

NORMS = ("l1", "l2", "max")


def group_scores(weights: np.ndarray, labels: np.ndarray, groups: int, norm: str = "l1") -> np.ndarray:
    """Score of each group: `l1` sum |w|, `l2` sqrt(sum w^2), `max` max |w|, `avg` mean |w| (block pooling)."""
    magnitude = np.abs(np.asarray(weights, np.float64)).ravel()
    labels = np.asarray(labels).ravel()
    if norm == "l1":
        return np.bincount(labels, magnitude, groups)
    if norm == "l2":
        return np.sqrt(np.bincount(labels, magnitude**2, groups))
    if norm == "max":
        out = np.zeros(groups)
        np.maximum.at(out, labels, magnitude)
        return out
    if norm == "avg":
        return np.bincount(labels, magnitude, groups) / np.maximum(np.bincount(labels, minlength=groups), 1)
    raise ValueError(f"unknown norm {norm!r}; choose one of {NORMS}")


def lamp_scores(scores: np.ndarray, live: np.ndarray) -> np.ndarray:
    """Layer-adaptive magnitude (LAMP; Lee et al., ICLR 2021) of one layer's groups: a group's squared score over
    the summed squared scores of the live groups at least as strong. The strongest live group scores 1 in every
    layer, a wide layer's weak tail nearly 0: comparable across layers without data. Pruned groups score 0."""
    squared = np.where(live, np.asarray(scores, np.float64) ** 2, 0.0)
    order = np.argsort(squared, kind="stable")
    at_least = np.cumsum(squared[order][::-1])[::-1]  # for each group in order: it and every stronger one
    out = np.zeros(squared.size)
    out[order] = squared[order] / np.where(at_least > 0, at_least, 1.0)
    return out


def kernel_scores(kernel: np.ndarray, norm: str = "l1") -> np.ndarray:
    """The (ci, co) grid of norms of a conv kernel [*spatial, ci, co], each taken over the spatial taps."""
    if norm not in NORMS:
        raise ValueError(f"unknown norm {norm!r}; choose one of {sorted(NORMS)}")
    kernel = np.asarray(kernel)
    if kernel.ndim < 3:
        raise ValueError(f"expected a conv kernel [*spatial, ci, co], got shape {kernel.shape}")
    ci, co = kernel.shape[-2:]
    labels = np.broadcast_to(np.arange(ci * co).reshape(ci, co), kernel.shape)
    return group_scores(kernel, labels, ci * co, norm).reshape(ci, co)


def weakest_kernels(kernel: np.ndarray, fraction: float, norm: str = "l1") -> np.ndarray:
    """Boolean mask of the kernel's shape selecting the `fraction` of (ci, co) kernels with the lowest norm."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction must lie in [0, 1], got {fraction}")
    scores = kernel_scores(kernel, norm)
    count = int(round(fraction * scores.size))
    order = np.argsort(scores, axis=None, kind="stable")[:count]
    chosen = np.zeros(scores.size, dtype=bool)
    chosen[order] = True
    return np.broadcast_to(chosen.reshape(scores.shape), np.shape(kernel)).copy()
