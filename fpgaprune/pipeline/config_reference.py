"""The config reference, generated from the pydantic schema (`schema.py`): every key with its type, default,
allowed values and the comment written beside it in the code. The docs site builds its config page from this
(`docs/hooks.py`), so the page cannot drift from the schema."""

import ast
import inspect
import typing
from pathlib import Path

from pydantic import BaseModel

from fpgaprune.pipeline import schema

CONSTRAINTS = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}


def field_comments(module=schema) -> dict:
    """{(class name, field name): the comment beside the field, or on the lines just above it}."""
    lines = Path(inspect.getsourcefile(module)).read_text().split("\n")
    comments = {}
    for node in ast.walk(ast.parse("\n".join(lines))):
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                text = [lines[item.lineno - 1].partition("  # ")[2].strip()]
                above = item.lineno - 2
                while above >= 0 and lines[above].strip().startswith("#"):
                    text.insert(0, lines[above].strip().lstrip("#").strip())
                    above -= 1
                comments[(node.name, item.target.id)] = " ".join(t for t in text if t)
    return comments


def type_text(annotation) -> str:
    """A field's type as a reader writes it in YAML: `one of a, b`, `list of int`, `... or null`."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:  # PositiveInt: int with a Gt(0)
        return " ".join([type_text(args[0]), *(_limits(item) for item in args[1:] if _limits(item))])
    if origin is typing.Literal:
        return "one of " + ", ".join(f"`{a}`" for a in args)
    if origin is typing.Union:
        parts = [type_text(a) for a in args if a is not type(None)]
        return " or ".join(parts) + (" or null" if type(None) in args else "")
    if origin in (list, tuple):
        return "list of " + ", ".join(type_text(a) for a in args)
    if origin is dict:
        return f"mapping {type_text(args[0])} → {type_text(args[1])}" if args else "mapping"
    if _is_section(annotation):
        return "section"
    name = getattr(annotation, "__name__", str(annotation))
    return {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}.get(name, name)


def _limits(item) -> str:
    """A pydantic constraint (`Ge(0)`, `Gt(0)`, ...) as `>= 0`; '' for anything else."""
    return ", ".join(
        f"{sign} {getattr(item, key)}" for key, sign in CONSTRAINTS.items() if getattr(item, key, None) is not None
    )


def limits_text(field) -> str:
    """The numeric limits pydantic checks on a field (`Field(ge=0)`), as `>= 0`."""
    return ", ".join(text for text in map(_limits, field.metadata) if text)


def config_rows(model=schema.RunConfig, prefix: str = "", comments: dict | None = None) -> list[dict]:
    """One row per key in the schema's order, a section's plain keys before its sub-sections."""
    comments = field_comments() if comments is None else comments
    rows = []
    fields = sorted(model.model_fields.items(), key=lambda item: _is_section(item[1].annotation))
    for name, field in fields:
        key = f"{prefix}{name}"
        annotation = field.annotation
        default = field.get_default(call_default_factory=True)
        section = _is_section(annotation)
        rows.append(
            {
                "key": key,
                "type": type_text(annotation),
                "limits": limits_text(field),
                "default": None if section else default,
                "section": section,
                "comment": comments.get((model.__name__, name), ""),
                "model": annotation if section else None,
            }
        )
        if section:
            rows += config_rows(annotation, f"{key}.", comments)
    return rows


def _is_section(annotation) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _default_text(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict) and value:
        return "<br>".join(f"`{k}: {v}`" for k, v in value.items())
    return f"`{value}`" if value not in ([], {}) else f"`{value}` (empty)"


def config_reference_markdown() -> str:
    """The config page's tables: the top-level keys, then one table per section, every key with its type,
    default and what it does."""
    header = ["| key | type | default | what it does |", "| --- | --- | --- | --- |"]
    out = ["### Top level", "", *header]
    for row in config_rows():
        if row["section"]:
            doc = inspect.getdoc(row["model"]) or ""
            out += ["", f"### `{row['key']}`", "", " ".join(t for t in (doc, row["comment"]) if t), "", *header]
            continue
        kind = row["type"] + (f" ({row['limits']})" if row["limits"] else "")
        out.append(
            f"| `{row['key']}` | {kind} | {_default_text(row['default'])} | {row['comment'].replace('|', '/')} |"
        )
    return "\n".join(out) + "\n"
