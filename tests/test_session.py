"""Session behaviour a user sees: rules, budgets, refused calls, stops, observe mode, swaps."""

from __future__ import annotations

import pytest

from loopguard import Guard, ToolCall, ToolResult, load_policy_text
from loopguard.policy.store import PolicyStore

RULES = """
version: 1
extends: builtin:default
rules:
  - {id: sql-off, tool: run_sql, verdict: block, type: sql_disabled, message: run_sql is disabled here}
  - {id: deletes, tool: "delete_*", verdict: cancel, reason: ask the user first}
  - {id: deletes-blocked, tool: delete_everything, verdict: block, message: never}
  - {id: ping, tool: search, match: "arguments.q == 'ping'", verdict: answer, result: pong}
  - {id: emails, tool: send_email, verdict: budget, limit: 2}
"""


def session_for(text: str = RULES, **options):
    return Guard.from_policy(load_policy_text(text)).session(run_id="t", **options)


def run(session, name: str, arguments: dict, output="ok"):
    call = ToolCall(name, arguments, id=f"{name}-{session.tool_calls}")
    decision = session.before_call(call)
    if decision.verdict.runs_tool:
        session.after_call(call, ToolResult(output))
    else:
        session.after_call(call, ToolResult(decision.verdict.payload()))
    return decision


def test_deny_overrides_and_payloads() -> None:
    session = session_for()
    assert run(session, "delete_everything", {}).verdict.payload() == {"error": True, "type": "policy_block", "message": "never"}
    assert run(session, "delete_file", {"p": "a"}).verdict.payload() == {"cancelled": True, "reason": "ask the user first"}
    answered = run(session, "search", {"q": "ping"})
    assert (answered.verdict.kind.value, answered.verdict.payload(), answered.rule) == ("answer", "pong", "ping")
    assert run(session, "search", {"q": "pong"}).verdict.kind.value == "allow"


def test_a_rule_budget_allows_its_limit_then_refuses() -> None:
    session = session_for()
    verdicts = [run(session, "send_email", {"to": f"user{i}@example.test"}, output=f"sent to user{i}").verdict for i in range(3)]
    assert [v.kind.value for v in verdicts] == ["allow", "allow", "budget_spent"]
    assert verdicts[2].payload() == {"error": True, "type": "budget_spent", "message": "the budget of rule 'emails' is spent (2 calls per run)"}


def test_a_refused_call_asked_again_keeps_the_rule_message_then_stops() -> None:
    session = session_for()
    first, second, third = (run(session, "run_sql", {"q": "select 1"}) for _ in range(3))
    assert first.verdict.payload() == {"error": True, "type": "sql_disabled", "message": "run_sql is disabled here"}
    assert second.verdict.payload() == first.verdict.payload()  # a tie keeps the rule's own verdict
    assert third.action.value == "stop" and third.verdict.rule == "sql-off"
    assert 'run_sql({"q":"select 1"}) was already refused 2 times; asking again will be refused again' in third.reasons


def test_a_write_refused_once_says_once_though_it_escalates_as_if_twice() -> None:
    session = session_for("version: 1\nextends: builtin:default\ntools:\n  refund_order: {kind: write}\nrules:\n  - id: ask\n    tool: refund_order\n    verdict: cancel\n    reason: ask the user first\n")
    first, second = (run(session, "refund_order", {"order": 7}) for _ in range(2))
    assert (first.verdict.kind.value, second.action.value) == ("cancel", "stop")
    assert 'refund_order({"order":7}) was already refused once; asking again will be refused again' in second.reasons


def test_guard_payloads_count_as_refusals_not_failures() -> None:
    session = session_for("version: 1\nextends: builtin:default\n")
    call = ToolCall("book", {"id": 1})
    for _ in range(2):
        session.before_call(call)
        session.after_call(call, ToolResult({"error": True, "type": "guard_error", "message": "loopguard blocked this call"}))
    decision = session.before_call(call)
    assert decision.action.value == "stop"
    assert 'book({"id":1}) was already refused 2 times; asking again will be refused again' in decision.reasons


