"""The vocabulary of an agent run as small frozen types.

A :class:`ToolCall` is one request by the model to run a tool, a :class:`ToolResult`
is what came back, and a :class:`Step` is one observation a session records. Adapters
and trace readers translate their framework's objects into these; everything below
the adapters (session, detectors, rules) sees only these types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Mapping


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One pending tool call.

    Args:
        name: the tool's name as the model called it.
        arguments: the call's arguments, normally a JSON object. Any value is accepted;
            odd values (non-JSON types, cycles, NaN, huge strings) are canonicalised by
            :mod:`loopguard.signature` and never raise.
        id: the provider's tool-call id, if any (used to pair results with calls).
        agent: the agent issuing the call, for multi-agent runs.
    """

    name: str
    arguments: Any = field(default_factory=dict)
    id: str | None = None
    agent: str | None = None


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool call returned.

    Args:
        output: the tool's output (text, or any JSON-like value).
        error: True when the tool reported a failure. When unknown (``None``) the
            failure detector infers it from the output's wording.
        duration_ms: wall time of the call in milliseconds, if known.
    """

    output: Any = None
    error: bool | None = None
    duration_ms: float | None = None


class StepKind(str, Enum):
    """What one recorded step observed."""

    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    MODEL_CALL = "model_call"
    HANDOFF = "handoff"
    AGENT_MESSAGE = "agent_message"
    USER_MESSAGE = "user_message"


@dataclass(frozen=True, slots=True)
class ModelUsage:
    """Token usage of one model call (counts of tokens) and its cost in USD, if known."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    model: str | None = None

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class Handoff:
    """Control passing from one agent (``caller``) to another (``agent``)."""

    agent: str
    caller: str | None = None


Arguments = Mapping[str, Any]
