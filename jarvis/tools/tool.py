"""One registered tool: its function, its arguments' schema and how a call's arguments
are checked (a pydantic model, or a JSON schema checked with jsonschema, which loads with the
first such tool: only MCP servers' tools have one)."""

from __future__ import annotations

import copy
import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from jarvis.llm.types import ToolSpec
from jarvis.tools.schema import (
    describe_schema_errors,
    describe_validation_error,
    literal_fields,
    schema_of,
)

if TYPE_CHECKING:
    import jsonschema

    from jarvis.tools.context import ToolContext

ToolFn = Callable[[Any, "ToolContext"], Any]


@dataclass(frozen=True)
class Tool:
    """One registered tool."""

    name: str
    description: str
    args_model: type[BaseModel] | None
    fn: ToolFn
    timeout_s: float | None = None
    requires: tuple[str, ...] = ()
    audit_fields: frozenset[str] = field(default_factory=frozenset)
    json_schema: dict[str, Any] | None = None
    """The arguments' JSON schema when the tool brings its own (no ``args_model``)."""
    origin: str = "builtin"
    """Where the tool comes from: builtin, ``mcp:SERVER``, ``skill:FILE``."""
    moves_input: bool = False
    """It sends mouse or keyboard input to the desktop."""
    settles: bool = False
    """The screen must settle after it before the next call (what moves input does)."""
    control: bool = False
    """It ends the step: the calls after it in the same reply are not run."""

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.fn)

    @functools.cached_property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments (generated once)."""
        if self.json_schema is not None:
            return self.json_schema
        assert self.args_model is not None
        return schema_of(self.args_model)

    @functools.cached_property
    def _validator(self) -> jsonschema.protocols.Validator:
        import jsonschema

        schema = self.json_schema or {}
        return jsonschema.validators.validator_for(schema)(schema)

    def validate(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        """The arguments the function gets; raises ValueError saying what is wrong."""
        if self.args_model is not None:
            try:
                return self.args_model.model_validate(arguments, context={"tool_context": context})
            except ValidationError as exc:
                raise ValueError(describe_validation_error(exc)) from exc
        try:
            problem = describe_schema_errors(self._validator.iter_errors(arguments))
        except Exception as exc:  # a schema jsonschema cannot apply: refuse, never raise
            message = f"the arguments cannot be checked against this tool's schema: {exc}"
            raise ValueError(message) from exc
        if problem:
            raise ValueError(problem)
        return arguments

    def spec(self) -> ToolSpec:
        """The tool as offered to the model (a fresh copy each time)."""
        return ToolSpec(
            name=self.name, description=self.description, parameters=copy.deepcopy(self.parameters)
        )


def remote_refs(node: Any) -> list[str]:
    """``$ref`` values that point outside the schema document."""
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("$ref", "$dynamicRef") and isinstance(value, str):
                if not value.startswith("#"):
                    found.append(value)
            else:
                found += remote_refs(value)
    elif isinstance(node, list):
        for value in node:
            found += remote_refs(value)
    return found


def model_tool(
    name: str,
    fn: ToolFn,
    args_model: type[BaseModel],
    description: str | None = None,
    *,
    timeout_s: float | None = None,
    requires: Sequence[str] = (),
    audit_fields: Sequence[str] = (),
    origin: str = "builtin",
    moves_input: bool = False,
    settles: bool | None = None,
    control: bool = False,
) -> Tool:
    """A tool with a pydantic arguments model (``extra="forbid"``); its description
    defaults to the function's docstring. ValueError for a model or description missing."""
    if args_model.model_config.get("extra") != "forbid":
        raise ValueError(f"arguments model of '{name}' must set extra='forbid'")
    text = description or inspect.getdoc(fn) or ""
    if not text:
        raise ValueError(f"tool '{name}' needs a description")
    return Tool(
        name=name,
        description=text.strip(),
        args_model=args_model,
        fn=fn,
        timeout_s=timeout_s,
        requires=tuple(requires),
        audit_fields=frozenset(audit_fields) | literal_fields(args_model),
        origin=origin,
        moves_input=moves_input,
        settles=moves_input if settles is None else settles,
        control=control,
    )


def schema_tool(
    name: str,
    fn: ToolFn,
    schema: dict[str, Any],
    description: str,
    *,
    timeout_s: float | None = None,
    origin: str,
) -> Tool:
    """A tool whose arguments a JSON schema describes (checked with jsonschema; the
    function gets them as a dict). ValueError for an invalid schema or one that refers
    outside itself (never fetched)."""
    import jsonschema

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ValueError(f"tool '{name}' has an invalid input schema: {exc.message}") from exc
    remote = remote_refs(schema)
    if remote:
        raise ValueError(f"tool '{name}' has a schema that refers outside itself: {remote[0]}")
    return Tool(
        name=name,
        description=description.strip() or name,
        args_model=None,
        fn=fn,
        timeout_s=timeout_s,
        json_schema=copy.deepcopy(schema),
        origin=origin,
    )
