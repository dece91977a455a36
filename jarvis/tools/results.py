"""What a tool call ends with: a :class:`ToolResult`, and the error codes it may carry.

Two kinds of failure say something about what happened on the desktop, so each has one
constructor and one wording:

- A call that was **not run** (:meth:`ToolResult.not_run`) carries :data:`NOT_RUN`, which
  is :data:`NOT_ALLOWED` (-32006), wherever it was stopped: cut off by the end of its step
  (an earlier call failed, a control tool or a screenshot ended the step), cut off by the
  output limit while the model was writing it, over the task's tool-call limit, held for
  approval and denied, unanswered or with nobody to answer. In every case Jarvis decided
  not to run it and nothing of it happened, which is what -32006 says; -32005 would tell
  the model that the tool itself broke. Its message starts with ``not run:``.
- A call that **timed out** (:meth:`ToolResult.timed_out`, -32003) was started and then
  abandoned: it may still have had its effect, in part or in full, and its message says so,
  so the model looks before doing it again.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from jarvis.llm.types import ImagePart, ToolResultPart
from jarvis.redaction import redact, redact_value

UNKNOWN_TOOL = -32601
INVALID_PARAMS = -32602
TIMEOUT = -32003
RATE_LIMITED = -32004
INTERNAL = -32005
NOT_ALLOWED = -32006
NOT_RUN = NOT_ALLOWED
"""The code of every call that was not run (see the module docstring)."""

NOT_RUN_PREFIX = "not run: "
MAY_HAVE_HAPPENED = "it may still have happened, in part or in full: check before doing it again"


class ToolError(BaseModel):
    code: int
    message: str


class ToolResult(BaseModel):
    """``{ok: true, data}`` or ``{ok: false, error: {code, message}}``.

    ``images`` (an MCP tool's picture) are not part of the JSON text: the loop sends them
    to the model as images right after the tool results, in the order of the calls.
    """

    ok: bool
    data: Any = None
    error: ToolError | None = None
    images: list[ImagePart] = Field(default_factory=list, exclude=True)
    """Pictures a tool returns (an MCP image): sent to the model after the tool results."""
    image: ImagePart | None = Field(default=None, exclude=True)
    """A picture inside the tool result itself (Claude's zoom); never in the JSON text."""

    @classmethod
    def success(cls, data: Any = None) -> ToolResult:
        return cls(ok=True, data=data)

    @classmethod
    def failure(cls, code: int, message: str) -> ToolResult:
        return cls(ok=False, error=ToolError(code=code, message=message))

    @classmethod
    def not_run(cls, reason: str) -> ToolResult:
        """A call Jarvis did not run, and why (a reason that already starts with
        ``not run:`` is taken as it is)."""
        message = reason if reason.startswith(NOT_RUN_PREFIX) else NOT_RUN_PREFIX + reason
        return cls.failure(NOT_RUN, message)

    @classmethod
    def timed_out(cls, what: str) -> ToolResult:
        """A call abandoned at its time limit: ``what`` says which limit; the message adds
        that it may still have happened."""
        return cls.failure(TIMEOUT, f"{what}; {MAY_HAVE_HAPPENED}")

    def with_note(self, note: str) -> ToolResult:
        """This result with ``note`` for the model: in the data (``note``), or after the
        error message of a failure."""
        if self.error is not None:
            error = self.error.model_copy(update={"message": f"{self.error.message} ({note})"})
            return self.model_copy(update={"error": error})
        if isinstance(self.data, dict):
            return self.model_copy(update={"data": {**self.data, "note": note}})
        data = {"note": note} if self.data is None else {"result": self.data, "note": note}
        return self.model_copy(update={"data": data})

    def to_content(self) -> str:
        """The JSON text sent back to the model."""
        return json.dumps(self.model_dump(mode="json", exclude_none=True), ensure_ascii=False)

    def to_part(self, call_id: str, name: str) -> ToolResultPart:
        return ToolResultPart(
            call_id=call_id, name=name, ok=self.ok, content=self.to_content(), image=self.image
        )


class ToolFailure(Exception):
    """Raised by a tool for an error the model should see with a specific code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def scrubbed(result: ToolResult, secrets: set[str]) -> ToolResult:
    """The result with every known secret value replaced, in its data and its message."""
    if not secrets:
        return result
    error = result.error
    if error is not None:
        error = ToolError(code=error.code, message=redact(error.message, secrets))
    return ToolResult(
        ok=result.ok,
        data=redact_value(result.data, secrets),
        error=error,
        images=result.images,
        image=result.image,
    )
