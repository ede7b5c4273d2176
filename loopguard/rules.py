"""Per-tool rules: the strongest matching verdict for a pending call (deny overrides).

Rules are matched in file order; when several match, the most restrictive verdict
wins (block > unavailable > cancel > budget_spent > answer > allow) and ties go to
the first in file order, so a later, looser rule can never open a hole (DESIGN §4).
A condition that fails at run time follows the rule's ``on_error``: ``deny`` (the
default) applies the rule, ``allow`` skips it; either way the error is recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .decisions import Signal, Verdict, VerdictKind
from .policy.compile import CompiledRule

_RULE_VERDICTS = {
    "allow": VerdictKind.ALLOW,
    "answer": VerdictKind.ANSWER,
    "cancel": VerdictKind.CANCEL,
    "block": VerdictKind.BLOCK,
    "unavailable": VerdictKind.UNAVAILABLE,
    "budget": VerdictKind.BUDGET_SPENT,
}


@dataclass(frozen=True, slots=True)
class RuleOutcome:
    """The verdict the rules give a pending call, with what was recorded on the way."""

    verdict: Verdict
    notes: tuple[Signal, ...]
    budget_rules: tuple[CompiledRule, ...]  # rule budgets the call counts against if it runs


def verdict_of(rule: CompiledRule) -> Verdict:
    spec = rule.spec
    kind = _RULE_VERDICTS[rule.verdict]
    if kind is VerdictKind.BUDGET_SPENT:
        message = spec.message or f"the budget of rule '{rule.id}' is spent ({spec.limit} call{'s' if spec.limit != 1 else ''} per {spec.scope})"
        return Verdict(kind, rule=rule.id, message=message)
    return Verdict(
        kind,
        rule=rule.id,
        result=spec.result,
        reason=spec.reason,
        error_type=spec.type or ("policy_block" if kind is VerdictKind.BLOCK else None),
        message=spec.message,
    )


def evaluate_rules(
    rules: tuple[CompiledRule, ...],
    document: dict[str, Any],
    names: Callable[[], dict[str, Any]],
    rule_budget_count: Callable[[CompiledRule], int],
    policy_mode: str,
) -> RuleOutcome:
    """Evaluate ``rules`` (already filtered by tool) against one pending call.

    Args:
        document: the JMESPath document ``{"tool", "arguments", "id", "agent"}``.
        names: builds the simpleeval names (``run``, ``turn``, ``tool``, ``call``) on first use.
        rule_budget_count: calls already counted against a ``budget`` rule in its scope.
        policy_mode: the policy's mode; a rule's own ``mode`` overrides it.
    """
    best: Verdict | None = None
    notes: list[Signal] = []
    budget_rules: list[CompiledRule] = []
    cached_names: dict[str, Any] | None = None
    for rule in rules:
        try:
            applies = True
            if rule.match is not None:
                applies = rule.match.test(document)
            if applies and rule.when is not None:
                if cached_names is None:
                    cached_names = names()
                applies = rule.when.test(cached_names)
        except Exception as error:  # any runtime failure of an expression follows on_error
            applies = rule.spec.on_error == "deny"
            notes.append(
                Signal(
                    "rule",
                    "condition_error",
                    0.0,
                    f"rule '{rule.id}': condition failed ({type(error).__name__}: {error}); on_error={rule.spec.on_error}",
                    {"rule": rule.id, "error": f"{type(error).__name__}: {error}", "on_error": rule.spec.on_error},
                )
            )
        if not applies:
            continue
        verdict = verdict_of(rule)
        if verdict.kind is VerdictKind.BUDGET_SPENT:
            if rule_budget_count(rule) < (rule.spec.limit or 0):
                budget_rules.append(rule)
                continue
        if (rule.spec.mode or policy_mode) == "observe" and policy_mode == "enforce":
            notes.append(Signal("rule", verdict.kind.value, 0.0, f"rule '{rule.id}' would {verdict.kind.value} this call (rule in observe mode)", {"rule": rule.id}))
            continue
        if best is None or verdict.kind.strictness > best.kind.strictness:
            best = verdict
    return RuleOutcome(best or Verdict(), tuple(notes), tuple(budget_rules))
