"""loopguard.adapters.plain: GuardedTools and @guarded with real functions and counters."""

from __future__ import annotations

from typing import Any

import pytest

from loopguard import Guard, ToolCall, load_policy_text
from loopguard.adapters.plain import GuardedTools, guarded
from loopguard.errors import LoopGuardInterrupt

POLICY = """
version: 1
extends: builtin:default
mode: {mode}
rules:
  - id: weather-cached
    tool: get_weather
    verdict: answer
    result: {{forecast: sunny}}
  - id: deletes-need-approval
    tool: delete_file
    verdict: cancel
    reason: ask first
  - id: shell-disabled
    tool: shell
    verdict: block
    message: no shell
  - id: legacy-gone
    tool: legacy
    verdict: unavailable
    message: retired
  - id: one-email
    tool: send_email
    verdict: budget
    limit: 1
    message: one email per run
"""

STOP_POLICY = """
version: 1
extends: builtin:default
mode: {mode}
budgets:
  tool_calls: {{limit: 1, scope: run, on_exceed: stop}}
"""


def make(policy: str = POLICY, mode: str = "enforce") -> tuple[GuardedTools, dict[str, int]]:
    counts: dict[str, int] = {}

    def counted(name: str, value: Any = "ok") -> Any:
        def run(**kwargs: Any) -> Any:
            counts[name] = counts.get(name, 0) + 1
            if isinstance(value, Exception):
                raise value
            return value

        return run

    names = ["get_weather", "delete_file", "shell", "legacy", "send_email", "search"]
    table = {name: counted(name, f"{name} ran") for name in names}
    table["explode"] = counted("explode", ValueError("bad input"))
    session = Guard.from_policy(load_policy_text(policy.format(mode=mode))).session(run_id="t")
    return GuardedTools(session, table), counts


@pytest.mark.parametrize(
    ("name", "payload"),
    [
        ("get_weather", {"forecast": "sunny"}),
        ("delete_file", {"cancelled": True, "reason": "ask first"}),
        ("shell", {"error": True, "type": "policy_block", "message": "no shell"}),
        ("legacy", {"error": True, "type": "tool_unavailable", "message": "retired"}),
    ],
)
def test_non_allow_verdicts_return_the_payload_without_running(name: str, payload: Any) -> None:
    tools, counts = make()
    assert tools.call(name, {"x": 1}) == payload
    assert counts.get(name, 0) == 0


def test_allowed_calls_run_and_are_recorded() -> None:
    tools, counts = make()
    outcome = tools.run_call("search", {"q": "a"})
    assert outcome.result == "search ran" and outcome.ran and not outcome.error
    assert outcome.after is not None and outcome.after.phase == "after_call"
    assert counts["search"] == 1
    assert tools.session.tool_calls == 1


def test_budget_rule() -> None:
    tools, counts = make()
    assert tools.call("send_email", {"to": "a"}) == "send_email ran"
    assert tools.call("send_email", {"to": "b"}) == {"error": True, "type": "budget_spent", "message": "one email per run"}
    assert counts["send_email"] == 1


def test_exceptions_become_error_results() -> None:
    tools, counts = make()
    outcome = tools.run_call("explode", {"x": 1})
    assert outcome.result == {"error": True, "type": "tool_error", "message": "ValueError: bad input"}
    assert outcome.error and outcome.ran and counts["explode"] == 1
    unknown = tools.run_call("nope", {})
    assert unknown.result["type"] == "unknown_tool" and unknown.error and not unknown.ran


def test_a_tool_that_raises_again_is_a_failure_not_a_refusal() -> None:
    tools, _ = make()
    outcomes = [tools.run_call("explode", {"x": 1}) for _ in range(2)]
    assert [signal.kind for signal in outcomes[1].after.signals if signal.detector == "failure"] == ["repeated_deterministic_failure"]
    assert outcomes[1].after.signals[-1].message == 'explode({"x":1}) failed 2 times with the same deterministic error: {"error":true,"message":"ValueError: bad input","type":"tool_error"}'


def test_repeated_failure_is_blocked_on_the_third_attempt() -> None:
    runs = {"n": 0}

    def book(amount: int) -> str:
        runs["n"] += 1
        return "Error: payment amount does not add up"

    tools = GuardedTools(Guard.from_policy().session(), {"book": book})
    results = [tools.call("book", {"amount": 10}) for _ in range(3)]
    assert results[:2] == ["Error: payment amount does not add up"] * 2
    assert results[2]["type"] == "guard_error"
    assert runs["n"] == 2


def test_batch_one_blocked_others_run() -> None:
    tools, counts = make()
    outcomes = tools.batch([("search", {"q": "a"}), ("shell", {"cmd": "ls"}), ToolCall("search", {"q": "b"})])
    assert [o.ran for o in outcomes] == [True, False, True]
    assert outcomes[1].result["type"] == "policy_block"
    assert counts == {"search": 2}


def test_stop_raises_in_enforce_mode() -> None:
    tools, counts = make(STOP_POLICY)
    tools.call("search", {"q": "a"})
    with pytest.raises(LoopGuardInterrupt) as caught:
        tools.call("search", {"q": "b"})
    assert caught.value.decision.action.value == "stop"
    assert counts["search"] == 1


def test_batch_stop_raises_before_any_call_runs() -> None:
    tools, counts = make(STOP_POLICY)
    with pytest.raises(LoopGuardInterrupt):
        tools.batch([("search", {"q": "a"}), ("search", {"q": "b"})])
    assert counts == {}


def test_observe_mode_runs_everything_and_records_the_same_verdicts() -> None:
    verdicts = {}
    for mode in ("enforce", "observe"):
        tools, counts = make(mode=mode)
        for name in ("get_weather", "delete_file", "shell", "legacy", "send_email", "send_email"):
            tools.call(name, {"to": name})
        verdicts[mode] = [(d.tool, d.verdict.kind.value) for d in tools.session.decisions if d.phase == "before_call"]
        if mode == "observe":
            assert counts == {"get_weather": 1, "delete_file": 1, "shell": 1, "legacy": 1, "send_email": 2}
    assert verdicts["observe"] == verdicts["enforce"]
    tools, counts = make(STOP_POLICY, mode="observe")
    for q in "abc":
        tools.call("search", {"q": q})  # no interrupt in observe mode
    assert counts["search"] == 3 and tools.session.stopped


def test_guarded_decorator() -> None:
    session = Guard.from_policy(load_policy_text(POLICY.format(mode="enforce"))).session()
    calls = {"n": 0}

    @guarded(session)
    def shell(cmd: str) -> str:
        """Run a command."""
        calls["n"] += 1
        return "ran"

    @guarded(session, name="search")
    def lookup(q: str) -> str:
        return f"found {q}"

    assert shell(cmd="ls")["type"] == "policy_block" and calls["n"] == 0
    assert shell.__doc__ == "Run a command."
    assert lookup(q="x") == "found x"
    with pytest.raises(TypeError):
        lookup("x")
