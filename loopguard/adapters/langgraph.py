"""LangGraph adapters: a per-call guard for ``ToolNode`` and a guarded stream of a graph run.

Per-call guard (applies verdicts)::

    from langgraph.prebuilt import ToolNode
    from loopguard.adapters.langgraph import LoopGuardToolWrapper

    wrapper = LoopGuardToolWrapper("loopguard.yml")          # or loopguard_tool_wrapper(...)
    tools = ToolNode(my_tools, wrap_tool_call=wrapper, awrap_tool_call=wrapper.awrap)

For every tool call the wrapper looks up (or makes) the call's decision. The first call of a
batch it sees judges the **whole batch**: it finds the AIMessage of the request's state that
issued the call and runs ``before_batch`` on all its tool calls (reporting the message's
token usage first, and the latest user message as a new turn), caching one decision per
tool-call id for the batch's other calls, which ToolNode runs on pool threads or tasks.
Then, in enforce mode:

* ``allow`` → the tool runs; its result (``ToolMessage.status == "error"`` → ``error=True``,
  else unknown so the failure detector reads the wording) is recorded with ``after_call``;
* ``answer`` → ``ToolMessage(content=<the configured value: a string as is, else JSON>)``;
* ``cancel`` / ``block`` / ``unavailable`` / ``budget_spent`` → ``ToolMessage(content=<payload
  JSON>, status="error")``. The tool never runs. The payload is recorded as the call's result,
  because it is what the model reads: a model that keeps calling a blocked tool is looping,
  and a replay of the recorded messages sees the same thing;
* a ``stop`` decision raises :class:`~loopguard.errors.LoopGuardInterrupt` out of the graph
  (``raise_on_stop=True``, the default; no call of that batch runs), or, with
  ``raise_on_stop=False``, answers the stop's ``guard_stop`` payload to that call and to every
  later call of the run. ToolNode's default ``handle_tool_errors`` re-raises exceptions other
  than argument errors, so the interrupt leaves ``invoke``; a ToolNode built with
  ``handle_tool_errors=True`` would turn it into an error message instead.

In observe mode (``decision.mode == "observe"``) everything is decided and recorded and
nothing is applied: every tool runs and nothing raises.

Session keys (one guarded run per key): ``configurable["loopguard_run"]`` (set by
:meth:`LoopGuard.stream`), else the LangGraph run id (``config["run_id"]`` of ``invoke``),
else ``thread:<thread_id>``, else the id of the first message of the state (add_messages gives
every input message a fresh id, so concurrent anonymous runs still get separate sessions),
else ``"default"``. With ``key_by="thread"`` the thread id comes first: one session for a whole
conversation thread (budgets with ``scope: thread``), each new user message a new turn.
The wrapper cannot see agent messages without tool calls or node changes; the stream wrapper
and the callback handler report those.

Stream wrapper (observes, stops)::

    guard = LoopGuard("loopguard.yml")
    for message in guard.stream(graph, {"messages": [("user", "book it")]}):
        print(message["type"], message)

See :meth:`LoopGuard.stream` for the message contract.
"""

from __future__ import annotations

import uuid
from typing import Any, AsyncIterator, Awaitable, Callable, Iterator, Literal, Sequence

try:
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.types import Command
except ModuleNotFoundError as error:  # (without the langchain extra: say how to install it)
    from ._extra import missing_extra

    raise missing_extra(__name__, error) from error

from ..calls import ToolCall, ToolResult
from ..decisions import Decision, Verdict, VerdictKind
from ..errors import LoopGuardInterrupt
from ..guard import Guard
from ..session import Session
from .callbacks import (
    GuardedRun,
    PolicyArg,
    RunRegistry,
    agent_path,
    calls_of,
    latest_user_text,
    message_text,
    tool_result_of,
    usage_of,
)

__all__ = [
    "RUN_KEY",
    "LoopGuard",
    "LoopGuardToolWrapper",
    "loopguard_async_tool_wrapper",
    "loopguard_tool_wrapper",
]

#: The ``configurable`` entry naming the guarded run a tool call belongs to.
RUN_KEY = "loopguard_run"

