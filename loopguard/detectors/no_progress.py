"""no_progress: results that bring nothing new.

A result is *stale* when it is empty ("no results", ``[]``), when it re-reads a range
already read (see near_duplicate), when the same tool has already returned it (exactly;
for the same call, after normalising volatile parts, so "stored record 7f02" and
"stored record 7f03" are the same; a new call's acknowledgement that another call got
too, such as "sent" or ``true``, is not stale), or when it repeats a failure already
seen. A result that reports a pending state (queued, running, ...) is a healthy poll
and only counts as stale after ``poll_patience`` identical observations. The signal
is active while the newest ``patience`` results in a row are stale; any new
information ends it. The pages of one paging sequence (near_duplicate's
``record.sequence``), and calls alike but for a request identity (``same_call``), keep one
streak of their own results together, whatever other calls came between them.
"""

from __future__ import annotations

from typing import Any

from ..decisions import Signal
from ..policy.schema import FailureDetector, NoProgressDetector
from ..observations import NO_MATCH, REFUSED, Observation, is_acknowledgement, is_empty_data, is_final, is_pending, reports_failure, reports_no_change
from .base import RECENT_RESULTS, BoundedMap, CallRecord, RunMemory, describe, polls
from .failure import FORGIVEN_AFTER_NEW_CHANGES
from ..tool_names import acts_by_name, echoes, operation_of, runs_command, writes_by_name
from .near_duplicate import sends_cursor, unstamped_digest

_TOOLS_REMEMBERED = 256
#: Identical failures of a call, this one included, that a change not tried before between
#: them keeps out of the call's own streak: the failure detector's default attempts plus its
#: FORGIVEN_AFTER_NEW_CHANGES (a policy's own attempts are not read here).
_FORGIVEN_FAILURES = FailureDetector.model_fields["attempts"].default + FORGIVEN_AFTER_NEW_CHANGES
#: Kinds whose results never count: a scratchpad, a deliberate pause.
_NO_NEWS = frozenset({"think", "wait"})
#: Characters of a short reply that a write tool's call may share with other calls.
_REPLY_LIMIT = 64
#: Characters by which two answers of one call may differ in length and still be compared
#: without their response stamps (ids and times of other lengths).
_STAMPS_LENGTH = 64
_BUCKET = 4  # outputs kept per skeleton
#: contains_and_add's ``changes`` for a call that itself changes state: compare with any earlier output.
_ANY_CHANGES = -1
# What contains_and_add answers (true values when the output was seen).
_NEW, _FROM_SAME_CALL, _FROM_OTHER_CALL = 0, 1, 2
# What each kind of stale result did, for the signal's message.
_WHAT = {
    "empty_result": "returned nothing",
    "same_failure": "failed the same way as before",
    "stalled_poll": "reported the same pending state",
    "same_output": "returned what it had returned before",
    "reread": "re-read a range or a page already read",
    "same_answer": "gave the answer a differently worded call got",
    "same_answer_between": "gave the same answer again, with nothing written since and other lookups between",
    "same_page": "returned the page it had returned for the same cursor before",
    "repeated_thought": "was given a thought it had been given before",
    "reworded_message": "said again what it had said before",
    "refused": "was refused by the guard",
}


#: Laps in a row, each looking elsewhere than the one before, after which the same answer
#: again is no progress: the fourth same answer. (A third came too early for a policy or a
#: status re-read before each of three questions, each needing another tool. A fifth would
#: spare a `git status` re-read four times between productive lookups, and come too late for
#: every interleaved re-read the blind rounds wrote.)
LAPS_ELSEWHERE = 2


#: Pages in a row got again for the same cursor after which paging does not advance: the
#: third copy (a page fetched once more, to redo what failed after it or to check a write, is
#: healthy).
SAME_PAGES = 2


