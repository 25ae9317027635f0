"""Write files atomically: to a temporary file beside the target, then rename over it."""

import os
import shutil
import tempfile
import uuid
from pathlib import Path


def write_text_atomic(path, text: str) -> Path:
    """Write `text` to `path` so that readers see the old file or the whole new one, never a part."""
    return write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path, data: bytes) -> Path:
    """Write `data` to `path` so that readers see the old file or the whole new one, never a part."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_target(path) -> tuple[Path, Path]:
    """A temporary sibling path to write into (any writer, e.g. model.save), and the final path to rename to."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    os.unlink(tmp)
    return Path(tmp), path


def replace_directory(tmp, final) -> Path:
    """Put the finished directory `tmp` at `final`, moving any old one aside first and then deleting it."""
    tmp, final = Path(tmp), Path(final)
    if final.exists():
        old = final.with_name(f".{final.name}.old-{uuid.uuid4().hex[:8]}")
        final.rename(old)
        shutil.rmtree(old, ignore_errors=True)
    tmp.rename(final)
    return final
