"""What the guard decides: actions, signals, decisions and per-call verdicts.

The contract (DESIGN §5): for every pending call the session returns a
:class:`Decision` that carries a :class:`Verdict`; the verdict's
:meth:`Verdict.payload` is what the model reads as the tool result when the call
does not run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class GuardAction(str, Enum):
    """The action chosen for a step, from least to most severe."""

    CONTINUE = "continue"
    WARN = "warn"
    REPLAN = "replan"
    PAUSE = "pause"
    STOP = "stop"

    @property
    def severity(self) -> int:
        return _ACTION_SEVERITY[self._value_]

    def at_least(self, other: "GuardAction") -> bool:
        """True when this action is as severe as ``other`` or more."""
        return _ACTION_SEVERITY[self._value_] >= _ACTION_SEVERITY[other._value_]

    @classmethod
    def most_severe(cls, *actions: "GuardAction") -> "GuardAction":
        best = cls.CONTINUE
        for action in actions:
            if _ACTION_SEVERITY[action._value_] > _ACTION_SEVERITY[best._value_]:
                best = action
        return best


# Keyed by value strings: Enum members hash in Python code, strings in C (hot path).
_ACTION_SEVERITY = {"continue": 0, "warn": 1, "replan": 2, "pause": 3, "stop": 4}


class VerdictKind(str, Enum):
    """What the per-call guard does with one pending call."""

    ALLOW = "allow"
    ANSWER = "answer"
    CANCEL = "cancel"
    BLOCK = "block"
    UNAVAILABLE = "unavailable"
    BUDGET_SPENT = "budget_spent"

    @property
    def strictness(self) -> int:
        """Deny-overrides order (DESIGN §4): block > unavailable > cancel > budget_spent > answer > allow."""
        return _VERDICT_STRICTNESS[self._value_]


_VERDICT_STRICTNESS = {"allow": 0, "answer": 1, "budget_spent": 2, "cancel": 3, "unavailable": 4, "block": 5}


@dataclass(frozen=True, slots=True)
class Signal:
    """One detector finding, active while its pattern holds.

    Attributes:
        detector: the detector's name (``repeat``, ``cycle``, ``no_progress``, ...).
        kind: what exactly it saw (``identical_call``, ``permanent_failure``, ...).
        score: the detector's contribution to risk, 0..1 (its configured weight).
        message: one sentence a person or a model can read.
        evidence: the step indexes and values behind the finding.
    """

    detector: str
    kind: str
    score: float
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "detector": self.detector,
            "kind": self.kind,
            "score": round(self.score, 4),
            "message": self.message,
            "evidence": self.evidence,
        }


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome for one pending tool call.

    Attributes:
        kind: allow, answer, cancel, block, unavailable or budget_spent.
        rule: the id of the rule (or ``budget:NAME`` / ``detector:NAME``) that decided it.
        result: for ``answer``, the configured value returned unchanged to the model.
        reason: for ``cancel``, why the call was cancelled.
        error_type: for ``block``, the error type the model reads (``guard_error`` for detectors).
        message: for block / unavailable / budget_spent, the message the model reads.
    """

    kind: VerdictKind = VerdictKind.ALLOW
    rule: str | None = None
    result: Any = None
    reason: str | None = None
    error_type: str | None = None
    message: str | None = None

    @property
    def runs_tool(self) -> bool:
        """True when the tool should actually run."""
        return self.kind is VerdictKind.ALLOW

    @property
    def is_error(self) -> bool:
        """True when the payload is an error or a cancellation (a ToolMessage with status ``error``)."""
        return self.kind in (VerdictKind.CANCEL, VerdictKind.BLOCK, VerdictKind.UNAVAILABLE, VerdictKind.BUDGET_SPENT)

    def payload(self) -> Any:
        """What the model reads as the tool result (DESIGN §5); ``None`` for ``allow``."""
        kind = self.kind
        if kind is VerdictKind.ALLOW:
            return None
        if kind is VerdictKind.ANSWER:
            return self.result
        if kind is VerdictKind.CANCEL:
            return {"cancelled": True, "reason": self.reason or "cancelled by policy"}
        if kind is VerdictKind.BLOCK:
            return {"error": True, "type": self.error_type or "blocked", "message": self.message or "blocked by policy"}
        if kind is VerdictKind.UNAVAILABLE:
            return {"error": True, "type": "tool_unavailable", "message": self.message or "this tool is unavailable"}
        return {"error": True, "type": "budget_spent", "message": self.message or "budget spent"}

    def payload_text(self) -> str:
        """The payload as the text of a tool message (JSON unless it is already a string)."""
        payload = self.payload()
        if isinstance(payload, str):
            return payload
        return json.dumps(payload, ensure_ascii=False, default=str)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind.value}
        if self.rule is not None:
            data["rule"] = self.rule
        if self.kind is not VerdictKind.ALLOW:
            data["payload"] = self.payload()
        return data


ALLOW = Verdict()


@dataclass(slots=True)
class Decision:
    """The guard's decision for one step (treat it as read-only; it is not frozen only
    because frozen dataclasses cost several µs more to build on the hot path).

    Attributes:
        step: 0-based index of the step in the session (counting tool calls, handoffs and messages).
        phase: ``before_call`` (a pending call), ``after_call`` (its result) or ``observe``.
        action: the action the risk maps to, after budgets and rules.
        risk: combined risk of the active signals, 0..1.
        signals: the active signals behind the risk.
        verdict: the per-call verdict (``allow`` for result and observe phases).
        rule: the id of the rule or budget that decided the verdict, if any.
        revision: the policy revision the decision was made against.
        mode: ``enforce`` or ``observe``; in observe mode nothing is blocked or raised.
        tool: the tool of the call, if the step is a tool call.
        call_index: 0-based index of the tool call within the run, if the step is a tool call.
    """

    step: int
    phase: str
    action: GuardAction
    risk: float
    signals: tuple[Signal, ...] = ()
    verdict: Verdict = ALLOW
    rule: str | None = None
    revision: str = ""
    mode: str = "enforce"
    tool: str | None = None
    call_index: int | None = None

    @property
    def intervenes(self) -> bool:
        """True for ``replan`` or a more severe action."""
        return self.action.at_least(GuardAction.REPLAN)

    @property
    def runs_tool(self) -> bool:
        """True when the pending call should run: its verdict is ``allow``, or the decision
        was made in observe mode, where verdicts are recorded and never applied. This is what
        an adapter, or a loop of your own, checks before running a call."""
        return self.verdict.kind is VerdictKind.ALLOW or self.mode == "observe"

    @property
    def reasons(self) -> list[str]:
        return [signal.message for signal in self.signals]

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "phase": self.phase,
            "tool": self.tool,
            "call_index": self.call_index,
            "action": self.action.value,
            "risk": round(self.risk, 4),
            "verdict": self.verdict.kind.value,
            "rule": self.rule,
            "signals": [signal.to_dict() for signal in self.signals],
            "revision": self.revision,
            "mode": self.mode,
        }