def _looks_elsewhere(record: CallRecord, memory: RunMemory) -> bool:
    """Whether the call's same answer again, with nothing written since, comes after calls that
    looked elsewhere than the calls between its previous two answers (no operation shared):
    the agent checks one thing over and over between unrelated lookups, and has come back
    to it a third time with nothing that could change it. Calls that do one thing per item
    between the reads (look up a customer, price it; cordon a node, drain it) share their
    operations from lap to lap: a checklist read before each item. Updates
    ``record.stats.laps``; true from the :data:`LAPS_ELSEWHERE`-th such lap on."""
    stats = record.stats
    previous, index = stats.read_at, record.index
    if previous < 0 or not 0 < index - previous < RECENT_RESULTS:
        stats.laps = None  # back to back (the run's streak judges it), or too far apart to tell
        return False
    lap = tuple([(earlier.signature.key, _operation(earlier)) for earlier in memory.recent if previous < earlier.index < index])
    laps = stats.laps
    count = 0
    if laps is not None and lap and laps[1]:
        # A call made again in both laps (the pods listed before each re-read of their logs) is
        # one more thing checked over and over, not an operation the laps share.
        again = frozenset([key for key, _ in lap]).intersection([key for key, _ in laps[1]])
        now = frozenset([operation for key, operation in lap if key not in again])
        before = frozenset([operation for key, operation in laps[1] if key not in again])
        if now and before and before.isdisjoint(now):
            count = laps[0] + 1
    stats.laps = (count, lap)
    return count >= LAPS_ELSEWHERE


def _operation(record: CallRecord) -> str:
    stats = record.stats
    operation = stats.operation
    if operation is None:
        operation = stats.operation = operation_of(record.signature.tool, record.signature.arguments)
    return operation


class _Bucket:
    """Up to ``_BUCKET`` outputs of one tool that share a skeleton, as parallel lists so
    that the usual questions ("seen exactly?", "from this call?") are scans in C."""

    __slots__ = ("calls", "exacts", "observations", "changes")

    def __init__(self, call: int, observation: Observation, changes: int) -> None:
        self.calls = [call]
        self.exacts = [observation.exact]
        self.observations = [observation]
        self.changes = [changes]  # the run's state changes when each output came


class _ToolOutputs:
    """The outputs one tool has returned, bounded: failures by shape, others by skeleton.

    Outputs are bucketed by their skeleton, so a new output is normalised only when an
    earlier one already shares its skeleton (see :class:`~loopguard.observations.Observation`).
    Volatile parts are normalised away only between results of the *same* call (a record
    stored twice gets two generated ids); results of different calls must match exactly,
    since what differs there (``record 100000`` / ``record 100001``) is usually what was
    asked for.
    """

    __slots__ = ("_failures", "_outputs")

    def __init__(self, capacity: int) -> None:
        self._failures: BoundedMap[int, None] = BoundedMap(capacity)
        self._outputs: BoundedMap[int, _Bucket] = BoundedMap(capacity)

    def resize(self, capacity: int) -> None:
        self._failures.resize(capacity)
        self._outputs.resize(capacity)

    def contains_and_add(self, observation: Observation, call: int, changes: int) -> int:
        """Whether this tool already returned ``observation`` (``_NEW``, ``_FROM_SAME_CALL`` or
        ``_FROM_OTHER_CALL``, the latter only for exact repeats); then remember it.
        Failures are compared by shape, from any call. ``changes`` is the run's count of
        state changes when something the call names last changed (``RunMemory.changes_for``):
        an output of the same call from before such a change is compared exactly (after an
        edit, "client_max_body_size 25m" where "1m" was is the edit, not a volatile number);
        ``_ANY_CHANGES``, for a call that itself changes state, compares with any."""
        if observation.error:
            known = observation.shape in self._failures
            self._failures.put(observation.shape, None)
            return _FROM_SAME_CALL if known else _NEW
        outputs = self._outputs
        bucket = outputs.get(observation.skeleton)
        if bucket is None:
            outputs[observation.skeleton] = _Bucket(call, observation, changes)  # BoundedMap.put, inline: the key is new
            if len(outputs) > outputs.capacity:
                outputs.popitem(last=False)
            return _NEW
        exact, calls, exacts = observation.exact, bucket.calls, bucket.exacts
        if exact in exacts:
            if (call, exact) in zip(calls, exacts):
                return _FROM_SAME_CALL  # this very output of this call is already stored
            known = _FROM_OTHER_CALL
        else:
            # Volatile parts are normalised only against earlier results of the same call.
            known = _FROM_SAME_CALL if call in calls and any(
                key == call and (then == changes or changes == _ANY_CHANGES) and observation.same_as(earlier)
                for key, earlier, then in zip(calls, bucket.observations, bucket.changes)
            ) else _NEW
        calls.append(call)
        exacts.append(exact)
        bucket.observations.append(observation)
        bucket.changes.append(changes)
        if len(calls) > _BUCKET:
            del calls[0], exacts[0], bucket.observations[0], bucket.changes[0]
        return known


