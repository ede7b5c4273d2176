"""OpenAI chat messages (as tau-bench and most tool-calling agents record them).

* ``system`` and ``developer`` messages are skipped, but for a harness's note that it
  condensed the context ("[Context summary #2] ..."): an agent message of that role.
* ``user`` starts a new turn.
* ``assistant`` with ``tool_calls`` issues its calls: one call is a plain tool call,
  two or more are a :class:`~loopguard.traces.model.Batch`. Arguments are kept as
  given (OpenAI sends a JSON string). LangChain's ``{"name", "args", "id"}`` entries
  and the legacy ``function_call`` field are read too. An assistant message with
  content and no calls is an agent message (``name`` is the agent). ``usage``
  on an assistant message becomes a model call before its other items.
* ``tool`` (and legacy ``function``) messages are results, paired to their call by
  ``tool_call_id``; without one, to the oldest unanswered call of the same ``name``,
  else to the oldest unanswered call. ``status: "error"`` or ``is_error: true`` marks
  a failure; otherwise the error flag is unknown (``None``).

Locations in errors are ``message N`` (0-based index into the message list).
"""

from __future__ import annotations

from typing import Any

from loopguard.calls import ToolCall, ToolResult
from loopguard.observations import is_context_summary
from loopguard.traces.model import (
    AgentMessage,
    Batch,
    MalformedTrace,
    ModelCall,
    TraceItem,
    TraceRun,
    TraceToolCall,
    TraceToolResult,
    UserMessage,
    type_name,
)
from loopguard.traces.steps import message_text, usage_from

SKIPPED_ROLES = frozenset({"system", "developer"})
RESULT_ROLES = frozenset({"tool", "function"})


def is_message(value: Any) -> bool:
    """True when ``value`` looks like one chat message."""
    return isinstance(value, dict) and isinstance(value.get("role"), str)


class _Pending:
    """Calls still waiting for their result, findable by id and by name."""

    def __init__(self) -> None:
        self.calls: list[TraceToolCall] = []

    def add(self, item: TraceToolCall) -> None:
        self.calls.append(item)

    def take(self, call_id: Any, name: Any, location: str) -> TraceToolCall:
        if call_id is not None:
            for index, item in enumerate(self.calls):
                if item.call.id == call_id:
                    return self.calls.pop(index)
            raise MalformedTrace(location, f"'tool_call_id' {call_id!r} matches no unanswered tool call")
        if not self.calls:
            raise MalformedTrace(location, "a tool result with no unanswered tool call before it")
        for index, item in enumerate(self.calls):
            if item.call.name == name:
                return self.calls.pop(index)
        return self.calls.pop(0)


def _tool_call(entry: Any, agent: str | None, step: int, location: str) -> TraceToolCall:
    if not isinstance(entry, dict):
        raise MalformedTrace(location, f"must be an object, got {type_name(entry)}")
    function = entry.get("function")
    if function is not None:
        if not isinstance(function, dict):
            raise MalformedTrace(location, f"'function' must be an object, got {type_name(function)}")
        name, arguments = function.get("name"), function.get("arguments", {})
        name_key = "function.name"
    else:
        name, arguments = entry.get("name"), entry.get("args", entry.get("arguments", {}))
        name_key = "name"
    if not isinstance(name, str) or not name:
        raise MalformedTrace(location, f"{name_key!r} must be a non-empty string, got {type_name(name)}")
    if arguments is None:
        arguments = {}
    call_id = entry.get("id")
    if call_id is not None and not isinstance(call_id, str):
        raise MalformedTrace(location, f"'id' must be a string, got {type_name(call_id)}")
    return TraceToolCall(call=ToolCall(name=name, arguments=arguments, id=call_id, agent=agent), step=step)


def _error_flag(message: dict[str, Any]) -> bool | None:
    if isinstance(message.get("is_error"), bool):
        return message["is_error"]
    status = message.get("status")
    if isinstance(status, str):
        return status.lower() == "error"
    return None


def parse_messages(run: TraceRun, messages: Any) -> TraceRun:
    """Fill ``run`` from a chat message list; raises :class:`MalformedTrace` on the first bad message."""
    run.format = "chat"
    if not isinstance(messages, list):
        raise MalformedTrace(None, f"'messages' must be a list, got {type_name(messages)}")
    items: list[TraceItem] = run.items
    pending = _Pending()
    calls = 0
    for index, message in enumerate(messages):
        location = f"message {index}"
        if not isinstance(message, dict):
            raise MalformedTrace(location, f"must be an object, got {type_name(message)}")
        role = message.get("role")
        if not isinstance(role, str):
            raise MalformedTrace(location, f"'role' must be a string, got {type_name(role)}")
        if role in SKIPPED_ROLES:
            text = message_text(message.get("content"))
            if is_context_summary(text):
                # A harness's note that it condensed the context, said as a system message
                # mid-run: the guard judges the laps it parts (see Cycle.condensed).
                items.append(AgentMessage(agent=role, text=text, step=max(calls - 1, 0)))
            continue
        if role == "user":
            items.append(UserMessage(text=message_text(message.get("content")), step=max(calls - 1, 0)))
        elif role == "assistant":
            agent = message.get("name") if isinstance(message.get("name"), str) else None
            entries = message.get("tool_calls") or []
            if not isinstance(entries, list):
                raise MalformedTrace(location, f"'tool_calls' must be a list, got {type_name(entries)}")
            if not entries and isinstance(message.get("function_call"), dict):
                entries = [{"function": message["function_call"]}]
            issued = [
                _tool_call(entry, agent, calls + offset, f"{location}: tool call {offset}")
                for offset, entry in enumerate(entries)
            ]
            usage = message.get("usage")
            if isinstance(usage, dict):
                # the model call that issued the calls belongs to the first of them
                step = calls if issued else max(calls - 1, 0)
                items.append(ModelCall(usage=usage_from(usage, location), step=step))
            calls += len(issued)
            for item in issued:
                pending.add(item)
            if len(issued) == 1:
                items.append(issued[0])
            elif issued:
                items.append(Batch(calls=tuple(issued)))
            else:
                text = message_text(message.get("content"))
                if text:
                    items.append(AgentMessage(agent=agent, text=text, step=max(calls - 1, 0)))
        elif role in RESULT_ROLES:
            call = pending.take(message.get("tool_call_id"), message.get("name"), location)
            result = ToolResult(output=message.get("content"), error=_error_flag(message))
            items.append(TraceToolResult(call=call.call, result=result, step=call.step))
        else:
            raise MalformedTrace(location, f"unknown role {role!r} (expected system, user, assistant or tool)")
    run.steps = calls
    return run