ToolOutput = ToolMessage | Command
Execute = Callable[[ToolCallRequest], ToolOutput]
AsyncExecute = Callable[[ToolCallRequest], Awaitable[ToolOutput]]
KeyBy = Literal["run", "thread"]


# -- state helpers ----------------------------------------------------------------------------


def _messages_of(state: Any) -> list[Any]:
    """The message list of a graph state (``{"messages": [...]}``, a list, or a model)."""
    if isinstance(state, list):
        return state
    if isinstance(state, dict):
        messages = state.get("messages")
        if isinstance(messages, list):
            return messages
        for value in state.values():  # a custom messages_key
            if isinstance(value, list) and value and isinstance(value[-1], BaseMessage):
                return value
        return []
    messages = getattr(state, "messages", None)
    return messages if isinstance(messages, list) else []


def _issuer(messages: Sequence[Any], call_id: str | None) -> AIMessage | None:
    """The latest AIMessage whose tool calls include ``call_id``."""
    if call_id is None:
        return None
    for message in reversed(messages):
        if isinstance(message, AIMessage) and any(tc.get("id") == call_id for tc in message.tool_calls):
            return message
    return None


def _latest_human(messages: Sequence[Any], since: Any = None) -> tuple[Any, str] | None:
    """(marker, text) of the latest user message of a state (marker: its id, else its
    position), looking back no further than the AIMessage whose id is ``since`` (the batch
    judged before): a user message older than that was already reported, and stopping there
    keeps the cost per batch independent of the run's length."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, HumanMessage):
            return (message.id or ("index", index)), message_text(message.content)
        if since is not None and isinstance(message, AIMessage) and message.id == since:
            return None
    return None


def _result_of(output: Any, call_id: str | None) -> ToolResult:
    """A tool node's output (ToolMessage or Command) as a loopguard result."""
    if isinstance(output, ToolMessage):
        return tool_result_of(output)
    if isinstance(output, Command):
        update = output.update
        messages = update.get("messages", []) if isinstance(update, dict) else []
        for message in messages if isinstance(messages, list) else [messages]:
            if isinstance(message, ToolMessage) and (call_id is None or message.tool_call_id == call_id):
                return tool_result_of(message)
        return ToolResult(update, None)
    return ToolResult(output, None)


def _stop_verdict(stop: Decision) -> Verdict:
    """What a call reads when it comes after the run's stop: the stop's own ``guard_stop``
    payload, or one built from its reasons when the stop was decided on a result."""
    if not stop.verdict.runs_tool:
        return stop.verdict
    reasons = "; ".join(stop.reasons) or "the run is stuck"
    return Verdict(VerdictKind.BLOCK, rule=stop.rule, error_type="guard_stop", message=f"loopguard stopped the run: {reasons}.")


def _verdict_message(call: ToolCall, verdict: Verdict, decision: Decision) -> ToolMessage:
    return ToolMessage(
        content=verdict.payload_text(),
        tool_call_id=call.id or "",
        name=call.name,
        status="error" if verdict.is_error else "success",
        # for tracing UIs and tests; providers never see response_metadata
        response_metadata={"loopguard": {"verdict": verdict.kind.value, "rule": decision.rule, "action": decision.action.value}},
    )


# -- the per-call guard -----------------------------------------------------------------------


