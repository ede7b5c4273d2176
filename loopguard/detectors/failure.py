"""failure: the identical call failing with the identical error, by class of failure.

Failures are classified by :func:`loopguard.observations.classify_failure`:
*permanent* (401/403, invalid request, not found, schema errors) cannot change by
retrying, so the ``attempts``-th identical one is a stop (``permanent_weight``);
*retryable* (429, 503, timeouts) are healthy to retry and only count after
``retryable_attempts``; anything else is *deterministic*: the ``attempts``-th
identical failure is a replan, unless new information arrived between the failures
(the agent tried something that might have fixed it), in which case it warns and
escalates only if the next call brings nothing new either.

Calls of one tool with other arguments that fail with the same *permanent* error,
``tool_attempts`` of them in a row (no success of the tool between), are a replan
(``weight``): a changed query parameter, header or cache buster does not fix bad
credentials, a bot challenge or a rejected value. A not-found counts only when its text
is exactly the same again, since it names what was asked.

Before a call runs, a call that has already failed identically ``attempts`` times is
judged the same way, so the retry can be blocked, unless (for a deterministic failure
seen ``attempts`` times, not more) new information arrived since it last failed: an edit
before re-running a test may have fixed it. For tools whose ``kind`` is ``write``
the first identical retry after a (non-retryable) failure is already judged so: a
write may have half-applied, and repeating it verbatim is riskier than a read.
"""

from __future__ import annotations

import re
from typing import Any

from ..decisions import Signal
from ..observations import DETERMINISTIC, HAS_DIGIT, PERMANENT, REFUSED, RETRYABLE, Observation, failure_line, is_not_found
from ..policy.schema import FailureDetector
from ..tool_names import split_name
from .base import BoundedMap, CallRecord, RunMemory, SignatureStats, describe
from .near_duplicate import same_target

_SHAPES_PER_SIGNATURE = 8
_TOOLS_REMEMBERED = 256
#: Identical deterministic failures beyond ``attempts`` still forgiven while, between each two,
#: the agent changes something it had not tried before (an edit-test loop: the test fails the
#: same way while the agent tries one fix after another).
FORGIVEN_AFTER_NEW_CHANGES = 2
_WARNING_SCORE = 0.5


