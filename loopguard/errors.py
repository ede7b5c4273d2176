"""Exceptions raised by loopguard's adapters.

The engine itself never raises on a verdict: it returns a
:class:`~loopguard.decisions.Decision`. Adapters raise :class:`LoopGuardInterrupt`
when a ``stop`` decision must end the run in enforce mode and the host asked for an
exception instead of a graceful end (``raise_on_stop=True`` in the LangChain
middleware, always in the plain-Python helper).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported only for typing: keeps this module free of import cycles
    from .decisions import Decision

__all__ = ["LoopGuardError", "LoopGuardInterrupt"]


class LoopGuardError(Exception):
    """Base class of the exceptions loopguard's adapters raise."""


class LoopGuardInterrupt(LoopGuardError):
    """The guard ended the run (a ``stop`` decision in enforce mode).

    Attributes:
        decision: the :class:`~loopguard.decisions.Decision` that ended the run; its
            ``signals``, ``rule`` and ``verdict`` say why.
    """

    def __init__(self, decision: "Decision", message: str | None = None) -> None:
        self.decision = decision
        if message is None:
            reasons = "; ".join(decision.reasons) or (decision.rule or "policy")
            tool = f" at tool {decision.tool!r}" if decision.tool else ""
            message = f"loopguard stopped the run{tool} (action={decision.action.value}): {reasons}"
        super().__init__(message)

    def __reduce__(self):  # keep the exception picklable (multiprocessing, some test runners)
        return (type(self), (self.decision, str(self)))