class LoopGuardToolWrapper:
    """A ``ToolNode`` ``wrap_tool_call`` (the instance) / ``awrap_tool_call`` (:meth:`awrap`)
    that applies the guard's verdicts (see the module doc).

    Args:
        policy: a policy path, ``builtin:NAME``, a compiled policy or a :class:`Guard`; ``None``:
            ``./loopguard.yml`` when it exists, else ``builtin:default``. Ignored when ``runs``
            is given.
        profile: the policy profile (paths only).
        raise_on_stop: on a stop decision in enforce mode raise
            :class:`~loopguard.errors.LoopGuardInterrupt` (default) instead of answering the
            stop payload.
        key_by: ``"run"`` (one session per graph run) or ``"thread"`` (per conversation thread).
        runs: share the guarded runs of another adapter (:class:`LoopGuard` passes its own).

    Raises:
        loopguard.policy.PolicyError: the policy does not validate.
    """

    def __init__(
        self,
        policy: PolicyArg | None = None,
        profile: str | None = None,
        *,
        raise_on_stop: bool = True,
        key_by: KeyBy = "run",
        runs: RunRegistry | None = None,
    ) -> None:
        self.runs = runs if runs is not None else RunRegistry(Guard.resolve(policy, profile))
        self.guard: Guard = self.runs.guard
        self.raise_on_stop = raise_on_stop
        self.key_by = key_by

    # -- keys -----------------------------------------------------------------------------

    def key_of(self, request: ToolCallRequest) -> tuple[str, str | None]:
        """(session key, thread id) of a request; see the module doc for the order."""
        runtime = request.runtime
        config = getattr(runtime, "config", None) or {}
        configurable = config.get("configurable") or {}
        thread_id = configurable.get("thread_id")
        thread = None if thread_id is None else str(thread_id)
        explicit = configurable.get(RUN_KEY)
        if explicit is not None:
            return str(explicit), thread
        if self.key_by == "thread" and thread is not None:
            return f"thread:{thread}", thread
        info = getattr(runtime, "execution_info", None)
        run_id = getattr(info, "run_id", None) or config.get("run_id")
        if run_id is not None:
            return str(run_id), thread
        if thread is not None:
            return f"thread:{thread}", thread
        messages = _messages_of(request.state)
        if messages and getattr(messages[0], "id", None):
            return f"messages:{messages[0].id}", thread
        return "default", thread

    def run(self, key: str) -> GuardedRun | None:
        """The guarded run of a session key, if any."""
        return self.runs.get(key)

    def session(self, key: str) -> Session | None:
        """The session of a session key, if any."""
        run = self.runs.get(key)
        return run.session if run is not None else None

    # -- verdicts -------------------------------------------------------------------------

    def judge(self, request: ToolCallRequest) -> tuple[GuardedRun, ToolCall, Decision, ToolMessage | None]:
        """The call's run, call and decision, and the ToolMessage that answers it when the
        tool must not run (``None``: run it).

        Raises:
            LoopGuardInterrupt: the run is stopped (enforce mode, ``raise_on_stop``).
        """
        key, thread = self.key_of(request)
        run = self.runs.open(key, thread)
        tc = request.tool_call
        call = ToolCall(tc["name"], tc.get("args") or {}, id=tc.get("id"))
        with run.lock:  # one batch is judged once, whichever of its calls arrives first
            decision = run.decision_for(call.id)
            if decision is None:
                decision = self._judge_batch(run, call, _messages_of(request.state))
        if decision.mode != "enforce":
            return run, call, decision, None  # observe mode: decided and recorded, never applied
        stop = run.enforced_stop
        if stop is not None:
            if self.raise_on_stop:
                run.interrupted = True
                raise LoopGuardInterrupt(stop)
            verdict = decision.verdict if not decision.verdict.runs_tool else _stop_verdict(stop)
            reply = _verdict_message(call, verdict, decision if verdict is decision.verdict else stop)
            run.record_result(call, ToolResult(verdict.payload(), verdict.is_error or None))
            return run, call, decision, reply
        verdict = decision.verdict
        if verdict.runs_tool:
            return run, call, decision, None
        run.record_result(call, ToolResult(verdict.payload(), True if verdict.is_error else None))
        return run, call, decision, _verdict_message(call, verdict, decision)

    def _judge_batch(self, run: GuardedRun, call: ToolCall, messages: list[Any]) -> Decision:
        if not run.observes_input:
            human = _latest_human(messages, since=run.last_issuer)
            if human is not None:
                run.user_message(human[1], marker=human[0])
        issuer = _issuer(messages, call.id)
        if issuer is not None and issuer.id:
            run.last_issuer = issuer.id
        if issuer is None:  # a call from outside the state (a Send payload, a direct invoke)
            return run.decide_batch([call])[0]
        usage = usage_of(issuer)
        if usage is not None:
            run.model_call(usage, marker=issuer.id)
        batch = calls_of(issuer)
        decisions = run.decide_batch(batch)
        for entry, decision in zip(batch, decisions):
            if entry.id == call.id:
                return decision
        return run.decide_batch([call])[0]

    def _after(self, run: GuardedRun, call: ToolCall, decision: Decision | None) -> None:
        if decision is not None and self.raise_on_stop and run.enforced_stop is not None:
            run.interrupted = True
            raise LoopGuardInterrupt(run.enforced_stop)

    def __call__(self, request: ToolCallRequest, execute: Execute) -> ToolOutput:
        """The sync ``wrap_tool_call``.

        Returns:
            the tool's own output, or the verdict's ToolMessage (``tool_call_id`` and ``name``
            of the call; content = payload text; status ``error`` except for ``answer``).
        Raises:
            LoopGuardInterrupt: a stop in enforce mode (``raise_on_stop``), before or after the
                call's result; whatever the tool raises (recorded first as an error result).
        """
        run, call, _, reply = self.judge(request)
        if reply is not None:
            return reply
        try:
            output = execute(request)
        except Exception as error:
            run.record_result(call, ToolResult(f"{type(error).__name__}: {error}", True))
            raise
        self._after(run, call, run.record_result(call, _result_of(output, call.id)))
        return output

    async def awrap(self, request: ToolCallRequest, execute: AsyncExecute) -> ToolOutput:
        """The async ``awrap_tool_call`` (same verdicts, payloads and exceptions)."""
        run, call, _, reply = self.judge(request)
        if reply is not None:
            return reply
        try:
            output = await execute(request)
        except Exception as error:
            run.record_result(call, ToolResult(f"{type(error).__name__}: {error}", True))
            raise
        self._after(run, call, run.record_result(call, _result_of(output, call.id)))
        return output


