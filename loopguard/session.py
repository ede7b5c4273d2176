"""Session: the mutable state the guard keeps for one run, and the decisions it makes.

Data flows one way: an adapter (or the replayer) reports steps to a session; the
session computes each call's signature once, asks the rules, the budgets and the
detectors, combines their signals into a risk, and returns a :class:`Decision`.
The compiled policy is read once per decision (so a decision is wholly evaluated
against one revision) and holds no run state, so a policy swap loses nothing: the
detectors keep their windows and the counters keep counting.

Per-step cost is O(1) amortised and memory is bounded by the detector windows and
the decision history (a ring buffer of ``history`` decisions; ``history=None``
keeps all).
"""

from __future__ import annotations

import copy
import re
import threading
from collections import OrderedDict, deque
from typing import Any, Callable, Sequence

from .calls import ModelUsage, ToolCall, ToolResult
from .counters import BudgetBreach, Counters, check_budgets
from .decision_log import record_decision
from .decisions import ALLOW, Decision, GuardAction, Signal, Verdict, VerdictKind
from .detectors.base import CallRecord, RunMemory, SignatureStats
from .detectors.cycle import Cycle
from .detectors.failure import Failure
from .detectors.handoff import Handoff
from .detectors.near_duplicate import NearDuplicate
from .detectors.no_progress import NoProgress
from .detectors.repeat import Repeat
from .observations import NO_MATCH, REFUSED, Observation, exit_status_only, is_context_summary, message_body, observe, reports_failure, reports_no_change
from .policy.compile import CompiledPolicy, CompiledRule, ToolProfile
from .rules import evaluate_rules
from .signature import signature_of
from .tool_names import changes_state, long_poll_command, only_sleeps, searches, waits_on_server

_CONTINUE = GuardAction.CONTINUE
_STOP = GuardAction.STOP
_ALLOW_KIND = VerdictKind.ALLOW
_IN_FLIGHT_LIMIT = 1024  # pending calls remembered until their results
_SEVERITY = {action.value: index for index, action in enumerate(GuardAction)}
_REPLAN_SEVERITY = _SEVERITY["replan"]

PolicySource = CompiledPolicy | Callable[[], CompiledPolicy] | Any

#: Signals about the pending call that stay active through its result.
_CARRIED = frozenset({"repeat", "cycle", "near_duplicate", "handoff"})
#: Kinds that stay what they are when they follow a deliberate wait (any other call then is a poll).
_NEVER_POLLS = frozenset({"write", "handoff", "think", "wait"})
#: Argument names that carry the target agent of a handoff tool call.
_HANDOFF_ARGUMENTS = ("agent_name", "agent", "target", "target_agent", "to", "to_agent", "name", "assignee")

_DETECTOR_MESSAGES = {
    GuardAction.REPLAN: "loopguard blocked this call: {reasons}. Change your approach: do not repeat it; use different arguments or another tool, or answer with what you have.",
    GuardAction.PAUSE: "loopguard paused this call: {reasons}. A human needs to review before the agent goes on; ask the user how to proceed.",
    GuardAction.STOP: "loopguard stopped the run: {reasons}.",
}


# A counter in a nudge, which counts its copies or what is left: "reminder 2/10", "3 of 10",
# "7 steps left" (other numbers are what the user asks about: "convert 350 F").
_NUDGE_COUNTER = re.compile(r"\d+\s*(?:/|of)\s*\d+|\d+(?=\s+(?:steps?|turns?|iterations?|attempts?|tries|calls?|messages?)\s+(?:left|remaining))")
#: Words a user message needs to be a nudge when it is said again (see observe_user_message).
NUDGE_WORDS = 10


def _text(value: Any, fallback: str = "?") -> str:
    """``value`` as a string, whatever it is (a tool name, an agent); never raises."""
    if type(value) is str:
        return value
    try:
        return str(value)
    except Exception:
        return fallback


def _call_id(value: Any) -> Any:
    """A call id usable as a key: ``None``, or the id itself when it is hashable, else its text."""
    if value is None or type(value) is str:
        return value
    try:
        hash(value)
        return value
    except Exception:
        return _text(value)