def _quiet_success(record: CallRecord, observation: Observation) -> bool:
    """Whether an empty output is a command that ran quietly (``tsc``, ``cp``: silence means
    success), not "nothing found". It is then judged as any other output: silence that this
    tool already printed is stale. A search that matched nothing (exit status 1: see the
    session), or empty data printed by a command that fetched it (``curl``: ``[]``), is an
    empty answer."""
    signature = record.signature
    return observation is not NO_MATCH and runs_command(signature.tool, signature.arguments) and not is_empty_data(observation.text)


def _long_poll_exempt(record: CallRecord, observation: Observation) -> bool:
    """Whether a call that is a poll only as a long poll (see the session) gets no poll
    tolerance for this result: only the same call's empty answers are the server's wait
    ending. The same news again is an offset left unadvanced, and a long poll whose arguments
    change (an offset bumped while nothing came) is no waiting."""
    return record.long_poll and not record.after_wait and (not observation.empty or record.stats.results == 0)


def _acknowledges(record: CallRecord, observation: Observation) -> bool:
    """Whether an output that another call also got only acknowledges this call: an
    acknowledgement ("sent", ``true``), or a short reply of a tool whose name says it changes
    state ("applied 1 edit" from ``edit_file`` on two files) that reports no failure."""
    text = observation.text
    return is_acknowledgement(text) or (
        _reply_length(text, record.signature.arguments) <= _REPLY_LIMIT and writes_by_name(record.signature.tool) and not reports_failure(text)
    )


def _reply_length(text: str, arguments: Any) -> int:
    """A reply's length without what it echoes of the call's arguments: "The file
    /Users/mika/src/app/MIGRATION_NOTES.md has been updated." is a short reply, however long
    the path it names."""
    if len(text) <= _REPLY_LIMIT or len(text) > 4 * _REPLY_LIMIT or type(arguments) is not dict:
        return len(text)
    for value in arguments.values():
        if type(value) is str and 0 < len(value) <= 3 * _REPLY_LIMIT:
            text = text.replace(value, "")
    return len(text)


def _group_noun(record: CallRecord) -> str:
    """What the calls of a record's group are, for messages."""
    if record.sequence is not None:
        return "pages"
    return "calls, the same but for a request id," if record.stats.same_call is not None else "differently worded calls"


