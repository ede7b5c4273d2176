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
from ..observations import reports_no_change
from .base import BoundedMap, CallRecord, RunMemory


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
        # Laps between context condensations (see condensed): the current lap's number, the
        # latest two laps each call was made in, and the tools of this lap's calls that were
        # made in the two laps before it (see _made_in_lap).
        self._lap = 0
        self._laps_made: BoundedMap[int, tuple[int, int]] | None = None
        self._redone: list[str] = []
        self._redone_changes = 0  # how many of them changed state
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

    def condensed(self, memory: RunMemory) -> None:
        """The agent's context was condensed (a harness summarised or dropped earlier turns): a
        new lap starts. An agent that redoes, after each of two condensations, calls it made
        before them goes round the same lap (the condensation-loop kind: the summary loses what
        was done, so the work is done again). The first lap after one condensation may be the
        agent finding its bearings again, so it takes a third."""
        if self._laps_made is None:
            # The calls before the first condensation, from the run memory: lap 0.
            self._laps_made = laps_made = BoundedMap(_LAPS_REMEMBERED)
            for key in memory.signatures:
                laps_made[key] = (0, -1)
            self.pending = self._pending_in_laps  # type: ignore[method-assign]  # (runs never condensed pay nothing)
        self._lap += 1
        self._redone = []
        self._redone_changes = 0
        # The condensation parts the window's calls: a lap made again across it is this
        # check's to judge, not a short cycle's.
        self._keys.append(_CONDENSATION)
        self._tools.append("context condensation")

    def _pending_in_laps(self, record: CallRecord, memory: RunMemory) -> Signal | None:
        redone = self._made_in_lap(record, memory)
        signal = Cycle.pending(self, record, memory)
        return signal if signal is not None else redone

    def _made_in_lap(self, record: CallRecord, memory: RunMemory) -> Signal | None:
        """Note the call in the current lap; the signal once calls of this lap were each made in
        the two laps before it: changes made again, and reads whose latest answer was the same
        as the one before (a read whose answer moved on brought news: a status that changed).
        :data:`REDONE_CALLS` of them with a change among them, or :data:`REDONE_READS` reads: an
        agent that re-reads its two guidance files after each condensation, then goes on with
        new changes, finds its bearings (harnesses tell agents to)."""
        laps_made = self._laps_made
        assert laps_made is not None
        key, lap = record.signature.key, self._lap
        made = laps_made.get(key)
        if made is not None and made[0] == lap:
            return None  # (made again within one lap: the other checks' to judge)
        laps_made.put(key, (lap, -1 if made is None else made[0]))
        if made is None or made[0] != lap - 1 or made[1] < 0 or not self._active or (not record.stats.acts and _advancing(memory, key)):
            return None
        stats = record.stats
        # (A change made again that said it changed nothing, "Already up to date", is a read.)
        acts = bool(stats.acts) and stats.last is not None and not reports_no_change(stats.last.text, record.signature.arguments)
        self._redone.append(record.signature.tool)
        self._redone_changes += acts
        if len(self._redone) < (REDONE_CALLS if self._redone_changes else REDONE_READS):
            return None
        record.redone = len(self._redone)
        *others, latest = dict.fromkeys(self._redone)
        tools = f"{', '.join(others)} and {latest}" if others else latest
        return Signal(
            detector=self.name,
            kind="lap_redone",
            score=self.config.weight,
            message=f"after each of the last 2 context condensations the agent made the same calls again ({tools}): the work is done again",
            evidence={"call": record.index, "laps": 3, "calls": len(self._redone)},
        )

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

#: Calls of one lap between context condensations, each made in the two laps before it, with a
#: change made again among them, that make the lap a redo (one call made again is the agent
#: finding its bearings).
REDONE_CALLS = 2
#: The same when none of them changed state: reads alone.
REDONE_READS = 3

#: The key a condensation takes in the window of calls (no signature's: those are hashes of text).
_CONDENSATION = -1

#: Calls whose laps are remembered (the least recently made are forgotten).
_LAPS_REMEMBERED = 512


def _advancing(memory: RunMemory, key: int) -> bool:
    stats = memory.signatures.get(key)
    return stats is not None and stats.advancing


def _step_name(tool: str) -> str:
    """A step of a cycle as a message reads it: a tool by its name, an agent's message (the
    session's pseudo-call ``message:AGENT``) as "AGENT's message"."""
    return f"{tool[8:]}'s message" if tool.startswith("message:") else tool
