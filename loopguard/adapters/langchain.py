"""LangChain v1 agent middleware: guard every tool call of a ``create_agent`` agent.

Usage::

    from langchain.agents import create_agent
    from loopguard.adapters.langchain import LoopGuardMiddleware

    guard = LoopGuardMiddleware("loopguard.yml")       # or "builtin:default", a CompiledPolicy, a Guard
    agent = create_agent(model, tools, middleware=[guard])
    agent.invoke({"messages": [{"role": "user", "content": "book it"}]}, {"run_id": run_id})
    guard.session(str(run_id)).decisions                # what the guard decided in that run

The middleware implements only the two *wrap* hooks, which run inside the agent's own
``model`` and ``tools`` nodes. It adds no graph node and no state channel, so a guarded
agent has exactly the graph of an unguarded one (every ``before_*``/``after_*`` hook would be
an extra LangGraph node, with its state reads, channel writes and scheduling, on every step):

* ``wrap_model_call`` / ``awrap_model_call``: before the model runs it reports a new user
  message (``observe_user_message``: a new turn); after a ``stop`` decision in enforce mode it
  does not call the model and ends the run with a final :class:`AIMessage` (no tool calls)
  that says why, or raises :class:`~loopguard.errors.LoopGuardInterrupt` when
  ``raise_on_stop=True``. After the model answers it reports the token usage
  (``usage_metadata`` → ``ModelUsage``, the model name from ``response_metadata``) and judges
  the whole batch of tool calls of the AIMessage at once (``before_batch``), caching one
  decision per tool-call id. An answer without tool calls ends the run: its session is
  retired (kept in a bounded list of recent sessions).
* ``wrap_tool_call`` / ``awrap_tool_call``: applies the cached decision: ``allow`` runs the
  tool and reports its result (``after_call``); any other verdict short-circuits with a
  :class:`ToolMessage` whose content is the verdict's payload. In observe mode every tool runs.

Session keys (one session per run): the LangGraph run id (``config["run_id"]``, visible as
``runtime.execution_info.run_id``) when the caller gives one, else a random UUID bound to the
run's own :class:`langgraph.runtime.RunControl` (one per ``invoke``/``ainvoke``, carried by the
``runtime`` of every node, tool call and pool thread of that run) and to the graph's checkpoint
namespace (so two invocations of the agent as a subgraph of one parent run stay apart). No
context variable or per-thread slot is used, so concurrent runs on threads and asyncio tasks
never share a session. A conversation thread (checkpointer + ``thread_id``) gets a fresh
session for every run; the thread id is recorded on it. A run that ends without a final
answer (an exception, the recursion limit, an interrupt) keeps its session live, readable
through :meth:`LoopGuardMiddleware.session`; at most 4096 live sessions are kept.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState
    from langchain.agents.middleware.types import ModelRequest, ModelResponse
    from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.runtime import Runtime
    from langgraph.types import Command
except ModuleNotFoundError as error:  # (without the langchain extra: say how to install it)
    from ._extra import missing_extra

    raise missing_extra(__name__, error) from error

from ..calls import ModelUsage, ToolCall, ToolResult
from ..decisions import Decision, GuardAction
from ..errors import LoopGuardInterrupt
from ..guard import Guard
from ..policy import CompiledPolicy
from ..session import Session

__all__ = ["LoopGuardMiddleware", "LoopGuardState", "PolicyArg"]

PolicyArg = str | Path | CompiledPolicy | Guard
DecisionHook = Callable[[str, Decision], None]

#: The middleware adds no state field: its state schema is the agent's own.
LoopGuardState = AgentState

_MAX_LIVE = 4096
_CONFIG_KEY_RUNTIME = "__pregel_runtime"  # langgraph._internal._constants.CONFIG_KEY_RUNTIME
_STOP = GuardAction.STOP


@dataclass(slots=True)
class _Run:
    """Adapter-side state of one guarded run."""

    key: str
    session: Session
    ident: Any = None  # the _live key this run is stored under
    # tool-call id -> the call as judged by before_batch and its decision, consumed by wrap_tool_call
    pending: dict[str, tuple[ToolCall, Decision]] = field(default_factory=dict)
    last_human: str | None = None  # id of the HumanMessage last reported as a user message
    stop: Decision | None = None  # the first enforce-mode stop decision of the run


def _identity(runtime: Runtime[Any] | None) -> tuple[Any, str | None, str | None]:
    """(live-map key, run id, thread id) of the run a hook belongs to."""
    info = getattr(runtime, "execution_info", None)
    if info is None:
        return None, None, None
    run_id = info.run_id
    if run_id:
        return run_id, run_id, info.thread_id
    # No run id: the run's RunControl (one per invoke) plus the graph's namespace (the task's
    # namespace without its own last segment: the same for the model and the tool tasks).
    control = getattr(runtime, "control", None)
    if control is None:
        # A ToolRuntime (tool calls) has no control of its own: the node's Runtime is in its config.
        configurable = (getattr(runtime, "config", None) or {}).get("configurable") or {}
        control = getattr(configurable.get(_CONFIG_KEY_RUNTIME), "control", None)
        if control is None:
            return None, None, info.thread_id
    ns = info.checkpoint_ns
    cut = ns.rfind("|")
    return (control, ns[:cut] if cut >= 0 else ""), None, info.thread_id


class LoopGuardMiddleware(AgentMiddleware[AgentState, Any]):
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
        self.guard = Guard.resolve(policy, profile)
        self.raise_on_stop = raise_on_stop
        self.on_decision = on_decision
        self._recent_limit = max(0, recent)
        self._lock = threading.Lock()
        self._live: dict[Any, _Run] = {}  # run id or (RunControl, namespace) -> run
        self._by_key: dict[str, _Run] = {}  # session key -> live run
        self._recent: OrderedDict[str, Session] = OrderedDict()
        self.tools = []

    # -- sessions ---------------------------------------------------------------------

    def session(self, key: str) -> Session | None:
        """The session of the run keyed ``key`` (live or recently finished), if any.

        ``key`` is the string form of the run id passed as ``config["run_id"]`` (or, for a
        run without one, the session's ``run_id``: a random UUID).
        """
        with self._lock:
            run = self._by_key.get(key)
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

    def _run(self, runtime: Runtime[Any] | None) -> _Run:
        """The live run of ``runtime``, opened on first sight."""
        ident, run_id, thread_id = _identity(runtime)
        if ident is not None:
            run = self._live.get(ident)  # dict reads are atomic; no lock on the hot path
            if run is not None:
                return run
        with self._lock:
            run = self._live.get(ident) if ident is not None else None
            if run is None:
                key = run_id or uuid.uuid4().hex
                if ident is None:
                    ident = key  # no runtime (hooks called directly): a one-off run
                run = _Run(key, self.guard.session(run_id=key, thread_id=thread_id), ident)
                self._live[ident] = run
                self._by_key[key] = run
                if len(self._live) > _MAX_LIVE:
                    # Runs that never gave a final answer (an exception elsewhere) must not grow memory.
                    old = self._live.pop(next(iter(self._live)))
                    if self._by_key.get(old.key) is old:
                        del self._by_key[old.key]
        return run

    def _close(self, run: _Run) -> None:
        with self._lock:
            if self._live.get(run.ident) is run:
                del self._live[run.ident]
            if self._by_key.get(run.key) is run:
                del self._by_key[run.key]
                if self._recent_limit:
                    self._recent[run.key] = run.session
                    self._recent.move_to_end(run.key)
                    while len(self._recent) > self._recent_limit:
                        self._recent.popitem(last=False)

    def _note(self, run: _Run, decision: Decision) -> Decision:
        if decision.action is _STOP and decision.mode == "enforce" and run.stop is None:
            run.stop = decision
        if self.on_decision is not None:
            self.on_decision(run.key, decision)
        return decision

    # -- model calls ----------------------------------------------------------------------

    def _before_model(self, request: ModelRequest[Any]) -> tuple[_Run, AIMessage | None]:
        """Report a new user message; after a stop, the final message that ends the run.

        Raises:
            LoopGuardInterrupt: a stop decision was made and ``raise_on_stop`` is set.
        """
        run = self._run(request.runtime)
        human = _latest_human(request.messages)
        if human is not None:
            marker = human.id or str(id(human))
            if marker != run.last_human:
                run.last_human = marker
                run.session.observe_user_message(human.text)
        stop = run.stop
        if stop is None:
            return run, None
        self._close(run)
        if self.raise_on_stop:
            raise LoopGuardInterrupt(stop)
        reasons = "; ".join(stop.reasons) or f"rule {stop.rule}"
        return run, AIMessage(content=f"loopguard stopped the run: {reasons}", response_metadata={"loopguard": stop.to_dict()})

    def _after_model(self, run: _Run, response: ModelResponse | AIMessage | Any) -> None:
        """Report token usage and judge the AIMessage's tool calls as one batch.

        Raises:
            LoopGuardInterrupt: the usage or a call of the batch is a stop decision and
                ``raise_on_stop`` is set (no tool of the batch runs).
        """
        message, answered, finished = _model_output(response)
        if message is None:
            return
        session = run.session
        usage = message.usage_metadata
        if usage:
            meta = message.response_metadata or {}
            model = meta.get("model_name") or meta.get("model")
            self._note(run, session.observe_model_call(
                ModelUsage(int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0), model=model)
            ))
        tool_calls = message.tool_calls
        if answered:
            # structured-output calls the agent answered itself in the model node: not tools
            tool_calls = [tc for tc in tool_calls if tc.get("id") not in answered]
        if tool_calls and not finished:
            calls = [ToolCall(tc["name"], tc.get("args", {}), id=tc.get("id")) for tc in tool_calls]
            pending = run.pending
            note = self._note
            for call, decision in zip(calls, session.before_batch(calls)):
                note(run, decision)
                if call.id is not None:
                    pending[call.id] = (call, decision)
            if run.stop is not None and self.raise_on_stop:
                self._close(run)
                raise LoopGuardInterrupt(run.stop)
        elif run.stop is not None and self.raise_on_stop:
            self._close(run)
            raise LoopGuardInterrupt(run.stop)
        elif finished or not message.tool_calls:
            self._close(run)  # a final answer: the run is over
        # else: the agent rejected a structured output and asks the model again

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse],
    ) -> ModelResponse | AIMessage:
        """Call the model unless the run was stopped, then judge its tool calls.

        Returns:
            the model's response, or (after a stop decision in enforce mode) a final
            AIMessage without tool calls whose content says why the run stopped.
        Raises:
            LoopGuardInterrupt: a stop decision was made and ``raise_on_stop`` is set.
        """
        run, final = self._before_model(request)
        if final is not None:
            return final
        response = handler(request)
        self._after_model(run, response)
        return response

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse]],
    ) -> ModelResponse | AIMessage:
        """Async :meth:`wrap_model_call`."""
        run, final = self._before_model(request)
        if final is not None:
            return final
        response = await handler(request)
        self._after_model(run, response)
        return response

    # -- tool calls -----------------------------------------------------------------------

    def _judge(self, request: ToolCallRequest) -> tuple[_Run, ToolCall, ToolMessage | None]:
        """The call's run and, when it must not run, the ToolMessage that answers it."""
        run = self._run(request.runtime)
        tc = request.tool_call
        call_id = tc.get("id")
        judged = run.pending.pop(call_id, None) if call_id is not None else None
        if judged is not None and judged[0].name == tc["name"]:
            call, decision = judged
        else:
            # A call the model wrapper never saw (added or rewritten by another middleware, or a
            # direct ToolNode use): judge it now.
            call = ToolCall(tc["name"], tc.get("args", {}), id=call_id)
            decision = self._note(run, run.session.before_call(call))
        if decision.mode != "enforce":
            return run, call, None  # observe mode: decided and recorded, never applied
        verdict = decision.verdict
        if verdict.runs_tool:
            if run.stop is not None:
                # The run is ending: calls of the batch that have not started yet do not run.
                return run, call, _tool_message(call, _stopped_text(run.stop), "error", run.stop)
            return run, call, None
        # The payload is what the model reads as this call's result, so the session records
        # it as one (as the ToolNode wrapper, the stream and replay of the trace do).
        self._note(run, run.session.after_call(call, ToolResult(verdict.payload(), True if verdict.is_error else None)))
        return run, call, _tool_message(call, verdict.payload_text(), "error" if verdict.is_error else "success", decision)

    def _record(self, run: _Run, call: ToolCall, result: ToolMessage | Command[Any], started: float) -> None:
        output, error = _result_of(result, call.id)
        elapsed = (time.perf_counter() - started) * 1000.0
        self._note(run, run.session.after_call(call, ToolResult(output, error, elapsed)))

    def _record_error(self, run: _Run, call: ToolCall, error: Exception, started: float) -> None:
        elapsed = (time.perf_counter() - started) * 1000.0
        self._note(run, run.session.after_call(call, ToolResult(f"{type(error).__name__}: {error}", True, elapsed)))

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
        run, call, short = self._judge(request)
        if short is not None:
            return short
        started = time.perf_counter()
        try:
            result = handler(request)
        except Exception as error:
            self._record_error(run, call, error, started)
            raise
        self._record(run, call, result, started)
        return result

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Async :meth:`wrap_tool_call` (same verdicts, same payloads)."""
        run, call, short = self._judge(request)
        if short is not None:
            return short
        started = time.perf_counter()
        try:
            result = await handler(request)
        except Exception as error:
            self._record_error(run, call, error, started)
            raise
        self._record(run, call, result, started)
        return result


# -- helpers -----------------------------------------------------------------------------


def _model_output(response: Any) -> tuple[AIMessage | None, set[str], bool]:
    """A model response's AIMessage, the tool-call ids the response already answers (structured
    output), and whether the response ends the run with a structured response."""
    if isinstance(response, AIMessage):
        return response, set(), False
    inner = getattr(response, "model_response", None)  # an ExtendedModelResponse
    if inner is not None:
        response = inner
    result = getattr(response, "result", None)
    if not result:
        return None, set(), False
    if len(result) == 1:
        message = result[0]
        return (message if isinstance(message, AIMessage) else None), set(), False
    ai = next((m for m in reversed(result) if isinstance(m, AIMessage)), None)
    answered = {m.tool_call_id for m in result if isinstance(m, ToolMessage)}
    return ai, answered, getattr(response, "structured_response", None) is not None


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
