"""The callback adapter: watch a LangChain / LangGraph run through its callbacks and interrupt it.

Usage::

    from loopguard.adapters.callbacks import LoopGuardCallbackHandler
    from loopguard.errors import LoopGuardInterrupt

    handler = LoopGuardCallbackHandler("loopguard.yml")        # or a CompiledPolicy, a Guard
    try:
        graph.invoke(inputs, {"callbacks": [handler], "run_id": run_id})
    except LoopGuardInterrupt as stop:
        print(stop.decision.reasons)
    handler.report(run_id)   # {"interrupted", "events", "signals", "decisions", "metrics", ...}

A callback handler cannot change what a tool returns; it observes every step, records the
guard's decisions and, on a ``stop`` decision in enforce mode, raises
:class:`~loopguard.errors.LoopGuardInterrupt` out of ``invoke`` / ``ainvoke``. To apply the
per-call verdicts (block, answer, cancel, ...) use a per-call guard as well
(:func:`loopguard.adapters.langgraph.loopguard_tool_wrapper` or the LangChain middleware).

What each callback does (all of one run share one session, keyed by the **root run id**):

* ``on_chain_start`` of a root run (no parent): a new run; the latest user message of its
  input (``{"messages": [...]}``) starts the turn (``observe_user_message``). Every start
  records ``run_id → root`` so nested chains, models and tools find their run.
* ``on_chat_model_start`` / ``on_llm_start``: handoff heuristic (below).
* ``on_llm_end``: token usage (``LLMResult.llm_output["token_usage"]``, else the generations'
  ``usage_metadata``) → ``observe_model_call`` with the model name, so the policy's
  ``pricing`` table prices it; then the whole batch of tool calls of the generated message is
  judged at once (``before_batch``): every call of a parallel batch is seen, in the model's
  order, before any tool runs. A generated message with text and no tool call is an agent
  message (``observe_agent_message``), as in a replayed chat trace.
* ``on_tool_start``: looks up the call's decision by ``tool_call_id`` (a tool run outside a
  model's tool call is judged here with ``before_call``).
* ``on_tool_end`` / ``on_tool_error``: the result (``ToolMessage.status == "error"`` or an
  exception → ``error=True``) → ``after_call``.
* ``on_chain_end``: tool messages in a node's output whose call was judged but whose tool
  never ran (a per-call guard answered, blocked or cancelled it; an unknown tool name) are
  recorded as that call's result: the model reads them as one.

**Handoff heuristic.** A LangGraph node is an *agent node* when a chat model runs inside it
(the model run's ``langgraph_checkpoint_ns`` / ``langgraph_node`` metadata name it, as
``outer/inner`` for nested graphs). When a model runs in an agent node other than the
previous one of the run, the run observes a handoff (``observe_handoff(node, previous)``).
Internal nodes (``tools``, ``__start__``, ``ChannelWrite``, branches) never run a model, so
they are never agents and need no list; the stream wrapper of
:mod:`loopguard.adapters.langgraph` applies the same rule to its node updates.

The run state (:class:`GuardedRun`) is shared with the LangGraph adapters: it keeps the
decisions per tool-call id, the contract messages (``event`` / ``signal`` / ``decision``)
and the metrics (guard time per step in µs).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter, OrderedDict, deque
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence
from uuid import UUID

try:
    from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, LLMResult
except ModuleNotFoundError as error:  # (without the langchain extra: say how to install it)
    from ._extra import missing_extra

    raise missing_extra(__name__, error) from error

from ..calls import ModelUsage, ToolCall, ToolResult
from ..decisions import Decision, GuardAction, VerdictKind
from ..errors import LoopGuardInterrupt
from ..guard import Guard
from ..policy import CompiledPolicy
from ..session import Session

__all__ = [
    "AsyncLoopGuardCallbackHandler",
    "GuardedRun",
    "LoopGuardCallbackHandler",
    "PolicyArg",
    "RunRegistry",
]

PolicyArg = str | Path | CompiledPolicy | Guard
"""A policy file path, ``builtin:NAME``, a compiled policy or a ready :class:`Guard`."""

#: Characters of a tool output or message text copied into an ``event`` message.
EVENT_TEXT_LIMIT = 500
#: Tool-call ids remembered per run (decisions, pending calls, recorded results); oldest dropped.
ID_MEMORY = 4096
#: Live child runs tracked per handler (run id -> root run id); the oldest are forgotten past it.
ROOTS_MEMORY = 65536


def _clip(value: Any) -> Any:
    """A bounded, JSON-friendly copy of a tool output or text for event messages."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= EVENT_TEXT_LIMIT else text[:EVENT_TEXT_LIMIT] + "…"


class _BoundedIds(OrderedDict):  # type: ignore[type-arg]
    """An insertion-ordered map that forgets its oldest entries past ``ID_MEMORY``."""

    def put(self, key: Any, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > ID_MEMORY:
            self.popitem(last=False)


class GuardedRun:
    """The adapter-side state of one guarded run around its :class:`Session`.

    Every observation goes through this object, which times the session call, caches
    before-call decisions per tool-call id (so a batch is judged once even when several
    adapters see it), pairs results with their calls, records each result once, and turns
    each step into loopguard-runtime contract messages:

    * ``{"type": "event", "run_id", "kind", "step", ...}`` — ``kind`` is ``user_message``,
      ``model_call`` (``model``, ``input_tokens``, ``output_tokens``, ``cost_usd``),
      ``handoff`` (``agent``, ``caller``), ``agent_message`` (``agent``, ``text``),
      ``tool_call`` (``tool``, ``tool_call_id``, ``arguments``, ``call_index``) or
      ``tool_result`` (``tool``, ``tool_call_id``, ``error``, ``output`` clipped to 500 chars);
    * ``{"type": "signal", "run_id", "step", "phase", "tool", "detector", "kind", "score",
      "message", "evidence"}`` — one per active signal of each decision;
    * ``{"type": "decision", "run_id", "step", "phase", "tool", "call_index", "action",
      "risk", "verdict", "rule", "signals", "revision", "mode", "payload"?}`` — for each
      decision that does more than continue (action above ``continue`` or a verdict other
      than ``allow``), the same rule a replay report uses.

    Messages go to bounded report buffers (``history`` each) and, while :attr:`outbox` is a
    list (a stream is draining it), to the outbox as well.

    Thread-safe: the calls of one batch may be recorded from several pool threads.
    """

    def __init__(self, session: Session, key: str, history: int = 1000) -> None:
        self.session = session
        self.key = key
        self.lock = threading.RLock()
        self.events: deque[dict[str, Any]] = deque(maxlen=history)
        self.signals: deque[dict[str, Any]] = deque(maxlen=history)
        self.decisions: deque[dict[str, Any]] = deque(maxlen=history)
        self.outbox: list[dict[str, Any]] | None = None
        self.stop: Decision | None = None  # the first stop decision (any mode)
        self.interrupted = False
        self.error: str | None = None
        #: True when an input observer (a stream or a callback handler) reports user messages,
        #: so a per-call guard sharing the run must not report them again.
        self.observes_input = False
        self.user_marker: Any = None  # the latest user message already reported
        self.last_issuer: Any = None  # id of the AIMessage whose batch a per-call guard judged last
        self.last_agent: str | None = None
        self._decided = _BoundedIds()  # tool-call id -> before-call decision
        self._calls = _BoundedIds()  # tool-call id -> ToolCall awaiting its result
        self._results = _BoundedIds()  # tool-call ids whose result is recorded
        self._seen = _BoundedIds()  # message keys already observed (model usage, agent text)
        self.counts: Counter[str] = Counter()
        self.actions: Counter[str] = Counter()
        self._guard_ns = 0
        self._guard_max_ns = 0
        self._timed_steps = 0
        self._started = time.perf_counter()

    # -- plumbing -------------------------------------------------------------------------

    def _timed(self, fn: Any, *args: Any) -> Any:
        started = time.perf_counter_ns()
        result = fn(*args)
        elapsed = time.perf_counter_ns() - started
        self._guard_ns += elapsed
        self._timed_steps += 1
        if elapsed > self._guard_max_ns:
            self._guard_max_ns = elapsed
        return result

    def _emit(self, buffer: deque[dict[str, Any]], message: dict[str, Any]) -> None:
        buffer.append(message)
        if self.outbox is not None:
            self.outbox.append(message)

    def _event(self, kind: str, step: int, **fields: Any) -> None:
        self.counts[kind] += 1
        self._emit(self.events, {"type": "event", "run_id": self.key, "kind": kind, "step": step, **fields})

    def _note(self, decision: Decision) -> Decision:
        self.actions[decision.action.value] += 1
        for signal in decision.signals:
            self._emit(self.signals, {
                "type": "signal",
                "run_id": self.key,
                "step": decision.step,
                "phase": decision.phase,
                "tool": decision.tool,
                **signal.to_dict(),
            })
        if decision.action is not GuardAction.CONTINUE or decision.verdict.kind is not VerdictKind.ALLOW:
            message = {"type": "decision", "run_id": self.key, **decision.to_dict()}
            if not decision.verdict.runs_tool:
                message["payload"] = decision.verdict.payload()
            self._emit(self.decisions, message)
        if decision.action is GuardAction.STOP and self.stop is None:
            self.stop = decision
        return decision

    @property
    def enforced_stop(self) -> Decision | None:
        """The run's stop decision when it must end the run (enforce mode), else ``None``."""
        stop = self.stop
        return stop if stop is not None and stop.mode == "enforce" else None

    # -- observations ---------------------------------------------------------------------

    def user_message(self, text: str, marker: Any = None) -> bool:
        """Report a user message (a new turn) unless ``marker`` names the one last reported.

        Returns:
            True when it was reported.
        """
        with self.lock:
            if marker is not None and marker == self.user_marker:
                return False
            self.user_marker = marker
            self._timed(self.session.observe_user_message, text)
            self._event("user_message", self.session.steps - 1, text=_clip(text))
            return True

    def model_call(self, usage: ModelUsage, marker: Any = None) -> Decision | None:
        """Report one model call's usage (tokens; cost from the policy's pricing). ``marker``
        (the message id) makes a repeated report of the same message a no-op (``None``)."""
        with self.lock:
            if marker is not None:
                if ("usage", marker) in self._seen:
                    return None
                self._seen.put(("usage", marker), True)
            decision = self._timed(self.session.observe_model_call, usage)
            self._event(
                "model_call", decision.step, model=usage.model, input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens, cost_usd=usage.cost_usd,
            )
            return self._note(decision)

    def agent(self, agent: str | None) -> Decision | None:
        """Note the agent node now producing model output; a change of agent is a handoff."""
        if agent is None:
            return None
        with self.lock:
            previous, self.last_agent = self.last_agent, agent
            if previous is None or previous == agent:
                return None
            decision = self._timed(self.session.observe_handoff, agent, previous)
            self._event("handoff", decision.step, agent=agent, caller=previous)
            return self._note(decision)

    def agent_message(self, agent: str | None, text: str, marker: Any = None) -> Decision | None:
        """Report an agent message without tool calls (judged as a possible monologue)."""
        with self.lock:
            if marker is not None:
                if ("text", marker) in self._seen:
                    return None
                self._seen.put(("text", marker), True)
            decision = self._timed(self.session.observe_agent_message, agent, text)
            self._event("agent_message", decision.step, agent=agent, text=_clip(text))
            return self._note(decision)

    def decide_batch(self, calls: Sequence[ToolCall]) -> list[Decision]:
        """The before-call decision of every call of one batch, in order.

        Calls already judged (same tool-call id) keep their decision; the others are judged
        together with ``before_batch`` against one policy revision.
        """
        with self.lock:
            fresh = [call for call in calls if call.id is None or call.id not in self._decided]
            if fresh:
                decisions = self._timed(self.session.before_batch, fresh)
                for call, decision in zip(fresh, decisions):
                    if call.id is not None:
                        self._decided.put(call.id, decision)
                        self._calls.put(call.id, call)
                    self._event(
                        "tool_call", decision.step, tool=call.name, tool_call_id=call.id,
                        arguments=call.arguments, call_index=decision.call_index,
                    )
                    self._note(decision)
                by_call = dict(zip(map(id, fresh), decisions))
            else:
                by_call = {}
            return [by_call[id(call)] if id(call) in by_call else self._decided[call.id] for call in calls]

    def decision_for(self, call_id: str | None) -> Decision | None:
        """The cached before-call decision of a tool-call id, if it was judged."""
        if call_id is None:
            return None
        with self.lock:
            return self._decided.get(call_id)

    def call_for(self, call_id: str | None) -> ToolCall | None:
        """The judged call with this id whose result is not recorded yet."""
        if call_id is None:
            return None
        with self.lock:
            return self._calls.get(call_id)

    def record_result(self, call: ToolCall, result: ToolResult) -> Decision | None:
        """Record a call's result once (``after_call``); a second report of the same
        tool-call id returns ``None``."""
        with self.lock:
            if call.id is not None:
                if call.id in self._results:
                    return None
                self._results.put(call.id, True)
                self._calls.pop(call.id, None)
            decision = self._timed(self.session.after_call, call, result)
            self._event(
                "tool_result", decision.step, tool=call.name, tool_call_id=call.id,
                error=result.error, output=_clip(result.output),
            )
            return self._note(decision)

    def fail(self, error: BaseException) -> dict[str, Any]:
        """Record an exception of the run; returns the ``error`` message."""
        with self.lock:
            self.error = f"{type(error).__name__}: {error}"
            return {"type": "error", "run_id": self.key, "error": type(error).__name__, "message": str(error)}

    # -- reports --------------------------------------------------------------------------

    def metrics(self) -> dict[str, Any]:
        """``{"type": "metrics", "run_id", "steps", "tool_calls", "tool_results", "model_calls",
        "handoffs", "user_messages", "agent_messages", "actions": {action: count},
        "guard_us_total", "guard_us_per_step", "guard_us_max", "wall_ms"}``.

        ``guard_us_*`` is the time spent inside the session (µs), per observed step;
        ``wall_ms`` is the time since the run was opened (ms), the agent's own time included.
        """
        with self.lock:
            steps = self._timed_steps
            return {
                "type": "metrics",
                "run_id": self.key,
                "steps": self.session.steps,
                "tool_calls": self.counts["tool_call"],
                "tool_results": self.counts["tool_result"],
                "model_calls": self.counts["model_call"],
                "handoffs": self.counts["handoff"],
                "user_messages": self.counts["user_message"],
                "agent_messages": self.counts["agent_message"],
                "actions": dict(self.actions),
                "guard_us_total": round(self._guard_ns / 1000.0, 3),
                "guard_us_per_step": round(self._guard_ns / 1000.0 / steps, 3) if steps else 0.0,
                "guard_us_max": round(self._guard_max_ns / 1000.0, 3),
                "wall_ms": round((time.perf_counter() - self._started) * 1000.0, 3),
            }

    def done(self) -> dict[str, Any]:
        """``{"type": "done", "run_id", "interrupted", "verdict", "verdict_step", "stop", "error"}``:
        ``verdict`` is the most severe action reached (``continue`` when nothing was decided)
        and ``verdict_step`` the step where it was first reached; ``stop`` is the stop
        decision (a dict) or ``None``."""
        with self.lock:
            worst = self.session.worst
            return {
                "type": "done",
                "run_id": self.key,
                "interrupted": self.interrupted,
                "verdict": worst.action.value if worst is not None else GuardAction.CONTINUE.value,
                "verdict_step": worst.step if worst is not None else None,
                "stop": self.stop.to_dict() if self.stop is not None else None,
                "error": self.error,
            }

    def report(self) -> dict[str, Any]:
        """A plain dict: ``run_id``, ``interrupted``, ``verdict``, ``verdict_step``, ``stop``,
        ``error``, ``events``, ``signals``, ``decisions`` (lists of contract messages, each
        bounded by ``history``) and ``metrics``."""
        with self.lock:
            done = self.done()
            return {
                "run_id": self.key,
                "interrupted": self.interrupted,
                "verdict": done["verdict"],
                "verdict_step": done["verdict_step"],
                "stop": done["stop"],
                "error": self.error,
                "events": list(self.events),
                "signals": list(self.signals),
                "decisions": list(self.decisions),
                "metrics": self.metrics(),
            }


class RunRegistry:
    """Guarded runs by key, for one guard; the oldest runs are forgotten past ``limit``.

    Args:
        guard: makes one session per run.
        limit: how many runs to keep (live and finished), oldest dropped first.
        history: messages kept per report buffer of each run.
    """

    def __init__(self, guard: Guard, limit: int = 1024, history: int = 1000) -> None:
        self.guard = guard
        self.limit = max(1, limit)
        self.history = history
        self._runs: OrderedDict[str, GuardedRun] = OrderedDict()
        self._lock = threading.Lock()
        self.latest: str | None = None

    def get(self, key: str) -> GuardedRun | None:
        with self._lock:
            return self._runs.get(key)

    def open(self, key: str, thread_id: str | None = None) -> GuardedRun:
        """The run registered under ``key``, created (with a fresh session) on first use."""
        with self._lock:
            run = self._runs.get(key)
            if run is None:
                run = GuardedRun(self.guard.session(run_id=key, thread_id=thread_id), key, self.history)
                self._runs[key] = run
                while len(self._runs) > self.limit:
                    self._runs.popitem(last=False)
            self.latest = key
            return run

    def clear(self) -> None:
        with self._lock:
            self._runs.clear()
            self.latest = None

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._runs)


# -- reading LangChain objects -----------------------------------------------------------------


def message_text(content: Any) -> str:
    """The text of a message's content (a string, or a list of text blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "".join(parts)
    return "" if content is None else str(content)


def usage_of(message: AIMessage, llm_output: Mapping[str, Any] | None = None) -> ModelUsage | None:
    """The token usage of one generated message (``usage_metadata``), else the provider's
    ``llm_output["token_usage"]`` (``prompt_tokens`` / ``completion_tokens``); the model
    name comes from ``response_metadata`` or ``llm_output``. ``None`` when nothing is known."""
    meta = message.response_metadata or {}
    model = meta.get("model_name") or meta.get("model") or (llm_output or {}).get("model_name")
    usage = message.usage_metadata
    if usage:
        return ModelUsage(int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0), model=model)
    token_usage = (llm_output or {}).get("token_usage") or (llm_output or {}).get("usage")
    if isinstance(token_usage, Mapping):
        return ModelUsage(
            int(token_usage.get("prompt_tokens") or token_usage.get("input_tokens") or 0),
            int(token_usage.get("completion_tokens") or token_usage.get("output_tokens") or 0),
            model=model,
        )
    return None


def calls_of(message: AIMessage, agent: str | None = None) -> list[ToolCall]:
    """The tool calls of an assistant message as loopguard calls (the batch, in order)."""
    return [ToolCall(tc["name"], tc.get("args") or {}, id=tc.get("id"), agent=agent) for tc in message.tool_calls]


def tool_result_of(message: ToolMessage) -> ToolResult:
    """A ToolMessage as a result: ``status == "error"`` is a failure; otherwise the error
    flag is left unknown (``None``) so the failure detector reads the wording, as a replay does."""
    return ToolResult(message.content, True if message.status == "error" else None)


def latest_user_text(messages: Any) -> str | None:
    """The text of the latest user message of an input message list (HumanMessage,
    ``{"role": "user"}`` dict, ``("user", text)`` tuple or a bare string), else ``None``."""
    if isinstance(messages, (str, BaseMessage)):
        messages = [messages]
    if not isinstance(messages, (list, tuple)):
        return None
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message_text(message.content)
        if isinstance(message, dict) and message.get("role") in ("user", "human"):
            return message_text(message.get("content"))
        if isinstance(message, (list, tuple)) and len(message) == 2 and message[0] in ("user", "human"):
            return message_text(message[1])
        if isinstance(message, str):
            return message
    return None


def agent_path(namespace: Iterable[str], node: str | None) -> str | None:
    """The agent name of a node: the graph path without task ids (``outer/inner``)."""
    parts = [part.split(":", 1)[0] for part in namespace if part]
    if node:
        parts.append(node)
    return "/".join(parts) or None


def _agent_of_metadata(metadata: Mapping[str, Any] | None) -> str | None:
    if not metadata:
        return None
    namespace = metadata.get("langgraph_checkpoint_ns")
    if isinstance(namespace, str) and namespace:
        return agent_path(namespace.split("|"), None)
    node = metadata.get("langgraph_node")
    return node if isinstance(node, str) else None


def _tool_messages(outputs: Any) -> list[ToolMessage]:
    """Tool messages of a chain's output (a message, a list, or a dict of them)."""
    if isinstance(outputs, ToolMessage):
        return [outputs]
    if isinstance(outputs, dict):
        found: list[ToolMessage] = []
        for value in outputs.values():
            if isinstance(value, ToolMessage):
                found.append(value)
            elif isinstance(value, (list, tuple)):
                found.extend(item for item in value if isinstance(item, ToolMessage))
        return found
    if isinstance(outputs, (list, tuple)):
        found = []
        for item in outputs:
            found.extend(_tool_messages(item))
        return found
    return []


