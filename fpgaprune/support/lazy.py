"""Package namespaces that import their modules on first use, so that importing a package costs nothing and
pulls in no framework (tests/seam): `__getattr__ = exports(__name__, {name: submodule})`."""

import importlib


def exports(package: str, names: dict):
    """A module `__getattr__` that finds each of `names` ({name: submodule of `package`}) on first use."""

    def __getattr__(name: str):
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{names[name]}"), name)
        setattr(importlib.import_module(package), name, value)
        return value

    return __getattr__
