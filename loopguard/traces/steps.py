"""The simple step format (as in ``data/cases``).

A run is ``{"run_id": ..., "steps": [...], ...other fields kept as meta}``. Each step
is an object; these keys are read, first alias present wins:

==========  ==============================================
field       keys
==========  ==============================================
tool        ``tool``, ``tool_name``, ``name``
arguments   ``args``, ``arguments``, ``input``, ``tool_input``
output      ``output``, ``result``, ``observation``
error       ``error``, ``is_error``, ``failed``
caller      ``caller``, ``from``, ``from_agent``
agent       ``agent``, ``agent_name``
call id     ``id``, ``call_id``, ``tool_call_id``
user text   ``user``, ``user_message``
usage       ``usage`` (``input_tokens``/``prompt_tokens``, ``output_tokens``/``completion_tokens``, ``cost_usd``, ``model``)
==========  ==============================================

A step becomes, in this order: a user message (``user``), model usage (``usage``),
a handoff caller → agent (``caller``), then a tool call and its result (``tool``).
A step with neither ``tool`` nor ``caller`` but with an output is an agent message; a
step that holds call arguments (``args``, ``arguments``, ``tool_input``; not null or
empty) but no ``tool``, and is no handoff, user message or model call, is an error.
``error`` may be a boolean, null (unknown) or a string (an error message: the call
failed, and the string is the output when there is none; ``"true"``/``"yes"``/``"1"`` and
``"false"``/``"no"``/``"0"`` are the booleans, and a blank one, ``"null"`` or ``"none"`` is
unknown). Other keys are ignored.
"""

from __future__ import annotations

import difflib
import json
from typing import Any, Mapping, Sequence

from loopguard.calls import Handoff, ModelUsage, ToolCall, ToolResult
from loopguard.signature import parse_arguments
from loopguard.traces.model import (
    AgentMessage,
    MalformedTrace,
    ModelCall,
    TraceHandoff,
    TraceItem,
    TraceRun,
    TraceToolCall,
    TraceToolResult,
    UserMessage,
    type_name,
)

TOOL_KEYS = ("tool", "tool_name", "name")
ARGS_KEYS = ("args", "arguments", "input", "tool_input")
OUTPUT_KEYS = ("output", "result", "observation")
ERROR_KEYS = ("error", "is_error", "failed")
CALLER_KEYS = ("caller", "from", "from_agent")
AGENT_KEYS = ("agent", "agent_name")
ID_KEYS = ("id", "call_id", "tool_call_id")
USER_KEYS = ("user", "user_message")
#: Agent names of a message without a tool call that are the user's: ``{"agent": "user", "output": "..."}``.
USER_AGENTS = frozenset({"user", "human"})

_ABSENT = object()
KNOWN_KEYS = frozenset((*TOOL_KEYS, *ARGS_KEYS, *OUTPUT_KEYS, *ERROR_KEYS, *CALLER_KEYS, *AGENT_KEYS, *ID_KEYS, *USER_KEYS, "usage"))


def _check_keys(step: Mapping[str, Any], location: str) -> None:
    """A key close to a known one is a typo (``tol``, ``arg``, ``outptu``): an error, since
    it would silently drop the tool, its arguments or its output. Other keys are metadata."""
    for key in step:
        if isinstance(key, str) and key not in KNOWN_KEYS:
            close = difflib.get_close_matches(key, KNOWN_KEYS, n=1, cutoff=0.75)
            if close:
                raise MalformedTrace(location, f"unknown key {key!r} (did you mean {close[0]!r}?)")


def is_step(value: Any) -> bool:
    """True when ``value`` looks like one step of this format."""
    if not isinstance(value, dict) or "role" in value:
        return False
    return any(key in value for key in (*TOOL_KEYS, *CALLER_KEYS, *OUTPUT_KEYS, *AGENT_KEYS, *USER_KEYS))


def _first(step: Mapping[str, Any], keys: Sequence[str]) -> tuple[str, Any]:
    for key in keys:
        if key in step:
            return key, step[key]
    return keys[0], _ABSENT


def _optional_text(step: Mapping[str, Any], keys: Sequence[str], location: str) -> str | None:
    key, value = _first(step, keys)
    if value is _ABSENT or value is None:
        return None
    if not isinstance(value, str):
        raise MalformedTrace(location, f"{key!r} must be a string, got {type_name(value)}")
    return value


def _arguments(step: Mapping[str, Any], location: str) -> Any:
    key, value = _first(step, ARGS_KEYS)
    if value is _ABSENT or value is None:
        return {}
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        # JSON text of an object, as chat traces carry it, is kept as given; the other texts
        # that signature.parse_arguments reads as arguments ("", "null") are no arguments.
        an_object = value.lstrip().startswith("{")
        if isinstance(parse_arguments(value), dict):
            return value if an_object else {}
        if an_object:
            raise MalformedTrace(location, f"{key!r} must be an object, got a string that is not valid JSON: {value[:60]!r}")
    raise MalformedTrace(location, f"{key!r} must be an object, got {type_name(value)}")


#: An ``error`` string that is a flag, not a message.
_FLAG_TEXTS: dict[str, bool | None] = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False, "": None, "null": None, "none": None}


def _error_flag(step: Mapping[str, Any], location: str) -> tuple[bool | None, str | None]:
    """The error flag and, when ``error`` holds a message, that message."""
    key, value = _first(step, ERROR_KEYS)
    if value is _ABSENT or value is None:
        return None, None
    if isinstance(value, bool):
        return value, None
    if isinstance(value, str):
        flag = value.strip().lower()
        if flag in _FLAG_TEXTS:
            return _FLAG_TEXTS[flag], None  # a boolean (or null) written as text, not a message
        return True, value
    raise MalformedTrace(location, f"{key!r} must be a boolean or a message, got {type_name(value)}")


