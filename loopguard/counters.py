"""Run and turn counters, and the budgets checked against them.

A counter set is kept per run and per turn (reset at every user message). Budgets
are checked *before* the call that would exceed them (DESIGN §5, step 2): a call is
refused when its counter plus one would pass the limit; token and cost budgets
refuse calls once the limit is reached.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .policy.schema import Budget


@dataclass(slots=True)
class Counters:
    """Counters of one scope (a run or a turn). Units: steps, calls, tokens, USD."""

    steps: int = 0
    tool_calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    failures: int = 0
    per_tool: dict[str, int] = field(default_factory=dict)

    def as_names(self) -> dict[str, Any]:
        """The counters as a mapping for ``when`` conditions (``run.tool_calls`` ...)."""
        return {
            "steps": self.steps,
            "tool_calls": self.tool_calls,
            "tokens": self.tokens,
            "cost_usd": self.cost_usd,
            "failures": self.failures,
            "per_tool": dict(self.per_tool),  # a copy: a condition must never change the counters
        }


@dataclass(frozen=True, slots=True)
class BudgetBreach:
    """A budget a pending call would exceed."""

    name: str
    budget: Budget
    value: float

    @property
    def message(self) -> str:
        unit = {"cost_usd": " USD", "tokens": " tokens"}.get(self.name, "")
        return f"the {self.budget.scope} budget '{self.name}' is spent ({self.value:g} of {self.budget.limit:g}{unit})"


def check_budgets(
    budgets: Any,
    tool_budgets: tuple[tuple[str, Budget], ...],
    tool: str,
    run: Counters,
    turn: Counters,
) -> BudgetBreach | None:
    """The first budget the pending call to ``tool`` would exceed, or ``None``.

    ``budgets`` is the policy's :class:`~loopguard.policy.schema.Budgets`.
    """

    if budgets.tool_calls is None and budgets.steps is None and budgets.tokens is None and budgets.cost_usd is None and not tool_budgets:
        return None  # the common case: nothing to check

    def scoped(budget: Budget) -> Counters:
        return turn if budget.scope == "turn" else run

    # The pending call is already counted as a step (so steps may reach the limit), but
    # not yet as a tool call (so tool calls must stay within it after this one); tokens
    # and cost are spent by model calls, so a call is refused once they reach the limit.
    if budgets.tool_calls is not None:
        value = scoped(budgets.tool_calls).tool_calls
        if value + 1 > budgets.tool_calls.limit:
            return BudgetBreach("tool_calls", budgets.tool_calls, value)
    if budgets.steps is not None:
        value = scoped(budgets.steps).steps
        if value > budgets.steps.limit:
            return BudgetBreach("steps", budgets.steps, value - 1)
    for name in ("tokens", "cost_usd"):
        budget = getattr(budgets, name)
        if budget is not None:
            value = getattr(scoped(budget), name)
            if value >= budget.limit:
                return BudgetBreach(name, budget, value)
    for key, budget in tool_budgets:
        value = scoped(budget).per_tool.get(tool, 0)
        if value + 1 > budget.limit:
            return BudgetBreach(f"per_tool:{key}", budget, value)
    return None
