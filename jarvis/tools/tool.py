"""One registered tool: its function, its arguments' schema and how a call's arguments
are checked (a pydantic model, or a JSON schema checked with jsonschema)."""

from __future__ import annotations

import copy
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jsonschema
from pydantic import BaseModel, ValidationError

from jarvis.llm.types import ToolSpec
from jarvis.tools.schema import describe_schema_errors, describe_validation_error, schema_of

if TYPE_CHECKING:
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
