"""Replay: driving sessions from traces, reports, judging labelled cases, the CLI.

The first part uses a scripted fake session so the replay mechanics are tested on
their own; the integration tests at the end run the real Session and policies.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import loopguard.policy
import loopguard.traces.replay as replay_module
from loopguard.calls import ModelUsage, ToolCall, ToolResult
from loopguard.decisions import Decision, GuardAction, Signal, Verdict, VerdictKind
from loopguard.signature import signature_of
from loopguard.traces import RunReport, judge, parse_trace, read_trace, render_text, replay_file, replay_paths, replay_run
from loopguard.policy import default_policy_path
from loopguard.traces.cli import main

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "traces"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
TAU = SHARED / "tau-bench" / "gpt-4o-airline.json"
CASES = SHARED / "cases"

ESCALATION = [GuardAction.CONTINUE, GuardAction.WARN, GuardAction.REPLAN, GuardAction.STOP]


class FakeSession:
    """Escalates on identical calls: 1st continue, 2nd warn, 3rd replan, later stop.
    Blocks the tool ``forbidden`` by rule. Logs everything it is fed."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.log: list[tuple[Any, ...]] = []
        self.seen: Counter[int] = Counter()
        self.step = 0

    def _decision(self, phase: str, action: GuardAction, **fields: Any) -> Decision:
        self.step += 1
        signals = (Signal("repeat", "identical_call", 0.6, "the same call again"),) if action is not GuardAction.CONTINUE else ()
        return Decision(step=self.step - 1, phase=phase, action=action, risk=0.3 * ESCALATION.index(action) if action in ESCALATION else 0.0, signals=signals, **fields)

    def observe_user_message(self, text: str) -> None:
        self.log.append(("user", text))

    def before_call(self, call: ToolCall) -> Decision:
        self.log.append(("before", call.name))
        if call.name == "forbidden":
            return self._decision("before_call", GuardAction.CONTINUE, tool=call.name, verdict=Verdict(VerdictKind.BLOCK, rule="no-forbidden"), rule="no-forbidden")
        key = signature_of(call.name, call.arguments).key
        self.seen[key] += 1
        action = ESCALATION[min(self.seen[key], len(ESCALATION)) - 1]
        return self._decision("before_call", action, tool=call.name)

    def before_batch(self, calls: list[ToolCall]) -> list[Decision]:
        self.log.append(("batch", [call.name for call in calls]))
        return [self.before_call(call) for call in calls]

    def after_call(self, call: ToolCall, result: ToolResult) -> Decision:
        self.log.append(("after", call.name, result.output))
        return self._decision("after_call", GuardAction.CONTINUE, tool=call.name)

    def observe_handoff(self, agent: str, caller: str | None, message: str | None = None) -> Decision:
        self.log.append(("handoff", caller, agent) if message is None else ("handoff", caller, agent, message))
        return self._decision("observe", GuardAction.CONTINUE)

    def observe_agent_message(self, agent: str | None, text: str) -> Decision:
        self.log.append(("message", agent, text))
        return self._decision("observe", GuardAction.CONTINUE)

    def observe_model_call(self, usage: ModelUsage) -> Decision:
        self.log.append(("usage", usage.total_tokens))
        return self._decision("observe", GuardAction.CONTINUE)


class Recorder:
    """A session factory that keeps the sessions it built."""

    def __init__(self) -> None:
        self.sessions: list[FakeSession] = []

    def __call__(self, policy: Any) -> FakeSession:
        session = FakeSession(policy)
        self.sessions.append(session)
        return session


FAKE_POLICY = SimpleNamespace(source="fake", profile=None, revision="r1")

SAME = {"agent": "a", "tool": "search", "args": {"q": "x"}, "output": "[]"}


def fake_replay(data: Any) -> tuple[RunReport, FakeSession]:
    [run] = parse_trace(data)
    recorder = Recorder()
    report = replay_run(FAKE_POLICY, run, session_factory=recorder)  # type: ignore[arg-type]
    return report, recorder.sessions[0]


# -- replay mechanics ----------------------------------------------------------


def test_step_indexes_verdict_and_first_intervention() -> None:
    steps = [{"agent": "a", "output": "thinking"}, SAME, SAME, SAME, SAME, {"tool": "other"}]
    report, session = fake_replay({"run_id": "r", "steps": steps})
    assert report.steps == 6 and report.tool_calls == 5
    assert [(entry.step, entry.action.value) for entry in report.decisions] == [(2, "warn"), (3, "replan"), (4, "stop")]
    assert report.verdict is GuardAction.STOP and report.verdict_step == 4
    data = report.to_dict()
    assert data["first_intervention"] == {"step": 3, "action": "replan"}
    assert data["verdict"] == "stop" and data["error"] is None and "expected" not in data
    # recorded results are fed even after the policy would have stopped the run
    assert [entry for entry in session.log if entry[0] == "after"] == [("after", "search", "[]")] * 4 + [("after", "other", None)]


def test_decision_entries_shape() -> None:
    report, _ = fake_replay([SAME, SAME])
    [entry] = report.to_dict()["decisions"]
    assert entry == {
        "step": 1,
        "phase": "before_call",
        "tool": "search",
        "action": "warn",
        "risk": 0.3,
        "verdict": "allow",
        "rule": None,
        "mode": "enforce",
        "signals": [{"detector": "repeat", "kind": "identical_call", "score": 0.6, "message": "the same call again", "evidence": {}}],
    }


def test_a_non_allow_verdict_is_reported_even_with_action_continue() -> None:
    report, _ = fake_replay([{"tool": "forbidden"}])
    [entry] = report.to_dict()["decisions"]
    assert entry["verdict"] == "block" and entry["rule"] == "no-forbidden" and entry["action"] == "continue"
    assert report.verdict is GuardAction.CONTINUE and report.first_intervention is None
    assert report.reasons() == []  # nothing went wrong; the rule verdict is listed on its own line
    assert "    = step 0: forbidden → block (rule no-forbidden)" in render_text([report]).splitlines()


def test_batch_goes_through_before_batch_and_chat_steps_index_tool_calls() -> None:
    [run] = read_trace(FIXTURES / "chat_batch.json")
    recorder = Recorder()
    report = replay_run(FAKE_POLICY, run, session_factory=recorder)  # type: ignore[arg-type]
    log = recorder.sessions[0].log
    assert log[0] == ("user", "Weather in Paris and Tokyo?")
    assert log[1] == ("batch", ["get_weather", "get_weather"])
    assert ("after", "get_weather", "rain") in log and log[-1] == ("message", None, "Paris: sunny, Tokyo: rain.")
    assert report.steps == 2 and report.tool_calls == 2 and report.decisions == []


def test_handoffs_and_usage_are_observed() -> None:
    _, session = fake_replay([{"agent": "b", "caller": "a"}, {"usage": {"input_tokens": 3, "output_tokens": 4}, "tool": "t"}])
    assert session.log[0] == ("handoff", "a", "b") and session.log[1] == ("usage", 7)


def test_what_an_agent_says_on_receiving_control_goes_with_the_handoff() -> None:
    _, session = fake_replay([{"agent": "supplier", "caller": "buyer", "output": "We can do $1.82/unit, net 45."}, {"agent": "b", "caller": "a", "tool": "t", "output": "ok"}])
    assert session.log[0] == ("handoff", "buyer", "supplier", "We can do $1.82/unit, net 45.")
    assert session.log[1] == ("handoff", "a", "b")  # a tool's output is its result, not a message


def test_run_with_a_trace_error_is_reported_not_replayed() -> None:
    runs = read_trace(FIXTURES / "malformed.json")
    recorder = Recorder()
    reports = [replay_run(FAKE_POLICY, run, session_factory=recorder) for run in runs]  # type: ignore[arg-type]
    assert [report.error is None for report in reports] == [True, False, True]
    assert reports[1].error is not None and reports[1].error.endswith("run 'abc': step 3: 'args' must be an object, got list")
    assert reports[1].decisions == [] and len(recorder.sessions) == 2


def test_a_failing_session_becomes_the_run_error() -> None:
    class Broken(FakeSession):
        def after_call(self, call: ToolCall, result: ToolResult) -> Decision:
            raise RuntimeError("boom")

    [run] = parse_trace({"run_id": "r", "steps": [SAME]})
    report = replay_run(FAKE_POLICY, run, session_factory=Broken)  # type: ignore[arg-type]
    assert report.error == "run 'r': step 0: replay failed: RuntimeError: boom"


def test_invalid_json_file_is_one_error_report_and_missing_file_raises(tmp_path: Path) -> None:
    [report] = replay_file(FAKE_POLICY, FIXTURES / "invalid.json", session_factory=Recorder())  # type: ignore[arg-type]
    assert report.run_id == "invalid.json" and "line 3, column 19" in (report.error or "")
    with pytest.raises(Exception) as info:
        replay_paths(FAKE_POLICY, [FIXTURES / "runs.jsonl", tmp_path / "missing.json"], session_factory=Recorder())  # type: ignore[arg-type]
    assert "missing.json: cannot read: no such file" in str(info.value)


def test_directories_expand_to_trace_files() -> None:
    reports = replay_paths(FAKE_POLICY, [FIXTURES], session_factory=Recorder())  # type: ignore[arg-type]
    sources = {Path(report.source or "").name for report in reports}
    assert sources == {"broken.jsonl", "chat_batch.json", "invalid.json", "malformed.json", "runs.jsonl", "steps.jsonl"}


# -- judging labelled cases ----------------------------------------------------


@pytest.mark.parametrize(
    ("meta", "first", "judged"),
    [
        ({"label": "stuck", "acceptable_window": [2, 3]}, 2, "ok"),
        ({"label": "stuck", "acceptable_window": [2, 3]}, 3, "ok"),
        ({"label": "stuck", "acceptable_window": [2, 3]}, 1, "premature"),
        ({"label": "stuck", "acceptable_window": [2, 3]}, 4, "late"),
        ({"label": "stuck", "acceptable_window": [2, 3]}, None, "missed"),
        ({"label": "healthy"}, None, "ok"),
        ({"label": "healthy"}, 0, "false_alarm"),
    ],
)
def test_judge(meta: dict[str, Any], first: int | None, judged: str) -> None:
    expected = judge(meta, first)
    assert expected is not None and expected.judged == judged


def test_unlabelled_runs_are_not_judged() -> None:
    assert judge({"reward": 1.0}, 3) is None


def test_expected_in_report() -> None:
    report, _ = fake_replay({"run_id": "r", "label": "stuck", "acceptable_window": [1, 2], "steps": [SAME, SAME, SAME]})
    assert report.to_dict()["expected"] == {"label": "stuck", "acceptable_window": [1, 2], "judged": "ok"}


# -- CLI with the fake session -------------------------------------------------


@pytest.fixture
def fake_cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(loopguard.policy, "load_policy", lambda source, profile=None: SimpleNamespace(source=source, profile=profile, revision="r1", mode="enforce"), raising=False)
    monkeypatch.setattr(replay_module, "_default_session", FakeSession)
    monkeypatch.chdir(tmp_path)


def write_runs(tmp_path: Path, runs: list[dict[str, Any]]) -> str:
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(runs))
    return str(path)


LABELLED = [
    {"run_id": "loops", "label": "stuck", "acceptable_window": [2, 3], "steps": [SAME, SAME, SAME, SAME]},
    {"run_id": "fine", "label": "healthy", "steps": [SAME, {"tool": "other"}]},
]


def test_cli_json_document(fake_cli: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["replay", write_runs(tmp_path, LABELLED), "--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 1  # "loops" reached stop
    assert document["policy"] == {"source": "builtin:default", "profile": None, "revision": "r1"}
    loops, fine = document["runs"]
    assert set(loops) == {"run_id", "steps", "tool_calls", "verdict", "first_intervention", "decisions", "error", "expected"}
    assert loops["verdict"] == "stop" and loops["first_intervention"] == {"step": 2, "action": "replan"}
    assert loops["expected"] == {"label": "stuck", "acceptable_window": [2, 3], "judged": "ok"}
    assert fine["verdict"] == "continue" and fine["expected"]["judged"] == "ok"
    assert document["summary"] == {
        "runs": 2,
        "errors": 0,
        "verdicts": {"continue": 1, "warn": 0, "replan": 0, "pause": 0, "stop": 1},
        "intervened": 1,
        "ruled_calls": 0,
        "judged": {"ok": 2},
    }


def test_cli_text_output(fake_cli: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["replay", write_runs(tmp_path, LABELLED), "--profile", "prod"])
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert out[0] == "policy builtin:default, profile prod (revision r1)"
    assert out[1].split() == ["loops", "stop", "step", "3", "ok", "(stuck,", "window", "2-3)", "(first", "replan", "at", "step", "2)"]
    assert out[2] == "    - the same call again"
    assert out[3].split() == ["fine", "continue", "ok", "(healthy)"]
    assert out[-1] == "2 runs: 1 stop, 1 continue; 1 intervened; 0 errors; judged: 2 ok"


def test_cli_fail_on(fake_cli: None, tmp_path: Path) -> None:
    warn_only = write_runs(tmp_path, [{"run_id": "w", "steps": [SAME, SAME]}])
    assert main(["replay", warn_only]) == 0
    assert main(["replay", warn_only, "--fail-on", "warn"]) == 1
    assert main(["replay", warn_only, "--fail-on", "replan"]) == 0


def test_cli_trace_error_is_a_finding(fake_cli: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(FIXTURES / "malformed.json")]) == 1
    out = capsys.readouterr().out
    assert "ERROR" in out and "step 3: 'args' must be an object, got list" in out
    assert out.splitlines()[-1] == "3 runs: 2 continue; 0 intervened; 1 error"


def test_cli_missing_trace_is_exit_2(fake_cli: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(tmp_path / "nope.json")]) == 2
    assert "nope.json: cannot read: no such file" in capsys.readouterr().err


def test_cli_usage_error_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["replay", "x.json", "--fail-on", "sometimes"])
    assert info.value.code == 2


def test_default_policy_prefers_local_file(tmp_path: Path) -> None:
    assert default_policy_path(tmp_path) == "builtin:default"
    (tmp_path / "loopguard.yaml").write_text("version: 1\n")
    assert default_policy_path(tmp_path) == str(tmp_path / "loopguard.yaml")
    (tmp_path / "loopguard.yml").write_text("version: 1\n")
    assert default_policy_path(tmp_path) == str(tmp_path / "loopguard.yml")


# -- integration: the real Session and policies --------------------------------


def real_policy(source: str = "builtin:default") -> Any:
    from loopguard.policy import load_policy

    return load_policy(source)


@pytest.mark.shared_data
def test_integration_cases_with_default_policy(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["replay", str(CASES / "basic.json"), str(CASES / "incidents.json"), "--json"])
    document = json.loads(capsys.readouterr().out)
    assert document["policy"]["source"] == "builtin:default" and document["policy"]["revision"]
    assert document["summary"]["runs"] == 19 and document["summary"]["errors"] == 0
    assert all(run["expected"]["judged"] in {"ok", "premature", "late", "missed", "false_alarm"} for run in document["runs"])
    stopped = any(run["verdict"] == "stop" for run in document["runs"])
    assert code == (1 if stopped else 0)
    for run in document["runs"]:
        for entry in run["decisions"]:
            assert 0 <= entry["step"] < run["steps"]


@pytest.mark.shared_data
def test_integration_text_mode_has_judged_column(capsys: pytest.CaptureFixture[str]) -> None:
    main(["replay", str(CASES / "basic.json")])
    out = capsys.readouterr().out
    assert "basic-handoff-triangle" in out and "(stuck, window 4-5)" in out
    assert out.splitlines()[-1].startswith("7 runs: ")


@pytest.mark.shared_data
def test_integration_tau_bench_replays_every_run() -> None:
    reports = replay_file(real_policy(), TAU)
    assert len(reports) == 200 and all(report.error is None for report in reports)
    assert sum(report.tool_calls for report in reports) == 1164
    assert all(0 <= entry.step < report.steps for report in reports for entry in report.decisions)


def test_integration_rule_verdict_is_recorded_at_its_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "policy.yml"
    policy.write_text(
        "version: 1\nextends: builtin:default\nrules:\n"
        "  - id: shell-disabled\n    tool: shell\n    verdict: block\n    message: shell is disabled\n"
    )
    trace = write_runs(tmp_path, [{"run_id": "r", "steps": [{"tool": "ls", "output": "a"}, {"tool": "shell", "args": {"cmd": "rm"}, "output": "x"}]}])
    main(["replay", trace, "--policy", str(policy), "--json"])
    [run] = json.loads(capsys.readouterr().out)["runs"]
    blocked = [entry for entry in run["decisions"] if entry["verdict"] == "block"]
    assert blocked and blocked[0]["step"] == 1 and blocked[0]["rule"] == "shell-disabled"
    main(["replay", trace, "--policy", str(policy)])
    text = capsys.readouterr().out
    assert "    = step 1: shell → block (rule shell-disabled)" in text
    assert text.rstrip().endswith("1 run: 1 continue; 0 intervened; 0 errors; 1 call decided by rules or budgets")


def test_a_rule_that_applied_because_its_condition_failed_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "policy.yml"
    policy.write_text("version: 1\nrules:\n  - id: big-money\n    when: \"call.arguments['amount'] > 100\"\n    verdict: cancel\n    reason: needs a human\n")
    policy.chmod(0o644)
    trace = write_runs(tmp_path, [{"run_id": "r", "steps": [{"tool": "get_ticket", "args": {"id": 7}, "output": "ticket 7"}, {"tool": "refund", "args": {"amount": 50}, "output": "ok"}]}])
    assert main(["replay", trace, "--policy", str(policy)]) == 0
    captured = capsys.readouterr()
    assert "    = step 0: get_ticket → cancel (rule big-money: its condition failed (KeyError: 'amount'), on_error: deny)" in captured.out.splitlines()
    # The policy's warning, as check prints it.
    assert captured.err == (
        f"loopguard replay: {policy}:4:12: LG905: warning: call.arguments['amount'] fails for a call without 'amount', and the rule then "
        "follows on_error (deny: it applies) (hint: write call.arguments.get('amount', DEFAULT) (0, '' or None), or set on_error: allow)\n"
    )


def test_integration_bad_policy_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "policy.yml"
    policy.write_text("version: 1\nthresholdz: {}\n")
    assert main(["replay", str(CASES / "basic.json"), "--policy", str(policy)]) == 2
    assert "thresholdz" in capsys.readouterr().err
    assert main(["replay", str(CASES / "basic.json"), "--policy", str(tmp_path / "missing.yml")]) == 2


def test_a_file_too_deep_or_with_huge_numbers_is_one_error_and_the_others_still_report(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"run_id": "fine", "steps": [{"tool": "a", "args": {}, "output": "x"}]}))
    deep = tmp_path / "deep.json"
    deep.write_text('{"run_id": "d", "steps": [{"tool": "a", "args": ' + '{"a": ' * 5000 + "1" + "}" * 5000 + "}]}")
    huge = tmp_path / "huge.json"
    huge.write_text('{"run_id": "h", "steps": [{"tool": "a", "args": {"n": ' + "9" * 5000 + "}}]}")
    from loopguard.policy import load_policy

    reports = replay_paths(load_policy("builtin:default"), [good, deep, huge])
    assert [(report.run_id, report.error) for report in reports][0] == ("fine", None)
    assert reports[1].error == f"{deep}: cannot read JSON: it nests too deeply"
    assert reports[2].error is not None and reports[2].error.startswith(f"{huge}: cannot read JSON: Exceeds the limit")


def test_text_output_escapes_control_characters_from_the_trace() -> None:
    policy = loopguard.policy.load_policy("builtin:default")
    [run] = parse_trace({"run_id": "red\x1b[31mALERT\x1b[0m\nfake", "steps": [{"tool": "a", "args": {}, "output": "x"}]})
    assert render_text([replay_run(policy, run)]).splitlines() == [
        "red\\x1b[31mALERT\\x1b[0m\\x0afake  continue",
        "1 run: 1 continue; 0 intervened; 0 errors",
    ]


def test_a_directory_without_trace_files_is_an_io_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("not a trace")
    assert main(["replay", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"loopguard replay: {tmp_path}: cannot read: no trace files (*.json, *.jsonl, *.ndjson) in this directory\n"


_EMPTY_FILE = "the file is empty: a trace is JSON (a list of steps or chat messages) or JSON Lines"
_NO_RUNS = "no runs: the file holds no steps or messages"


@pytest.mark.parametrize(
    "name, content, message",
    [("blank.jsonl", "\n  \n", _EMPTY_FILE), ("blank.json", "", _EMPTY_FILE), ("empty_list.json", "[]", _NO_RUNS), ("no_runs.json", '{"runs": []}', _NO_RUNS)],
)
def test_a_trace_file_without_runs_is_an_error_for_that_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: str, message: str) -> None:
    """A trace that was never written (a blank file, ``[]``) must not pass as "0 runs"."""
    empty = tmp_path / name
    empty.write_text(content)
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"run_id": "fine", "steps": [{"tool": "a", "args": {}, "output": "x"}]}))
    assert main(["replay", str(empty), str(good)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == [
        f"{name}  ERROR     {empty}: {message}",
        f"{'fine':<{len(name)}}  continue",
        "2 runs: 1 continue; 0 intervened; 1 error",
    ]


def test_the_text_header_says_when_the_policy_only_observes(capsys: pytest.CaptureFixture[str]) -> None:
    trace = Path(__file__).resolve().parents[1] / "examples" / "traces" / "support_agent.json"
    assert main(["replay", str(trace), "--policy", "builtin:observe"]) == 1
    from loopguard.policy import load_policy

    revision = load_policy("builtin:observe").revision
    assert capsys.readouterr().out.splitlines()[0] == f"policy builtin:observe (revision {revision}, observe mode: verdicts are recorded, not applied)"
