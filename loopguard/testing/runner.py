"""Policy tests: YAML files of cases, each replaying steps through a policy and checking decisions.

A test file::

    policy: ../default.yml          # default for every case: a path relative to this file, or builtin:NAME
    profile: prod                   # optional default profile (LOOPGUARD_PROFILE is NOT applied)
    cases:
      - name: identical-empty-search
        steps:                      # the simple step format: {agent, tool, args, output, caller, error, user}
          - {tool: search, args: {q: flights}, output: []}
          - {tool: search, args: {q: flights}, output: []}
          - {tool: search, args: {q: flights}, output: []}
        expect:
          - {step: 2, action: stop}
          - {step: 0, verdict: allow}
        expect_verdict: stop        # the run's most severe action, exactly
        expect_no: pause            # never reached (this action or a more severe one); a list is allowed
      - name: from-a-trace
        trace: traces/loop.json     # a trace file (any format loopguard replay reads), relative to this file
        run: run-7                  # which run of the file (needed when it holds several)
        policy: builtin:strict      # per-case policy / profile override the file's
        expect_verdict: continue

A bare list of cases is accepted too. Steps are 0-based indexes into ``steps`` (or into the
trace's steps). At a step, ``action`` is compared with the most severe action decided at that
step, ``verdict`` with the strictest verdict (``allow`` when nothing was decided), ``rule``
with the rule of any decision there, and ``phase`` (``before_call``, ``after_call``,
``observe``) narrows the decisions considered. Steps run through
:func:`loopguard.traces.replay_run`, exactly as ``loopguard replay`` would.
"""

from __future__ import annotations

import difflib
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal

import yaml

from ..decisions import Decision, GuardAction, VerdictKind
from ..policy.compile import CompiledPolicy
from ..policy.errors import PolicyError

#: Where ``loopguard test`` looks when no path is given.
DEFAULT_TEST_PATH = "policies/tests"
TEST_SUFFIXES = (".yml", ".yaml")

Outcome = Literal["passed", "failed", "error"]

_FILE_KEYS = ("policy", "profile", "cases")
_CASE_KEYS = ("name", "description", "policy", "profile", "steps", "trace", "run", "expect", "expect_verdict", "expect_no")
_EXPECT_KEYS = ("step", "action", "verdict", "rule", "phase")
_ACTIONS = tuple(action.value for action in GuardAction)
_VERDICTS = tuple(kind.value for kind in VerdictKind)
_PHASES = ("before_call", "after_call", "observe")


class TestFileError(Exception):
    """A test file that cannot be read or is malformed; the message names the file (and case)."""

    __test__ = False  # not a pytest test class, despite the name


@dataclass(frozen=True)
class StepExpectation:
    """What must hold at one step (``None`` fields are not checked)."""

    step: int
    action: str | None = None
    verdict: str | None = None
    rule: str | None = None
    phase: str | None = None

    def describe(self) -> str:
        parts = [f"{key}={value}" for key, value in (("action", self.action), ("verdict", self.verdict), ("rule", self.rule), ("phase", self.phase)) if value is not None]
        return f"step {self.step}: " + ", ".join(parts)


@dataclass(frozen=True)
class TestCase:
    """One case of a test file.

    Attributes:
        file: the test file as displayed (the path as found).
        name: the case name (unique within the file).
        policy: the policy source as written (relative to the test file, or ``builtin:NAME``).
        policy_path: ``policy`` resolved (an absolute path or ``builtin:NAME``).
        profile: the profile, or ``None`` for the base policy.
        steps: inline steps, or ``None`` when ``trace`` is given.
        trace: the trace file (absolute), or ``None``.
        run: the run id to take from the trace, or ``None``.
        expect: per-step expectations.
        expect_verdict: the run's most severe action, or ``None``.
        expect_no: actions the run must never reach.
    """

    __test__ = False

    file: str
    name: str
    policy: str
    policy_path: str
    profile: str | None
    steps: list[Any] | None
    trace: Path | None
    run: str | None
    expect: tuple[StepExpectation, ...] = ()
    expect_verdict: str | None = None
    expect_no: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        """``FILE::NAME``, as printed."""
        return f"{self.file}::{self.name}"


