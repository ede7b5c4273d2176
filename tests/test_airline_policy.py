"""policies/examples/airline.yml: it loads, its policy tests pass, and on the real tau-bench
airline trajectories it never stops a successful run and intervenes in exactly the
successful runs measured when it was written (see the policy's header comment)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from loopguard import Session, ToolCall
from loopguard.policy import load_policy

REPO = Path(__file__).resolve().parents[1]
POLICY = "policies/examples/airline.yml"
TESTS = "policies/tests/airline.yml"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
TAU = SHARED / "tau-bench" / "gpt-4o-airline.json"

SEVERITY = ["continue", "warn", "replan", "pause", "stop"]

#: Measured when the policy was written (see its header). Successful runs (reward 1.0) whose
#: writes are cancelled: each issued a booking write without an explicit yes in the latest
#: user message.
CANCELLED_SUCCESSFUL_RUNS = {"task2-trial2", "task13-trial2", "task20-trial1", "task20-trial3"}
CANCELLED_SUCCESSFUL_CALLS = 9
#: The one successful run that reaches replan, as with builtin:default (a failed write retried).
REPLAN_SUCCESSFUL_RUNS = {"task13-trial2"}


@pytest.fixture(autouse=True)
def _no_env_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOOPGUARD_PROFILE", raising=False)


def loopguard(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "loopguard", *args], cwd=REPO, capture_output=True, text=True, timeout=300)


def test_policy_checks_with_all_profiles() -> None:
    result = loopguard("check", POLICY, "--all-profiles")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "profiles: dev, prod" in result.stdout


def test_policy_tests_pass() -> None:
    result = loopguard("test", TESTS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " failed" not in result.stdout.splitlines()[-1]


def test_dev_profile_observes_and_prod_enforces() -> None:
    dev = load_policy(REPO / POLICY, profile="dev")
    assert dev.mode == "observe"
    assert load_policy(REPO / POLICY).mode == "enforce"
    assert load_policy(REPO / POLICY, profile="prod").mode == "enforce"
    session = Session(dev, run_id="dev")
    session.observe_user_message("Please cancel reservation JG7FMM.")
    decision = session.before_call(ToolCall("cancel_reservation", {"reservation_id": "JG7FMM"}, id="c1"))
    assert decision.mode == "observe"
    assert decision.verdict.kind.value == "cancel" and decision.rule == "booking-writes-need-confirmation"


def replay(*extra: str) -> tuple[dict[str, float], list[dict]]:
    rewards = {f"task{run['task_id']}-trial{run['trial']}": run["reward"] for run in json.loads(TAU.read_text(encoding="utf-8"))}
    result = loopguard("replay", str(TAU), "--policy", POLICY, "--json", *extra)
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(result.stdout)
    assert report["summary"]["runs"] == 200 and report["summary"]["errors"] == 0
    return rewards, report["runs"]


@pytest.mark.shared_data
@pytest.mark.parametrize("profile", [None, "prod"])
def test_tau_bench_successful_runs_are_left_alone(profile: str | None) -> None:
    rewards, runs = replay(*(["--profile", profile] if profile else []))
    successful = [run for run in runs if rewards[run["run_id"]] == 1.0]
    assert len(successful) == 84

    assert not [run["run_id"] for run in successful if run["verdict"] == "stop"]
    assert {run["run_id"] for run in successful if SEVERITY.index(run["verdict"]) >= SEVERITY.index("replan")} == REPLAN_SUCCESSFUL_RUNS

    refused = [
        (run["run_id"], decision)
        for run in successful
        for decision in run["decisions"]
        if decision["phase"] == "before_call" and decision["verdict"] != "allow"
    ]
    assert {run_id for run_id, _ in refused} == CANCELLED_SUCCESSFUL_RUNS
    cancels = [(run_id, decision) for run_id, decision in refused if decision["verdict"] == "cancel"]
    assert len(cancels) == CANCELLED_SUCCESSFUL_CALLS
    assert {decision["rule"] for _, decision in cancels} == {"booking-writes-need-confirmation"}
    # The one success that retries a failed write verbatim: as a write (kind: write) its
    # identical retry is blocked before it runs, not only flagged after its result.
    blocks = [(run_id, decision["step"], decision["rule"]) for run_id, decision in refused if decision["verdict"] != "cancel"]
    assert blocks == [("task13-trial2", 6, "detector:failure")]


@pytest.mark.shared_data
def test_tau_bench_failed_runs_are_caught() -> None:
    """The same rules do fire on failed runs: unconfirmed writes and search sprees."""
    rewards, runs = replay()
    failed = [run for run in runs if rewards[run["run_id"]] == 0.0]
    rules: dict[str, set[str]] = {}
    for run in failed:
        for decision in run["decisions"]:
            if decision["verdict"] != "allow":
                rules.setdefault(decision["rule"], set()).add(run["run_id"])
    assert len(rules["booking-writes-need-confirmation"]) == 23
    assert len(rules["search-quota"]) == 6
