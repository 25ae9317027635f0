"""Importance scores of convolution kernels: one number per (input channel, output channel) pair."""

import numpy as np

NORMS = {
    "l1": lambda k: np.abs(k).sum(axis=0),
    "l2": lambda k: np.sqrt(np.square(k).sum(axis=0)),
    "max": lambda k: np.abs(k).max(axis=0),
}


def kernel_scores(kernel: np.ndarray, norm: str = "l1") -> np.ndarray:
    """The (ci, co) grid of norms of a conv kernel [*spatial, ci, co], each taken over the spatial taps."""
    if norm not in NORMS:
        raise ValueError(f"unknown norm {norm!r}; choose one of {sorted(NORMS)}")
    kernel = np.asarray(kernel)
    if kernel.ndim < 3:
        raise ValueError(f"expected a conv kernel [*spatial, ci, co], got shape {kernel.shape}")
    taps = kernel.reshape(-1, kernel.shape[-2], kernel.shape[-1])
    return NORMS[norm](taps)


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