class Failure:
    name = "failure"

    def __init__(self, config: FailureDetector) -> None:
        self.reconfigure(config)
        self._armed_after: int | None = None  # index of a call whose repeated failure came after new information
        self._armed_message = ""
        # Each tool's permanent failures in a row (see _tool_failure): [failure key, count, the
        # latest failing call's arguments, its failure line, whether it is about the arguments'
        # names, the required fields it says are missing]. Bounded: tool names come from the agent.
        self._tool_failures: BoundedMap[str, list[Any]] = BoundedMap(_TOOLS_REMEMBERED)
        self._refusals_in_a_row = 0
        self._latest_call = -1  # index of the latest pending call seen
        self._asked_when_refused = -1  # the latest call index when the latest counted refusal came
        # The progress each signature's latest retryable failure reported (see progress_of).
        self._progress: BoundedMap[int, tuple[tuple[float, float], ...]] = BoundedMap(_TOOLS_REMEMBERED)

    def reconfigure(self, config: FailureDetector) -> None:
        self.config = config
        self._active = config.enabled  # read on every call
        self._tool_attempts = config.tool_attempts

    def _score(self, failure_class: str, count: int) -> float | None:
        config = self.config
        if failure_class == RETRYABLE:
            return config.weight if count >= config.retryable_attempts else None
        if count < config.attempts:
            return None
        # A call the guard refused and the model asks for again is as hopeless as a permanent failure.
        return config.permanent_weight if failure_class in (PERMANENT, REFUSED) else config.weight

    def pending(self, record: CallRecord, memory: RunMemory) -> Signal | None:
        self._latest_call = record.index
        if not self._active:
            return None
        stats = record.stats
        if stats.last_failure is None or not stats.failures:
            return self._tool_retry(record) if self._tool_failures else None
        count = max(stats.failures.values())
        if stats.last_failure == DETERMINISTIC and record.tool_kind != "write" and _forgiven(stats, memory, count, self.config.attempts):
            return None  # something changed since it failed (an edit, new data): one more try may work
        # An identical write after a failure escalates faster: it may have half-applied. (The
        # message and the evidence still say how often it failed.)
        escalated = max(count, self.config.attempts) if record.tool_kind == "write" and stats.last_failure != RETRYABLE else count
        score = self._score(stats.last_failure, escalated)
        if score is None:
            return None
        times = "once" if count == 1 else f"{count} times"
        if stats.last_failure == REFUSED:
            message = f"{describe(record)} was already refused {times}; asking again will be refused again"
        else:
            message = f"{describe(record)} already failed {times} with the same error; retrying it unchanged will fail again"
        return Signal(
            detector=self.name,
            kind=f"retry_of_{stats.last_failure}_failure",
            score=score,
            message=message,
            evidence={"call": record.index, "failures": count, "class": stats.last_failure},
        )

    def result(self, record: CallRecord, memory: RunMemory, stale: bool) -> Signal | None:
        observation = record.observation
        assert observation is not None
        stats = record.stats
        armed, self._armed_after = self._armed_after, None
        # The detectors' refusals in a row, whatever was asked: an agent that asks for one refused
        # call after another (a new offset each time) ignores the guard. (A rule's block is the
        # operator's: asking for that call again is judged by its own count.)
        # Only a call asked for after the previous refusal came back counts: parallel calls of
        # one turn, refused together, were asked for before the agent read any refusal.
        if observation.failure_class == REFUSED and '"guard_' in observation.text:
            if record.index > self._asked_when_refused:
                self._refusals_in_a_row += 1
                self._asked_when_refused = self._latest_call
        else:
            self._refusals_in_a_row = 0
        if not observation.error:
            if stats.failures:
                stats.failures.clear()
                stats.novel_at_failure.clear()  # type: ignore[union-attr]
            if self._tool_failures:
                self._tool_failures.pop(record.signature.tool, None)  # the tool works: a new streak
            # (A scratchpad entry brings nothing from the world: the agent only thought.)
            if armed == record.index - 1 and (stale or record.tool_kind == "think") and self.config.enabled:
                return self._escalated(record, "brought nothing new")
            return None
        failures = stats.failures
        if failures is None:
            failures = stats.failures = {}
            stats.novel_at_failure = {}
        novel_at_failure = stats.novel_at_failure
        assert novel_at_failure is not None
        shape = observation.shape
        count = failures.get(shape, 0) + 1
        text = observation.text
        if (
            observation.failure_class == RETRYABLE
            and ("ime" in text or "IME" in text or "eadline" in text or "EADLINE" in text)  # (cheap tests first: most retries are no timeouts)
            and _TIMED_OUT.search(text[:2000].lower())
            and HAS_DIGIT.search(text) is not None
        ):
            # A wait that timed out while what it waits for moved on ("1 of 4 updated replicas
            # are available", then "2 of 4") is a poll that advances: its count starts again.
            # (A rate limit's usage climbing, "61/60 requests", is no progress.)
            progress = progress_of(text)
            key = record.signature.key
            if count > 1 and progress and advanced(self._progress.get(key), progress):
                count = 1
            self._progress.put(key, progress)
        if shape not in failures and len(failures) >= _SHAPES_PER_SIGNATURE:
            failures.pop(next(iter(failures)))
        failures[shape] = count
        then = novel_at_failure.get(shape)
        novel_at_failure[shape] = (memory.novel_results, memory.new_changes, memory.state_changes)
        if not self.config.enabled:
            return None
        failure_class = observation.failure_class or "deterministic"
        in_a_row = 0
        if failure_class == PERMANENT:
            in_a_row = self._tool_failure(record, observation, shape)
        elif self._tool_failures and failure_class != REFUSED:  # (the guard's own refusal is no answer of the tool)
            self._tool_failures.pop(record.signature.tool, None)
        score = self._score(failure_class, count)
        if score is None and self._refusals_in_a_row >= self._tool_attempts:
            return Signal(
                self.name,
                "refusals_ignored",
                self.config.permanent_weight,
                f"the guard refused the last {self._refusals_in_a_row} calls and the agent keeps asking: {describe(record)} was refused too",
                {"call": record.index, "refusals": self._refusals_in_a_row, "class": REFUSED},
            )
        if score is None:
            if armed == record.index - 1:
                return self._escalated(record, "failed too")
            if in_a_row >= self._tool_attempts:
                return Signal(
                    self.name,
                    "repeated_permanent_failure_of_tool",
                    self.config.weight,
                    f"{record.signature.tool} failed {in_a_row} times in a row with the same permanent error, whatever its arguments: {_excerpt(observation.text)}",
                    {"call": record.index, "failures": in_a_row, "class": failure_class},
                )
            return None
        if failure_class == REFUSED:
            message = f"{describe(record)} was refused {count} times and the model keeps asking for it"
        else:
            message = f"{describe(record)} failed {count} times with the same {failure_class} error: {_excerpt(observation.text)}"
        evidence = {"call": record.index, "failures": count, "class": failure_class}
        if then is not None and (
            (
                failure_class == "deterministic"
                and memory.novel_results > then[0]
                and (count <= self.config.attempts or (count <= self.config.attempts + FORGIVEN_AFTER_NEW_CHANGES and memory.new_changes > then[1]))
            )
            # A permanent failure seen again after a change not tried before to what the call
            # names (a pod's logs still refusing its database password after the pod's limits
            # were changed) gets the one chance too: the change may have been the fix. Not for
            # news alone (reads fix no password), nor for a change to something else (an
            # annotation on a deployment does not fix a payment API's key).
            or (failure_class == PERMANENT and count <= self.config.attempts and memory.new_changes > then[1] and memory.changes_for(record) > then[2])
        ):
            # Something new happened between the failures: one more chance to show progress. Once
            # for news alone (the same failure after another change of the same kind shows the
            # changes do not help: a condense that never gets under the limit); while each time
            # the agent changes something it had not tried, up to FORGIVEN_AFTER_NEW_CHANGES more
            # (an edit-test loop trying one fix after another).
            self._armed_after = record.index
            self._armed_message = message
            return Signal(self.name, "repeated_failure_after_change", min(score, _WARNING_SCORE), message, evidence)
        return Signal(self.name, f"repeated_{failure_class}_failure", score, message, evidence)

    def _tool_retry(self, record: CallRecord) -> Signal | None:
        """The signal for a pending call of a tool whose last ``tool_attempts`` calls failed with
        the same permanent error, when the call is about the same thing as the latest of
        them: it will fail the same way, so it can be blocked before it runs."""
        streak = self._tool_failures.get(record.signature.tool)
        if streak is None or streak[1] < self._tool_attempts:
            return None
        arguments = record.signature.arguments
        if not (_same_names(streak[2], arguments) if streak[4] else same_target(streak[2], arguments)):
            return None
        return Signal(
            self.name,
            "retry_of_permanent_failure_of_tool",
            self.config.weight,
            f"{record.signature.tool} already failed {streak[1]} times in a row with the same permanent error, whatever its arguments; this call changes nothing that matters",
            {"call": record.index, "failures": streak[1], "class": PERMANENT},
        )

    def _tool_failure(self, record: CallRecord, observation: Observation, shape: int) -> int:
        """Count a permanent failure of the record's tool; return how many of the tool's calls
        in a row have failed so: each with the same error as the one before, about the same
        thing (see :func:`~loopguard.detectors.near_duplicate.same_target`). A not-found names
        what was asked, so its exact text must repeat. Another error, a call about something
        else or a success of the tool starts again: fan-out over users, files or records
        that each fail for their own reason is no retry."""
        not_found = is_not_found(observation.text)
        key = observation.exact if not_found else shape
        # The same error said last, after other progress lines (a push's layers, which --quiet
        # leaves out; a verbose run's request log), is the same failure too; a not-found must
        # say again what it did not find.
        line = failure_line(observation.text)
        arguments = record.signature.arguments
        tool = record.signature.tool
        streak = self._tool_failures.get(tool)
        # A failure about the arguments' names (a required field given under another name, an
        # unexpected keyword) fails whatever the values: calls with other values are no other
        # target. (A field the record lacks, "email Field required" for a lead without one, is
        # about that record.)
        # Another required field missing each time is a schema learned field by field, not one
        # failure repeated.
        missing = missing_fields(observation.text)
        names = misnamed_arguments(observation.text, arguments, missing)
        if (
            streak is None
            or (streak[0] != key and (line is None or streak[3] != line))
            or missing != streak[5]
            or not (names or same_target(streak[2], arguments))
        ):
            self._tool_failures.put(tool, [key, 1, arguments, line, names, missing])
            return 1
        streak[0], streak[1], streak[2], streak[3], streak[4] = key, streak[1] + 1, arguments, line, names
        return streak[1]

    def _escalated(self, record: CallRecord, outcome: str) -> Signal:
        """The call after a forgiven repeated failure did not show progress either."""
        return Signal(
            detector=self.name,
            kind="repeated_failure",
            score=self.config.weight,
            message=f"{self._armed_message}; {record.tool} after it {outcome}",
            evidence={"call": record.index},
        )


