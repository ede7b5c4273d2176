"""handoff: control passing around a closed cycle of agents again and again, with no work done.

Keeps the sequence of agents holding control (consecutive duplicates collapsed, so a
step that records both ``caller → agent`` and a transfer tool call is counted once).
A signal fires when the newest transfers close the same cycle of 2..``max_cycle``
transfers (through at least two agents; a hub may come twice in it) ``repeats`` times.
A tool result that brings new information, or an agent's message that says something new
(see the session), is work done, and clears the sequence; so is a message that an agent
says on receiving control when it brings figures not said before in the run (a
negotiation's offers: "$1.82/unit, net 45").
"""

from __future__ import annotations

import re
from collections import deque

from ..decisions import Signal
from ..policy.schema import HandoffDetector
from .base import BoundedMap

#: A figure in a message: a number, with its decimal or thousands separators ("1.82",
#: "60,000"), a currency sign before it or a percent sign after it ("$9", "5%"). One
#: digit alone ("step 2", "1 more") says too little to be news.
_FIGURE = re.compile(r"[$€£¥]?\d+(?:[.,]\d+)*%?")
#: Dates and times of day, set aside: a stamp on every message is no figure of its content.
_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:z|[+-]\d{2}:?\d{2})?)?|\b\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?\b", re.IGNORECASE)
FIGURES_REMEMBERED = 512
MESSAGE_READ = 2_000  # characters of a message read for figures


class Handoff:
    name = "handoff"

    def __init__(self, config: HandoffDetector) -> None:
        self.config = config
        self._agents: deque[str] = deque(maxlen=config.max_cycle * config.repeats + 1)
        self._figures: BoundedMap[str, None] = BoundedMap(FIGURES_REMEMBERED)

    def reconfigure(self, config: HandoffDetector) -> None:
        self.config = config
        self._agents = deque(self._agents, maxlen=config.max_cycle * config.repeats + 1)

    def work_done(self) -> None:
        self._agents.clear()

    def said(self, text: str) -> bool:
        """Remember the figures of a message (of the user or of an agent); return whether it
        brought one not said before in the run (bounded: the latest
        :data:`FIGURES_REMEMBERED` figures)."""
        figures = self._figures
        new = False
        text = text[:MESSAGE_READ]
        if ":" in text or "-" in text:
            text = _STAMP.sub(" ", text)  # (a message's time stamp is no offer: "[09:14:02 UTC]")
        for figure in _FIGURE.findall(text):
            if len(figure) < 2:
                continue
            if figure in figures:
                figures.move_to_end(figure)  # (said again: remembered longer)
            else:
                new = True
                figures.put(figure, None)
        return new

    def transfer(self, agent: str, caller: str | None) -> Signal | None:
        agents = self._agents
        if agents and agents[-1] == agent:
            return None  # already recorded (the same transfer seen from both sides)
        if caller is not None and (not agents or agents[-1] != caller):
            agents.append(caller)
        agents.append(agent)
        if not self.config.enabled:
            return None
        sequence = list(agents)
        repeats = self.config.repeats
        for period in range(2, self.config.max_cycle + 1):
            span = period * repeats + 1
            if span > len(sequence):
                break
            tail = sequence[-span:]
            # A cycle through at least two agents, a hub among them (k8s → supervisor → network →
            # supervisor), and not a shorter cycle repeated (that one is found at its own period).
            if len(set(tail[:period])) < 2 or any(tail[:period] == tail[:shorter] * (period // shorter) for shorter in range(2, period) if period % shorter == 0):
                continue
            if all(tail[index] == tail[index - period] for index in range(period, span)):
                cycle = tail[: period + 1]
                return Signal(
                    detector=self.name,
                    kind="handoff_cycle",
                    score=self.config.weight,
                    message=f"control went around {' → '.join(cycle)} {repeats} times with no work done",
                    evidence={"cycle": cycle, "repeats": repeats},  # (the decision carries its step)
                )
        return None
