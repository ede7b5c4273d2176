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
            "per_tool": self.per_tool,
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


def _would_exceed(current: float, budget: Budget, increment: float) -> bool:
    return current + increment > budget.limit


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

    checks: list[tuple[str, Budget | None, str, float]] = [
        ("tool_calls", budgets.tool_calls, "tool_calls", 1),
        ("steps", budgets.steps, "steps", 1),
        ("tokens", budgets.tokens, "tokens", 0),
        ("cost_usd", budgets.cost_usd, "cost_usd", 0),
    ]
    for name, budget, attribute, increment in checks:
        if budget is None:
            continue
        value = getattr(scoped(budget), attribute)
        if (increment and _would_exceed(value, budget, increment)) or (not increment and value >= budget.limit):
            return BudgetBreach(name, budget, value)
    for key, budget in tool_budgets:
        value = scoped(budget).per_tool.get(tool, 0)
        if _would_exceed(value, budget, 1):
            return BudgetBreach(f"per_tool:{key}", budget, value)
    return None