def _as_call(call: Any) -> ToolCall:
    """A ToolCall from a ToolCall or a LangChain-style mapping ``{"name", "args", "id"}``."""
    if isinstance(call, ToolCall):
        if type(call.name) is str and (call.agent is None or type(call.agent) is str) and (call.id is None or type(call.id) is str):
            return call
        return ToolCall(_text(call.name, "<tool>"), call.arguments, _call_id(call.id), None if call.agent is None else _text(call.agent))
    if isinstance(call, dict) and "name" in call:
        agent = call.get("agent")
        return ToolCall(_text(call["name"], "<tool>"), call.get("args", call.get("arguments", {})), _call_id(call.get("id")), None if agent is None else _text(agent))
    raise TypeError(f"a tool call must be a loopguard.ToolCall or a mapping with 'name', got {type(call).__name__}")


def _as_result(result: Any) -> ToolResult:
    """A ToolResult, or the bare output wrapped in one (even one whose attribute access raises)."""
    try:
        if isinstance(result, ToolResult):
            return result
    except Exception:
        pass
    return ToolResult(result)


def _count(value: Any) -> int:
    """A token count from whatever a provider reported (negative, None or text count as 0)."""
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError, OverflowError):
        return 0


class _FixedPolicy:
    """A policy source that never changes: one revision for the whole session."""

    __slots__ = ("current",)

    def __init__(self, policy: CompiledPolicy) -> None:
        self.current = policy


class _CalledPolicy:
    """A policy source given as a zero-argument callable."""

    __slots__ = ("_function",)

    def __init__(self, function: Callable[[], CompiledPolicy]) -> None:
        self._function = function

    @property
    def current(self) -> CompiledPolicy:
        return self._function()


def _source(policy: PolicySource) -> Any:
    """Anything with a ``current`` attribute holding the policy to decide with: read once
    per decision (a PolicyStore swaps its reference on reload)."""
    if isinstance(policy, CompiledPolicy):
        return _FixedPolicy(policy)
    if hasattr(policy, "current"):
        return policy
    if callable(policy):
        return _CalledPolicy(policy)
    raise TypeError(f"policy must be a CompiledPolicy, a policy store or a callable, not {type(policy).__name__}")


