"""What every detector sees: one record per tool call and a small shared run memory.

The session computes a call's signature and reads its output once; detectors only
read these records and keep their own bounded state, so a step costs the same at
step 10 and at step 100,000.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ..observations import Observation
from ..signature import Signature
from ..tool_names import resources_of, sleeps

#: Results whose calls the run memory keeps in order: the longest lap between two results of
#: one call that no_progress compares (see ``SignatureStats.laps``) is one less.
RECENT_RESULTS = 8

Key = TypeVar("Key")
Value = TypeVar("Value")


class BoundedMap(OrderedDict, Generic[Key, Value]):  # type: ignore[type-arg]
    """A dict that forgets its least recently written entries beyond ``capacity``."""

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.capacity = capacity

    def resize(self, capacity: int) -> None:
        """Change the capacity, forgetting the least recently written entries beyond it."""
        self.capacity = capacity
        while len(self) > capacity:
            self.popitem(last=False)

    def put(self, key: Key, value: Value) -> None:
        if key in self:
            self.move_to_end(key)
        self[key] = value
        if len(self) > self.capacity:
            self.popitem(last=False)


class CallRecord:
    """One tool call as the detectors see it.

    Attributes:
        index: 0-based index of the call in the run.
        step: the session step of the pending call.
        signature: canonical signature (computed once).
        stats: what the run has seen of this signature (shared by all its calls).
        tool_kind: the tool's ``kind`` trait (``other`` when the policy says nothing).
        agent: the agent that issued the call, if known.
        pending_patience: identical pending observations tolerated for this tool.
        observation: the read output, once the result is in.
        handoff_target: the agent this call hands control to, for handoff tools.
        repeats_known: set by near_duplicate: the call re-reads a range already read, follows
            a cursor that wrapped around to pages already read, or (an agent's message)
            rewords one the agent wrote since the last news; its result can only repeat what
            is known.
        after_wait: the call comes right after a deliberate wait (the session makes it a poll).
        stale: set by no_progress: the call's result brought nothing new.
        long_poll: the call asks the server to wait for news (the session makes it a poll): an
            empty answer is the wait ending, the same news again is no poll.
        sequence: set by near_duplicate for a call that reads a range: the digest of its
            arguments without the range, shared by the calls that page through the same data
            (their results' staleness is counted together by no_progress).
        same_answer: set by near_duplicate when the result is the answer a differently worded
            call of the tool got (see ``NearDuplicate.result``): the answer's digest, shared by
            those calls (their results' staleness is counted together by no_progress).
        redone: set by cycle after context condensations, once a lap is a redo: how many
            calls of the current lap, this one the latest, were made in the two laps before it
            (changes made again, reads with the same answers); ``0`` otherwise.
    """

    # A plain slotted class with a positional constructor: one is built per call.
    __slots__ = (
        "index", "step", "signature", "stats", "tool_kind", "agent", "pending_patience", "observation", "handoff_target",
        "repeats_known", "after_wait", "stale", "long_poll", "sequence", "same_answer", "redone",
    )

    def __init__(
        self,
        index: int,
        step: int,
        signature: Signature,
        stats: "SignatureStats",
        tool_kind: str = "other",
        agent: str | None = None,
        pending_patience: int | None = None,
    ) -> None:
        self.index = index
        self.step = step
        self.signature = signature
        self.stats = stats
        self.tool_kind = tool_kind
        self.agent = agent
        self.pending_patience = pending_patience
        self.observation: Observation | None = None
        self.handoff_target: str | None = None
        self.repeats_known = False
        self.after_wait = False
        self.stale = False
        self.long_poll = False
        self.sequence: int | None = None
        self.same_answer: int | None = None
        self.redone = 0

    @property
    def tool(self) -> str:
        return self.signature.tool


class SignatureStats:
    """What the run has seen of one signature (bounded: kept in a :class:`BoundedMap`).

    Attributes:
        results: results recorded.
        last: the latest result.
        advancing: the latest result differed from the one before, without error (see
            :attr:`advancing`).
        advancing_value: ``advancing`` once decided.
        advancing_between: the two results (earlier, latest) whose comparison decides
            ``advancing`` when it is first read, or ``None`` when ``advancing_value`` holds it.
        last_failure: failure class of the latest result, if it failed.
        identical_pending: consecutive identical pending observations.
        polling: the latest result repeated a pending state within the poll patience.
        failures: error shape -> identical failures in a row (``None`` until the first failure).
        novel_at_failure: error shape -> the run's novel-result, new-change and state-change
            counts at its last failure.
        arguments_shape: what near_duplicate read from the arguments (``None`` until it has
            read them; they never change for one signature, so repeated calls are read once).
        description: the call as messages show it (see :func:`describe`; ``None`` until needed).
        stale_results: this call's own results in a row that brought nothing new (the same
            output as its previous result, an empty one, or the same failure), wherever
            other calls' results fell between them.
        sleeps: the call runs a command that sleeps first (see :func:`polls`; ``None`` until needed).
        changes_state: the call may change what later reads return (see
            :func:`~loopguard.tool_names.changes_state`; ``None`` until needed).
        long_poll: the call's shell command long-polls (see
            :func:`~loopguard.tool_names.long_poll_command`; ``None`` until needed).
        resources: what the call names that a change could touch (see
            :func:`~loopguard.tool_names.resources_of`; ``None`` until needed).
        same_call: set by near_duplicate for arguments with a request's own identity (an
            idempotency key, a request id, a nonce, a cache buster): the digest of the call
            without it, shared by the calls that differ only there; ``None`` otherwise (the
            signature key is the call's identity).
        writes_at_result: the run's count of writes (``RunMemory.writes``) when the call's
            latest result came: a later result with the same count had nothing written
            under it.
        acts: the call may change what other calls read: it changes state, or its kind or
            name says it writes or acts (``None`` until needed).
        read_at: the index of the call whose result was the signature's latest (-1 before any).
        laps: while the call's answer repeats with nothing written between: how many laps in
            a row each looked elsewhere than the one before, and the calls between its latest
            two results as (signature key, operation) (see no_progress); else ``None``.
        operation: what the call does, as laps compare it (see
            :func:`~loopguard.tool_names.operation_of`; ``None`` until needed).
    """

    __slots__ = (
        "results", "last", "advancing_value", "advancing_between", "last_failure", "identical_pending", "polling",
        "failures", "novel_at_failure", "arguments_shape", "description", "stale_results", "sleeps", "changes_state",
        "long_poll", "same_call", "resources", "writes_at_result", "acts", "read_at", "laps", "operation",
    )

    def __init__(self) -> None:
        self.results = 0
        self.last: Observation | None = None
        self.advancing_value = False
        self.advancing_between: tuple[Observation, Observation] | None = None
        self.last_failure: str | None = None
        self.identical_pending = 0
        self.polling = False
        # Most signatures never fail: their failure tables are built on the first failure.
        self.failures: dict[int, int] | None = None
        self.novel_at_failure: dict[int, tuple[int, int, int]] | None = None
        self.arguments_shape: Any = None
        self.description: str | None = None
        self.stale_results = 0
        self.sleeps: bool | None = None
        self.changes_state: bool | None = None
        self.long_poll: bool | None = None
        self.same_call: int | None = None
        self.resources: frozenset[str] | None = None
        self.writes_at_result = 0
        self.acts: bool | None = None
        self.read_at = -1
        self.laps: tuple[int, tuple[tuple[int, str], ...]] | None = None
        self.operation: str | None = None

    @property
    def advancing(self) -> bool:
        """The latest result differed from the one before (after normalising volatile parts),
        without error. Comparing two outputs that share a skeleton means normalising them, the
        costliest part of reading a result, and this is read only by repeat and cycle once
        their pattern holds: so no_progress leaves that comparison here, done on first read."""
        between = self.advancing_between
        if between is not None:
            earlier, latest = between
            self.advancing_value = not latest.same_as(earlier)
            self.advancing_between = None
        return self.advancing_value


@dataclass(slots=True)
class RunMemory:
    """State shared by the detectors of one session; every part is bounded."""

    signatures: BoundedMap[int, SignatureStats] = field(default_factory=lambda: BoundedMap(512))
    novel_results: int = 0  # results that brought new information (not stale, not failed)
    stale_streak: int = 0  # consecutive results that brought nothing new
    state_changes: int = 0  # results of calls that changed what later reads return (see Session.after_call)
    # The state change count when each resource (see resources_of) last changed, and when a
    # change that names no resource (it may have touched anything) came.
    changed_resources: BoundedMap[str, int] = field(default_factory=lambda: BoundedMap(256))
    changed_anything: int = 0
    new_changes: int = 0  # state changes by calls made for the first time (an edit not tried before)
    # Results of calls that may have changed anything: state changes, and calls whose kind or
    # name says they write or act (an update, a send, a protocol run), whatever they touched
    # (no_progress compares a call's answers without their stamps only with none between).
    writes: int = 0
    # The latest results' calls (what was done between two results of one call).
    recent: deque[CallRecord] = field(default_factory=lambda: deque(maxlen=RECENT_RESULTS))

    def note_change(self, record: CallRecord) -> None:
        """The call changed state: count it, against what it names (its result is not yet
        counted in its signature's stats)."""
        self.state_changes += 1
        if not record.stats.results:
            self.new_changes += 1
        names = resources(record)
        if not names:
            self.changed_anything = self.state_changes
        for name in names:
            self.changed_resources.put(name, self.state_changes)

    def changes_for(self, record: CallRecord) -> int:
        """The state change count when something the call names (or anything) last changed:
        two results of a call with no change between them have the same count."""
        if not self.state_changes:
            return 0
        changed = self.changed_resources
        return max(self.changed_anything, max((changed.get(name, 0) for name in resources(record)), default=0))


def resources(record: CallRecord) -> frozenset[str]:
    """:func:`~loopguard.tool_names.resources_of` of the call's arguments, read once per signature."""
    stats = record.stats
    found = stats.resources
    if found is None:
        found = stats.resources = resources_of(record.signature.arguments)
    return found


def polls(record: CallRecord) -> bool:
    """True when the call checks on something it waits for: a ``poll`` tool, a call right after a
    deliberate wait (the session marks it ``poll``), or a command that sleeps first
    (``sleep 60; dig +short host``). Read only where a repeat would otherwise count."""
    if record.tool_kind == "poll":
        return True
    stats = record.stats
    sleeping = stats.sleeps
    if sleeping is None:
        signature = record.signature
        sleeping = stats.sleeps = sleeps(signature.tool, signature.arguments)
    return sleeping


#: Characters of a call's readable form in messages.
DESCRIPTION_LIMIT = 120


def describe(record: CallRecord) -> str:
    """A short readable form of the call for messages: ``tool(args…)``, at most
    :data:`DESCRIPTION_LIMIT` characters. Kept with the signature's statistics: a stuck run
    describes the same call at every step, and building the text means encoding the
    canonical arguments as JSON."""
    stats = record.stats
    description = stats.description
    if description is None:
        text = record.signature.text
        description = stats.description = text if len(text) <= DESCRIPTION_LIMIT else text[: DESCRIPTION_LIMIT - 1] + "…"
    return description


Evidence = dict[str, Any]
