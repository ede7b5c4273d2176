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
        self.reconfigure(config)

    def reconfigure(self, config: CycleDetector) -> None:
        self.config = config
        self._active = config.enabled
        size = config.max_period * config.repeats
        self._keys = deque(self._keys, maxlen=size)
        self._tools = deque(self._tools, maxlen=size)

    def pending(self, record: CallRecord, memory: RunMemory) -> Signal | None:
        signature = record.signature
        key = signature.key
        keys = self._keys
        # Every cycle needs the pending call one period back, so a call absent from the kept
        # window (the common case) ends the check after one scan in C.
        recurs = key in keys
        keys.append(key)
        self._tools.append(signature.tool)
        if not recurs or not self._active:
            return None
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
                    message=f"the calls {' → '.join(tools)} repeat as a cycle {repeats} times in a row",
                    evidence={"call": record.index, "period": period, "repeats": repeats, "tools": tools},
                )
        return None


def _advancing(memory: RunMemory, key: int) -> bool:
    stats = memory.signatures.get(key)
    return stats is not None and stats.advancing
