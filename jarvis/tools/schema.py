"""JSON schemas generated from a tool's pydantic arguments model, and validation errors
told in words the model can act on."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ValidationError

_MAX_MESSAGE = 1500
_MAX_GOT = 60


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of an arguments model, without pydantic's ``title`` noise."""
    schema = _strip_titles(model.model_json_schema())
    schema.setdefault("properties", {})
    schema["additionalProperties"] = False
    return schema


def _strip_titles(node: Any) -> Any:
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):
            out[key] = {name: _strip_titles(sub) for name, sub in value.items()}
        else:
            out[key] = _strip_titles(value)
    return out


def literal_fields(model: type[BaseModel]) -> frozenset[str]:
    """Names of fields whose values come from a closed set (safe to log verbatim)."""
    names = set()
    for name, info in model.model_fields.items():
        annotation = info.annotation
        if get_origin(annotation) is Literal or any(
            get_origin(a) is Literal for a in get_args(annotation)
        ):
            names.add(name)
    return frozenset(names)


def describe_validation_error(exc: ValidationError) -> str:
    """One line per problem, e.g. ``x: Input should be a valid integer (got 'abc')``."""
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        msg = err["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
        if err["type"] not in ("missing", "extra_forbidden") and err["loc"]:
            got = repr(err.get("input"))
            if len(got) > _MAX_GOT:
                got = got[: _MAX_GOT - 3] + "..."
            msg = f"{msg} (got {got})"
        elif err["type"] == "extra_forbidden":
            msg = f"{msg}; this tool takes no argument '{loc}'"
        parts.append(f"{loc}: {msg}")
    text = "; ".join(parts)
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 3] + "..."


def describe_schema_errors(errors: Iterable[Any]) -> str:
    """jsonschema errors told like pydantic's: ``field: why`` per problem ('' when none)."""
    parts = []
    for err in sorted(errors, key=lambda e: [str(p) for p in e.absolute_path]):
        loc = ".".join(str(p) for p in err.absolute_path) or "(arguments)"
        message = str(err.message)
        if len(message) > 200:
            message = message[:197] + "..."
        parts.append(f"{loc}: {message}")
    text = "; ".join(parts)
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 3] + "..."
