"""Finding the YAML files fpgaprune ships (presets, boards) or that users pass. Reading and validating them is
`yaml_schema.py`'s (safe_load, one-line errors)."""

import difflib
from pathlib import Path

from fpgaprune.errors import HlsConfigError

PACKAGE = Path(__file__).resolve().parent.parent


def data_dir(name: str) -> Path:
    """A shipped data directory (`boards`, `hls_configs`): inside the installed wheel, or at the root of a
    source checkout (an editable install), where users read, copy and add their own files."""
    installed = PACKAGE / name
    return installed if installed.is_dir() else PACKAGE.parent / name


def named_file(directory: str, name_or_path, kind: str) -> Path:
    """A shipped file by name (`<directory>/<name>.yaml`) or a user's own path."""
    candidate = Path(str(name_or_path))
    if candidate.suffix in (".yaml", ".yml") and candidate.exists():
        return candidate
    shipped = data_dir(directory) / f"{name_or_path}.yaml"
    if shipped.exists():
        return shipped
    names = sorted(p.stem for p in data_dir(directory).glob("*.yaml"))
    close = difflib.get_close_matches(str(name_or_path), names, n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    raise HlsConfigError(f"unknown {kind} '{name_or_path}' (not a file either); {hint}known: {', '.join(names)}")
