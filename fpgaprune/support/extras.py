"""Optional dependencies, pyproject.toml's extras: imported where they are used, or one line with the install
command that adds them. Every module fpgaprune imports is a base dependency, or one of these
(tests/test_dependencies.py). A front end of an extra's framework (`frontends/torch/`) imports it directly: the
registry (`fpgaprune/framework.py`) leaves a front end out when its framework is not installed."""

import importlib

from fpgaprune.errors import FpgapruneError

# The module an extra adds -> the extra's name in pyproject.toml
EXTRAS = {"ray": "sweep", "torch": "torch", "brevitas": "torch", "hgq": "hgq2"}
# Import names whose distribution is named otherwise, for an extra that this environment cannot hold
DISTRIBUTIONS = {"hgq": "hgq2"}


class MissingExtra(FpgapruneError):
    """An optional dependency that this install lacks."""


def require_extra(module: str, what: str):
    """The module `module` of an extra, imported; a one-line MissingExtra naming `what` needs it and the install
    command that adds it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        extra = EXTRAS[module]
        raise MissingExtra(
            f"{what} needs {module}, which the '{extra}' extra installs: pip install -e '.[{extra}]' in a "
            f"checkout (pip install 'fpgaprune[{extra}]' otherwise)"
        ) from None
