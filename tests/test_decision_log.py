"""The decision log: JSON Lines records, filters, logger output, flush and close."""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path

import pytest

from loopguard import decision_log
from loopguard.calls import ToolCall, ToolResult
from loopguard.decision_log import DecisionLog, log_for
from loopguard.decisions import Decision, GuardAction, Signal, Verdict, VerdictKind
from loopguard.policy import load_policy
from loopguard.session import Session

FIELDS = {"time", "run_id", "thread_id", "step", "phase", "tool", "call_index", "action", "risk", "verdict", "rule", "signals", "revision", "mode"}


def decision(action: GuardAction, verdict: VerdictKind = VerdictKind.ALLOW, step: int = 0) -> Decision:
    return Decision(
        step=step,
        phase="before_call",
        action=action,
        risk=0.61234,
        signals=(Signal("repeat", "identical_call", 0.6, "search is repeated", {"steps": [0, 1]}),),
        verdict=Verdict(verdict, rule="shell-disabled" if verdict is not VerdictKind.ALLOW else None),
        rule="shell-disabled" if verdict is not VerdictKind.ALLOW else None,
        revision="abc123def456",
        mode="enforce",
        tool="search",
        call_index=step,
    )


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(autouse=True)
def _forget_logs():
    yield
    decision_log.close_all()


def test_records_have_every_field(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "decisions.jsonl"
    with DecisionLog(path) as log:
        log.record("run-1", decision(GuardAction.STOP, VerdictKind.BLOCK, step=4), thread_id="t-1")
    [record] = read(path)
    assert set(record) == FIELDS
    assert record["run_id"] == "run-1" and record["thread_id"] == "t-1"
    assert record["step"] == 4 and record["tool"] == "search" and record["call_index"] == 4
    assert record["action"] == "stop" and record["verdict"] == "block" and record["rule"] == "shell-disabled"
    assert record["risk"] == 0.6123 and record["revision"] == "abc123def456" and record["mode"] == "enforce"
    assert record["signals"] == [{"detector": "repeat", "kind": "identical_call", "score": 0.6, "message": "search is repeated"}]
    assert record["time"].endswith("Z") and "T" in record["time"]


def test_default_filter_skips_continue_but_keeps_verdicts(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    with DecisionLog(path) as log:
        log.record("r", decision(GuardAction.CONTINUE))
        log.record("r", decision(GuardAction.WARN, step=1))
        log.record("r", decision(GuardAction.CONTINUE, VerdictKind.BLOCK, step=2))
    assert [record["step"] for record in read(path)] == [1, 2]


def test_configured_actions_only(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    with DecisionLog(path, actions=["stop"], verdicts=False) as log:
        for step, action in enumerate(GuardAction):
            log.record("r", decision(action, step=step))
        log.record("r", decision(GuardAction.CONTINUE, VerdictKind.CANCEL, step=9))
    assert [record["action"] for record in read(path)] == ["stop"]


def test_close_flushes_every_record_from_many_threads(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    log = DecisionLog(path, actions=["continue", "warn", "replan", "pause", "stop"])

    def work(index: int) -> None:
        for step in range(5000):
            log.record(f"run-{index}", decision(GuardAction.WARN, step=step))

    threads = [threading.Thread(target=work, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    log.close()
    records = read(path)
    assert len(records) == 20_000
    for index in range(4):
        assert [r["step"] for r in records if r["run_id"] == f"run-{index}"] == list(range(5000))
    log.close()  # idempotent


def test_flush_waits_for_the_writer(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    log = DecisionLog(path)
    for step in range(100):
        log.record("r", decision(GuardAction.STOP, step=step))
    assert log.flush(5.0)
    assert len(read(path)) == 100  # visible to a reader (tail -f) without closing
    log.close()
    assert log.flush() is False


def test_a_record_after_close_is_not_lost(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    log = DecisionLog(path)
    log.close()
    log.record("late", decision(GuardAction.STOP))
    assert [record["run_id"] for record in read(path)] == ["late"]


def test_logger_output(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="test.loopguard.decisions"):
        with DecisionLog(logger="test.loopguard.decisions") as log:
            log.record("r", decision(GuardAction.WARN))
            log.record("r", decision(GuardAction.STOP, step=1))
    records = [record for record in caplog.records if record.name == "test.loopguard.decisions"]
    assert [record.levelno for record in records] == [logging.INFO, logging.WARNING]
    assert json.loads(records[1].getMessage())["action"] == "stop"
    assert records[1].loopguard["step"] == 1  # type: ignore[attr-defined]


def test_needs_a_destination() -> None:
    with pytest.raises(ValueError):
        DecisionLog()


def write_policy(tmp_path: Path, log_section: str) -> Path:
    path = tmp_path / "loopguard.yml"
    path.write_text(f"version: 1\n{log_section}", encoding="utf-8")
    os.chmod(path, 0o644)
    return path


def test_log_for_a_policy_resolves_the_path_next_to_the_policy(tmp_path: Path) -> None:
    path = write_policy(tmp_path, "log:\n  path: out/decisions.jsonl\n")
    policy = load_policy(path)
    log = log_for(policy)
    assert log is not None and log.path == tmp_path / "out" / "decisions.jsonl"
    assert log_for(policy) is log  # memoised
    assert log_for(load_policy("builtin:default")) is None


def test_session_decisions_reach_the_log(tmp_path: Path) -> None:
    path = write_policy(tmp_path, "extends: builtin:default\nlog:\n  path: decisions.jsonl\n")
    policy = load_policy(path)
    session = Session(policy, run_id="run-9")
    call = ToolCall("search", {"q": "flights"})
    decisions = []
    for _ in range(4):
        decisions.append(session.before_call(call))
        decisions.append(session.after_call(call, ToolResult(output=[])))
    decision_log.close_all()
    records = read(tmp_path / "decisions.jsonl")
    logged = [d for d in decisions if d.action.value != "continue" or d.verdict.kind.value != "allow"]
    assert len(records) == len(logged)  # every non-continue decision, each exactly once
    assert records, "the repeated empty search must be logged"
    assert {record["run_id"] for record in records} == {"run-9"}
    assert {record["revision"] for record in records} == {policy.revision}
    assert all(record["action"] != "continue" or record["verdict"] != "allow" for record in records)
    assert any(record["action"] == "stop" for record in records)


def test_revisions_share_one_log_and_the_latest_filter_wins(tmp_path: Path) -> None:
    first = load_policy(write_policy(tmp_path, "log:\n  path: d.jsonl\n  actions: [stop]\n"))
    second = load_policy(write_policy(tmp_path, "log:\n  path: d.jsonl\n  actions: [warn]\n  verdicts: false\n"))
    assert first.revision != second.revision
    log = log_for(first)
    assert log_for(second) is log
    assert log is not None and log.actions == frozenset({"warn"}) and log.verdicts is False
