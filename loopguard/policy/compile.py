"""Validated policy model → :class:`CompiledPolicy`, immutable and thread-safe.

The compiled policy is read-only data: tool-trait and rule look-ups are precompiled
(globs become one regular expression each, expressions are parsed once) and it
holds no run state, so many sessions on many threads may share one, and a policy
store can swap a new revision in with one reference assignment.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..decisions import GuardAction, Signal
from ..tool_names import inferred_kind, long_polls_by_name, runs_command
from .expressions import CompiledCondition, CompiledMatch, compile_condition, compile_match
from .schema import Budget, Budgets, Detectors, Policy, Pricing, Rule, Scoring, Thresholds, ToolTraits


def is_glob(pattern: str) -> bool:
    return any(char in pattern for char in "*?[")


def compile_glob(pattern: str) -> re.Pattern[str]:
    """Compile a tool-name glob (fnmatch syntax, case-sensitive). Raises ``re.error`` on a bad glob."""
    if pattern.count("[") != pattern.count("]"):
        raise re.error(f"unbalanced brackets in glob {pattern!r}")
    return re.compile(fnmatch.translate(pattern))


@dataclass(frozen=True)
class CompiledRule:
    """One rule with its tool glob and expressions compiled."""

    id: str
    index: int
    tool: str
    verdict: str
    spec: Rule
    tool_pattern: re.Pattern[str] = field(repr=False)
    match: CompiledMatch | None = None
    when: CompiledCondition | None = None

    def applies_to(self, tool: str) -> bool:
        return self.tool_pattern.fullmatch(tool) is not None


#: Tool names that hand control to another agent even without a ``kind: handoff`` trait.
# (transfer_back_to_supervisor: the tool langgraph-supervisor gives every worker agent.)
HANDOFF_PREFIXES = ("transfer_to", "transfer_back_to", "handoff", "hand_off", "delegate_to", "route_to")


def _target_in_name(tool: str) -> str | None:
    """The agent a handoff-like tool name names after its prefix (``transfer_to_billing`` ->
    ``billing``, ``handoff_to_triage`` -> ``triage``), or ``None``."""
    lowered = tool.lower()
    for prefix in HANDOFF_PREFIXES:
        if lowered.startswith(prefix):
            rest = tool[len(prefix) :].lstrip("_-. ")
            if rest[:3].lower() in ("to_", "to-"):
                rest = rest[3:]
            return rest or None
    return None


@dataclass(frozen=True, slots=True)
class ToolProfile:
    """Everything the policy says about one tool name, looked up once per name.

    Attributes:
        kind: the ``kind`` trait (``other`` when the policy says nothing; see
            :func:`loopguard.tool_names.inferred_kind`).
        pending_patience: identical pending observations tolerated, if the traits set it.
        hands_off: calls hand control to another agent (``kind: handoff`` or a handoff-like name).
        handoff_target: the agent a handoff-like name names (``transfer_to_billing_agent``:
            ``billing_agent``), for calls whose arguments name none.
        runs_commands: the tool's name says it runs shell commands (``bash``, ``run_cmd``): a
            call whose command only sleeps is then a wait.
        long_polls: the tool's name says it waits on the server for news (``getUpdates``): a
            call that asks the server to wait (``timeout: 50``) is then a poll.
        rules: the rules whose ``tool`` matches, in file order.
        budgets: the per-tool budgets ``(key, budget)`` that apply.
    """

    kind: str
    pending_patience: int | None
    hands_off: bool
    rules: tuple["CompiledRule", ...]
    budgets: tuple[tuple[str, Budget], ...]
    runs_commands: bool = False
    long_polls: bool = False
    handoff_target: str | None = None


class _NameTable:
    """Exact names first, then globs in file order; answers are memoised per tool name.

    The memo is a cache of a pure function of the (immutable) policy, not run state.
    """

    def __init__(self, entries: list[tuple[str, Any]]) -> None:
        self._exact = {key: value for key, value in entries if not is_glob(key)}
        self._globs = [(compile_glob(key), key, value) for key, value in entries if is_glob(key)]
        self._memo: dict[str, tuple[tuple[str, Any], ...]] = {}

    def all_for(self, name: str) -> tuple[tuple[str, Any], ...]:
        found = self._memo.get(name)
        if found is None:
            matches: list[tuple[str, Any]] = []
            if name in self._exact:
                matches.append((name, self._exact[name]))
            matches.extend((key, value) for pattern, key, value in self._globs if pattern.fullmatch(name))
            found = tuple(matches)
            if len(self._memo) < 4096:
                self._memo[name] = found
        return found

    def first_for(self, name: str) -> Any:
        found = self.all_for(name)
        return found[0][1] if found else None


@dataclass(frozen=True, slots=True)
class CompiledPolicy:
    """An effective (profile-merged), validated policy, ready to decide.

    Attributes:
        model: the validated effective policy.
        source: where it came from (a path or ``builtin:NAME``).
        profile: the profile applied, or ``None``.
        revision: content hash (12 hex digits) of the effective policy; every decision records it.
        rules: the compiled rules in file order.
        mode: ``enforce`` or ``observe`` (the policy's ``mode``).
        logs_decisions: True when the policy configures a decision log.
        has_budgets: True when any run budget (steps, tool calls, tokens, cost, per tool) is set.
        quiet_action: the action for a step with no signal (risk 0): ``continue`` unless ``warn`` is 0.
    """

    model: Policy
    source: str
    profile: str | None
    revision: str
    rules: tuple[CompiledRule, ...]
    _traits: _NameTable = field(repr=False, compare=False)
    _tool_budgets: _NameTable = field(repr=False, compare=False)
    _pricing: _NameTable = field(repr=False, compare=False)
    _profiles: dict[str, ToolProfile] = field(default_factory=dict, repr=False, compare=False)
    # Values read on every decision, computed once per revision (the model is immutable) and
    # kept in slots: reading a pydantic model's attribute costs several times a slot's.
    mode: str = field(init=False, repr=False, compare=False)
    logs_decisions: bool = field(init=False, repr=False, compare=False)
    has_budgets: bool = field(init=False, repr=False, compare=False)
    quiet_action: GuardAction = field(init=False, repr=False, compare=False)
    _noisy_or: bool = field(init=False, repr=False, compare=False)
    _thresholds: tuple[float, float, float, float] = field(init=False, repr=False, compare=False)
    _escalations: tuple[tuple[frozenset[str], float], ...] = field(init=False, repr=False, compare=False)
    _escalations_alone: dict[str, float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        model = self.model
        budgets = model.budgets
        thresholds = model.thresholds
        hot = {
            "mode": model.mode,
            "logs_decisions": model.log is not None,
            "has_budgets": bool(budgets.per_tool)
            or any(budget is not None for budget in (budgets.steps, budgets.tool_calls, budgets.tokens, budgets.cost_usd)),
            "_noisy_or": model.scoring.combine == "noisy_or",
            "_thresholds": (thresholds.warn, thresholds.replan, thresholds.pause, thresholds.stop),
            "_escalations": tuple((frozenset(escalation.when), escalation.risk) for escalation in model.scoring.escalate),
        }
        # An escalation that names one detector (twice: ``when: [repeat, repeat]``) applies to it alone.
        alone: dict[str, float] = {}
        for detectors, risk in hot["_escalations"]:
            if len(detectors) == 1:
                (detector,) = detectors
                alone[detector] = max(risk, alone.get(detector, 0.0))
        hot["_escalations_alone"] = alone
        for name, value in hot.items():
            object.__setattr__(self, name, value)  # a frozen dataclass sets its own fields so
        object.__setattr__(self, "quiet_action", self.action_for(0.0))

    @property
    def detectors(self) -> Detectors:
        return self.model.detectors

    @property
    def scoring(self) -> Scoring:
        return self.model.scoring

    @property
    def thresholds(self) -> Thresholds:
        return self.model.thresholds

    @property
    def budgets(self) -> Budgets:
        return self.model.budgets

    def tool_traits(self, tool: str) -> ToolTraits | None:
        """Traits of ``tool``: an exact key wins, else the first matching glob in file order."""
        return self._traits.first_for(tool)

    def rules_for(self, tool: str) -> tuple[CompiledRule, ...]:
        """The rules whose ``tool`` matches, in file order (memoised through :meth:`tool_profile`)."""
        return tuple(rule for rule in self.rules if rule.applies_to(tool))

    def tool_profile(self, tool: str) -> ToolProfile:
        """Traits, rules and per-tool budgets of ``tool`` in one memoised look-up."""
        found = self._profiles.get(tool)
        if found is None:
            traits = self.tool_traits(tool)
            # A kind the policy writes is used as written (even "other"); else the name's.
            kind = traits.kind if traits is not None and "kind" in traits.model_fields_set else inferred_kind(tool)
            found = ToolProfile(
                kind=kind,
                pending_patience=traits.pending_patience if traits is not None else None,
                hands_off=kind == "handoff" or tool.lower().startswith(HANDOFF_PREFIXES),
                rules=self.rules_for(tool),
                budgets=self.tool_budgets(tool),
                runs_commands=kind == "other" and runs_command(tool, None),
                long_polls=kind == "other" and long_polls_by_name(tool),
                handoff_target=_target_in_name(tool),
            )
            if len(self._profiles) < 4096:
                self._profiles[tool] = found
        return found

    def tool_budgets(self, tool: str) -> tuple[tuple[str, Budget], ...]:
        """The per-tool budgets (key, budget) that apply to ``tool``."""
        return self._tool_budgets.all_for(tool)

    def price(self, model_name: str) -> Pricing | None:
        """USD per million tokens for ``model_name``, or ``None`` if the policy has no price."""
        return self._pricing.first_for(model_name)

    def risk_of(self, signals: tuple[Signal, ...]) -> float:
        """Combine active signals into one risk (0..1): ``max`` or ``noisy_or`` of their
        scores, raised to an escalation's risk when all its detectors are active."""
        if not signals:
            return 0.0
        if len(signals) == 1:  # the usual case when anything is active: no set to build
            signal = signals[0]
            risk = 1.0 - (1.0 - signal.score) if self._noisy_or else signal.score  # as the general path rounds
            alone = self._escalations_alone.get(signal.detector)
            return alone if alone is not None and alone > risk else risk
        if self._noisy_or:
            remaining = 1.0
            for signal in signals:
                remaining *= 1.0 - signal.score
            risk = 1.0 - remaining
        else:
            risk = max([signal.score for signal in signals])
        if self._escalations:
            active = {signal.detector for signal in signals}
            for detectors, escalated in self._escalations:
                if escalated > risk and detectors <= active:
                    risk = escalated
        return risk

    def action_for(self, risk: float) -> GuardAction:
        """Map a risk (0..1) to the action whose threshold it reaches."""
        warn, replan, pause, stop = self._thresholds
        if risk <= 0.0 and warn > 0.0:
            return GuardAction.CONTINUE
        if risk >= stop:
            return GuardAction.STOP
        if risk >= pause:
            return GuardAction.PAUSE
        if risk >= replan:
            return GuardAction.REPLAN
        if risk >= warn:
            return GuardAction.WARN
        return GuardAction.CONTINUE

    def effective(self) -> dict[str, Any]:
        """The effective policy as plain data (what ``loopguard explain`` prints)."""
        return effective_data(self.model)


def effective_data(model: Policy) -> dict[str, Any]:
    data = model.model_dump(mode="json", exclude={"profiles", "extends"})
    return data


def revision_of(model: Policy) -> str:
    """Content hash of the effective policy: equal policies have equal revisions."""
    text = json.dumps(effective_data(model), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def compile_rule(rule: Rule, index: int) -> CompiledRule:
    """Compile one rule. Raises ``re.error`` (bad glob) or ``ExpressionError`` (bad expression)."""
    return CompiledRule(
        id=rule.id,
        index=index,
        tool=rule.tool,
        verdict=rule.verdict,
        spec=rule,
        tool_pattern=compile_glob(rule.tool),
        match=compile_match(rule.match) if rule.match else None,
        when=compile_condition(rule.when) if rule.when else None,
    )


def compile_policy(model: Policy, source: str = "<memory>", profile: str | None = None) -> CompiledPolicy:
    """Compile a validated effective policy.

    Raises:
        re.error: a tool glob does not compile.
        loopguard.policy.expressions.ExpressionError: a ``match`` or ``when`` expression does not compile.
    The loader (:mod:`loopguard.policy.load`) catches both and reports them with positions.
    """
    rules = tuple(compile_rule(rule, index) for index, rule in enumerate(model.rules))
    return CompiledPolicy(
        model=model,
        source=source,
        profile=profile,
        revision=revision_of(model),
        rules=rules,
        _traits=_NameTable(list(model.tools.items())),
        _tool_budgets=_NameTable(list(model.budgets.per_tool.items())),
        _pricing=_NameTable(list(model.pricing.items())),
    )
