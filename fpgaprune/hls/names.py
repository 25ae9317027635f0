"""Layer names as C++ identifiers. hls4ml writes each layer's name into the project's C++ (`#define N_CONV.1 ...`
does not compile), and TensorFlow allows '.', '-', '/' and '>' in names. The export hands hls4ml a copy of the
model whose names are identifiers (`conv.1` -> `conv_1`); the manifest keeps the map, and the report and every
message show the user's own names.
"""

import re

from fpgaprune.errors import ModelTypeError

C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _identifier(name: str) -> str:
    text = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return text if C_IDENTIFIER.fullmatch(text) else f"layer_{text}"


def cpp_names(names: list, model: str) -> dict:
    """{original: identifier} for the layer `names` (of the model called `model`) that are not C++ identifiers
    ({} when all are); a one-line ModelTypeError naming every pair of names that would become the same
    identifier."""
    mapped = {name: _identifier(name) for name in names if not C_IDENTIFIER.fullmatch(name)}
    clashes = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :] if mapped.get(a, a) == mapped.get(b, b)]
    if clashes:
        pairs = "; ".join(f"'{a}' and '{b}' would both be '{mapped.get(a, a)}'" for a, b in clashes)
        raise ModelTypeError(
            f"model '{model}': layer names must stay distinct as C++ identifiers: {pairs}; rename one of each pair"
        )
    return mapped


def map_keys(mapping: dict, names: dict) -> dict:
    """`mapping` with keys renamed by `names` ({from: to}): a key equal to a name, or one that hls4ml derives
    from it (`conv_1_relu`, `zp2d_conv_1`, `conv_1_alpha`), takes the new name in its place."""
    if not names:
        return dict(mapping)
    ordered = sorted(names, key=len, reverse=True)
    return {_mapped_key(key, names, ordered): value for key, value in mapping.items()}


def _mapped_key(key: str, names: dict, ordered: list) -> str:
    if key in names:
        return names[key]
    for name in ordered:
        if key.startswith(name + "_"):
            return names[name] + key[len(name) :]
        if key.endswith("_" + name):
            return key[: -len(name)] + names[name]
    return key


def original_name(node: str, manifest: dict) -> str:
    """The user's name for an hls4ml node (or a name hls4ml derived from a layer's) of an export's manifest."""
    return next(iter(map_keys({node: None}, manifest.get("names", {}))))