def _forgiven(stats: SignatureStats, memory: RunMemory, count: int, attempts: int) -> bool:
    """Whether a call that failed ``count`` times the same way may run again: a result brought
    new information since its latest failure and it failed at most ``attempts`` times, or also
    a change not tried before came since, and it failed at most FORGIVEN_AFTER_NEW_CHANGES
    times more."""
    last = stats.last
    if last is None or not last.error or stats.novel_at_failure is None:
        return False
    then = stats.novel_at_failure.get(last.shape)
    if then is None or memory.novel_results <= then[0]:
        return False
    return count <= attempts or (count <= attempts + FORGIVEN_AFTER_NEW_CHANGES and memory.new_changes > then[1])


# A name the tool does not take: Python's "unexpected keyword argument", pydantic's
# extra_forbidden, JSON Schema's "additional properties are not allowed".
_UNEXPECTED_NAME = re.compile(r"unexpected keyword argument|additional properties are not allowed|extra (?:fields|inputs) (?:are )?not permitted|type=extra_forbidden")
# A required field missing, and its name: pydantic's "file_path\n  Field required", Python's
# "missing 1 required positional argument: 'file_path'", JSON Schema's "'file_path' is a
# required property", zod's {"path": ["file_path"], "message": "Required"} (as MCP servers answer).
_MISSING_FIELD = re.compile(
    r"(?:^|\n)\s*([\w.-]{1,60})\n\s*field required"
    r"|missing \d+ required (?:positional |keyword-only )?arguments?: '([\w-]{1,60})'"
    r"|'([\w-]{1,60})' is a required property"
    r"|\"path\":\s*\[\s*\"([\w-]{1,60})\"\s*\],\s*\"message\":\s*\"required\""
)


