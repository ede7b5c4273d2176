"""LangChain v1 agent middleware: guard every tool call of a ``create_agent`` agent.

Usage::

    from langchain.agents import create_agent
    from loopguard.adapters.langchain import LoopGuardMiddleware

    guard = LoopGuardMiddleware("loopguard.yml")       # or "builtin:default", a CompiledPolicy, a Guard
    agent = create_agent(model, tools, middleware=[guard])
    agent.invoke({"messages": [{"role": "user", "content": "book it"}]}, {"run_id": run_id})
    guard.session(str(run_id)).decisions                # what the guard decided in that run

What each hook does:

* ``before_agent``: opens one :class:`~loopguard.session.Session` for the run and writes its
  key into a private state field (``loopguard_session``) so every later hook of the same
  run, and every tool call, finds the same session.
* ``before_model``: reports a new user message (``observe_user_message``: a new turn); after
  a ``stop`` decision in enforce mode it ends the run (``jump_to: "end"``) with a final
  :class:`AIMessage` that says why, or raises :class:`~loopguard.errors.LoopGuardInterrupt`
  when ``raise_on_stop=True``.
* ``after_model``: reports the model's token usage (``usage_metadata`` → ``ModelUsage``, the
  model name from ``response_metadata``) and judges the whole batch of tool calls of the
  AIMessage at once (``before_batch``), caching one decision per tool-call id.
* ``wrap_tool_call`` / ``awrap_tool_call``: applies the cached decision: ``allow`` runs the
  tool and reports its result (``after_call``); any other verdict short-circuits with a
  :class:`ToolMessage` whose content is the verdict's payload. In observe mode every tool runs.
* ``after_agent``: retires the run's session (kept in a bounded list of recent sessions).

Session keys (one session per run): the LangGraph run id (``config["run_id"]``, visible as
``runtime.execution_info.run_id``) when the caller gives one, else a random UUID. The key is
kept in the agent state, not in a context variable or a per-thread slot, because LangGraph
runs a batch's tools on pool threads and async tasks: state travels with the run wherever it
executes, so concurrent runs never share a session. A conversation thread (checkpointer +
``thread_id``) gets a fresh session for every run; the thread id is recorded on it.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Awaitable, Callable, Iterable

from langchain.agents.middleware import AgentMiddleware, AgentState, hook_config
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command
from typing_extensions import NotRequired

from ..calls import ModelUsage, ToolCall, ToolResult
from ..decisions import Decision, GuardAction
from ..errors import LoopGuardInterrupt
from ..guard import Guard
from ..policy import CompiledPolicy
from ..policy.load import default_policy_path
from ..session import Session

__all__ = ["LoopGuardMiddleware", "LoopGuardState", "PolicyArg", "SESSION_KEY_FIELD"]

#: The private state field that carries the run's session key between hooks.
SESSION_KEY_FIELD = "loopguard_session"

PolicyArg = str | Path | CompiledPolicy | Guard
DecisionHook = Callable[[str, Decision], None]


class LoopGuardState(AgentState):
    """Agent state plus the run's session key (private: never in the agent's input or output)."""

    loopguard_session: NotRequired[Annotated[str, PrivateStateAttr]]


@dataclass(slots=True)
class _Run:
    """Adapter-side state of one guarded run."""

    key: str
    session: Session
    # tool-call id -> the before_batch decision, consumed by wrap_tool_call
    pending: dict[str, Decision] = field(default_factory=dict)
    last_human: str | None = None  # id of the HumanMessage last reported as a user message
    last_ai: str | None = None  # id of the AIMessage last judged (never judge a batch twice)
    stop: Decision | None = None  # the first enforce-mode stop decision of the run


class LoopGuardMiddleware(AgentMiddleware[LoopGuardState, Any]):
    """Guard the tool calls of a LangChain v1 agent (``langchain.agents.create_agent``).

    Args:
        policy: a policy file path, ``builtin:NAME``, a :class:`CompiledPolicy` or a ready
            :class:`Guard`. Default: ``./loopguard.yml`` when it exists, else ``builtin:default``.
        profile: the policy profile to apply (ignored for a compiled policy or a Guard).
        raise_on_stop: on a ``stop`` decision in enforce mode raise
            :class:`~loopguard.errors.LoopGuardInterrupt` out of ``invoke``/``ainvoke``
            instead of ending the run with a final AIMessage.
        on_decision: called as ``on_decision(session_key, decision)`` for every decision the
            guard makes (before and after each call, model usage); for logging and tracing.
            It runs on the agent's thread: keep it cheap; its exceptions propagate.
        recent: how many finished sessions to keep for :meth:`session` (oldest dropped first).

    Raises:
        loopguard.policy.PolicyError: the policy does not validate.
    """

    state_schema = LoopGuardState

    def __init__(
        self,
        policy: PolicyArg | None = None,
        profile: str | None = None,
        raise_on_stop: bool = False,
        *,
        on_decision: DecisionHook | None = None,
        recent: int = 256,
    ) -> None:
        super().__init__()
        if isinstance(policy, Guard):
            self.guard = policy
        else:
            self.guard = Guard.from_policy(default_policy_path() if policy is None else policy, profile=profile)
        self.raise_on_stop = raise_on_stop
        self.on_decision = on_decision
        self._recent_limit = max(0, recent)
        self._lock = threading.Lock()
        self._live: dict[str, _Run] = {}
        self._recent: OrderedDict[str, Session] = OrderedDict()
        self.tools = []

    # -- sessions ---------------------------------------------------------------------

    def session(self, key: str) -> Session | None:
        """The session of the run keyed ``key`` (live or recently finished), if any.

        ``key`` is the string form of the run id passed as ``config["run_id"]``.
        """
        with self._lock:
            run = self._live.get(key)
            return run.session if run is not None else self._recent.get(key)

    def recent_sessions(self) -> list[Session]:
        """The sessions of finished runs still kept (at most ``recent``), oldest first."""
        with self._lock:
            return list(self._recent.values())

    @property
    def last_session(self) -> Session | None:
        """The session of the most recently finished run (convenient in scripts; racy under concurrency)."""
        with self._lock:
            return next(reversed(self._recent.values()), None) if self._recent else None

    def _open(self, runtime: Runtime[Any] | None) -> str:
        info = getattr(runtime, "execution_info", None)
        run_id = getattr(info, "run_id", None)
        thread_id = getattr(info, "thread_id", None)
        key = str(run_id) if run_id else uuid.uuid4().hex
        run = _Run(key, self.guard.session(run_id=key, thread_id=thread_id))
        with self._lock:
            self._live[key] = run
            if len(self._live) > 4096:
                # Runs that died without after_agent (an exception elsewhere) must not grow memory.
                self._live.pop(next(iter(self._live)))
        return key

    def _run(self, state: Any, runtime: Runtime[Any] | None = None) -> _Run:
        key = _state_get(state, SESSION_KEY_FIELD)
        if key is not None:
            run = self._live.get(key)  # dict reads are atomic; no lock on the hot path
            if run is not None:
                return run
        # No before_agent for this state (the hooks were used outside create_agent, or the run
        # was evicted): open a session now under the same or a new key.
        key = key or self._open(runtime)
        with self._lock:
            run = self._live.get(key)
            if run is None:
                run = _Run(key, self.guard.session(run_id=key))
                self._live[key] = run
        return run

    def _close(self, key: str | None) -> None:
        if key is None:
            return
        with self._lock:
            run = self._live.pop(key, None)
            if run is not None and self._recent_limit:
                self._recent[key] = run.session
                while len(self._recent) > self._recent_limit:
                    self._recent.popitem(last=False)

    def _note(self, run: _Run, decision: Decision) -> Decision:
        if decision.action is GuardAction.STOP and decision.mode == "enforce" and run.stop is None:
            run.stop = decision
        if self.on_decision is not None:
            self.on_decision(run.key, decision)
        return decision

    # -- agent hooks ----------------------------------------------------------------------

    def before_agent(self, state: LoopGuardState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Open the run's session and store its key in the state."""
        return {SESSION_KEY_FIELD: self._open(runtime)}

    async def abefore_agent(self, state: LoopGuardState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self.before_agent(state, runtime)

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: LoopGuardState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Report a new user message; end the run (or raise) after a stop decision.

        Raises:
            LoopGuardInterrupt: a stop decision was made and ``raise_on_stop`` is set.
        """
        run = self._run(state, runtime)
        human = _latest_human(state["messages"])
        if human is not None:
            marker = human.id or str(id(human))
            if marker != run.last_human:
                run.last_human = marker
                run.session.observe_user_message(human.text)
        if run.stop is None:
            return None
        if self.raise_on_stop:
            self._close(run.key)
            raise LoopGuardInterrupt(run.stop)
        reasons = "; ".join(run.stop.reasons) or f"rule {run.stop.rule}"
        final = AIMessage(
            content=f"loopguard stopped the run: {reasons}",
            response_metadata={"loopguard": run.stop.to_dict()},
        )
        return {"messages": [final], "jump_to": "end"}

    @hook_config(can_jump_to=["end"])
    async def abefore_model(self, state: LoopGuardState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self.before_model(state, runtime)

    def after_model(self, state: LoopGuardState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Report token usage and judge the AIMessage's tool calls as one batch.

        Raises:
            LoopGuardInterrupt: the usage or a call of the batch is a stop decision and
                ``raise_on_stop`` is set (no tool of the batch runs).
        """
        run = self._run(state, runtime)
        messages = state["messages"]
        message = messages[-1] if messages else None
        if not isinstance(message, AIMessage):
            return None
        marker = message.id or str(id(message))
        if marker == run.last_ai:
            return None
        run.last_ai = marker
        session = run.session
        usage = message.usage_metadata
        if usage:
            meta = message.response_metadata or {}
            model = meta.get("model_name") or meta.get("model")
            self._note(run, session.observe_model_call(
                ModelUsage(int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0), model=model)
            ))
        tool_calls = message.tool_calls
        if tool_calls:
            calls = [ToolCall(tc["name"], tc.get("args", {}), id=tc.get("id")) for tc in tool_calls]
            for call, decision in zip(calls, session.before_batch(calls)):
                self._note(run, decision)
                if call.id is not None:
                    run.pending[call.id] = decision
        if run.stop is not None and self.raise_on_stop:
            self._close(run.key)
            raise LoopGuardInterrupt(run.stop)
        return None

    async def aafter_model(self, state: LoopGuardState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self.after_model(state, runtime)

    def after_agent(self, state: LoopGuardState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Retire the run's session (it stays readable through :meth:`session`)."""
        self._close(_state_get(state, SESSION_KEY_FIELD))
        return None

    async def aafter_agent(self, state: LoopGuardState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self.after_agent(state, runtime)

    # -- tool calls -----------------------------------------------------------------------

    def _judge(self, request: ToolCallRequest) -> tuple[_Run, ToolCall, Decision, ToolMessage | None]:
        """The call's decision and, when it must not run, the ToolMessage that answers it."""
        run = self._run(request.state, request.runtime)
        tc = request.tool_call
        call = ToolCall(tc["name"], tc.get("args", {}), id=tc.get("id"))
        decision = run.pending.pop(call.id, None) if call.id is not None else None
        if decision is None:
            # A call after_model never saw (added by another middleware, or a direct ToolNode use).
            decision = self._note(run, run.session.before_call(call))
        if decision.mode != "enforce":
            return run, call, decision, None  # observe mode: decided and recorded, never applied
        verdict = decision.verdict
        if verdict.runs_tool and run.stop is not None:
            # The run is ending: calls of the batch that have not started yet do not run.
            return run, call, decision, _tool_message(call, _stopped_text(run.stop), "error", run.stop)
        if verdict.runs_tool:
            return run, call, decision, None
        return run, call, decision, _tool_message(call, verdict.payload_text(), "error" if verdict.is_error else "success", decision)

    def _record(self, run: _Run, call: ToolCall, result: ToolMessage | Command[Any], started: float) -> None:
        output, error = _result_of(result, call.id)
        elapsed = (time.perf_counter() - started) * 1000.0
        self._note(run, run.session.after_call(call, ToolResult(output, error, elapsed)))

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Run the tool when the guard allows it, else answer with the verdict's payload.

        Returns:
            the tool's own result, or a ToolMessage (``tool_call_id`` and ``name`` of the call)
            whose content is the payload text and whose ``status`` is ``error`` for block,
            cancel, unavailable and budget_spent, ``success`` for answer.
        Raises:
            whatever the tool raises (recorded first as an error result).
        """
        run, call, _, short = self._judge(request)
        if short is not None:
            return short
        started = time.perf_counter()
        try:
            result = handler(request)
        except Exception as error:
            self._note(run, run.session.after_call(call, ToolResult(f"{type(error).__name__}: {error}", True, (time.perf_counter() - started) * 1000.0)))
            raise
        self._record(run, call, result, started)
        return result

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Async :meth:`wrap_tool_call` (same verdicts, same payloads)."""
        run, call, _, short = self._judge(request)
        if short is not None:
            return short
        started = time.perf_counter()
        try:
            result = await handler(request)
        except Exception as error:
            self._note(run, run.session.after_call(call, ToolResult(f"{type(error).__name__}: {error}", True, (time.perf_counter() - started) * 1000.0)))
            raise
        self._record(run, call, result, started)
        return result


# -- helpers -----------------------------------------------------------------------------


def _state_get(state: Any, name: str) -> Any:
    if isinstance(state, dict):
        return state.get(name)
    return getattr(state, name, None)


def _latest_human(messages: Iterable[AnyMessage]) -> HumanMessage | None:
    # Walk back only as far as the latest human message: O(steps of the current turn).
    for message in reversed(list(messages) if not isinstance(messages, list) else messages):
        if isinstance(message, HumanMessage):
            return message
    return None


def _stopped_text(stop: Decision) -> str:
    """The payload of a call that was allowed but comes after the run's stop decision."""
    if stop.verdict.kind.value == "block":
        return stop.verdict.payload_text()  # the stop's own guard_stop payload
    reasons = "; ".join(stop.reasons) or f"rule {stop.rule}"
    return json.dumps({"error": True, "type": "guard_stop", "message": f"loopguard stopped the run: {reasons}."}, ensure_ascii=False)


def _tool_message(call: ToolCall, content: str, status: str, decision: Decision) -> ToolMessage:
    return ToolMessage(
        content=content,
        tool_call_id=call.id or "",
        name=call.name,
        status=status,  # type: ignore[arg-type]
        # the decision, for tracing UIs and tests; providers never see response_metadata
        response_metadata={"loopguard": {"verdict": decision.verdict.kind.value, "rule": decision.rule, "action": decision.action.value}},
    )


def _result_of(result: ToolMessage | Command[Any], call_id: str | None) -> tuple[Any, bool | None]:
    """The output and error flag of a tool's result.

    ``error`` is True for a ToolMessage with status ``error`` and ``None`` otherwise, so the
    failure detector still infers failures a tool reports in its text ("Error: ...").
    """
    if isinstance(result, ToolMessage):
        return result.content, True if result.status == "error" else None
    if isinstance(result, Command):
        update = result.update
        messages = update.get("messages", []) if isinstance(update, dict) else []
        for message in messages if isinstance(messages, list) else [messages]:
            if isinstance(message, ToolMessage) and (call_id is None or message.tool_call_id == call_id):
                return message.content, True if message.status == "error" else None
        return update, None
    return result, None
