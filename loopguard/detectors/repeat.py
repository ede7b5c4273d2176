"""repeat: the same call (same signature) again and again, consecutively or interleaved.

Counts occurrences of the pending call's signature among the last ``window`` calls
with a ring buffer and a counter, so the cost per call is O(1). A repeat whose
results keep advancing (a poll that moves from queued to running to done) or whose
latest result was a retryable failure (429, 503), or that is a poll still within the poll
patience (a pending state repeated; for a poll, see :func:`~.base.polls`, any output
repeated), is healthy and raises no signal.
"""

from __future__ import annotations

from collections import deque

from ..decisions import Signal
from ..policy.schema import RepeatDetector
from .base import CallRecord, RunMemory, describe


class Repeat:
    name = "repeat"

    def __init__(self, config: RepeatDetector) -> None:
        self._window: deque[int] = deque()
        self._counts: dict[int, int] = {}  # a plain dict: Counter's missing-key hooks run in Python
        self._last: int | None = None
        self._run_length = 0  # how many times in a row the last signature came
        self.reconfigure(config)

    def reconfigure(self, config: RepeatDetector) -> None:
        self.config = config
        # Read on every call: plain attributes (a pydantic attribute costs several times more).
        self._threshold, self._window_size, self._active = config.threshold, config.window, config.enabled
        while len(self._window) > config.window:
            self._evict()

    def condensed(self) -> None:
        """The agent's context was condensed: calls made before it are forgotten here. An agent
        that re-reads its guidance once after each condensation repeats nothing it remembers;
        a lap redone whole is the cycle detector's to judge (see ``Cycle.condensed``)."""
        self._window.clear()
        self._counts.clear()
        self._last, self._run_length = None, 0

    def _evict(self) -> None:
        old = self._window.popleft()
        counts = self._counts
        remaining = counts[old] - 1
        if remaining:
            counts[old] = remaining
        else:
            del counts[old]

    def pending(self, record: CallRecord, memory: RunMemory) -> Signal | None:
        key = record.signature.key
        counts = self._counts
        counts[key] = counts.get(key, 0) + 1
        self._run_length = self._run_length + 1 if key == self._last else 1
        self._last = key
        threshold = self._threshold
        consecutive = self._run_length >= threshold
        window = self._window
        window.append(key)
        if len(window) > self._window_size:  # _evict, inline: it runs on nearly every call
            old = window.popleft()
            remaining = counts[old] - 1
            if remaining:
                counts[old] = remaining
            else:
                del counts[old]
        occurrences = counts[key]  # within the window, the pending call included
        if occurrences < threshold or not self._active:
            return None
        stats = record.stats
        if stats.advancing or stats.polling or stats.last_failure == "retryable":
            return None
        kind = "identical_call" if consecutive else "interleaved_repeat"
        config = self.config
        return Signal(
            detector=self.name,
            kind=kind,
            score=config.weight,
            message=f"{describe(record)} is called for the {_ordinal(occurrences)} time in the last {config.window} calls",
            evidence={"call": record.index, "occurrences": occurrences, "window": config.window},
        )


def _ordinal(number: int) -> str:
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"