def test_a_stopped_run_stays_stopped_unless_asked_not_to() -> None:
    for end_on_stop, expected in ((True, "block"), (False, "allow")):
        session = session_for(end_on_stop=end_on_stop)
        for _ in range(2):
            run(session, "get_invoice", {"id": 3}, output="403 Forbidden")
        assert session.stopped
        later = run(session, "list_files", {"dir": "/tmp"})
        assert later.verdict.kind.value == expected
        if end_on_stop:
            assert later.verdict.payload()["type"] == "guard_stop"
            assert "the run was stopped at step 3" in later.verdict.payload()["message"]


def test_run_budgets_count_calls_steps_tokens_and_cost() -> None:
    policy = """
version: 1
budgets:
  tool_calls: {limit: 3}
  cost_usd: {limit: 0.01, on_exceed: stop}
pricing:
  "gpt-*": {input: 2.5, output: 10}
"""
    from loopguard import ModelUsage

    session = session_for(policy)
    assert [run(session, "t", {"i": i}, output=str(i)).verdict.kind.value for i in range(4)] == ["allow"] * 3 + ["budget_spent"]
    session = session_for(policy)
    usage = session.observe_model_call(ModelUsage(input_tokens=2000, output_tokens=600, model="gpt-4o"))
    assert round(session.run.cost_usd, 6) == 0.011 and session.run.tokens == 2600
    assert (usage.action.value, usage.step) == ("stop", 0)  # (a model call before any step: step 0, not -1)
    assert usage.reasons == ["the run budget 'cost_usd' is spent (0.011 of 0.01 USD)"]  # as the refusal words it
    refused = run(session, "t", {"i": 0})
    assert refused.verdict.payload() == {"error": True, "type": "budget_spent", "message": "the run budget 'cost_usd' is spent (0.011 of 0.01 USD)"}


def test_observe_mode_decides_the_same_and_counts_every_call() -> None:
    enforce = session_for(RULES)
    observe = session_for(RULES + "mode: observe\n")
    for session in (enforce, observe):
        for i in range(3):
            call = ToolCall("send_email", {"to": f"u{i}"}, id=str(i))
            session.before_call(call)
            session.after_call(call, ToolResult(f"sent {i}"))
    assert [(d.action, d.verdict.kind) for d in enforce.decisions] == [(d.action, d.verdict.kind) for d in observe.decisions]
    assert {d.mode for d in observe.decisions} == {"observe"}
    assert (enforce.run.tool_calls, observe.run.tool_calls) == (2, 3)
    # The third email's verdict refuses it in both; only the enforcing session keeps it from running.
    pending = [d for d in enforce.decisions if d.phase == "before_call"], [d for d in observe.decisions if d.phase == "before_call"]
    assert [d.runs_tool for d in pending[0]] == [True, True, False]
    assert [d.runs_tool for d in pending[1]] == [True, True, True]
    assert [d.verdict.runs_tool for d in pending[1]] == [True, True, False]


def test_sessions_keep_their_state_across_a_swap(tmp_path) -> None:
    path = tmp_path / "loopguard.yml"
    path.write_text("version: 1\nextends: builtin:default\n")
    path.chmod(0o644)
    store = PolicyStore(path)
    session = Guard(store).session()
    for _ in range(2):
        run(session, "lookup", {"sku": "A"}, output="no results")
    first = store.current.revision
    path.write_text("version: 1\nextends: builtin:default\nthresholds: {warn: 0.4, replan: 0.6, pause: 0.8, stop: 0.9}\n")
    assert store.reload() is True and store.current.revision != first
    decision = run(session, "lookup", {"sku": "A"}, output="no results")
    assert decision.revision == store.current.revision
    assert decision.action.value == "stop" and session.run.tool_calls == 2  # windows and counters kept


