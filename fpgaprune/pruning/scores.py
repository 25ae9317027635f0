"""Importance scores: one number per group of a weight (L1, L2 or max-abs; AVG/MAX pooling for blocks)."""

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