class NoProgress:
    name = "no_progress"

    def __init__(self, config: NoProgressDetector) -> None:
        self._seen: BoundedMap[str, _ToolOutputs] = BoundedMap(_TOOLS_REMEMBERED)
        self._last_handoff: tuple[int, int] | None = None  # (signature key, call index) of the latest handoff
        self._last_thought: tuple[int, int] | None = None  # (signature key, call index) of the latest scratchpad call
        # Stale results in a row of each group of calls that are one call: a paging sequence
        # (near_duplicate's record.sequence), or calls alike but for a request identity
        # (SignatureStats.same_call). Each is a call of its own, yet together they keep one streak.
        self._groups: BoundedMap[int, int] = BoundedMap(_TOOLS_REMEMBERED)
        self._group_replies: BoundedMap[int, Observation] = BoundedMap(_TOOLS_REMEMBERED)  # each same_call group's latest reply
        self.reconfigure(config)

    def reconfigure(self, config: NoProgressDetector) -> None:
        for outputs in self._seen.values():  # a new memory applies to the tools already seen too
            outputs.resize(config.memory)
        self.config = config
        self._active, self.patience = config.enabled, config.patience  # read on every result

    def reset_turn(self, memory: RunMemory) -> None:
        """A user message is new information: the streak starts again."""
        memory.stale_streak = 0

    def pending(self, record: CallRecord, memory: RunMemory) -> Signal | None:
        """The signal for a pending call whose own latest ``patience`` results brought nothing
        new, though other calls' results did in between (the session asks only then, and only
        when another detector flags the call: alone it would be a warning that says little)."""
        stats = record.stats
        if not self._active or stats.polling:
            return None
        if record.redone:
            # Made again after a context condensation, as in the lap before and the one before
            # that, with the same answer (cycle sets this): the work is done again, for nothing.
            return Signal(
                detector=self.name,
                kind="same_answer_each_lap",
                score=self.config.weight,
                message=f"{describe(record)} was made after each of the last 2 context condensations, as before them",
                evidence={"call": record.index, "stale_results": 2},
            )
        if stats.stale_results < self.patience:
            group = record.sequence if record.sequence is not None else stats.same_call
            in_group = self._groups.get(group, 0) if group is not None else 0
            if in_group < self.patience:
                return None
            return Signal(
                detector=self.name,
                kind="same_call_no_progress",
                score=self.config.weight,
                message=f"{record.tool} is called again, though its last {in_group} {_group_noun(record)} brought nothing new",
                evidence={"call": record.index, "stale_results": in_group},
            )
        return Signal(
            detector=self.name,
            kind="same_call_no_progress",
            score=self.config.weight,
            message=f"{describe(record)} brought nothing new the last {stats.stale_results} times it ran",
            evidence={"call": record.index, "stale_results": stats.stale_results},
        )

    def _repeated_thought(self, record: CallRecord, memory: RunMemory) -> Signal | None:
        """A scratchpad call that writes again the thought the call before it wrote: stale, in the
        run's streak."""
        record.stale = True
        memory.stale_streak += 1
        if not self._active or memory.stale_streak < self.patience:
            return None
        message = f"{record.tool} {_WHAT['repeated_thought']}; the last {memory.stale_streak} results brought nothing new"
        return Signal(self.name, "repeated_thought", self.config.weight, message, {"call": record.index, "stale_results": memory.stale_streak})

    def result(self, record: CallRecord, memory: RunMemory, environment: bool = True, batch_news: bool = False) -> tuple[Signal | None, bool]:
        """Update the run memory with this result; return the signal (if active) and whether it was stale.

        ``environment`` is False for the agent's own messages: they can be stale, but
        they are not new information from the world (a failure retried after the agent
        merely talked is still retried unchanged). ``batch_news`` is True when the call is one
        of a batch of parallel calls and another result of the batch brought news: a stale
        result then leaves the run's streak as it is (the results' order is chance).
        """
        observation = record.observation
        assert observation is not None
        stats = record.stats
        memory.recent.append(record)
        if record.tool_kind in _NO_NEWS:
            # A scratchpad or a pause brings no information from the world, and takes none away;
            # but the thought the agent just wrote, written again with no other call between,
            # is nothing new either (between checks on what it waits for, it is how it waits).
            if record.tool_kind == "wait":
                return None, False
            thought, self._last_thought = self._last_thought, (record.signature.key, record.index)
            if thought != (record.signature.key, record.index - 1):
                return None, False
            return self._repeated_thought(record, memory), True
        if observation.failure_class == REFUSED:
            # The guard's own refusal: the call never ran, so it is no news and takes none away.
            # The run's streak holds as it was (paging past the end goes on being blocked).
            record.stale = True  # (nothing new: paging on from it is paging past the end still)
            stats.last_failure = REFUSED  # (the failure detector judges the same call asked for again)
            stats.results += 1
            if not self._active or memory.stale_streak < self.patience:
                return None, True
            message = f"{record.tool} {_WHAT['refused']}; the last {memory.stale_streak} results brought nothing new"
            return Signal(self.name, "refused", self.config.weight, message, {"call": record.index, "stale_results": memory.stale_streak}), True
        tool = record.signature.tool
        seen = self._seen.get(tool)
        if seen is None:
            seen = _ToolOutputs(self.config.memory)
            self._seen.put(tool, seen)
        # Calls that differ only in a request's own identity (a fresh idempotency key) are one call.
        # (A call that changes state compares its own replies as before: the changes between them
        # are its own, and what they generate, ids and times, is volatile.)
        changes = _ANY_CHANGES if stats.changes_state else memory.changes_for(record) if memory.state_changes else 0
        same_call = stats.same_call
        repeated_output = seen.contains_and_add(observation, record.signature.key if same_call is None else same_call, changes)
        group_last = None
        writes_then = stats.writes_at_result
        if same_call is not None and not observation.error:
            group_last = self._group_replies.get(same_call)
            if group_last is None:  # the plain call's latest reply (the call without a cache buster)
                plain = memory.signatures.get(same_call)
                if plain is not None and plain.last is not None:
                    group_last = plain.last
                    if stats.last is None:
                        writes_then = plain.writes_at_result
            if repeated_output == _NEW and group_last is not None and (stats.changes_state or writes_by_name(tool)) and group_last.fingerprint == observation.fingerprint:
                # The same change made anew: its reply again, with other generated ids (base-62 ids
                # such as "pmt_7Q2kd" escape the skeleton that buckets outputs, not normalising). Only
                # for a change: a read with a fresh request id (a queue's next task) hands out new ids.
                repeated_output = _FROM_SAME_CALL
            self._group_replies.put(same_call, observation)
        acts = stats.acts
        if acts is None:  # (read once per signature; kept in stats with the result, below)
            acts = bool(stats.changes_state) or record.tool_kind == "write" or acts_by_name(tool)
        # Whether a call that writes or acts says it changed nothing (read once, used twice below).
        no_change = acts and not observation.error and reports_no_change(observation.text, record.signature.arguments)
        if repeated_output == _NEW and stats.results and no_change:
            repeated_output = _FROM_SAME_CALL  # the same change made again, and it says it changed nothing
        if record.handoff_target is not None:
            # A handoff's receipt is no answer: it counts only when the same handoff comes again
            # with no other call between (control that never arrives), not across real work.
            handoff, self._last_handoff = self._last_handoff, (record.signature.key, record.index)
            if handoff != (record.signature.key, record.index - 1):
                return None, False

        kind = "same_output"
        counted_laps = False
        last = stats.last
        # (A call made anew with another cache buster or request id compares with its group's latest reply.)
        compared = last if last is not None else group_last
        if (
            repeated_output == _NEW
            and compared is not None
            and _REPLY_LIMIT < len(observation.text) <= len(compared.text) + _STAMPS_LENGTH
            and len(compared.text) <= len(observation.text) + _STAMPS_LENGTH
            and compared.exact != observation.exact
            and not observation.error
            and not compared.error
            and memory.writes == writes_then
            and compared.rest == observation.rest
            and unstamped_digest(observation) == unstamped_digest(compared)
        ):
            # The same answer to the same call but for the response's own stamps: a request id
            # of any form (base-62 ids escape the skeleton), when and how it was served, the
            # rate limit left (digits only: the skeleton is the same, normalising keeps them).
            repeated_output = _FROM_SAME_CALL
            same_but_stamps = True
        else:
            same_but_stamps = False
        # Whether the output equals this signature's previous one once volatile parts are
        # normalised ("identical") is settled only where it is needed, since normalising is the
        # costliest part of a result: the cheap tests of same_as tell most outputs apart, a
        # stalled poll needs the answer, and SignatureStats.advancing decides it on first read.
        identical: bool | None
        if same_but_stamps:
            identical = True
        elif last is None or (
            last.exact != observation.exact and last.skeleton != observation.skeleton and not last.token_apart(observation)
        ):
            identical = False
        else:
            identical = True if last.exact == observation.exact else None  # None: not settled yet
        maybe_identical = identical is not False
        # own_stale: the call's own streak goes on (its result repeats what it returned before,
        # is empty, or fails the same way), whatever other calls returned in between.
        if observation.error:
            stale = repeated_output != _NEW
            kind = "same_failure"
            stats.identical_pending = 0
            own_stale = last is not None and last.error and last.shape == observation.shape
            if own_stale and stats.novel_at_failure and stats.failures and stats.failures.get(observation.shape, 0) < _FORGIVEN_FAILURES:
                # The same failure after a change not tried before (a test run after another fix)
                # is that change's outcome, not the call stuck, a few times (as the failure
                # detector forgives it: see failure.FORGIVEN_AFTER_NEW_CHANGES).
                then = stats.novel_at_failure.get(observation.shape)
                own_stale = then is None or memory.new_changes <= then[1]
        # A pending state in the reply of a call named for a change ("update_ticket" setting
        # "pending", a handoff "accepted", a job "submitted") is that call's own outcome, not a
        # state to wait on: the same call again is the change made again, not a poll.
        elif (
            (repeated_output or maybe_identical)
            and environment  # an agent's message is no poll
            and not record.repeats_known  # a page or an answer already had: no pending state to wait on
            and (
                (inferred := polls(record) and not is_final(observation.text) and not _long_poll_exempt(record, observation))
                or (is_pending(observation.text) and not writes_by_name(record.signature.tool))
            )
            and (repeated_output or (identical := observation.same_as(last)))
        ):
            # Only a repeated observation can be a stalled poll, so the pending test runs rarely.
            if identical is None:
                identical = observation.same_as(last)
            stats.identical_pending = stats.identical_pending + 1 if identical else 0
            patience = record.pending_patience or self.config.poll_patience
            if inferred and (record.after_wait or record.tool_kind != "poll") and not is_pending(observation.text):
                patience = max(1, patience // 2)  # a poll only by a wait or a sleep, saying no pending state
            own_stale = stale = stats.identical_pending >= patience
            stats.polling = not stale
            kind = "stalled_poll"
        elif observation.empty and not _quiet_success(record, observation):
            own_stale = stale = True
            kind = "empty_result"
            stats.identical_pending = 0
        elif record.repeats_known:
            own_stale = stale = True
            kind = "reworded_message" if not environment else "reread" if record.same_answer is None else "same_answer"
            stats.identical_pending = 0
        else:
            # A new call's acknowledgement ("sent", "ok", true) confirms that call even when
            # other calls got the same one. A call that has had results before gets no such
            # pass: the bucket may have forgotten its own earlier output (a repeated fan-out).
            # The same non-empty answer again makes only the run's streak: between other calls'
            # news, re-reading a page or a record is how agents check (the call's own streak
            # counts empty answers, failures, re-reads and stalled polls). A long poll's same news
            # again is its own stale answer: the offset was left where it was.
            own_stale = record.long_poll and repeated_output == _FROM_SAME_CALL
            stale = repeated_output == _FROM_SAME_CALL or (
                repeated_output == _FROM_OTHER_CALL and (stats.results > 0 or not _acknowledges(record, observation))
            )
            stats.identical_pending = 0
            if repeated_output == _FROM_SAME_CALL and environment:
                if memory.writes == stats.writes_at_result:
                    counted_laps = True
                    if _looks_elsewhere(record, memory):
                        own_stale = True
                        kind = "same_answer_between"
                if kind == "same_output" and record.tool_kind != "poll" and "[]" not in observation.text and sends_cursor(record.signature.arguments):
                    # The page asked for again with the cursor it was asked with before, and the same
                    # items again: paging that does not advance (a cursor not followed, or handed back
                    # unchanged), whatever was done with the page between. (A stream tailed with the
                    # token it handed back answers an empty list until new lines come: a poll.)
                    own_stale = True
                    kind = "same_page"

        if not counted_laps:
            stats.laps = None
        stats.read_at = record.index
        if kind != "stalled_poll":
            stats.polling = False
        if identical is None and not observation.error and not observation.empty:
            stats.advancing_between = (last, observation)  # type: ignore[assignment]
        else:
            # (A result after a failure, even a quiet one, has moved on when something was written
            # between: a check that failed, then passes after an edit. Without one, a check that
            # fails and passes by turns is flapping.)
            stats.advancing_value = (
                not observation.error
                and last is not None
                and ((last.error and memory.writes != stats.writes_at_result) or (not observation.empty and not identical))
            )
            stats.advancing_between = None
        record.stale = stale
        stats.stale_results = stats.stale_results + 1 if own_stale else 0
        in_group = 0
        group = record.sequence
        if group is None:
            group = same_call if same_call is not None else record.same_answer
        if group is not None:
            # The same answer again to the same request made anew (a fresh idempotency key) is
            # that request's own stale answer: the change was made again.
            grouped_stale = own_stale or (record.sequence is None and kind == "same_output" and repeated_output == _FROM_SAME_CALL)
            in_group = self._groups.get(group, 0) + 1 if grouped_stale else 0
            self._groups.put(group, in_group)
        stats.last = observation
        stats.acts = acts
        if acts and (observation.error or (not no_change and repeated_output != _FROM_SAME_CALL)):
            # (A write that says it changed nothing, "0 rows affected", is none; nor is the same
            # change made again with the same reply: a restart retried changes nothing new.)
            memory.writes += 1
        stats.writes_at_result = memory.writes
        stats.last_failure = observation.failure_class
        stats.results += 1

        if stale:
            if not batch_news:
                memory.stale_streak += 1
        elif environment and not (memory.stale_streak and echoes(record.signature.arguments, observation.text)):
            # (A command that printed what its own command line says brings no news: the streak holds.)
            memory.stale_streak = 0
            if not observation.error and kind != "stalled_poll":  # a poll's same answer is no news
                memory.novel_results += 1
        # (An agent's own message that is new is no news from the world: the streak holds.)

        if kind == "same_page" and self._active and memory.stale_streak < self.patience and stats.stale_results >= SAME_PAGES:
            message = f"{describe(record)} asked for the page it had asked for before, with the same cursor, and got the same page"
            return Signal(self.name, kind, self.config.weight, message, {"call": record.index, "stale_results": stats.stale_results}), stale
        if kind == "same_answer_between" and self._active and memory.stale_streak < self.patience:
            laps = stats.laps
            assert laps is not None  # (_looks_elsewhere set them)
            answers = laps[0] + 2  # the first answer, and one per lap
            message = f"{describe(record)} gave the same answer {answers} times in a row, with nothing written since and other lookups between"
            return Signal(self.name, kind, self.config.weight, message, {"call": record.index, "stale_results": answers - 1}), stale
        if not self._active or (memory.stale_streak < self.patience and in_group < self.patience):
            return None, stale
        what = _WHAT[kind]
        if memory.stale_streak < self.patience:
            # Calls of one group that bring nothing new, with other calls between (each page
            # processed or appended somewhere, each order checked): stuck all the same.
            message = f"{record.tool} {what}; its last {in_group} {_group_noun(record)} brought nothing new"
            return Signal(self.name, kind, self.config.weight, message, {"call": record.index, "stale_results": in_group}), stale
        signal = Signal(
            detector=self.name,
            kind=kind,
            score=self.config.weight,
            message=f"{record.tool if environment else record.agent or 'the agent'} {what}; the last {memory.stale_streak} results brought nothing new",
            evidence={"call": record.index, "stale_results": memory.stale_streak},
        )
        return signal, stale
