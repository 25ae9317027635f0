"""Data sets that ship offline: scikit-learn's 8x8 digits and Debian's Fashion-MNIST (`dataset-fashion-mnist`)."""

import gzip
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fpgaprune.errors import DataError, FpgapruneError, first_line

FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")


@dataclass(frozen=True)
class Dataset:
    """Inputs as float32 (images NHWC); labels as int64 classes (a vector, or one-hot/multi-hot rows) or float32
    targets. `classes`: the output units the labels ask for (classes, or the width of the label rows)."""

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    classes: int

    def channels_first(self) -> "Dataset":
        """The images NCHW, as a PyTorch model takes them (other inputs as they are)."""

        def moved(x):  # a real copy: ascontiguousarray keeps a one-channel view's strides, which torch reads as NHWC
            return np.moveaxis(x, -1, 1).copy() if x.ndim >= 3 else x

        return Dataset(self.name, moved(self.x_train), self.y_train, moved(self.x_test), self.y_test, self.classes)


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


NPZ_KEYS = ("x_train", "y_train", "x_test", "y_test")


def load_npz(path) -> Dataset:
    """A dataset from an `.npz` file (no pickles): numeric, finite arrays, x and y of equal length; labels are
    classes, label rows or float targets (`fpgaprune.model.task` reads which)."""
    return _dataset(Path(path), read_npz(path, NPZ_KEYS))


def read_npz(path, keys) -> dict:
    """{key: array} of the `keys` of an `.npz` file: numeric, finite, readable without pickle."""
    import zipfile

    path = Path(path)
    if path.is_dir():
        raise DataError(f"{path}: is a directory; expected an .npz file with {', '.join(keys)}")
    try:
        loaded = np.load(path, allow_pickle=False)
        if not isinstance(loaded, np.lib.npyio.NpzFile):
            raise DataError(f"{path}: is a single .npy array; expected an .npz file with {', '.join(keys)}")
        with loaded as archive:
            missing = [key for key in keys if key not in archive.files]
            if missing:
                raise DataError(
                    f"{path}: no array {missing[0]!r} (found {', '.join(archive.files) or 'none'}); "
                    f"expected {', '.join(keys)}"
                )
            arrays = {key: _numeric(path, key, archive) for key in keys}
    except DataError:
        raise
    except (OSError, EOFError, ValueError, zipfile.BadZipFile) as error:  # numpy's message for a non-npz file
        detail = "it would need pickle" if "pickle" in str(error) else first_line(error)
        raise DataError(f"{path}: not a readable .npz file of numeric arrays ({detail})") from None
    return arrays


def _numeric(path: Path, key: str, archive) -> np.ndarray:
    declared = _declared_bytes(path, key, archive)
    try:
        values = archive[key]
    except ValueError as error:  # object arrays need pickles, which are refused
        raise DataError(f"{path}: array {key!r} cannot be read without pickle ({error}); save numeric arrays") from None
    except MemoryError:
        raise DataError(
            f"{path}: array {key!r} takes {declared / 2**30:,.1f} GiB, more than this machine can allocate"
        ) from None
    if values.dtype.kind not in "biuf":
        raise DataError(f"{path}: array {key!r} has dtype {values.dtype}; expected numbers")
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        bad = int(values.size - np.isfinite(values).sum())
        raise DataError(f"{path}: array {key!r} holds {bad} non-finite value(s) (NaN/Inf); every value must be finite")
    return values


def _declared_bytes(path: Path, key: str, archive) -> int:
    """The bytes `key`'s .npy header declares, checked against what the archive stores before numpy allocates
    them: a damaged or hostile header could ask for terabytes."""
    from numpy.lib import format as npy

    member = f"{key}.npy"
    with archive.zip.open(member) as handle:
        version = npy.read_magic(handle)
        shape, _, dtype = (npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0)(handle)
        stored = archive.zip.getinfo(member).file_size - handle.tell()
    declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if not dtype.hasobject and declared != stored:
        raise DataError(
            f"{path}: array {key!r} declares shape {shape} of {dtype} ({declared:,} bytes) but the file "
            f"stores {stored:,}: a damaged .npz"
        )
    return declared


def _dataset(path: Path, arrays: dict) -> Dataset:
    for x, y in (("x_train", "y_train"), ("x_test", "y_test")):
        if arrays[x].ndim < 2 or len(arrays[x]) != len(arrays[y]):
            raise DataError(
                f"{path}: {x} has shape {arrays[x].shape} and {y} {arrays[y].shape}; expected samples "
                f"along the first axis, as many in both"
            )
        if arrays[y].ndim not in (1, 2):
            raise DataError(
                f"{path}: {y} has shape {arrays[y].shape}; expected a label (or target) per sample, or "
                "a row of them (one-hot, multi-hot, several targets)"
            )
    if arrays["y_train"].shape[1:] != arrays["y_test"].shape[1:]:
        raise DataError(
            f"{path}: y_train has shape {arrays['y_train'].shape} and y_test {arrays['y_test'].shape}; "
            "give both splits labels of the same form"
        )
    if not len(arrays["x_train"]) or not len(arrays["x_test"]):
        raise DataError(f"{path}: x_train and x_test must hold at least one sample each")
    label_type = np.int64 if all(_integral(arrays[y]) for y in ("y_train", "y_test")) else np.float32
    as_type = {"x_train": np.float32, "y_train": label_type, "x_test": np.float32, "y_test": label_type}
    try:
        converted = {key: arrays[key].astype(kind, copy=False) for key, kind in as_type.items()}
    except MemoryError:
        total = sum(a.nbytes for a in arrays.values())
        raise DataError(
            f"{path}: its arrays ({total / 2**30:,.1f} GiB) and their float32/int64 copies do not fit in "
            "this machine's memory"
        ) from None
    return Dataset(path.stem, *converted.values(), _outputs(converted["y_train"], converted["y_test"]))


def _integral(y: np.ndarray) -> bool:
    return y.dtype.kind in "biu" or bool(np.all(y == np.round(y)))


def _outputs(y_train: np.ndarray, y_test: np.ndarray) -> int:
    """The output units the labels ask for: classes (largest label + 1), or the width of their rows."""
    if y_train.ndim == 2:
        return int(y_train.shape[1])
    if y_train.dtype.kind == "f":
        return 1
    return max(int(max(y_train.max(), y_test.max())) + 1, 1)
