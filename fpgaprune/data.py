"""Data sets that ship offline: scikit-learn's 8x8 digits and Debian's Fashion-MNIST (`dataset-fashion-mnist`)."""

import gzip
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fpgaprune.errors import FpgapruneError

FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")


@dataclass(frozen=True)
class Dataset:
    """Images as float32 NHWC in [0, 1), integer labels."""

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    classes: int


def digits(test_fraction: float = 0.25, seed: int = 0) -> Dataset:
    """The 1797 8x8 digits; pixels (0..16) divided by 16, so every input lies on a 1/16 fixed-point grid."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    bunch = load_digits()
    x = (bunch.images.astype(np.float32) / 16.0)[..., None]
    x_train, x_test, y_train, y_test = train_test_split(
        x, bunch.target.astype(np.int64), test_size=test_fraction, random_state=seed, stratify=bunch.target
    )
    return Dataset("digits", x_train, y_train, x_test, y_test, 10)


def fashion_mnist(root=FASHION_MNIST_DIR) -> Dataset:
    """The full Fashion-MNIST (60k/10k 28x28); pixels divided by 256 (an 8-bit fraction grid)."""
    root = Path(root)
    files = {
        "x_train": "train-images-idx3-ubyte.gz",
        "y_train": "train-labels-idx1-ubyte.gz",
        "x_test": "t10k-images-idx3-ubyte.gz",
        "y_test": "t10k-labels-idx1-ubyte.gz",
    }
    missing = [name for name in files.values() if not (root / name).exists()]
    if missing:
        raise FpgapruneError(
            f"{root}: Fashion-MNIST files missing ({', '.join(missing)}); install them with "
            "`apt-get install dataset-fashion-mnist`"
        )
    arrays = {key: _read_idx(root / name) for key, name in files.items()}
    x_train = (arrays["x_train"].reshape(-1, 28, 28, 1) / 256.0).astype(np.float32)
    x_test = (arrays["x_test"].reshape(-1, 28, 28, 1) / 256.0).astype(np.float32)
    y_train, y_test = arrays["y_train"].astype(np.int64), arrays["y_test"].astype(np.int64)
    return Dataset("fashion_mnist", x_train, y_train, x_test, y_test, 10)


def _read_idx(path: Path) -> np.ndarray:
    raw = gzip.open(path).read()
    offset = 16 if "images" in path.name else 8
    return np.frombuffer(raw, np.uint8, offset=offset)