@dataclass
class CaseResult:
    """The outcome of one case.

    Attributes:
        case: the case (``None`` for a file that could not be read).
        id: ``FILE::NAME`` (just ``FILE`` for a file error).
        outcome: ``passed``, ``failed`` or ``error`` (the policy, trace or file could not be used).
        messages: why it failed or errored, one line each.
        duration: seconds spent.
        revision: the policy revision the case ran against, when it loaded.
        verdict: the run's most severe action, when it ran.
    """

    case: TestCase | None
    id: str
    outcome: Outcome
    messages: list[str] = field(default_factory=list)
    duration: float = 0.0
    revision: str | None = None
    verdict: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "file": self.case.file if self.case else self.id,
            "name": self.case.name if self.case else None,
            "outcome": self.outcome,
            "messages": list(self.messages),
            "duration": round(self.duration, 6),
            "revision": self.revision,
            "verdict": self.verdict,
        }


@dataclass
class TestReport:
    """Every result of one ``loopguard test`` run."""

    __test__ = False

    results: list[CaseResult] = field(default_factory=list)
    duration: float = 0.0

    def count(self, outcome: Outcome) -> int:
        return sum(1 for result in self.results if result.outcome == outcome)

    @property
    def exit_code(self) -> int:
        """0 all passed; 1 a case failed; 2 a file, policy or trace could not be used (or no cases)."""
        if self.count("error") or not self.results:
            return 2
        return 1 if self.count("failed") else 0

    def summary(self) -> str:
        """``3 passed, 1 failed, 1 error in 0.12s`` (zero counts left out, as pytest does)."""
        parts = [f"{count} {word}" for word, count in (("passed", self.count("passed")), ("failed", self.count("failed")), ("error" if self.count("error") == 1 else "errors", self.count("error"))) if count]
        return f"{', '.join(parts) or 'no tests ran'} in {self.duration:.2f}s"

    def to_dict(self) -> dict[str, Any]:
        return {
            "tests": [result.to_dict() for result in self.results],
            "summary": {
                "passed": self.count("passed"),
                "failed": self.count("failed"),
                "errors": self.count("error"),
                "total": len(self.results),
                "duration": round(self.duration, 6),
                "exit_code": self.exit_code,
            },
        }


# --------------------------------------------------------------------------- reading


def find_test_files(paths: Iterable[str | Path]) -> list[Path]:
    """Paths as given, each directory replaced by its ``*.yml`` / ``*.yaml`` files (recursively,
    in name order).

    Raises:
        TestFileError: a path does not exist.
    """
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files.extend(sorted(child for child in path.rglob("*") if child.suffix.lower() in TEST_SUFFIXES and child.is_file()))
        elif path.is_file():
            files.append(path)
        else:
            raise TestFileError(f"{path}: no such file or directory")
    return files


