"""Plain-Python adapter: guard the tools of a hand-written agent loop.

Usage::

    from loopguard import Guard
    from loopguard.adapters.plain import GuardedTools

    session = Guard.from_policy().session(run_id="run-1")
    tools = GuardedTools(session, {"search": search, "book": book})
    session.observe_user_message("book me a flight")
    result = tools.call("search", {"q": "flights"})      # the tool's output, or the verdict's payload

or, for one function::

    @guarded(session)
    def search(q: str) -> str: ...

    search(q="flights")                                   # same contract as tools.call

The contract of a guarded call:

* ``allow``: the function runs with the arguments as keyword arguments; its return value is
  returned and recorded (``after_call``). An exception it raises is *not* re-raised: it is
  recorded as an error result and ``{"error": true, "type": "tool_error", "message": ...}``
  is returned, the way an agent framework would show a failing tool to the model.
* any other verdict: the function does not run; the verdict's payload (DESIGN §5) is returned.
* a ``stop`` decision in enforce mode raises :class:`~loopguard.errors.LoopGuardInterrupt`
  (before the call for a pending-call stop, after recording the result for a result stop).
* in observe mode every function runs and nothing is raised; decisions are still recorded.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence, TypeVar

from ..calls import ToolCall, ToolResult
from ..decisions import Decision, GuardAction
from ..errors import LoopGuardInterrupt
from ..observations import TOOL_ERROR, UNKNOWN_TOOL
from ..session import Session

__all__ = ["CallOutcome", "GuardedTools", "guarded"]

F = TypeVar("F", bound=Callable[..., Any])
CallSpec = ToolCall | tuple[str, Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """What happened to one guarded call.

    Attributes:
        call: the call as the guard saw it.
        decision: the decision before the call (its verdict says whether the tool ran).
        result: the tool's return value, the verdict's payload, or a ``tool_error`` payload.
        ran: True when the function actually ran.
        error: True when the function raised (``result`` is then the error payload).
        after: the decision on the result (``None`` when the function did not run).
    """

    call: ToolCall
    decision: Decision
    result: Any
    ran: bool
    error: bool = False
    after: Decision | None = None


def _stops(decision: Decision | None) -> bool:
    return decision is not None and decision.action is GuardAction.STOP and decision.mode == "enforce"


def _error_payload(error: BaseException) -> dict[str, Any]:
    return {"error": True, "type": TOOL_ERROR, "message": f"{type(error).__name__}: {error}"}


class GuardedTools:
    """A table of tools whose every call goes through a session.

    Args:
        session: the run's session (``Guard.session(...)``).
        tools: tool name → callable taking the call's arguments as keyword arguments.

    Thread-safe as far as the session is (it is); the functions themselves run unlocked.
    """

    def __init__(self, session: Session, tools: Mapping[str, Callable[..., Any]]) -> None:
        self.session = session
        self.tools: dict[str, Callable[..., Any]] = dict(tools)

    def call(self, name: str, arguments: Mapping[str, Any] | None = None, id: str | None = None) -> Any:
        """Run one call under the guard and return what the model should read.

        Args:
            name: the tool's name.
            arguments: its arguments (a JSON-like mapping); ``None`` means no arguments.
            id: the provider's tool-call id, if any.

        Returns:
            the tool's return value, or the verdict's payload when it did not run, or a
            ``tool_error`` payload when it raised (or no tool of that name exists).

        Raises:
            LoopGuardInterrupt: a stop decision in enforce mode.
        """
        return self.run(ToolCall(name, dict(arguments or {}), id=id)).result

    def run_call(self, name: str, arguments: Mapping[str, Any] | None = None, id: str | None = None) -> CallOutcome:
        """Like :meth:`call`, returning the full :class:`CallOutcome` (decisions included).

        Raises:
            LoopGuardInterrupt: a stop decision in enforce mode.
        """
        return self.run(ToolCall(name, dict(arguments or {}), id=id))

    def run(self, call: ToolCall) -> CallOutcome:
        """Like :meth:`call` for a :class:`ToolCall`, returning the full :class:`CallOutcome`.

        Raises:
            LoopGuardInterrupt: a stop decision in enforce mode.
        """
        decision = self.session.before_call(call)
        if _stops(decision):
            raise LoopGuardInterrupt(decision)
        return self._apply(call, decision)

    def batch(self, calls: Sequence[CallSpec]) -> list[CallOutcome]:
        """Run the parallel calls of one assistant message (judged together, run in order).

        Every call gets exactly one outcome; a verdict closes only its own call.

        Raises:
            LoopGuardInterrupt: any call's pending decision is a stop in enforce mode (then no
                call of the batch runs), or a result decision is (after the whole batch ran).
        """
        tool_calls = [spec if isinstance(spec, ToolCall) else ToolCall(spec[0], dict(spec[1])) for spec in calls]
        decisions = self.session.before_batch(tool_calls)
        for decision in decisions:
            if _stops(decision):
                raise LoopGuardInterrupt(decision)
        outcomes: list[CallOutcome] = []
        stop: Decision | None = None
        for call, decision in zip(tool_calls, decisions):
            try:
                outcomes.append(self._apply(call, decision))
            except LoopGuardInterrupt as interrupt:
                # finish the batch first: every call gets its result, then the run ends
                stop = stop or interrupt.decision
        if stop is not None:
            raise LoopGuardInterrupt(stop)
        return outcomes

    def _apply(self, call: ToolCall, decision: Decision) -> CallOutcome:
        verdict = decision.verdict
        if not decision.runs_tool:
            # The payload is what the model reads as this call's result: record it as one.
            after = self.session.after_call(call, ToolResult(verdict.payload(), True if verdict.is_error else None))
            return CallOutcome(call, decision, verdict.payload(), ran=False, after=after)
        function = self.tools.get(call.name)
        started = time.perf_counter()
        error = False
        if function is None:
            result: Any = {"error": True, "type": UNKNOWN_TOOL, "message": f"no tool named {call.name!r}"}
            error = True
        else:
            arguments = call.arguments if isinstance(call.arguments, Mapping) else {}
            try:
                result = function(**arguments)
            except Exception as exc:  # the model reads the failure; the loop goes on
                result, error = _error_payload(exc), True
        elapsed = (time.perf_counter() - started) * 1000.0
        # error=None for a normal return lets the failure detector read "Error: ..." texts
        after = self.session.after_call(call, ToolResult(result, True if error else None, elapsed))
        outcome = CallOutcome(call, decision, result, ran=function is not None, error=error, after=after)
        if _stops(after):
            raise LoopGuardInterrupt(after)
        return outcome


def guarded(session: Session, name: str | None = None) -> Callable[[F], F]:
    """Decorate a function so that every call goes through ``session``.

    Args:
        session: the run's session.
        name: the tool name the guard sees (default: the function's ``__name__``).

    The decorated function takes keyword arguments only (they are the call's arguments) and
    returns what :meth:`GuardedTools.call` returns.

    Raises (from the decorated function):
        LoopGuardInterrupt: a stop decision in enforce mode.
        TypeError: positional arguments were passed.
    """

    def decorate(function: F) -> F:
        tool_name = name or function.__name__
        table = GuardedTools(session, {tool_name: function})

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if args:
                raise TypeError(f"guarded tool {tool_name!r} takes keyword arguments only (they are the call's arguments)")
            return table.call(tool_name, kwargs)

        wrapper.guarded_tools = table  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate
