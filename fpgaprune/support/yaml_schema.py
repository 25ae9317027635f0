"""YAML files validated by a pydantic schema: the run config, boards. Every error is one line:
`file:line: key.path: what was found; what is allowed` (with a "did you mean" for an unknown key)."""

import difflib
import typing
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError


class Strict(BaseModel):
    """A schema section: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid")


MAX_VALUES = 100_000  # values in a YAML file once its aliases are expanded; a run config has a few hundred
MAX_BYTES = 4 << 20  # a YAML file fpgaprune reads is kilobytes


def _children(node) -> list:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def expanded_size(root) -> float:
    """How many values the composed document holds once its aliases are expanded, counted once per node (linear
    in the file, however far `*aliases` multiply it); infinite when an alias refers to a node holding it."""
    sizes, counting, stack = {}, set(), [(root, False)]
    while stack:
        node, closing = stack.pop()
        if closing:
            counting.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes[id(child)] for child in _children(node))
        elif id(node) in counting:
            return float("inf")
        elif id(node) not in sizes:
            counting.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in _children(node))
    return sizes[id(root)]


def key_lines(root) -> dict:
    """{key path tuple: line number} from the composed document's node marks, walked in document order; a node
    reached again through an alias is not walked again (its keys keep the lines under its &anchor)."""
    lines, seen, stack = {}, set(), [(root, ())]
    while stack:
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            entries = [((*path, key.value), key.start_mark, value) for key, value in node.value]
        elif isinstance(node, yaml.SequenceNode):
            entries = [((*path, i), item.start_mark, item) for i, item in enumerate(node.value)]
        else:
            entries = []
        for where, mark, _ in entries:
            lines[where] = mark.line + 1
        stack.extend((child, where) for where, _, child in reversed(entries))
    return lines


class Located:
    """Where keys of a YAML file are: `at(path)` is the `file:line` prefix of an error about that key."""

    def __init__(self, source: str, lines: dict):
        self.source, self.lines = source, lines

    def at(self, *path) -> str:
        line = next((self.lines[path[:n]] for n in range(len(path), 0, -1) if path[:n] in self.lines), None)
        prefix = f"{self.source}:{line}" if line else self.source
        return f"{prefix}: {'.'.join(str(p) for p in path)}"


def _section(annotation):
    """(the schema class inside a field's annotation: X, X | None or dict[str, X], or None; whether the field
    is a mapping whose keys are names, not schema keys)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    mapping = typing.get_origin(annotation) is dict
    for arg in typing.get_args(annotation):
        found, inner = _section(arg)
        if found is not None:
            return found, mapping or inner
    return None, False


def _allowed(schema, path) -> list:
    """The keys allowed where `path` ends (the last part is the offending key)."""
    parts = list(path[:-1])
    while parts:
        field = schema.model_fields.get(parts.pop(0)) if isinstance(parts[0], str) else None
        schema, named = _section(field.annotation) if field is not None else (None, False)
        if schema is None:
            return []
        if named and parts:  # a user's name (a layer), then that entry's keys
            parts.pop(0)
    return list(schema.model_fields)


def _message(error: dict, schema, located: Located) -> str:
    path = tuple(error["loc"])
    where = located.at(*path)
    if error["type"] == "extra_forbidden":
        allowed = _allowed(schema, path)
        close = difflib.get_close_matches(str(path[-1]), allowed, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        return f"{where}: unknown key; {hint}allowed: {', '.join(allowed)}"
    if error["type"] == "missing":
        return f"{where}: missing; this key is required"
    if error["type"] == "value_error":  # a validator's own words, names as they are spelt
        return f"{where}: found {error.get('input')!r}; {str(error['ctx']['error'])}"
    return f"{where}: found {error.get('input')!r}; {error['msg'].lower()}"


def _first(errors: list) -> dict:
    """The error to report: an unknown key first (its "did you mean" often explains a missing one)."""
    return next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])


def parse_yaml(text: str, source: str, schema, error_class):
    """(`schema` instance, Located) from YAML text, or `error_class` with one line naming file, line and key."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)  # nodes only: aliases are not expanded yet
        values = 0 if root is None else expanded_size(root)
        if values == float("inf"):
            raise error_class(f"{source}: an *alias refers to a value that holds it (a cycle); refused")
        if values > MAX_VALUES:
            raise error_class(
                f"{source}: its &anchors and *aliases expand to {values:,} values, over the "
                f"{MAX_VALUES:,} a config may hold (a run config has a few hundred)"
            )
        raw, lines = yaml.safe_load(text), {} if root is None else key_lines(root)
    except yaml.YAMLError as error:
        raise error_class(f"{source}: not valid YAML ({str(error).splitlines()[0]})") from None
    except RecursionError:
        raise error_class(f"{source}: nests too deep to parse (a run config nests a few levels)") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise error_class(f"{source}: expected a mapping at the top level, found {type(raw).__name__}")
    located = Located(source, lines)
    return validate_mapping(raw, schema, error_class, located), located


def validate_mapping(raw: dict, schema, error_class, located: Located):
    """`schema` instance of `raw`, or `error_class` with one line naming the key (and its line, when known)."""
    try:
        return schema.model_validate(raw)
    except ValidationError as error:
        raise error_class(_message(_first(error.errors()), schema, located)) from None


def load_yaml_file(path, schema, error_class, what: str = "file"):
    """`parse_yaml` of the file at `path`; an unreadable file is one `error_class` line too."""
    path = Path(path)
    try:
        with path.open("rb") as handle:  # bounded: a device or a huge file is not read to its end
            raw = handle.read(MAX_BYTES + 1)
        if len(raw) > MAX_BYTES:
            raise error_class(f"{path}: the {what} is over {MAX_BYTES >> 20} MiB; a YAML {what} is kilobytes")
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise error_class(f"{path}: cannot read the {what} ({getattr(error, 'strerror', None) or error})") from None
    return parse_yaml(text, str(path), schema, error_class)