def _hint(key: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(key, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _check_keys(data: dict[str, Any], allowed: tuple[str, ...], where: str) -> None:
    for key in data:
        if key not in allowed:
            raise TestFileError(f"{where}: unknown key '{key}'{_hint(str(key), allowed)}")


def _choice(value: Any, choices: tuple[str, ...], where: str, what: str) -> str:
    if not isinstance(value, str) or value not in choices:
        raise TestFileError(f"{where}: {what} must be one of {', '.join(choices)}, not {value!r}")
    return value


def _resolve_policy(policy: str, base: Path) -> str:
    if policy.startswith("builtin:"):
        return policy
    path = Path(policy)
    return str(path if path.is_absolute() else (base / path).resolve())


def load_test_file(path: str | Path) -> list[TestCase]:
    """Read one test file into its cases.

    Raises:
        TestFileError: the file cannot be read, is not YAML, or a case is malformed (unknown
            keys, a missing policy, neither or both of ``steps`` and ``trace``, a bad
            expectation, a repeated name). Nothing of a malformed file is run.
    """
    path = Path(path)
    display = str(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise TestFileError(f"{display}: cannot read: {error.strerror or error}") from error
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise TestFileError(f"{display}: invalid YAML: {error}") from error
    defaults: dict[str, Any] = {}
    if isinstance(data, dict):
        _check_keys(data, _FILE_KEYS, display)
        defaults = data
        cases_data = data.get("cases")
    else:
        cases_data = data
    if not isinstance(cases_data, list) or not cases_data:
        raise TestFileError(f"{display}: expected a non-empty list of cases ('cases: [...]')")
    base = path.parent
    cases: list[TestCase] = []
    names: set[str] = set()
    for index, entry in enumerate(cases_data):
        where = f"{display}: case {index}"
        if not isinstance(entry, dict):
            raise TestFileError(f"{where}: must be a mapping, not {type(entry).__name__}")
        _check_keys(entry, _CASE_KEYS, where)
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise TestFileError(f"{where}: needs a 'name'")
        where = f"{display}::{name}"
        if name in names:
            raise TestFileError(f"{where}: the name is used by an earlier case")
        names.add(name)
        policy = entry.get("policy", defaults.get("policy"))
        if not isinstance(policy, str) or not policy:
            raise TestFileError(f"{where}: needs a 'policy' (here or at the top of the file)")
        profile = entry.get("profile", defaults.get("profile"))
        if profile is not None and not isinstance(profile, str):
            raise TestFileError(f"{where}: 'profile' must be a string")
        steps, trace = entry.get("steps"), entry.get("trace")
        if (steps is None) == (trace is None):
            raise TestFileError(f"{where}: give either 'steps' or 'trace'")
        if steps is not None and not isinstance(steps, list):
            raise TestFileError(f"{where}: 'steps' must be a list")
        if trace is not None and not isinstance(trace, str):
            raise TestFileError(f"{where}: 'trace' must be a path")
        run = entry.get("run")
        cases.append(
            TestCase(
                file=display,
                name=name,
                policy=policy,
                policy_path=_resolve_policy(policy, base),
                profile=profile,
                steps=steps,
                trace=(base / trace) if isinstance(trace, str) else None,
                run=None if run is None else str(run),
                expect=_expectations(entry.get("expect"), where),
                expect_verdict=None if entry.get("expect_verdict") is None else _choice(entry["expect_verdict"], _ACTIONS, where, "expect_verdict"),
                expect_no=_expect_no(entry.get("expect_no"), where),
            )
        )
        if not (cases[-1].expect or cases[-1].expect_verdict or cases[-1].expect_no):
            raise TestFileError(f"{where}: expects nothing; add 'expect', 'expect_verdict' or 'expect_no'")
    return cases


def _expectations(value: Any, where: str) -> tuple[StepExpectation, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise TestFileError(f"{where}: 'expect' must be a list of {{step, action|verdict|rule}}")
    found: list[StepExpectation] = []
    for index, item in enumerate(value):
        at = f"{where}: expect[{index}]"
        if not isinstance(item, dict):
            raise TestFileError(f"{at}: must be a mapping")
        _check_keys(item, _EXPECT_KEYS, at)
        step = item.get("step")
        if not isinstance(step, int) or isinstance(step, bool) or step < 0:
            raise TestFileError(f"{at}: 'step' must be a step index (0 or more)")
        if not any(key in item for key in ("action", "verdict", "rule")):
            raise TestFileError(f"{at}: give 'action', 'verdict' or 'rule'")
        rule = item.get("rule")
        found.append(
            StepExpectation(
                step=step,
                action=_choice(item["action"], _ACTIONS, at, "action") if "action" in item else None,
                verdict=_choice(item["verdict"], _VERDICTS, at, "verdict") if "verdict" in item else None,
                rule=None if rule is None else str(rule),
                phase=_choice(item["phase"], _PHASES, at, "phase") if "phase" in item else None,
            )
        )
    return tuple(found)


def _expect_no(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    values = value if isinstance(value, list) else [value]
    return tuple(_choice(item, _ACTIONS, where, "expect_no") for item in values)


# --------------------------------------------------------------------------- running


class _Policies:
    """Policies loaded once per (source, profile) for a whole test run."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str | None], CompiledPolicy | PolicyError] = {}

    def get(self, source: str, profile: str | None) -> CompiledPolicy:
        from ..policy.load import check_policy

        key = (source, profile)
        if key not in self._cache:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # e.g. group-writable files: not this command's business
                    # check_policy, not load_policy: a test names its profile, $LOOPGUARD_PROFILE must not change it
                    result = check_policy(source, profile=profile)
                self._cache[key] = result.policy if result.policy is not None else PolicyError(result.errors)
            except PolicyError as error:
                self._cache[key] = error
        found = self._cache[key]
        if isinstance(found, PolicyError):
            raise found
        return found


def _run_of(case: TestCase) -> Any:
    from ..traces import parse_trace, read_trace
    from ..traces.model import TraceFileError

    if case.steps is not None:
        runs = parse_trace({"run_id": case.name, "steps": case.steps}, source=case.file, default_id=case.name)
    else:
        assert case.trace is not None
        try:
            runs = read_trace(case.trace)
        except TraceFileError as error:
            raise TestFileError(str(error)) from error
        if case.run is not None:
            runs = [run for run in runs if run.run_id == case.run]
            if not runs:
                raise TestFileError(f"{case.trace}: no run {case.run!r}")
        elif len(runs) != 1:
            raise TestFileError(f"{case.trace}: holds {len(runs)} runs; name one with 'run'")
    run = runs[0]
    if run.error is not None:
        raise TestFileError(str(run.error))
    return run


def _at_step(decisions: list[tuple[int, Decision]], expectation: StepExpectation) -> list[Decision]:
    return [decision for step, decision in decisions if step == expectation.step and (expectation.phase is None or decision.phase == expectation.phase)]


def _check(case: TestCase, decisions: list[tuple[int, Decision]], steps: int) -> list[str]:
    """The failure messages of a replayed case (empty: it passed)."""
    failures: list[str] = []
    for expectation in case.expect:
        if expectation.step >= steps:
            failures.append(f"{expectation.describe()}: the run has only {steps} steps")
            continue
        found = _at_step(decisions, expectation)
        got_action = GuardAction.most_severe(*(decision.action for decision in found)).value
        strictest = max((decision.verdict.kind for decision in found), key=lambda kind: kind.strictness, default=VerdictKind.ALLOW)
        rules = [decision.rule for decision in found if decision.rule]
        wrong: list[str] = []
        if expectation.action is not None and got_action != expectation.action:
            wrong.append(f"action {got_action} (expected {expectation.action})")
        if expectation.verdict is not None and strictest.value != expectation.verdict:
            wrong.append(f"verdict {strictest.value} (expected {expectation.verdict})")
        if expectation.rule is not None and expectation.rule not in rules:
            wrong.append(f"rules {rules or 'none'} (expected {expectation.rule})")
        if wrong:
            failures.append(f"step {expectation.step}: got " + "; ".join(wrong) + _reasons(found))
    worst = GuardAction.most_severe(*(decision.action for _, decision in decisions))
    if case.expect_verdict is not None and worst.value != case.expect_verdict:
        first = next((step for step, decision in decisions if decision.action is worst), None)
        where = f" first at step {first}" if first is not None else ""
        failures.append(f"run verdict: got {worst.value}{where} (expected {case.expect_verdict})")
    for action in case.expect_no:
        limit = GuardAction(action)
        reached = next(((step, decision) for step, decision in decisions if decision.action.at_least(limit)), None)
        if reached is not None:
            step, decision = reached
            failures.append(f"expect_no {action}: step {step} reached {decision.action.value}" + _reasons([decision]))
    return failures


def _reasons(decisions: list[Decision]) -> str:
    messages = list(dict.fromkeys(signal.message for decision in decisions for signal in decision.signals if signal.message))
    return f" — {'; '.join(messages)}" if messages else ""


def run_case(case: TestCase, policies: _Policies | None = None) -> CaseResult:
    """Run one case; never raises (errors become an ``error`` result)."""
    from ..traces import replay_run

    started = time.perf_counter()
    result = CaseResult(case, case.id, "passed")
    try:
        policy = (policies or _Policies()).get(case.policy_path, case.profile)
        result.revision = policy.revision
        run = _run_of(case)
    except PolicyError as error:
        result.outcome = "error"
        result.messages = [f"policy {case.policy}" + (f" (profile {case.profile})" if case.profile else "") + " does not load:"] + [
            "  " + problem.format() for problem in error.problems
        ]
    except TestFileError as error:
        result.outcome = "error"
        result.messages = [str(error)]
    else:
        report = replay_run(policy, run)
        if report.error is not None:
            result.outcome = "error"
            result.messages = [report.error]
        else:
            # replay_run reports only decisions that did more than continue/allow: exactly
            # what an expectation can tell apart from "nothing happened here".
            decisions = [(entry.step, entry.decision) for entry in report.decisions]
            result.verdict = report.verdict.value
            result.messages = _check(case, decisions, run.steps)
            if result.messages:
                result.outcome = "failed"
    result.duration = time.perf_counter() - started
    return result


def run_tests(paths: Iterable[str | Path] = (DEFAULT_TEST_PATH,), keyword: str | None = None) -> TestReport:
    """Run every case of every test file under ``paths``.

    Args:
        paths: test files or directories (searched recursively for ``*.yml`` / ``*.yaml``).
        keyword: run only cases whose ``FILE::NAME`` id contains this substring.

    Returns:
        the report; a file that cannot be read or is malformed is one ``error`` result.

    Raises:
        TestFileError: a path does not exist.
    """
    started = time.perf_counter()
    report = TestReport()
    policies = _Policies()
    for path in find_test_files(paths):
        try:
            cases = load_test_file(path)
        except TestFileError as error:
            report.results.append(CaseResult(None, str(path), "error", [str(error)]))
            continue
        for case in cases:
            if keyword is None or keyword in case.id:
                report.results.append(run_case(case, policies))
    report.duration = time.perf_counter() - started
    return report