def missing_fields(text: str) -> frozenset[str]:
    """The required fields a failure says are missing (lowercased; empty when it names none)."""
    head = text[:2000].lower()
    if "required" not in head:
        return _NONE_MISSING
    return frozenset(next(group for group in match.groups() if group) for match in _MISSING_FIELD.finditer(head))


_NONE_MISSING: frozenset[str] = frozenset()


def misnamed_arguments(text: str, arguments: Any, missing: frozenset[str] | None = None) -> bool:
    """Whether a failure says the call named its arguments wrong, whatever their values: it
    gave a name the tool does not take, or a required field is missing while the call gives a
    like-named one (``file_path`` missing beside ``path``, ``filepath`` or ``filename``: a word
    shared, or one of 4 letters or more that starts the other). ``missing``: the failure's
    :func:`missing_fields`, when known."""
    if _UNEXPECTED_NAME.search(text[:2000].lower()) is not None:
        return True
    if type(arguments) is not dict:
        return False
    given = [split_name(str(key)[:60]) for key in arguments]
    for field in missing if missing is not None else missing_fields(text):
        words = split_name(field.rsplit(".", 1)[-1])
        for key in given:
            if "".join(key) == "".join(words) or any(
                word == other or (min(len(word), len(other)) >= 4 and (word.startswith(other) or other.startswith(word))) for word in words for other in key
            ):
                return True
    return False


def _same_names(before: Any, after: Any) -> bool:
    """Whether two calls give the same argument names (a call that fixes a name may work)."""
    if type(before) is dict and type(after) is dict:
        return before.keys() == after.keys()
    return type(before) is type(after)


def _excerpt(text: str, limit: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


_TIMED_OUT = re.compile(r"\btim(?:ed|ing) out\b|\btimeout\b|deadline exceeded")
# A progress counter: "2 of 4", "2 out of 4", "2/4", "40%" (not a retry's own count: "retry
# 2/5", "attempt 2 of 3").
_PROGRESS = re.compile(
    r"(?<![\w.])(?<!retry )(?<!attempt )(?<!retries )(?<!attempts )(\d+)\s*(?:of|out of|/)\s*(\d+)\b|(?<![\w.])(\d+(?:\.\d+)?)\s*%"
)


def progress_of(text: str) -> tuple[tuple[float, float], ...]:
    """The progress counters a failure's text reports, as (done, total) pairs (a percentage's
    total is 100), in their order; empty when it reports none. Read in the first 2,000
    characters."""
    found = []
    for match in _PROGRESS.finditer(text[:2000].lower()):
        if match.group(3) is not None:
            found.append((float(match.group(3)), 100.0))
        else:
            found.append((float(match.group(1)), float(match.group(2))))
    return tuple(found)


def advanced(earlier: tuple[tuple[float, float], ...] | None, latest: tuple[tuple[float, float], ...]) -> bool:
    """Whether ``latest`` progress counters moved forward from ``earlier``'s: the same counters
    (same totals), none back or past its total, one at least forward."""
    if not earlier or len(earlier) != len(latest):
        return False
    if any(total != before_total or done < before or done > total for (before, before_total), (done, total) in zip(earlier, latest)):
        return False  # another counter, one going back, or one past its total (usage, not progress)
    return any(done > before for (before, _), (done, _) in zip(earlier, latest))
