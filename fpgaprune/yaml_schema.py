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


def key_lines(text: str) -> dict:
    """{key path tuple: line number} from the YAML's node marks (composed with the safe loader, not built)."""
    lines = {}

    def walk(node, path):
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                lines[path + (key.value,)] = key.start_mark.line + 1
                walk(value, path + (key.value,))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                lines[path + (i,)] = item.start_mark.line + 1
                walk(item, path + (i,))

    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if root is not None:
        walk(root, ())
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
    return f"{where}: found {error.get('input')!r}; {error['msg'].lower()}"


def _first(errors: list) -> dict:
    """The error to report: an unknown key first (its "did you mean" often explains a missing one)."""
    return next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])


def parse_yaml(text: str, source: str, schema, error_class):
    """(`schema` instance, Located) from YAML text, or `error_class` with one line naming file, line and key."""
    try:
        raw = yaml.safe_load(text)
        lines = key_lines(text)
    except yaml.YAMLError as error:
        raise error_class(f"{source}: not valid YAML ({str(error).splitlines()[0]})") from None
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
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise error_class(f"{path}: cannot read the {what} ({getattr(error, 'strerror', None) or error})") from None
    return parse_yaml(text, str(path), schema, error_class)