class Session:
    """The guard's state for one run (or one thread of runs).

    Args:
        policy: a :class:`CompiledPolicy`, a policy store (anything with a ``current``
            attribute holding one) or a zero-argument callable returning one.
        run_id: a label recorded in reports.
        thread_id: the conversation thread, for budgets and reports.
        history: how many decisions to keep for :attr:`decisions` (``None``: all).
        end_on_stop: once a decision reaches ``stop`` in enforce mode, every later
            pending call is blocked (``guard_stop``): the run is over even if an adapter
            keeps calling. Replay turns this off to judge the rest of a recorded run.

    A session is safe to use from several threads (calls of one batch may finish on
    different threads); its methods never raise on odd tool arguments or outputs.
    """

    def __init__(
        self,
        policy: PolicySource,
        run_id: str | None = None,
        thread_id: str | None = None,
        history: int | None = 256,
        end_on_stop: bool = True,
    ) -> None:
        self._source = _source(policy)
        self.run_id = run_id
        self.thread_id = thread_id
        self._lock = threading.Lock()  # public methods never call each other
        current = self._source.current
        self._adopted = current  # the policy object the detectors are configured for
        detectors = current.detectors
        self._repeat = Repeat(detectors.repeat)
        self._cycle = Cycle(detectors.cycle)
        self._no_progress = NoProgress(detectors.no_progress)
        self._failure = Failure(detectors.failure)
        self._handoff = Handoff(detectors.handoff)
        self._memory = RunMemory()
        self._near_duplicate = NearDuplicate(detectors.near_duplicate, self._memory)
        self._call_detectors = (self._repeat, self._cycle, self._near_duplicate, self._failure)  # judge pending calls
        # A deliberate pause between checks repeats by design and is no step of a loop; pauses
        # in a row with nothing between are only repeats.
        self._wait_detectors = (self._failure,)
        self._waits_in_a_row_detectors = (self._repeat, self._failure)
        self._waited = False  # the latest call was a deliberate wait (kind ``wait``)
        self._stale: Signal | None = None  # the no_progress signal while its pattern holds
        self.run = Counters()
        self.turn = Counters()
        self.turn_index = 0
        self.user_message = ""
        self._user_message_body, self._actions_at_user_message = "", -1  # (see observe_user_message)
        self._rule_budgets: dict[tuple[str, str], int] = {}
        self._steps = 0
        self._calls = 0
        self._in_flight: OrderedDict[Any, tuple[CallRecord, tuple[Signal, ...]]] = OrderedDict()  # see _before_call
        # The latest batch's calls (their indexes) and whether a result of it brought news: the
        # results of parallel calls come back in any order, and must not be judged by it.
        self._batch: range | None = None
        self._batch_news = False
        self._decisions: deque[Decision] | list[Decision] = deque(maxlen=history) if history else []
        self.worst: Decision | None = None
        self.first_intervention: Decision | None = None
        self.stopped = False
        self.end_on_stop = end_on_stop

    # -- policy ---------------------------------------------------------------------

    @property
    def policy(self) -> CompiledPolicy:
        """The policy revision the next decision will use."""
        return self._source.current

    def _current_policy(self) -> CompiledPolicy:
        policy = self._source.current
        if policy is not self._adopted:
            self._adopt(policy)
        return policy

    def _adopt(self, policy: CompiledPolicy) -> None:
        if policy.revision != self._adopted.revision:
            # A new revision: detectors keep their state and continue with the new parameters.
            detectors = policy.detectors
            self._repeat.reconfigure(detectors.repeat)
            self._cycle.reconfigure(detectors.cycle)
            self._no_progress.reconfigure(detectors.no_progress)
            self._failure.reconfigure(detectors.failure)
            self._handoff.reconfigure(detectors.handoff)
            self._near_duplicate.reconfigure(detectors.near_duplicate)
        self._adopted = policy

    # -- reports --------------------------------------------------------------------

    @property
    def decisions(self) -> list[Decision]:
        """The kept decisions, oldest first."""
        with self._lock:
            return list(self._decisions)

    @property
    def steps(self) -> int:
        """Steps recorded (pending calls, results, handoffs, messages)."""
        return self._steps

    @property
    def tool_calls(self) -> int:
        """Tool calls judged (every pending call, refused ones included); ``run.tool_calls``
        counts only the calls that ran."""
        return self._calls

    # -- steps ----------------------------------------------------------------------

    def observe_user_message(self, text: str = "") -> None:
        """A user message: a new turn starts (turn counters reset). The same message as the
        user's previous one, with no tool call since (a harness's "Please continue working on
        the task" nudge), brings no news: the detectors go on as if the agent had not been
        interrupted."""
        with self._lock:
            self._steps += 1
            self.run.steps += 1
            self.turn = Counters(steps=1)
            self.turn_index += 1
            message = _text(text, "")
            # The same message (counters aside: "reminder 2/10") with no tool call since
            # its previous copy is a nudge; asked again after the agent acted, it is a request.
            # A nudge is a harness's boilerplate, not a person's short reply: "continue", "yes",
            # "2" or "Convert 350 F" said again is a conversation going on (but see below).
            actions = self._calls - self._near_duplicate.thoughts  # (a scratchpad entry is no action)
            # A short reply ("continue") said again is a nudge too once the agent has used tools
            # and has not since: it is waiting for the agent to act, not for the next lesson.
            body = _NUDGE_COUNTER.sub("#", message_body(message)) if actions or len(message.split()) >= NUDGE_WORDS else ""
            repeated = bool(body) and body == self._user_message_body and actions == self._actions_at_user_message
            # A follow-up ("ok and?", "did it go through?", "hello??") to an agent that has used
            # tools, announced work and not called a tool since, asks for what was announced: it
            # brings no news either (the agent's announcements go on being judged together).
            follow_up = not repeated and self._near_duplicate.follows_up(message, actions)
            self.user_message, self._user_message_body, self._actions_at_user_message = message, body, actions
            if is_context_summary(message):
                # A harness's summary of the condensed context, handed in as a user message, asks
                # for nothing new: the detectors go on, and a new lap starts (see Cycle.condensed).
                self._cycle.condensed(self._memory)
                self._repeat.condensed()
                return
            if repeated or follow_up:
                self._near_duplicate.user_message_repeated(actions)
                if follow_up:
                    self._cycle.news()  # (calls made again after it are still the user's asking)
                return
            self._handoff.said(message)  # (figures the user gave are no agent's news)
            self._no_progress.reset_turn(self._memory)
            self._near_duplicate.news(message)
            self._cycle.news()
            self._stale = None

    def before_call(self, call: ToolCall) -> Decision:
        """Decide one pending tool call before it runs (rules, budgets, then detectors)."""
        call = _as_call(call)
        # acquire/release: half the cost of a with-statement, on the two hot paths
        lock = self._lock
        lock.acquire()
        try:
            policy = self._source.current  # _current_policy, inline on the two hot paths
            if policy is not self._adopted:
                self._adopt(policy)
            return self._before_call(call, policy)
        finally:
            lock.release()

    def before_batch(self, calls: Sequence[ToolCall]) -> list[Decision]:
        """Decide the parallel calls of one assistant message; every call gets a decision.

        The calls are judged in order against one policy revision; a verdict closes only
        its own call.
        """
        calls = [_as_call(call) for call in calls]
        with self._lock:
            policy = self._current_policy()
            first = self._calls
            decisions = [self._before_call(call, policy) for call in calls]
            if len(calls) > 1:
                self._batch, self._batch_news = range(first, self._calls), False
            return decisions

    def after_call(self, call: ToolCall, result: ToolResult) -> Decision:
        """Record the result of a call that ran; result-aware detectors judge it.

        ``result`` may be a :class:`ToolResult` or the bare output.
        """
        call = _as_call(call)  # before the lock: converting may run the caller's __str__
        if type(result) is not ToolResult:
            result = _as_result(result)
        lock = self._lock
        lock.acquire()
        try:
            policy = self._source.current
            if policy is not self._adopted:
                self._adopt(policy)
            found = self._in_flight.pop(call.id, None) if call.id is not None else None
            record, carried = found if found is not None else self._take_in_flight(call)
            self._steps += 1
            run, turn = self.run, self.turn
            run.steps += 1
            turn.steps += 1
            signatures = self._memory.signatures
            key = record.signature.key
            known = signatures.get(key)
            if known is None:
                signatures[key] = record.stats  # BoundedMap.put, inline: the key is new
                if len(signatures) > signatures.capacity:
                    signatures.popitem(last=False)
            else:
                # The run memory forgets the signatures least recently *used*: a call that
                # recurs all through a long run keeps its history.
                signatures.move_to_end(key)
                if known is not record.stats:
                    record.stats = known  # another call of this signature got its result first
            observation = observe(result.output, result.error, record.signature.arguments)
            if observation.error:
                observation = _no_match_or_failure(record, observation)
                if observation.error and observation.failure_class != REFUSED:  # (a refused call never ran)
                    run.failures += 1
                    turn.failures += 1
            record.observation = observation
            signals = list(carried) if carried else []
            memory = self._memory
            # Whether the call may have changed what later reads return: a tool whose policy kind
            # is write, or one that edits by its name or command (read once per signature), whose
            # result reports no failure (a str_replace that "did not appear verbatim" changed nothing).
            stats = record.stats
            changes = stats.changes_state
            if changes is None:
                changes = stats.changes_state = record.tool_kind == "write" or changes_state(record.signature.tool, record.signature.arguments)
            # (Nor does one whose reply says it changed nothing: "0 rows affected", "unchanged".)
            changed = changes and not observation.error and not reports_failure(observation.text) and not reports_no_change(observation.text, record.signature.arguments)
            if changed:
                memory.note_change(record)
            signal = self._near_duplicate.result(record, changed)  # (first: it tells a page already read, for no_progress)
            if signal is not None:
                signals.append(signal)
            batch = self._batch
            if batch is not None and record.index in batch:
                # A stale result of a batch that already brought news is no step back: the
                # batch's results are judged alike in whatever order they arrive.
                progress_signal, stale = self._no_progress.result(record, memory, batch_news=self._batch_news)
                self._batch_news = self._batch_news or not stale
            else:
                progress_signal, stale = self._no_progress.result(record, memory)
            self._stale = progress_signal
            if progress_signal is not None:
                signals.append(progress_signal)
            failure_signal = self._failure.result(record, memory, stale)
            if failure_signal is not None:
                signals.append(failure_signal)
            if not stale and not observation.error and record.handoff_target is None:
                self._handoff.work_done()
            return self._decide(policy, "after_call", self._steps - 1, record.signature.tool, record.index, signals, ALLOW)
        finally:
            lock.release()

    def observe_handoff(self, agent: str, caller: str | None = None, message: Any = None) -> Decision:
        """Control passes from ``caller`` to ``agent`` (a multi-agent handoff).

        ``message`` is what ``agent`` said on receiving control, if anything: one that brings
        figures not said before in the run (a negotiation's offers, "$1.82/unit, net 45") is
        work, so control passed around it makes no empty cycle.
        """
        with self._lock:
            policy = self._current_policy()
            self._steps += 1
            self.run.steps += 1
            self.turn.steps += 1
            signal = self._handoff.transfer(_text(agent), None if caller is None else _text(caller))
            if message is not None and self._handoff.said(_text(message)):
                self._handoff.work_done()  # (after the transfer: the message comes once control arrived)
            return self._decide(policy, "observe", self._steps - 1, None, None, [signal] if signal else [], ALLOW)

    def observe_agent_message(self, agent: str | None, text: Any) -> Decision:
        """An agent's message without a tool call. Identical messages in a row are a monologue:
        they are judged like a repeated call whose output never changes."""
        with self._lock:
            policy = self._current_policy()
            text = _text(text)
            if is_context_summary(text):
                # A harness's note that the context was condensed starts a new lap; it is no
                # agent's message (said after every call, it is no monologue and no cycle step).
                self._cycle.condensed(self._memory)
                self._repeat.condensed()
                self._steps += 1
                self.run.steps += 1
                self.turn.steps += 1
                return self._decide(policy, "observe", self._steps - 1, None, None, [self._stale] if self._stale is not None else [], ALLOW)
            # Case, spacing, counters and times never make a message new ("Attempt 3: ...").
            body = message_body(text)
            agent = None if agent is None else _text(agent)
            name = f"message:{agent or 'agent'}"
            record = self._record(ToolCall(name, {"text": body}, agent=agent), policy.tool_profile(name))
            memory = self._memory
            signals = [
                signal
                for signal in (self._repeat.pending(record, memory), self._cycle.message(record, memory), self._near_duplicate.message(record, body, memory))
                if signal is not None
            ]
            self._steps += 1
            self.run.steps += 1
            self.turn.steps += 1
            record.observation = observe(body, False)
            progress_signal, stale = self._no_progress.result(record, self._memory, environment=False)
            self._handoff.said(text)  # (its figures are said: an agent repeating them later brings none)
            if not stale and not record.repeats_known:
                # A message that says something new (a draft, a critique) is an agent's work:
                # control passed around it is no empty handoff cycle.
                self._handoff.work_done()
            self._stale = progress_signal
            if progress_signal is not None:
                signals.append(progress_signal)
            return self._decide(policy, "observe", self._steps - 1, None, None, signals, ALLOW)

    def observe_model_call(self, usage: ModelUsage) -> Decision:
        """A model call's token usage; cost comes from ``usage.cost_usd`` or the policy's pricing (USD per million tokens)."""
        if not isinstance(usage, ModelUsage):
            raise TypeError(f"usage must be a loopguard.ModelUsage, got {type(usage).__name__}")
        with self._lock:
            policy = self._current_policy()
            input_tokens, output_tokens = _count(usage.input_tokens), _count(usage.output_tokens)
            tokens = input_tokens + output_tokens
            cost = usage.cost_usd if isinstance(usage.cost_usd, (int, float)) and usage.cost_usd >= 0 else None
            if cost is None and usage.model:
                price = policy.price(_text(usage.model))
                if price is not None:
                    cost = (input_tokens * price.input + output_tokens * price.output) / 1_000_000
            for counters in (self.run, self.turn):
                counters.tokens += tokens
                counters.cost_usd += cost or 0.0
            budgets = policy.budgets
            signals: list[Signal] = []
            minimum = GuardAction.CONTINUE
            for name in ("tokens", "cost_usd"):
                budget = getattr(budgets, name)
                if budget is None:
                    continue
                value = getattr(self.turn if budget.scope == "turn" else self.run, name)
                if value >= budget.limit:
                    message = BudgetBreach(name, budget, value).message  # (one wording, units included, with before_call's)
                    signals.append(Signal("budget", name, 0.0, message, {"value": value}))
                    minimum = GuardAction.most_severe(minimum, GuardAction.STOP if budget.on_exceed == "stop" else GuardAction.WARN)
            # A model call is no step of its own: its decision is the latest step's (0 before any).
            return self._decide(policy, "observe", max(self._steps - 1, 0), None, None, signals, ALLOW, minimum)

    # -- internals ------------------------------------------------------------------

    def _record(self, call: ToolCall, profile: ToolProfile) -> CallRecord:
        signature = signature_of(call.name, call.arguments)
        # A signature not seen before gets fresh stats that join the run memory only when its
        # result arrives (after_call): pending calls that never return must not push out
        # the history of calls that did.
        stats = self._memory.signatures.get(signature.key) or SignatureStats()
        kind = profile.kind
        if profile.runs_commands and only_sleeps(signature.arguments):
            kind = "wait"  # a command that only sleeps ("sleep 20") is a deliberate wait
        long_poll = profile.long_polls and waits_on_server(signature.arguments)
        if profile.runs_commands and not long_poll:
            long_poll = stats.long_poll
            if long_poll is None:
                long_poll = stats.long_poll = long_poll_command(signature.arguments)  # once per signature
        if long_poll:
            kind = "poll"  # a long poll ("getUpdates", timeout 50): an empty answer is the server's wait ending
        record = CallRecord(self._calls, self._steps, signature, stats, kind, call.agent, profile.pending_patience)
        if long_poll:
            record.long_poll = True
        if profile.hands_off:
            record.handoff_target = _handoff_target(signature.arguments) or profile.handoff_target
        return record

    def _before_call(self, call: ToolCall, policy: CompiledPolicy) -> Decision:
        name = call.name
        profile = policy.tool_profile(name)
        record = self._record(call, profile)
        waits = record.tool_kind == "wait"
        waited = self._waited
        if waited is not waits:
            self._waited = waits
            if not waits and record.tool_kind not in _NEVER_POLLS:
                record.tool_kind = "poll"  # the call after a deliberate wait checks on what was waited for
                record.after_wait = True
        self._calls += 1
        self._steps += 1
        run, turn = self.run, self.turn
        run.steps += 1
        turn.steps += 1

        signals: list[Signal] = []
        verdict = ALLOW
        outcome = None
        rules = profile.rules
        if rules:
            outcome = evaluate_rules(
                rules,
                {"tool": name, "arguments": record.signature.arguments, "id": call.id, "agent": call.agent},
                lambda: self._condition_names(call, record, rules, profile.kind),
                self._rule_budget_count,
                policy.mode,
            )
            signals.extend(outcome.notes)
            verdict = outcome.verdict

        minimum = _CONTINUE
        if policy.has_budgets:
            breach = check_budgets(policy.budgets, profile.budgets, name, run, turn)
            if breach is not None:
                signals.append(Signal("budget", breach.name, 0.0, breach.message, {"limit": breach.budget.limit, "value": breach.value}))
                minimum = GuardAction.STOP if breach.budget.on_exceed == "stop" else GuardAction.REPLAN
                budget_verdict = Verdict(VerdictKind.BUDGET_SPENT, rule=f"budget:{breach.name}", message=breach.message)
                if budget_verdict.kind.strictness > verdict.kind.strictness:
                    verdict = budget_verdict

        memory = self._memory
        stale = self._stale
        if stale is not None:
            signals.append(stale)  # no progress holds until a result brings something new
        for detector in self._call_detectors if not waits else self._waits_in_a_row_detectors if waited else self._wait_detectors:
            signal = detector.pending(record, memory)
            if signal is not None:
                signals.append(signal)
        if signals and stale is None and (record.stats.stale_results >= self._no_progress.patience or record.sequence is not None or record.stats.same_call is not None or record.redone):
            # Another detector flags the call, and the call itself (or its group: a paging sequence,
            # the same request with a fresh id) brought nothing new its last times though other
            # calls did: that is no progress too.
            signal = self._no_progress.pending(record, memory)
            if signal is not None:
                signals.append(signal)
        if record.handoff_target is not None:
            signal = self._handoff.transfer(record.handoff_target, call.agent)
            if signal is not None:
                signals.append(signal)

        if self.stopped and self.end_on_stop and policy.mode == "enforce":
            first = self.worst.step if self.worst is not None else 0
            signals.append(Signal("session", "run_stopped", 0.0, f"the run was stopped at step {first}", {"step": first}))
            minimum = _STOP
        decision = self._decide(policy, "before_call", record.step, name, record.index, signals, verdict, minimum)
        # In observe mode the adapter runs every call, so budgets must count it.
        if (verdict.kind is _ALLOW_KIND and decision.verdict.kind is _ALLOW_KIND) or policy.mode == "observe":
            run.tool_calls += 1
            turn.tool_calls += 1
            per_tool = run.per_tool
            per_tool[name] = per_tool.get(name, 0) + 1
            per_tool = turn.per_tool
            per_tool[name] = per_tool.get(name, 0) + 1
            if outcome:
                for rule in outcome.budget_rules:
                    key = (rule.id, self._scope_key(rule.spec.scope))
                    self._rule_budgets[key] = self._rule_budgets.get(key, 0) + 1
        # Remember the call until its result: by id, else by signature. Results that never
        # come back must not grow memory: the oldest pending calls are forgotten.
        in_flight = self._in_flight
        key = call.id if call.id is not None else ("signature", record.signature.key)
        if key in in_flight:
            in_flight.move_to_end(key)  # a re-issued call (same id) is the newest again
        in_flight[key] = (
            record,
            tuple([signal for signal in signals if signal.detector in _CARRIED]) if signals else (),
        )
        if len(in_flight) > _IN_FLIGHT_LIMIT:
            in_flight.popitem(last=False)
        return decision

    def _decide(
        self,
        policy: CompiledPolicy,
        phase: str,
        step: int,
        tool: str | None,
        call_index: int | None,
        signals: list[Signal],
        verdict: Verdict,
        minimum: GuardAction = _CONTINUE,
    ) -> Decision:
        """The decision for one step (``tool`` and ``call_index`` are ``None`` for steps that are not tool calls)."""
        if not signals and minimum is _CONTINUE and policy.quiet_action is _CONTINUE:
            # Most steps: no signal, nothing to do.
            decision = Decision(step, phase, _CONTINUE, 0.0, (), verdict, verdict.rule, policy.revision, policy.mode, tool, call_index)
            self._decisions.append(decision)
            if policy.logs_decisions:
                record_decision(policy, self.run_id, decision, self.thread_id)
            if self.worst is None:
                self.worst = decision
            return decision
        signals = tuple(signals)  # type: ignore[assignment]
        risk = policy.risk_of(signals)  # type: ignore[arg-type]
        action = policy.action_for(risk)
        severity = _SEVERITY[action._value_]
        if minimum is not _CONTINUE and _SEVERITY[minimum._value_] > severity:
            action, severity = minimum, _SEVERITY[minimum._value_]
        if severity >= _REPLAN_SEVERITY and phase == "before_call":  # only a pending call gets a detector verdict
            verdict = _detector_verdict(action, signals, verdict)  # type: ignore[arg-type]
        decision = Decision(step, phase, action, risk, signals, verdict, verdict.rule, policy.revision, policy.mode, tool, call_index)  # type: ignore[arg-type]
        self._decisions.append(decision)
        if policy.logs_decisions:
            record_decision(policy, self.run_id, decision, self.thread_id)
        return self._note_severity(decision, severity)

    def _note_severity(self, decision: Decision, severity: int) -> Decision:
        """Track the worst decision, the first intervention and a stop."""
        if severity:
            if self.worst is None or severity > _SEVERITY[self.worst.action._value_]:
                self.worst = decision
            if self.first_intervention is None and severity >= _REPLAN_SEVERITY:
                self.first_intervention = decision
            if decision.action is _STOP:
                self.stopped = True
        elif self.worst is None:
            self.worst = decision
        return decision

    def _scope_key(self, scope: str) -> str:
        return f"turn{self.turn_index}" if scope == "turn" else "run"

    def _rule_budget_count(self, rule: CompiledRule) -> int:
        return self._rule_budgets.get((rule.id, self._scope_key(rule.spec.scope)), 0)

    def _condition_names(self, call: ToolCall, record: CallRecord, rules: tuple[CompiledRule, ...], kind: str) -> dict[str, Any]:
        """The names ``when`` conditions see. Only the roots and attributes the rules read are
        built (simpleeval inspects every value it is given, so less is faster), each a copy,
        so a condition can never change run state. ``kind`` is the tool's kind as the policy
        gives it (the detectors may treat one call otherwise, e.g. as a poll after a wait)."""
        wanted: dict[str, set[str] | None] = {}
        for rule in rules:
            if rule.when is None:
                continue
            for root, attributes in rule.when.attributes.items():
                if attributes is None or wanted.get(root, set()) is None:
                    wanted[root] = None
                else:
                    wanted.setdefault(root, set()).update(attributes)  # type: ignore[union-attr]
        names: dict[str, Any] = {}
        for root, attributes in wanted.items():
            full = self._condition_root(root, call, record, kind)
            if full is not None:
                names[root] = full if attributes is None else {key: full[key] for key in attributes if key in full}
        return names

    def _condition_root(self, root: str, call: ToolCall, record: CallRecord, kind: str) -> dict[str, Any] | None:
        if root == "run":
            return {**self.run.as_names(), "turns": self.turn_index}
        if root == "turn":
            return {**self.turn.as_names(), "index": self.turn_index, "user_message": self.user_message}
        if root == "tool":
            return {
                "name": call.name,
                "kind": kind,
                "calls": self.run.per_tool.get(call.name, 0),
                "turn_calls": self.turn.per_tool.get(call.name, 0),
            }
        if root == "call":
            return {"tool": call.name, "arguments": copy.deepcopy(record.signature.arguments), "id": call.id, "agent": call.agent}
        return None

    def _take_in_flight(self, call: ToolCall) -> tuple[CallRecord, tuple[Signal, ...]]:
        """The pending call a result belongs to, for a result without a known call id."""
        signature = signature_of(call.name, call.arguments)
        found = self._in_flight.pop(("signature", signature.key), None)
        if found is not None:
            return found
        # A result without a recorded pending call (an adapter that saw only the result).
        record = self._record(call, self._source.current.tool_profile(_text(call.name, "<tool>")))
        record.index = self._calls
        self._calls += 1
        return record, ()