def loopguard_tool_wrapper(
    guard_or_policy: PolicyArg | None = None,
    *,
    profile: str | None = None,
    raise_on_stop: bool = True,
    key_by: KeyBy = "run",
) -> LoopGuardToolWrapper:
    """A sync ``wrap_tool_call`` for ``ToolNode`` (a :class:`LoopGuardToolWrapper`; its
    :meth:`~LoopGuardToolWrapper.awrap` is the async twin sharing the same sessions).

    Raises:
        loopguard.policy.PolicyError: the policy does not validate.
    """
    return LoopGuardToolWrapper(guard_or_policy, profile, raise_on_stop=raise_on_stop, key_by=key_by)


def loopguard_async_tool_wrapper(
    guard_or_policy: PolicyArg | None = None,
    *,
    profile: str | None = None,
    raise_on_stop: bool = True,
    key_by: KeyBy = "run",
) -> Callable[[ToolCallRequest, AsyncExecute], Awaitable[ToolOutput]]:
    """An async ``awrap_tool_call`` for ``ToolNode`` (the bound :meth:`LoopGuardToolWrapper.awrap`;
    its ``__self__`` is the wrapper, for :meth:`~LoopGuardToolWrapper.session`).

    Raises:
        loopguard.policy.PolicyError: the policy does not validate.
    """
    return LoopGuardToolWrapper(guard_or_policy, profile, raise_on_stop=raise_on_stop, key_by=key_by).awrap


# -- the stream wrapper -----------------------------------------------------------------------


def _messages_in(update: Any) -> list[BaseMessage]:
    """The messages a node's update writes (any channel holding a message or a list of them)."""
    if isinstance(update, BaseMessage):
        return [update]
    if isinstance(update, (list, tuple)):
        found: list[BaseMessage] = []
        for item in update:
            found.extend(_messages_in(item))
        return found
    if isinstance(update, dict):
        found = []
        for value in update.values():
            if isinstance(value, BaseMessage):
                found.append(value)
            elif isinstance(value, (list, tuple)):
                found.extend(item for item in value if isinstance(item, BaseMessage))
        return found
    if isinstance(update, Command):
        return _messages_in(update.update)
    return []


