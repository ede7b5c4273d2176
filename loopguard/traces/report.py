"""Replay reports: what the policy decided for each run, and how that compares with
the label of a labelled case (``data/cases/README.md``).

A run's ``verdict`` is the most severe action reached; ``first_intervention`` is the
first decision with ``replan`` or a stronger action. Step indexes are 0-based into
the run's input steps (step format) or its tool calls (chat traces).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from loopguard.decisions import Decision, GuardAction, VerdictKind

#: Judgements of a labelled run.
OK, PREMATURE, LATE, MISSED, FALSE_ALARM = "ok", "premature", "late", "missed", "false_alarm"
#: A stuck run intervened in its window, but with an action its label does not accept.
WRONG_ACTION = "wrong_action"


@dataclass(frozen=True, slots=True)
class ReportedDecision:
    """One decision worth reporting (action above ``continue`` or verdict other than ``allow``).

    ``step`` indexes the run's input steps, so the before-call and after-call
    decisions of one step share it.
    """

    step: int
    decision: Decision

    @property
    def action(self) -> GuardAction:
        return self.decision.action

    def to_dict(self) -> dict[str, Any]:
        """``{"step", "phase", "tool", "action", "risk", "verdict", "rule", "mode", "signals"}``."""
        decision = self.decision
        return {
            "step": self.step,
            "phase": decision.phase,
            "tool": decision.tool,
            "action": decision.action.value,
            "risk": round(decision.risk, 4),
            "verdict": decision.verdict.kind.value,
            "rule": decision.rule,
            "mode": decision.mode,
            "signals": [signal.to_dict() for signal in decision.signals],
        }


def is_reported(decision: Decision) -> bool:
    """True when a decision belongs in a report: it did more than let the run continue."""
    return decision.action is not GuardAction.CONTINUE or decision.verdict.kind is not VerdictKind.ALLOW


@dataclass(frozen=True, slots=True)
class Expected:
    """A labelled run's expectation and how the replay compares with it.

    ``judged`` is ``ok``, ``premature`` / ``late`` (a stuck run's first intervention
    before / after ``acceptable_window``), ``missed`` (a stuck run with no
    intervention) or ``false_alarm`` (a healthy run reached ``replan`` or worse).
    """

    label: str
    acceptable_window: tuple[int, int] | None
    judged: str

    def to_dict(self) -> dict[str, Any]:
        window = list(self.acceptable_window) if self.acceptable_window is not None else None
        return {"label": self.label, "acceptable_window": window, "judged": self.judged}


def window_of(value: Any) -> tuple[int, int] | None:
    """A label's ``acceptable_window`` as ``(first, last)``, or ``None`` when it is not two
    whole numbers."""
    if (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(bound, int) and not isinstance(bound, bool) for bound in value)
    ):
        return int(value[0]), int(value[1])
    return None


def judge(meta: dict[str, Any], first_intervention: int | None, action: GuardAction | None = None) -> Expected | None:
    """Judge a run against its label (``None`` for unlabelled runs).

    A stuck run without a usable window is ``ok`` whenever the guard intervened. When the
    label lists ``acceptable_decisions`` and ``action`` (the most severe action reached at
    the first intervention's step) is not among them, the run is judged ``wrong_action``.
    """
    label = meta.get("label")
    if not isinstance(label, str):
        return None
    window = window_of(meta.get("acceptable_window"))
    if label == "healthy":
        judged = OK if first_intervention is None else FALSE_ALARM
    elif first_intervention is None:
        judged = MISSED
    elif window is not None and first_intervention < window[0]:
        judged = PREMATURE
    elif window is not None and first_intervention > window[1]:
        judged = LATE
    else:
        judged = OK
        accepted = meta.get("acceptable_decisions")
        if action is not None and isinstance(accepted, list) and accepted and action.value not in accepted:
            judged = WRONG_ACTION
    return Expected(label=label, acceptable_window=window, judged=judged)


@dataclass(slots=True)
class RunReport:
    """What the policy decided for one run.

    Attributes:
        run_id: the run's id.
        steps: number of input steps (steps of a step-format run, tool calls of a chat run).
        tool_calls: number of tool calls.
        decisions: the reported decisions in order.
        error: why the run could not be read or replayed, else ``None``. A run whose
            trace could not be read has no decisions; its counts cover what was read.
        meta: the run's metadata from the trace (labels, reward, ...).
        source: the file the run came from.
    """

    run_id: str
    steps: int = 0
    tool_calls: int = 0
    decisions: list[ReportedDecision] = field(default_factory=list)
    error: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    source: str | None = None

    @property
    def verdict(self) -> GuardAction:
        """The most severe action reached (``continue`` if nothing was reported)."""
        return GuardAction.most_severe(*(entry.action for entry in self.decisions))

    @property
    def verdict_step(self) -> int | None:
        """The step at which :attr:`verdict` was first reached, or ``None`` for ``continue``."""
        verdict = self.verdict
        if verdict is GuardAction.CONTINUE:
            return None
        return next(entry.step for entry in self.decisions if entry.action is verdict)

    @property
    def first_intervention(self) -> ReportedDecision | None:
        """The first decision with ``replan`` or a stronger action."""
        return next((entry for entry in self.decisions if entry.action.at_least(GuardAction.REPLAN)), None)

    @property
    def expected(self) -> Expected | None:
        first = self.first_intervention
        if first is None:
            return judge(self.meta, None)
        action = GuardAction.most_severe(*(item.action for item in self.decisions if item.step == first.step))
        return judge(self.meta, first.step, action)

    def reasons(self) -> list[str]:
        """The signal messages of the decision where the verdict was first reached, deduplicated."""
        verdict = self.verdict
        entry = next((entry for entry in self.decisions if entry.action is verdict), None)
        if entry is None:
            return []
        if verdict is GuardAction.CONTINUE:
            return []  # nothing went wrong; rule verdicts are listed on their own
        return list(dict.fromkeys(signal.message for signal in entry.decision.signals))

    def to_dict(self) -> dict[str, Any]:
        """``{"run_id", "steps", "tool_calls", "verdict", "first_intervention": {"step",
        "action"} | None, "decisions": [...], "error"}``, plus ``"expected"`` for labelled runs."""
        first = self.first_intervention
        data: dict[str, Any] = {
            "run_id": self.run_id,
            "steps": self.steps,
            "tool_calls": self.tool_calls,
            "verdict": self.verdict.value,
            "first_intervention": {"step": first.step, "action": first.action.value} if first is not None else None,
            "decisions": [entry.to_dict() for entry in self.decisions],
            "error": self.error,
        }
        expected = self.expected
        if expected is not None:
            data["expected"] = expected.to_dict()
        return data


def summarize(reports: Iterable[RunReport]) -> dict[str, Any]:
    """``{"runs", "errors", "verdicts": {action: count}, "intervened", "ruled_calls"}`` (plus
    ``"judged": {judgement: count}`` when some runs are labelled). ``intervened`` counts runs
    that reached ``replan`` or a more severe action; ``ruled_calls`` counts pending calls a
    rule or budget answered, cancelled, blocked or refused. Runs with errors count only in
    ``runs`` and ``errors``."""
    runs = list(reports)
    good = [report for report in runs if report.error is None]
    verdicts = Counter(report.verdict.value for report in good)
    summary: dict[str, Any] = {
        "runs": len(runs),
        "errors": len(runs) - len(good),
        "verdicts": {action.value: verdicts.get(action.value, 0) for action in GuardAction},
        "intervened": sum(1 for report in good if report.first_intervention is not None),
    }
    summary["ruled_calls"] = sum(1 for report in good for entry in report.decisions if _decided_by_policy(entry.decision))
    judged = Counter(expected.judged for report in good if (expected := report.expected) is not None)
    if judged:
        summary["judged"] = dict(sorted(judged.items()))
    return summary


def _decided_by_policy(decision: Any) -> bool:
    """A pending call that a rule or a budget kept from running as asked (answered,
    cancelled, blocked, unavailable, budget spent): the policy at work, not a stuck run."""
    rule = decision.verdict.rule
    return decision.phase == "before_call" and decision.verdict.kind is not VerdictKind.ALLOW and bool(rule) and not rule.startswith("detector:")


def render_text(reports: list[RunReport]) -> str:
    """A readable report: one line per run (id, verdict, step, judgement, and the first
    intervention when it came before the verdict), the reasons
    indented under it (``-``), the calls a rule or budget decided (``=``), then one
    summary line."""
    lines: list[str] = []
    width = min(max((len(report.run_id) for report in reports), default=0), 48)
    labelled = any(report.expected is not None for report in reports)
    for report in reports:
        if report.error is not None:
            lines.append(f"{report.run_id:<{width}}  ERROR     {report.error}")
            continue
        step = report.verdict_step
        where = f"step {step}" if step is not None else ""
        line = f"{report.run_id:<{width}}  {report.verdict.value:<8}  {where:<9}"
        if labelled:
            expected = report.expected
            line += f"  {_judged_text(expected)}" if expected is not None else "  -"
        first = report.first_intervention
        if first is not None and (first.step, first.action) != (step, report.verdict):
            # A run is judged by its first intervention: say where it was when the verdict came later.
            line += f"  (first {first.action.value} at step {first.step})"
        lines.append(line.rstrip())
        for reason in report.reasons():
            lines.append(f"    - {reason}")
        for entry in report.decisions:
            decision = entry.decision
            # Rule and budget verdicts are policy at work, not a stuck run: list them too.
            if _decided_by_policy(decision):
                rule = decision.verdict.rule
                failed = next((s.evidence for s in decision.signals if s.kind == "condition_error" and s.evidence.get("rule") == rule), None)
                # A rule that applied because its condition failed (on_error: deny) must not read as the rule at work.
                because = f": its condition failed ({failed.get('error')}), on_error: deny" if failed is not None else ""
                lines.append(f"    = step {entry.step}: {decision.tool} → {decision.verdict.kind.value} (rule {rule}{because})")
    lines.append(summary_line(summarize(reports)))
    # Run ids, tool names and file names come from the trace: their control characters
    # (an ANSI escape, a line break in a run id) are shown escaped, never sent to the terminal.
    return "\n".join(line.translate(_CONTROL_ESCAPES) for line in lines)


_CONTROL_ESCAPES = {code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0))}


def _judged_text(expected: Expected) -> str:
    window = expected.acceptable_window
    detail = f"{expected.label}, window {window[0]}-{window[1]}" if window is not None else expected.label
    return f"{expected.judged} ({detail})"


def summary_line(summary: dict[str, Any]) -> str:
    """E.g. ``7 runs: 3 stop, 1 warn, 3 continue; 3 intervened; 0 errors; judged: 6 ok, 1 late``."""
    counts = [f"{count} {action}" for action, count in reversed(summary["verdicts"].items()) if count]
    text = f"{summary['runs']} run{'s' if summary['runs'] != 1 else ''}"
    text += f": {', '.join(counts)}" if counts else ""
    text += f"; {summary['intervened']} intervened; {summary['errors']} error{'s' if summary['errors'] != 1 else ''}"
    ruled = summary.get("ruled_calls", 0)
    if ruled:
        text += f"; {ruled} call{'s' if ruled != 1 else ''} decided by rules or budgets"
    judged = summary.get("judged")
    if judged:
        text += "; judged: " + ", ".join(f"{count} {name}" for name, count in judged.items())
    return text
