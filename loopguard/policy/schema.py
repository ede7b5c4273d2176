"""The loopguard.yml language, defined once as pydantic models.

Everything a policy file may say is declared here, with its default and its
documentation; ``schema/loopguard.schema.json`` is generated from these models
(``loopguard schema``) and a test keeps the checked-in file in sync. Unknown keys are
errors (``extra="forbid"``): a typo must never silently weaken a guard.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

DETECTOR_NAMES = ("repeat", "cycle", "no_progress", "failure", "handoff", "near_duplicate")
ACTION_NAMES = ("continue", "warn", "replan", "pause", "stop")

Mode = Literal["enforce", "observe"]
Scope = Literal["turn", "run"]
ToolKind = Literal["read", "write", "poll", "wait", "search", "compute", "think", "handoff", "other"]
DetectorName = Literal["repeat", "cycle", "no_progress", "failure", "handoff", "near_duplicate"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class ToolTraits(_Model):
    """Traits of the tools whose names match a key of ``tools`` (an exact name or a glob)."""

    kind: ToolKind = Field(
        "other",
        description=(
            "read: no side effects; write: changes state (an identical write after a failure "
            "escalates faster); poll: repetition with a pending status is healthy; wait: a deliberate pause "
            "(the call after it is a poll); search: a query; compute: pure computation; think: a scratchpad "
            "with no effect; handoff: passes control to another agent; other: unknown. Without a kind, a "
            "tool named wait or sleep (time_sleep, wait_seconds) is a wait, one named wait_for_* or "
            "wait_until_* a poll, any other other."
        ),
    )
    pending_patience: int | None = Field(
        None, ge=1, description="For poll tools: identical pending observations tolerated before no_progress fires (default: the detector's poll_patience)."
    )


class _Detector(_Model):
    enabled: bool = Field(True, description="Turn the detector off with false.")
    weight: float = Field(..., ge=0.0, le=1.0, description="Risk (0..1) the detector's signal contributes while active.")


class RepeatDetector(_Detector):
    """The same call (same signature) again and again, consecutively or with other calls interleaved."""

    weight: float = Field(0.60, ge=0.0, le=1.0, description="Risk of a repeated call (alone: a warning).")
    threshold: int = Field(3, ge=2, description="Occurrences of one signature within the window that make a repeat.")
    window: int = Field(12, ge=2, le=1000, description="How many recent tool calls are searched for earlier occurrences.")


class CycleDetector(_Detector):
    """A repeating sequence of calls (A→B→A→B, A→B→C→A→B→C), tail-aligned."""

    weight: float = Field(0.60, ge=0.0, le=1.0, description="Risk of a repeating sequence (alone: a warning).")
    max_period: int = Field(4, ge=2, le=16, description="Longest sequence (in calls) checked for repetition.")
    repeats: int = Field(2, ge=2, le=10, description="How many consecutive times the sequence must occur.")


class NoProgressDetector(_Detector):
    """Result-aware: observations that bring nothing new (identical after normalising volatile parts, or empty)."""

    weight: float = Field(0.55, ge=0.0, le=1.0, description="Risk of stale observations (alone: a warning).")
    patience: int = Field(2, ge=1, description="Consecutive stale observations that make the signal.")
    poll_patience: int = Field(
        20,
        ge=1,
        description="Identical observations that report a pending state (queued, running, ...) tolerated before they count as stale. 20 follows OpenClaw's known-poll block threshold.",
    )
    memory: int = Field(64, ge=4, le=4096, description="Distinct observations remembered per tool (bounded memory).")


class FailureDetector(_Detector):
    """Repeated failures of the identical call, with permanent failures told apart from retryable ones."""

    weight: float = Field(0.75, ge=0.0, le=1.0, description="Risk of an identical failure repeated (deterministic errors).")
    permanent_weight: float = Field(0.95, ge=0.0, le=1.0, description="Risk of a permanent failure (401/403, invalid request, not found, schema error) repeated.")
    attempts: int = Field(2, ge=2, description="Identical failures of one call that make the signal.")
    retryable_attempts: int = Field(5, ge=2, description="Identical retryable failures (429, 503, timeouts) tolerated before the signal.")
    tool_attempts: int = Field(
        3,
        ge=2,
        description="Calls of one tool in a row that fail with the same permanent error, whatever their arguments, that make the signal (changing the query does not fix bad credentials or a rejected value).",
    )


class HandoffDetector(_Detector):
    """Repeated closed cycles of control between agents with no work done in between."""

    weight: float = Field(0.95, ge=0.0, le=1.0, description="Risk of a repeated handoff cycle.")
    repeats: int = Field(2, ge=2, le=10, description="How many times the closed cycle must repeat.")
    max_cycle: int = Field(5, ge=2, le=16, description="Largest number of transfers in a cycle (through at least two agents; a hub may come twice).")


class NearDuplicateDetector(_Detector):
    """The same tool with arguments that differ only by a throwaway token or a rewording, or re-reading ranges already read."""

    weight: float = Field(0.60, ge=0.0, le=1.0, description="Risk of near-duplicate calls (alone: a warning).")
    similarity: float = Field(0.8, gt=0.0, le=1.0, description="Word-set (Jaccard) similarity of text arguments that counts as a rewording.")
    window: int = Field(6, ge=2, le=100, description="How many recent calls of the same tool are compared.")
    repeats: int = Field(3, ge=2, description="Near-duplicate calls (including the first) that make the signal.")
    message_similarity: float = Field(
        0.6,
        gt=0.0,
        le=1.0,
        description="Word-set (Jaccard) similarity at which an agent's message rewords one it wrote since the last news (paraphrases vary more than arguments).",
    )


class Detectors(_Model):
    repeat: RepeatDetector = Field(default_factory=RepeatDetector)
    cycle: CycleDetector = Field(default_factory=CycleDetector)
    no_progress: NoProgressDetector = Field(default_factory=NoProgressDetector)
    failure: FailureDetector = Field(default_factory=FailureDetector)
    handoff: HandoffDetector = Field(default_factory=HandoffDetector)
    near_duplicate: NearDuplicateDetector = Field(default_factory=NearDuplicateDetector)


class Escalation(_Model):
    """When all the named detectors are active at once, the risk is at least ``risk``."""

    when: list[DetectorName] = Field(..., min_length=2, description="Detectors that must be active together.")
    risk: float = Field(..., ge=0.0, le=1.0, description="Risk (0..1) while they co-occur.")


class Scoring(_Model):
    combine: Literal["max", "noisy_or"] = Field(
        "max", description="max: the strongest signal; noisy_or: 1 - Π(1 - score) over active signals."
    )
    escalate: list[Escalation] = Field(default_factory=list, description="Co-occurring signals that raise the risk.")


class Thresholds(_Model):
    """Risk (0..1) at which each action starts; each in 0..1 and ascending."""

    warn: float = Field(0.50, ge=0.0, le=1.0)
    replan: float = Field(0.70, ge=0.0, le=1.0)
    pause: float = Field(0.85, ge=0.0, le=1.0)
    stop: float = Field(0.90, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _ascending(self) -> "Thresholds":
        order = [("warn", self.warn), ("replan", self.replan), ("pause", self.pause), ("stop", self.stop)]
        for (low_name, low), (high_name, high) in zip(order, order[1:]):
            if low > high:
                raise ValueError(f"thresholds must ascend: {low_name} ({low}) is above {high_name} ({high})")
        return self


class Budget(_Model):
    """A limit on a counter in a scope; the call that would exceed it gets ``budget_spent``."""

    limit: int | float = Field(..., gt=0, description="The most the counter may reach (steps, calls, tokens or USD).")
    scope: Scope = Field("run", description="turn: reset at every user message; run: the whole run.")
    on_exceed: Literal["block", "stop"] = Field(
        "block", description="block: the call gets budget_spent and the run goes on; stop: it also ends the run."
    )


class CountBudget(Budget):
    """A budget on a count (steps, calls, tokens): its limit is a whole number."""

    limit: int = Field(..., gt=0, description="The most the count may reach.")


class Budgets(_Model):
    steps: CountBudget | None = Field(None, description="Steps recorded (tool calls, handoffs, messages).")
    tool_calls: CountBudget | None = Field(None, description="Tool calls made.")
    tokens: CountBudget | None = Field(None, description="Model tokens (input + output).")
    cost_usd: Budget | None = Field(None, description="Model cost in USD (from the pricing table or reported cost).")
    per_tool: dict[str, CountBudget] = Field(default_factory=dict, description="Calls of the tools matching each key (exact name or glob).")


class Rule(_Model):
    """A per-tool rule that decides a pending call before it runs."""

    id: str = Field(..., min_length=1, pattern=r"^[A-Za-z0-9_.:-]+$", description="Unique id; profiles replace rules by id.")
    tool: str = Field("*", min_length=1, description="Tool name or glob the rule applies to.")
    match: str | None = Field(None, description="JMESPath over the pending call ({tool, arguments, id, agent}); the rule applies when truthy.")
    when: str | None = Field(None, description="simpleeval condition over run counters (run.*, turn.*, tool.*); the rule applies when true.")
    verdict: Literal["allow", "answer", "cancel", "block", "unavailable", "budget"] = Field(
        ..., description="What the rule does with a matching call."
    )
    result: Any = Field(None, description="answer: the value the model reads, unchanged.")
    reason: str | None = Field(None, description="cancel: why, in words the model reads.")
    type: str | None = Field(None, description="block: the error type the model reads (default: policy_block).")
    message: str | None = Field(None, description="block / unavailable / budget: the message the model reads.")
    limit: int | None = Field(None, ge=0, description="budget: matching calls allowed per scope before budget_spent.")
    scope: Scope = Field("run", description="budget: the scope of limit.")
    mode: Mode | None = Field(None, description="Per-rule mode; observe records the verdict without applying it.")
    on_error: Literal["deny", "allow"] = Field(
        "deny", description="When a condition fails at run time: deny applies the verdict, allow skips the rule."
    )

    @model_validator(mode="after")
    def _verdict_fields(self) -> "Rule":
        problem = missing_verdict_field(self.verdict, {name: getattr(self, name) for name in self.model_fields_set})
        if problem is not None:
            raise ValueError(problem)
        return self


#: The field each verdict needs (``answer`` needs ``result`` present, the others non-empty).
VERDICT_FIELDS = {"answer": "result", "cancel": "reason", "block": "message", "budget": "limit"}


def missing_verdict_field(verdict: Any, given: dict[str, Any]) -> str | None:
    """The problem of a rule whose ``verdict`` lacks the field it needs, else ``None``.

    ``given`` holds the rule's fields as written. Also used on a rule's raw data when other
    fields of the rule are invalid (pydantic then skips the model validator), so that every
    problem of a rule is reported at once.
    """
    field = VERDICT_FIELDS.get(verdict) if isinstance(verdict, str) else None
    if field is None:
        return None
    value = given.get(field)
    if (field not in given) if verdict == "answer" else (value is None if verdict == "budget" else not value):
        # Another verdict's field written instead (a cancel with a 'message'): say whose it is.
        misplaced = [f"'{other_field}' is for verdict '{other}'" for other, other_field in VERDICT_FIELDS.items() if other_field in given and other_field != field]
        return f"a rule with verdict '{verdict}' needs '{field}'" + (f" ({'; '.join(misplaced)})" if misplaced else "")
    return None


class Pricing(_Model):
    """USD per million tokens for one model (name or glob)."""

    input: float = Field(..., ge=0, description="USD per million input tokens.")
    output: float = Field(..., ge=0, description="USD per million output tokens.")


class LogSettings(_Model):
    """Where decisions are recorded."""

    path: str | None = Field(None, description="JSON Lines file, relative to the policy file.")
    logger: str | None = Field(None, description="Name of a Python logging logger.")
    actions: list[Literal["continue", "warn", "replan", "pause", "stop"]] = Field(
        default_factory=lambda: ["warn", "replan", "pause", "stop"], description="Which actions are logged."
    )
    verdicts: bool = Field(True, description="Also log every decision whose verdict is not allow.")


class _PolicyBody(_Model):
    mode: Mode = Field("enforce", description="enforce: verdicts apply; observe: decide and record, block nothing.")
    tools: dict[str, ToolTraits] = Field(default_factory=dict, description="Tool traits keyed by exact name or glob.")
    detectors: Detectors = Field(default_factory=Detectors)
    scoring: Scoring = Field(default_factory=Scoring)
    thresholds: Thresholds = Field(default_factory=Thresholds)
    budgets: Budgets = Field(default_factory=Budgets)
    rules: list[Rule] = Field(default_factory=list, description="Per-tool rules; deny overrides.")
    pricing: dict[str, Pricing] = Field(default_factory=dict, description="Model prices, keyed by model name or glob.")
    log: LogSettings | None = Field(None, description="Decision log.")


class Policy(_PolicyBody):
    """A loopguard.yml document."""

    version: Literal[1] = Field(1, description="Policy language version.")
    extends: str | None = Field(None, description="builtin:NAME or a path relative to this file.")
    profiles: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Named overlays of this policy, merged deeply; rules merge by id."
    )

    @field_validator("version", mode="before")
    @classmethod
    def _version_is_an_integer(cls, value: Any) -> Any:
        # Literal[1] alone admits true and 1.0 (they equal 1 in Python).
        if type(value) is not int:
            raise PydanticCustomError("literal_error", "Input should be 1", {"expected": "1"})
        return value