# -- the handler -----------------------------------------------------------------------------


class _HandlerCore:
    """The callback logic shared by the sync and the async handler (all calls are in-memory
    and cheap, so the async handler runs them inline)."""

    def _setup(self, policy: PolicyArg | None, profile: str | None, interrupt: bool, history: int, limit: int) -> None:
        self.guard = Guard.resolve(policy, profile)
        self.interrupt = interrupt
        self.runs = RunRegistry(self.guard, limit=limit, history=history)
        self._roots: dict[UUID, UUID] = {}  # run id of every live child run -> its root run id
        self._roots_lock = threading.Lock()

    # -- run tree -------------------------------------------------------------------------

    def _root(self, run_id: UUID, parent_run_id: UUID | None) -> UUID:
        with self._roots_lock:
            root = self._roots.get(run_id)
            if root is None:
                root = self._roots.get(parent_run_id, parent_run_id) if parent_run_id is not None else run_id
                self._roots[run_id] = root
                if len(self._roots) > ROOTS_MEMORY:
                    # runs that never reported their end (cancelled tasks): forget the oldest
                    del self._roots[next(iter(self._roots))]
            return root

    def _forget(self, run_id: UUID, parent_run_id: UUID | None) -> None:
        # A finished child run is dropped at once (memory stays bounded by live runs); a root's
        # session lives on in the registry for report().
        with self._roots_lock:
            self._roots.pop(run_id, None)

    def _run(self, run_id: UUID, parent_run_id: UUID | None) -> GuardedRun:
        root = self._root(run_id, parent_run_id)
        run = self.runs.open(str(root))
        run.observes_input = True
        return run

    def _check(self, run: GuardedRun, decision: Decision | None) -> None:
        """Raise when the run must stop: a stop decision in enforce mode with ``interrupt`` on."""
        if decision is None or not self.interrupt:
            return
        stop = run.enforced_stop
        if stop is not None:
            run.interrupted = True
            raise LoopGuardInterrupt(stop)

    # -- callbacks ------------------------------------------------------------------------

    def _chain_start(self, inputs: Any, run_id: UUID, parent_run_id: UUID | None) -> None:
        run = self._run(run_id, parent_run_id)
        if parent_run_id is None and isinstance(inputs, dict):
            text = latest_user_text(inputs.get("messages"))
            if text is not None:
                run.user_message(text, marker=("input", str(run_id)))

    def _model_start(self, metadata: Mapping[str, Any] | None, run_id: UUID, parent_run_id: UUID | None) -> None:
        run = self._run(run_id, parent_run_id)
        self._check(run, run.agent(_agent_of_metadata(metadata)))

    def _llm_end(self, response: LLMResult, run_id: UUID, parent_run_id: UUID | None) -> None:
        run = self._run(run_id, parent_run_id)
        self._forget(run_id, parent_run_id)
        last: Decision | None = None
        for generations in response.generations:
            for generation in generations:
                message = generation.message if isinstance(generation, ChatGeneration) else None
                if not isinstance(message, AIMessage):
                    continue
                usage = usage_of(message, response.llm_output)
                if usage is not None:
                    last = run.model_call(usage, marker=message.id) or last
                calls = calls_of(message)
                if calls:
                    decisions = run.decide_batch(calls)
                    last = decisions[-1] if decisions else last
                else:
                    text = message_text(message.content)
                    if text:
                        last = run.agent_message(message.name, text, marker=message.id) or last
        self._check(run, last)

    def _tool_start(self, serialized: Mapping[str, Any] | None, input_str: str, inputs: Any, tool_call_id: str | None,
                    run_id: UUID, parent_run_id: UUID | None) -> None:
        run = self._run(run_id, parent_run_id)
        decision = run.decision_for(tool_call_id)
        if decision is None:
            # A tool run by something other than a model's tool call: judge it on its own.
            name = (serialized or {}).get("name") or "tool"
            arguments = inputs if inputs is not None else {"input": input_str}
            decision = run.decide_batch([ToolCall(name, arguments, id=tool_call_id or str(run_id))])[0]
        self._check(run, decision)

    def _tool_end(self, output: Any, tool_call_id: str | None, error: bool | None, run_id: UUID, parent_run_id: UUID | None) -> None:
        run = self._run(run_id, parent_run_id)
        self._forget(run_id, parent_run_id)
        if isinstance(output, ToolMessage):
            tool_call_id = tool_call_id or output.tool_call_id
            result = tool_result_of(output)
            if error:
                result = ToolResult(result.output, True)
        else:
            result = ToolResult(output if error is None else str(output), error)
        call = run.call_for(tool_call_id) or ToolCall(getattr(output, "name", None) or "tool", {}, id=tool_call_id or str(run_id))
        self._check(run, run.record_result(call, result))

    def _chain_end(self, outputs: Any, run_id: UUID, parent_run_id: UUID | None) -> None:
        run = self._run(run_id, parent_run_id)
        self._forget(run_id, parent_run_id)
        decision: Decision | None = None
        for message in _tool_messages(outputs):
            call = run.call_for(message.tool_call_id)
            if call is not None:  # judged here, result not seen: the tool never ran
                decision = run.record_result(call, tool_result_of(message)) or decision
        self._check(run, decision)

    def _chain_error(self, error: BaseException, run_id: UUID, parent_run_id: UUID | None) -> None:
        run = self._run(run_id, parent_run_id)
        self._forget(run_id, parent_run_id)
        if parent_run_id is None:
            if isinstance(error, LoopGuardInterrupt):
                run.interrupted = True
            elif run.error is None:
                run.fail(error)

    # -- reports --------------------------------------------------------------------------

    def session(self, run_id: str | UUID | None = None) -> Session | None:
        """The session of a root run (default: the latest), if any."""
        run = self._report_run(run_id)
        return run.session if run is not None else None

    def _report_run(self, run_id: str | UUID | None) -> GuardedRun | None:
        key = str(run_id) if run_id is not None else self.runs.latest
        return self.runs.get(key) if key is not None else None

    def report(self, run_id: str | UUID | None = None) -> dict[str, Any]:
        """What the guard saw and decided in one root run (default: the latest run started).

        Returns:
            ``{"run_id", "interrupted", "verdict", "verdict_step", "stop", "error", "events",
            "signals", "decisions", "metrics"}`` (see :class:`GuardedRun`); for an unknown
            run, the same keys with empty lists and ``verdict == "continue"``.
        """
        run = self._report_run(run_id)
        if run is None:
            return {
                "run_id": None if run_id is None else str(run_id), "interrupted": False, "verdict": "continue",
                "verdict_step": None, "stop": None, "error": None, "events": [], "signals": [],
                "decisions": [], "metrics": {},
            }
        return run.report()

    def reset(self) -> None:
        """Forget every run: the next invocation starts a new run with a fresh session."""
        self.runs.clear()
        with self._roots_lock:
            self._roots.clear()


