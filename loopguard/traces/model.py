"""The neutral trace model every trace format is read into.

A :class:`TraceRun` is one recorded agent run as an ordered list of items: user
messages, tool calls (single, or grouped in a :class:`Batch` when one assistant
message issued several), tool results paired to their call, handoffs, agent
messages and model usage. Replay walks the items in order and feeds a session.

Every item carries ``step``: the 0-based index that reports use for it. For the
step format it is the index of the input step the item came from; for chat traces
it is the index of the tool call (a call and its result share it); model usage of
an assistant message that issues calls gets its first call's index, and any other
item the index of the latest call before it (0 before the first call), so that a
decision on it reads as "right after that call's output" and stays in range.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

from loopguard.calls import Handoff, ModelUsage, ToolCall, ToolResult


@dataclass(frozen=True, slots=True)
class TraceError:
    """Why a trace (or one run of it) could not be read.

    ``str()`` gives one line naming what is known, outermost first, e.g.
    ``trace.json: run 'abc': step 3: 'args' must be an object, got list``.

    Attributes:
        message: what is wrong.
        file: the file as the user named it, if known.
        run: the run id, if the error is inside one run.
        location: where inside the run or file (``step 3``, ``message 5``, ``line 4``).
    """

    message: str
    file: str | None = None
    run: str | None = None
    location: str | None = None

    def __str__(self) -> str:
        parts = []
        if self.file is not None:
            parts.append(self.file)
        if self.run is not None:
            parts.append(f"run {self.run!r}")
        if self.location is not None:
            parts.append(self.location)
        parts.append(self.message)
        return ": ".join(parts)


class TraceFileError(Exception):
    """A whole trace file could not be read: invalid JSON or an unrecognised shape.

    Attributes:
        error: the :class:`TraceError` (its ``file`` is set; line and column are in
            ``location`` for JSON syntax errors).
    """

    def __init__(self, error: TraceError) -> None:
        super().__init__(str(error))
        self.error = error


class TraceIOError(TraceFileError):
    """A trace file could not be opened or read (missing, a directory, no permission)."""


@dataclass(frozen=True, slots=True)
class UserMessage:
    """A user message: it starts a new turn."""

    text: str
    step: int = 0


@dataclass(frozen=True, slots=True)
class TraceToolCall:
    """One tool call (arguments kept exactly as recorded, e.g. a JSON string)."""

    call: ToolCall
    step: int = 0


@dataclass(frozen=True, slots=True)
class Batch:
    """The parallel tool calls of one assistant message (two or more)."""

    calls: tuple[TraceToolCall, ...]

    @property
    def step(self) -> int:
        return self.calls[0].step if self.calls else 0


@dataclass(frozen=True, slots=True)
class TraceToolResult:
    """The result of ``call`` (the same object as in the call's item).

    ``result.error`` is ``None`` when the trace does not say whether the call failed.
    """

    call: ToolCall
    result: ToolResult
    step: int = 0


@dataclass(frozen=True, slots=True)
class TraceHandoff:
    """Control passing from ``handoff.caller`` to ``handoff.agent``; ``message`` is what the
    agent said on receiving control (the step's output), if anything."""

    handoff: Handoff
    step: int = 0
    message: str | None = None


@dataclass(frozen=True, slots=True)
class AgentMessage:
    """A message of an agent that is not a tool call (e.g. a final answer)."""

    agent: str | None
    text: str
    step: int = 0


@dataclass(frozen=True, slots=True)
class ModelCall:
    """Token usage (and cost, if recorded) of one model call."""

    usage: ModelUsage
    step: int = 0


TraceItem = Union[UserMessage, TraceToolCall, Batch, TraceToolResult, TraceHandoff, AgentMessage, ModelCall]


@dataclass(slots=True)
class TraceRun:
    """One recorded run in the neutral model.

    Attributes:
        run_id: the run's id (from the trace, or derived from the file name).
        items: the observations in order. For a run with an ``error`` it holds what
            was read before the error, and replay does not use it.
        meta: the run's other top-level fields (``label``, ``acceptable_window``,
            ``reward``, ...), unchanged.
        error: why the run could not be read, or ``None``.
        format: ``"steps"`` or ``"chat"``.
        steps: the number of input steps reports index into: the steps of a
            step-format run, the tool calls of a chat run.
    """

    run_id: str
    items: list[TraceItem] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    error: TraceError | None = None
    format: str = "steps"
    steps: int = 0

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Every tool call of the run in order, batches flattened."""
        calls: list[ToolCall] = []
        for item in self.items:
            if isinstance(item, TraceToolCall):
                calls.append(item.call)
            elif isinstance(item, Batch):
                calls.extend(entry.call for entry in item.calls)
        return calls


class MalformedTrace(Exception):
    """Raised by the format parsers for one bad step or message; the reader turns it
    into a :class:`TraceError` on the run and goes on with the next run."""

    def __init__(self, location: str | None, message: str) -> None:
        super().__init__(message)
        self.location = location
        self.message = message


def type_name(value: Any) -> str:
    """The JSON name of ``value``'s type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__