def _no_match_or_failure(record: CallRecord, observation: Observation) -> Observation:
    """A search command that printed nothing but exit status 1 found no match (POSIX grep):
    an empty answer, not a failure; any other failure as it is."""
    if exit_status_only(observation.text) == 1 and searches(record.signature.tool, record.signature.arguments):
        return NO_MATCH
    return observation


def _detector_verdict(action: GuardAction, signals: tuple[Signal, ...], verdict: Verdict) -> Verdict:
    """The verdict for a pending call whose action is replan or more: replan blocks with a
    ``guard_error``, pause cancels, stop blocks with ``guard_stop`` (DESIGN §5), unless the
    rules' verdict is stricter."""
    if verdict.kind is VerdictKind.BUDGET_SPENT:
        return verdict  # the budget's own verdict and message say more than the detectors' here
    reasons = "; ".join([s.message for s in signals if s.detector in ("budget", "session") or (s.score > 0 and s.detector != "rule")]) or "the run is stuck"
    template = _DETECTOR_MESSAGES[action]
    if action is GuardAction.PAUSE:
        detector_verdict = Verdict(VerdictKind.CANCEL, rule=_detector_rule(signals), reason=template.format(reasons=reasons))
    else:
        error_type = "guard_stop" if action is GuardAction.STOP else "guard_error"
        detector_verdict = Verdict(VerdictKind.BLOCK, rule=_detector_rule(signals), error_type=error_type, message=template.format(reasons=reasons))
    if detector_verdict.kind.strictness > verdict.kind.strictness:
        return detector_verdict  # on a tie the rule's own verdict and message stay
    return verdict


def _detector_rule(signals: tuple[Signal, ...]) -> str | None:
    """``detector:NAME`` of the strongest detector signal (the first of equals), if any."""
    strongest = None
    for signal in signals:
        if signal.detector not in ("rule", "budget") and (strongest is None or signal.score > strongest.score):
            strongest = signal
    return None if strongest is None else f"detector:{strongest.detector}"


def _handoff_target(arguments: Any) -> str | None:
    if isinstance(arguments, dict):
        for key in _HANDOFF_ARGUMENTS:
            value = arguments.get(key)
            if isinstance(value, str) and value:
                return value
    return None