@pytest.mark.parametrize("arguments", [{"x": float("nan")}, {1: {2, 3}}, "not json", None, ["a", {"b": b"c"}], {"deep": [[[[[[[[]]]]]]]]}])
def test_odd_arguments_and_outputs_never_crash_a_decision(arguments) -> None:
    session = session_for()

    class Unprintable:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    call = ToolCall("odd", arguments)
    assert session.before_call(call).verdict.kind.value == "allow"
    assert session.after_call(call, ToolResult(Unprintable())).action.value == "continue"


def test_odd_call_objects_names_results_and_usage() -> None:
    from loopguard import ModelUsage

    session = session_for()

    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("no")

        __repr__ = __str__

    assert session.before_call({"name": "search", "args": {"q": "x"}, "id": "c1"}).verdict.kind.value == "allow"
    assert session.after_call({"name": "search", "args": {"q": "x"}, "id": "c1"}, "3 results").action.value == "continue"
    assert session.before_call(ToolCall(None, {})).tool == "None"  # type: ignore[arg-type]
    assert session.before_call(ToolCall(Unprintable(), {"n": 10**5000})).tool == "<tool>"  # type: ignore[arg-type]
    session.observe_agent_message(Unprintable(), Unprintable())
    session.observe_user_message(Unprintable())
    assert session.observe_model_call(ModelUsage(input_tokens="x", output_tokens=-5)).action.value == "continue"  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="a tool call must be a loopguard.ToolCall or a mapping with 'name', got NoneType"):
        session.before_call(None)  # type: ignore[arg-type]


def test_acknowledgements_confirm_new_calls_but_not_a_repeated_round() -> None:
    """Five emails to five people, each "Email sent.", are healthy; sending all five again
    is no progress even though each earlier result has left the skeleton's bucket."""
    session = Guard.from_policy("builtin:default").session(run_id="t")
    actions = []
    for target in "abcde" * 3:
        call = ToolCall("send_email", {"to": f"{target}@example.com"})
        session.before_call(call)
        actions.append(session.after_call(call, ToolResult("Email sent.")).action.value)
    assert actions == ["continue"] * 6 + ["warn"] * 4 + ["stop"] * 5


def test_acknowledgements_that_alternate_across_rounds_are_still_stale() -> None:
    """Five items toggled again and again ("Item added." / "Item removed."): every round
    after the first repeats calls that have had results, so it brings nothing new."""
    session = Guard.from_policy("builtin:default").session(run_id="t")
    actions = []
    for round_index in range(3):
        for item in range(5):
            call = ToolCall("toggle_item", {"item": f"i{item}"})
            session.before_call(call)
            output = "Item added." if round_index % 2 == 0 else "Item removed."
            actions.append(session.after_call(call, ToolResult(output)).action.value)
    assert actions == ["continue"] * 7 + ["warn"] * 8


def test_a_batchs_results_are_judged_alike_in_any_order() -> None:
    """Parallel calls come back in the order they finish: an empty answer and news from one
    batch leave the run as it was, whichever arrives first (the LangGraph ToolNode runs
    them in threads)."""
    outcomes = []
    for order in ((0, 1), (1, 0)):
        session = session_for("version: 1\nextends: builtin:default\n")
        search, weather = ToolCall("search", {"q": "flights"}, id="s"), ToolCall("get_weather", {"city": "Oslo"}, id="w")
        answers = [ToolResult("no results"), ToolResult('{"forecast": "sunny"}')]
        session.before_batch([search, weather])
        for index in order:
            session.after_call((search, weather)[index], answers[index])
        later = []
        for number in range(2):
            call = ToolCall("search", {"q": "flights"}, id=f"s{number}")
            later.append(session.before_call(call).action.value)
            later.append(session.after_call(call, ToolResult("no results")).action.value)
        outcomes.append(later)
    assert outcomes[0] == outcomes[1] == ["continue", "continue", "stop", "stop"]