def _usage(step: Mapping[str, Any], location: str) -> ModelUsage | None:
    value = step.get("usage")
    if value is None:
        return None
    if not isinstance(value, dict):
        raise MalformedTrace(location, f"'usage' must be an object, got {type_name(value)}")
    return usage_from(value, location)


def usage_from(value: Mapping[str, Any], location: str) -> ModelUsage:
    """Read token usage in either naming (``input_tokens`` or ``prompt_tokens``)."""

    def count(*keys: str) -> int:
        for key in keys:
            number = value.get(key)
            if number is None:
                continue
            if isinstance(number, bool) or not isinstance(number, (int, float)) or number < 0:
                raise MalformedTrace(location, f"'usage.{key}' must be a non-negative number, got {type_name(number)}")
            return int(number)
        return 0

    cost = value.get("cost_usd", value.get("cost"))
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float))):
        raise MalformedTrace(location, f"'usage.cost_usd' must be a number, got {type_name(cost)}")
    model = value.get("model")
    return ModelUsage(
        input_tokens=count("input_tokens", "prompt_tokens"),
        output_tokens=count("output_tokens", "completion_tokens"),
        cost_usd=float(cost) if cost is not None else None,
        model=model if isinstance(model, str) else None,
    )


def message_text(value: Any) -> str:
    """Text of a message body: strings as they are, content-part lists joined, other values as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(part, dict) for part in value):
        return "".join(str(part.get("text", "")) for part in value if part.get("text") is not None)
    return json.dumps(value, ensure_ascii=False, default=str)


# The argument keys that only a tool call uses: a model step may carry its prompt as ``input``.
_CALL_ONLY_ARGS_KEYS = tuple(key for key in ARGS_KEYS if key != "input")


def _call_arguments_key(step: Mapping[str, Any]) -> str | None:
    """The key holding a tool call's arguments, if the step has one (null or empty
    arguments, as writers put beside an agent message's ``"tool": null``, hold none; nor do
    the JSON strings ``"{}"`` and ``"null"``)."""
    for key in _CALL_ONLY_ARGS_KEYS:
        value = step.get(key)
        if value is not None and not (isinstance(value, (dict, list, str)) and not value) and value not in ("{}", "null"):
            return key
    return None


def parse_step(step: Any, index: int) -> list[TraceItem]:
    """Translate one step into items; raises :class:`MalformedTrace` naming ``step {index}``."""
    location = f"step {index}"
    if not isinstance(step, dict):
        raise MalformedTrace(location, f"must be an object, got {type_name(step)}")
    _check_keys(step, location)
    items: list[TraceItem] = []
    user = _optional_text(step, USER_KEYS, location)
    if user is not None:
        items.append(UserMessage(text=user, step=index))
    usage = _usage(step, location)
    if usage is not None:
        items.append(ModelCall(usage=usage, step=index))

    tool = _optional_text(step, TOOL_KEYS, location)
    agent = _optional_text(step, AGENT_KEYS, location)
    caller = _optional_text(step, CALLER_KEYS, location)
    _, output = _first(step, OUTPUT_KEYS)
    error, error_message = _error_flag(step, location)
    if output is _ABSENT:
        output = error_message

    if caller is not None:
        if agent is None:
            raise MalformedTrace(location, f"a handoff from {caller!r} needs 'agent' (the agent receiving control)")
        said = message_text(output) if tool is None and output is not None else None
        items.append(TraceHandoff(handoff=Handoff(agent=agent, caller=caller), step=index, message=said))
    if tool is not None:
        if not tool:
            raise MalformedTrace(location, "'tool' must not be empty")
        call_id = _optional_text(step, ID_KEYS, location)
        call = ToolCall(name=tool, arguments=_arguments(step, location), id=call_id, agent=agent)
        items.append(TraceToolCall(call=call, step=index))
        items.append(TraceToolResult(call=call, result=ToolResult(output=output, error=error), step=index))
    elif caller is None and not items and (stray := _call_arguments_key(step)) is not None:
        # Call arguments in a step that is neither a handoff, a user message nor a model
        # call would be dropped silently: its tool key is missing or misspelt.
        others = ", ".join(repr(key) for key in TOOL_KEYS[1:])
        raise MalformedTrace(location, f"has {stray!r} but no {TOOL_KEYS[0]!r} (or {others})")
    elif caller is None and output is not None and agent is not None and agent.strip().lower() in USER_AGENTS:
        # A message "from" the user or a human: a new turn, as a "user" key says.
        items.append(UserMessage(text=message_text(output), step=index))
    elif caller is None and output is not None:
        items.append(AgentMessage(agent=agent, text=message_text(output), step=index))
    elif not items:
        raise MalformedTrace(location, "has no 'tool', 'caller', 'output' or 'user'")
    return items


def parse_steps(run: TraceRun, steps: Any) -> TraceRun:
    """Fill ``run`` from a list of steps; raises :class:`MalformedTrace` on the first bad step."""
    run.format = "steps"
    if not isinstance(steps, list):
        raise MalformedTrace(None, f"'steps' must be a list, got {type_name(steps)}")
    run.steps = len(steps)
    for index, step in enumerate(steps):
        run.items.extend(parse_step(step, index))
    return run