class _Callbacks(_HandlerCore):
    """The callback methods, as plain functions for both handlers.

    They are deliberately not coroutines, even on the async handler: langchain-core runs a
    coroutine callback that a sync code path triggers (a sync tool run on a worker thread
    under ``ainvoke``) through a private event loop that logs and swallows its exceptions,
    whatever ``raise_error`` says, so an interrupt raised there would be lost. A plain method
    with ``run_inline = True`` runs inline on both the sync and the async path and its
    exception propagates."""

    raise_error = True  # an interrupt must propagate out of invoke, not be logged and dropped
    run_inline = True  # cheap in-memory work; inline keeps event order in async runs

    def __init__(
        self,
        policy: PolicyArg | None = None,
        profile: str | None = None,
        interrupt: bool = True,
        *,
        history: int = 1000,
        limit: int = 1024,
    ) -> None:
        super().__init__()
        self._setup(policy, profile, interrupt, history, limit)

    def on_chain_start(self, serialized: dict[str, Any], inputs: dict[str, Any], *, run_id: UUID,
                       parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        self._chain_start(inputs, run_id, parent_run_id)

    def on_chain_end(self, outputs: dict[str, Any], *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        self._chain_end(outputs, run_id, parent_run_id)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        self._chain_error(error, run_id, parent_run_id)

    def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[BaseMessage]], *, run_id: UUID,
                            parent_run_id: UUID | None = None, metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        self._model_start(metadata, run_id, parent_run_id)

    def on_llm_start(self, serialized: dict[str, Any], prompts: list[str], *, run_id: UUID,
                     parent_run_id: UUID | None = None, metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        self._model_start(metadata, run_id, parent_run_id)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        self._llm_end(response, run_id, parent_run_id)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        self._forget(run_id, parent_run_id)

    def on_tool_start(self, serialized: dict[str, Any], input_str: str, *, run_id: UUID, parent_run_id: UUID | None = None,
                      inputs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        self._tool_start(serialized, input_str, inputs, kwargs.get("tool_call_id"), run_id, parent_run_id)

    def on_tool_end(self, output: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        self._tool_end(output, kwargs.get("tool_call_id"), None, run_id, parent_run_id)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        self._tool_end(f"{type(error).__name__}: {error}", kwargs.get("tool_call_id"), True, run_id, parent_run_id)


class LoopGuardCallbackHandler(_Callbacks, BaseCallbackHandler):
    """Watch LangChain / LangGraph runs and interrupt them on ``stop`` (see the module doc).

    Args:
        policy: a policy file path, ``builtin:NAME``, a :class:`CompiledPolicy` or a
            :class:`Guard`; ``None``: ``./loopguard.yml`` when it exists, else ``builtin:default``.
        profile: the policy profile (ignored for a compiled policy or a guard).
        interrupt: raise :class:`~loopguard.errors.LoopGuardInterrupt` on a stop decision in
            enforce mode. In observe mode nothing is ever raised.
        history: contract messages kept per report buffer of a run.
        limit: root runs kept for :meth:`report` (oldest forgotten first).

    Raises:
        loopguard.policy.PolicyError: the policy does not validate.
        LoopGuardInterrupt: (from the callbacks, out of ``invoke``) a stop in enforce mode.

    LangChain logs a warning ("Error in LoopGuardCallbackHandler.on_tool_end callback") for
    the interrupt before it propagates; that is the framework's logging, not a failure.
    """


class AsyncLoopGuardCallbackHandler(_Callbacks, AsyncCallbackHandler):
    """The handler for ``ainvoke`` / ``astream`` (same arguments, reports and interrupts as
    :class:`LoopGuardCallbackHandler`). An :class:`AsyncCallbackHandler` so async callback
    managers treat it as one; its callbacks run inline (see :class:`_Callbacks` for why)."""
