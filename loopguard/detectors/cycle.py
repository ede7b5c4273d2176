"""cycle: a repeating sequence of calls (A→B→A→B, A→B→C→A→B→C), tail-aligned.

Keeps the last ``max_period × repeats`` signatures. For a pending call it checks,
for each period from 2 to ``max_period``, whether the newest ``period × repeats``
calls are the same block repeated; blocks of a single call are the repeat
detector's job. A cycle in which some call's results keep advancing is making
progress and raises no signal. Cost per call: at most max_period² × repeats
comparisons, independent of run length.
"""

from __future__ import annotations

from collections import deque

from ..decisions import Signal
from ..policy.schema import CycleDetector
from .base import CallRecord, RunMemory


class Cycle:
    name = "cycle"

    def __init__(self, config: CycleDetector) -> None:
        self._keys: deque[int] = deque()
        self._tools: deque[str] = deque()
        # How many calls back each call's previous result came, and how many calls in a row
        # came back at that lag (a sequence made again: see _replayed).
        self._lag = 0
        self._lag_run = 0
        # The index of the turn's first call, and of the call after the latest: a round whose
        # calls were made before the user's latest message is made again at the user's request.
        self._turn_start = 0
        self._next_index = 0
        self.reconfigure(config)

    def reconfigure(self, config: CycleDetector) -> None:
        self.config = config
        self._active = config.enabled
        size = config.max_period * config.repeats
        self._keys = deque(self._keys, maxlen=size)
        self._tools = deque(self._tools, maxlen=size)

    def message(self, record: CallRecord, memory: RunMemory) -> Signal | None:
        """An agent's message (its pseudo-call): part of the calls cycles are made of, but
        between the calls of a round made again it says, it does not call: it neither makes
        nor breaks a replay."""
        if not self._keep(record) or not self._active:
            return None
        return self._cycle(record, memory)

    def pending(self, record: CallRecord, memory: RunMemory) -> Signal | None:
        read_at = record.stats.read_at
        self._next_index = record.index + 1
        if read_at >= self._turn_start and record.tool_kind != "wait":  # (a round with a deliberate wait in it is a poll)
            lag = record.index - read_at
            if lag == self._lag:
                self._lag_run += 1
                # A round of max_period calls made again whole is a cycle the call-by-call check
                # misses when the agent's messages come between the calls.
                if self._lag_run >= max(REPLAYED_CALLS - 1, lag) and lag >= self.config.max_period and self._active:
                    recurs = self._keep(record)
                    # (A round of max_period calls made again is also a cycle of that period.)
                    return self._replayed(record, memory, lag) or (self._cycle(record, memory) if recurs else None)
            else:
                self._lag, self._lag_run = lag, 1
        else:
            self._lag = 0
        # (The window kept as _keep keeps it, inline: this runs on every call.)
        key = record.signature.key
        keys = self._keys
        recurs = key in keys
        keys.append(key)
        self._tools.append(record.signature.tool)
        if not recurs or not self._active:
            return None
        return self._cycle(record, memory)

    def _cycle(self, record: CallRecord, memory: RunMemory) -> Signal | None:
        """The signal when the newest calls, ``record`` the latest (kept in the window, where it
        was already), repeat a block of 2 to ``max_period`` calls ``repeats`` times."""
        key = record.signature.key
        keys = self._keys
        size = len(keys)
        repeats = self.config.repeats
        for period in range(2, self.config.max_period + 1):
            span = period * repeats
            if span > size:
                break
            if keys[size - 1 - period] != key:
                continue  # cheap test first: the pending call must recur one period back
            keys = list(keys)
            tail = keys[-span:]
            block = tail[:period]
            if block.count(key) == period:
                continue  # one call repeated is the repeat detector's job
            if all(tail[index] == tail[index - period] for index in range(period, span)):
                if any(_advancing(memory, key) for key in block):
                    return None
                tools = list(self._tools)[-period:]
                return Signal(
                    detector=self.name,
                    kind=f"cycle_of_{period}",
                    score=self.config.weight,
                    message=f"the calls {' → '.join(_step_name(tool) for tool in tools)} repeat as a cycle {repeats} times in a row",
                    evidence={"call": record.index, "period": period, "repeats": repeats, "tools": tools},
                )
        return None

    def news(self) -> None:
        """A user message: a round made again after it is the user's request, not a replay."""
        self._lag = self._lag_run = 0
        self._turn_start = self._next_index

    def _keep(self, record: CallRecord) -> bool:
        """Keep the call in the window; return whether it was in it already. (Every cycle
        needs the pending call one period back, so a call absent from the kept window, the
        common case, ends the check after one scan in C.)"""
        key = record.signature.key
        recurs = key in self._keys
        self._keys.append(key)
        self._tools.append(record.signature.tool)
        return recurs

    def _replayed(self, record: CallRecord, memory: RunMemory, lag: int) -> Signal | None:
        """A sequence made again: a whole round of ``lag`` calls (at least :data:`REPLAYED_CALLS`),
        each made again ``lag`` calls after it was made before, in the same order, longer than
        the periods checked call by call (an agent that redoes its exploration after its context
        was condensed). A round with a new call in it each time (references read before each
        item, then the item) is never made again whole. Only when the replayed calls before it
        brought nothing new (their results in a row were stale: a round of checks run again
        after the user power-cycled the modem brings changed answers), not while the call's
        answers advance, not once something was written since the call's previous answer
        (checks run again after a fix verify it), not across a deliberate wait (a round with a
        sleep in it is a poll), and not for a call that writes or acts (a round of changes made
        again is the repeat detector's and no_progress's to judge)."""
        stats = record.stats
        if stats.acts or memory.writes != stats.writes_at_result or memory.stale_streak < min(self._lag_run, REPLAYED_CALLS) - 1 or _advancing(memory, record.signature.key):
            return None
        calls = self._lag_run
        return Signal(
            detector=self.name,
            kind="replayed_sequence",
            score=self.config.weight,
            message=f"the last {calls} calls ({record.tool} the latest) repeat, in order, the calls made {lag} calls before them",
            evidence={"call": record.index, "period": lag, "calls": calls},
        )


#: Calls in a row, each made again at one lag, that make a replayed sequence.
REPLAYED_CALLS = 5


def _advancing(memory: RunMemory, key: int) -> bool:
    stats = memory.signatures.get(key)
    return stats is not None and stats.advancing


def _step_name(tool: str) -> str:
    """A step of a cycle as a message reads it: a tool by its name, an agent's message (the
    session's pseudo-call ``message:AGENT``) as "AGENT's message"."""
    return f"{tool[8:]}'s message" if tool.startswith("message:") else tool