class LoopGuard:
    """Guard LangGraph runs: stream a graph through the guard, and guard its ToolNode.

    Args:
        policy: a policy path, ``builtin:NAME``, a compiled policy or a :class:`Guard`;
            ``None``: ``./loopguard.yml`` when it exists, else ``builtin:default``.
        profile: the policy profile (paths only).
        raise_on_stop: for :attr:`tool_wrapper` (see :class:`LoopGuardToolWrapper`).
        history: contract messages kept per report buffer of a run.
        limit: runs kept for :meth:`report` (oldest forgotten first).

    Attributes:
        guard: the :class:`Guard` (policy store + sessions).
        tool_wrapper: a :class:`LoopGuardToolWrapper` sharing this object's runs: a graph
            whose ToolNode uses it and is streamed with :meth:`stream` has one session per
            run, each batch judged once, each result recorded once.

    Raises:
        loopguard.policy.PolicyError: the policy does not validate.
    """

    def __init__(
        self,
        policy: PolicyArg | None = None,
        profile: str | None = None,
        *,
        raise_on_stop: bool = True,
        history: int = 1000,
        limit: int = 1024,
    ) -> None:
        self.guard = Guard.resolve(policy, profile)
        self.runs = RunRegistry(self.guard, limit=limit, history=history)
        self.tool_wrapper = LoopGuardToolWrapper(runs=self.runs, raise_on_stop=raise_on_stop)

    def report(self, run_id: str | None = None) -> dict[str, Any] | None:
        """The report of a streamed run (default: the latest), as :meth:`GuardedRun.report`."""
        key = run_id if run_id is not None else self.runs.latest
        run = self.runs.get(key) if key is not None else None
        return run.report() if run is not None else None

    def session(self, run_id: str | None = None) -> Session | None:
        """The session of a streamed run (default: the latest)."""
        key = run_id if run_id is not None else self.runs.latest
        run = self.runs.get(key) if key is not None else None
        return run.session if run is not None else None

    # -- shared by stream and astream ------------------------------------------------------

    def _begin(self, input: Any, config: dict[str, Any] | None, run_id: str | None) -> tuple[GuardedRun, dict[str, Any]]:
        config = dict(config or {})
        key = run_id or (str(config["run_id"]) if config.get("run_id") is not None else None)
        if key is None:
            root = uuid.uuid4()
            config["run_id"] = root  # the graph's root run id is the session key: callbacks agree
            key = str(root)
        configurable = dict(config.get("configurable") or {})
        configurable[RUN_KEY] = key
        config["configurable"] = configurable
        thread = configurable.get("thread_id")
        run = self.runs.open(key, None if thread is None else str(thread))
        with run.lock:
            run.observes_input = True
            run.outbox = []
        text = latest_user_text(input.get("messages") if isinstance(input, dict) else input)
        if text is not None:
            run.user_message(text)
        return run, config

    @staticmethod
    def _drain(run: GuardedRun) -> list[dict[str, Any]]:
        with run.lock:
            out, run.outbox = run.outbox or [], []
            return out

    @staticmethod
    def _consume(run: GuardedRun, namespace: Sequence[str], chunk: Any, seen: set[Any]) -> None:
        """Report the new messages of one ``updates`` chunk (``{node: update}``)."""
        if not isinstance(chunk, dict):
            return
        for node, update in chunk.items():
            if not isinstance(node, str) or node.startswith("__"):
                continue  # __interrupt__ and other framework entries carry no agent step
            for message in _messages_in(update):
                if isinstance(message, AIMessage):
                    # a subgraph's messages come again in its parent's update: observe them once
                    marker = ("ai", message.id) if message.id else None
                    if marker is not None:
                        if marker in seen:
                            continue
                        seen.add(marker)
                    run.agent(agent_path(namespace, node))
                    usage = usage_of(message)
                    if usage is not None:
                        run.model_call(usage, marker=message.id)
                    calls = calls_of(message)
                    if calls:
                        run.decide_batch(calls)
                    else:
                        text = message_text(message.content)
                        if text:
                            run.agent_message(message.name, text, marker=message.id)
                elif isinstance(message, ToolMessage):
                    call = run.call_for(message.tool_call_id) or ToolCall(message.name or "tool", {}, id=message.tool_call_id)
                    run.record_result(call, tool_result_of(message))

    @staticmethod
    def _finish(run: GuardedRun, interrupted: bool) -> list[dict[str, Any]]:
        with run.lock:
            run.interrupted = run.interrupted or interrupted
            out = (run.outbox or []) + [run.metrics(), run.done()]
            run.outbox = None
            return out

    # -- public ---------------------------------------------------------------------------

    def stream(
        self,
        graph: Any,
        input: Any,
        config: dict[str, Any] | None = None,
        *,
        run_id: str | None = None,
        subgraphs: bool = True,
        **kwargs: Any,
    ) -> Iterator[dict[str, Any]]:
        """Run ``graph`` and yield the loopguard-runtime messages of the run.

        The graph is streamed with ``stream_mode="updates"``: every node's update holds the
        messages it adds, so every AIMessage (all tool calls of a batch, its usage) and every
        ToolMessage is seen exactly once, and the update of a model node arrives *before* the
        next superstep runs its tools, so a stop is applied before any call of the batch runs.
        (``"messages"`` mode yields token chunks, ``"values"`` the whole state per step.) With
        ``subgraphs=True`` nested graphs are seen as their steps happen.

        Args:
            graph: a compiled LangGraph graph (anything with ``stream(input, config,
                stream_mode=..., subgraphs=...)``).
            input: the graph input; its latest user message (``{"messages": [...]}``) starts
                the turn.
            config: the RunnableConfig; copied, with ``configurable["loopguard_run"]`` set to
                the run key (and ``run_id`` set when absent) so that :attr:`tool_wrapper`
                shares the run.
            run_id: the run key (default: ``config["run_id"]``, else a new UUID).
            kwargs: passed to ``graph.stream``.

        Yields:
            dicts with ``type`` (every message also has ``run_id``):

            * ``event`` — one per observed step (``kind``: ``user_message``, ``model_call``,
              ``handoff``, ``agent_message``, ``tool_call``, ``tool_result``), in the run's order;
            * ``signal`` — one per active signal of each decision, after its event;
            * ``decision`` — each decision that does more than continue (action above
              ``continue`` or a verdict other than ``allow``), after its signals; for
              decisions that would have the tool not run, ``payload`` is what the model
              reads (or would read, behind a per-call guard);
            * ``error`` — an exception raised by the graph (``error``: type name,
              ``message``); the stream then ends normally, it does not re-raise;
            * ``metrics`` — counts and guard time per step (µs), once, before ``done``;
            * ``done`` — last: ``interrupted`` (True when a stop in enforce mode ended the
              run), ``verdict`` (most severe action) and ``verdict_step``, ``stop``, ``error``.

        On a stop decision in enforce mode the graph is not iterated further (closing it);
        in observe mode the run goes on to its end.
        """
        run, config = self._begin(input, config, run_id)
        yield from self._drain(run)
        interrupted = False
        seen: set[Any] = set()
        try:
            chunks = graph.stream(input, config, stream_mode="updates", subgraphs=subgraphs, **kwargs)
            try:
                for item in chunks:
                    namespace, chunk = item if subgraphs else ((), item)
                    self._consume(run, namespace, chunk, seen)
                    yield from self._drain(run)
                    if run.enforced_stop is not None:
                        interrupted = True
                        break
            finally:
                close = getattr(chunks, "close", None)
                if close is not None:
                    close()
        except LoopGuardInterrupt as stop:  # raised by a per-call guard inside the graph
            interrupted = True
            run.stop = run.stop or stop.decision
        except Exception as error:
            yield from self._drain(run)
            yield run.fail(error)
        yield from self._finish(run, interrupted)

    async def astream(
        self,
        graph: Any,
        input: Any,
        config: dict[str, Any] | None = None,
        *,
        run_id: str | None = None,
        subgraphs: bool = True,
        **kwargs: Any,
    ) -> AsyncIterator[dict[str, Any]]:
        """The async :meth:`stream` (``graph.astream``); same messages, same order."""
        run, config = self._begin(input, config, run_id)
        for message in self._drain(run):
            yield message
        interrupted = False
        seen: set[Any] = set()
        try:
            chunks = graph.astream(input, config, stream_mode="updates", subgraphs=subgraphs, **kwargs)
            try:
                async for item in chunks:
                    namespace, chunk = item if subgraphs else ((), item)
                    self._consume(run, namespace, chunk, seen)
                    for message in self._drain(run):
                        yield message
                    if run.enforced_stop is not None:
                        interrupted = True
                        break
            finally:
                close = getattr(chunks, "aclose", None)
                if close is not None:
                    await close()
        except LoopGuardInterrupt as stop:
            interrupted = True
            run.stop = run.stop or stop.decision
        except Exception as error:
            for message in self._drain(run):
                yield message
            yield run.fail(error)
        for message in self._finish(run, interrupted):
            yield message
