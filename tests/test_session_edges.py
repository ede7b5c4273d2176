"""Edge cases of the session's hot path, each found by differential fuzzing of the per-step
rewrite against the earlier implementation: the decisions here are the earlier ones."""

from __future__ import annotations

import pytest

from loopguard import Guard, ToolCall, ToolResult, load_policy_text
from loopguard.observations import observe, status_code


def default_session():
    return Guard.from_policy("builtin:default").session(run_id="edges")


def signals(decision) -> list[tuple[str, str]]:
    return [(signal.detector, signal.kind) for signal in decision.signals]


def test_calls_without_results_do_not_push_out_the_history_of_calls_that_had_them() -> None:
    session = default_session()
    deploy = ToolCall("deploy", {"env": "prod"})
    for _ in range(2):
        session.before_call(deploy)
        session.after_call(deploy, ToolResult("Error: 503 service unavailable"))
    for index in range(512):  # pending calls whose results never come
        session.before_call(ToolCall("probe", {"i": index}))
    for _ in range(4):
        decision = session.before_call(deploy)
        session.after_call(deploy, ToolResult("Error: 503 service unavailable"))
    assert (decision.action.value, decision.risk, decision.verdict.kind.value) == ("replan", 0.75, "block")
    assert signals(decision) == [("no_progress", "same_failure"), ("failure", "retry_of_retryable_failure")]


def test_a_reissued_pending_call_is_the_newest_in_flight() -> None:
    session = default_session()
    fetch = ToolCall("fetch", {"url": "a"})
    session.before_call(fetch)
    for index in range(1020):
        session.before_call(ToolCall("probe", {"i": index}))
    for _ in range(3):
        session.before_call(fetch)
    for index in range(1020, 1024):
        session.before_call(ToolCall("probe", {"i": index}))
    decision = session.after_call(fetch, ToolResult("page a"))
    assert (decision.action.value, decision.risk, decision.call_index) == ("warn", 0.6, 1023)
    assert signals(decision) == [("repeat", "identical_call")]


def test_an_escalation_may_name_one_detector_twice() -> None:
    policy = load_policy_text("version: 1\nextends: builtin:default\nscoring:\n  escalate:\n    - {when: [repeat, repeat], risk: 0.99}\n")
    session = Guard.from_policy(policy).session(run_id="edges")
    call = ToolCall("a", {})
    for _ in range(2):
        session.before_call(call)
        session.after_call(call, ToolResult("x"))
    decision = session.before_call(call)
    assert (decision.action.value, decision.risk, decision.verdict.kind.value) == ("stop", 0.99, "block")


def test_thresholds_at_zero_stop_and_block_the_first_call() -> None:
    policy = load_policy_text("version: 1\nextends: builtin:default\nthresholds: {warn: 0.0, replan: 0.0, pause: 0.0, stop: 0.0}\n")
    decision = Guard.from_policy(policy).session(run_id="edges").before_call(ToolCall("a", {}))
    assert (decision.action.value, decision.risk, decision.verdict.kind.value) == ("stop", 0.0, "block")
    assert decision.verdict.payload()["type"] == "guard_stop"


def test_a_status_code_on_the_line_after_its_status_word() -> None:
    assert status_code("status: \r\n404 not found") == 404
    assert status_code("http/1.1\r\n\r\n503") == 503
    assert status_code("status:  \r\n 404") is None  # more than three non-word characters before the line break
    failure = observe("Status: \r\n404 Not Found")
    assert (failure.error, failure.failure_class) == (True, "permanent")


def test_a_throwaway_value_with_a_trailing_newline_is_still_throwaway() -> None:
    session = default_session()
    for value in ["1234567890\n", "1234567891\n", "1234567892\n"]:
        decision = session.before_call(ToolCall("lookup", {"id": value}))
    assert (decision.action.value, decision.risk) == ("warn", 0.6)
    assert signals(decision) == [("near_duplicate", "reworded_call")]


@pytest.mark.parametrize("space", ["\u00a0", "\u3000", "\x1c", "\x85", "  \n "])
def test_outputs_that_differ_only_in_whitespace_are_the_same(space: str) -> None:
    assert observe("found 3 files").same_as(observe(f"found{space}3 files"))


@pytest.mark.parametrize("text", ["[]" + " " * 1023, "no results" + "\n" * 1100, "  \n\t "])
def test_blank_padded_empty_outputs_are_empty(text: str) -> None:
    assert observe(text).empty is True


@pytest.mark.parametrize(
    "arguments",
    [{"offset": "①"}, {"page": "²"}, {"page": 2**1024 - 1}, {"view_range": [0, 2**1024 - 1]}],
    ids=["circled-digit", "superscript", "huge-page", "huge-range"],
)
def test_odd_range_values_never_raise(arguments: dict) -> None:
    session = default_session()
    call = ToolCall("read", arguments)
    assert session.before_call(call).action.value == "continue"
    assert session.after_call(call, ToolResult("text")).action.value == "continue"


def test_an_unhashable_call_id_is_used_as_text() -> None:
    session = default_session()
    call = ToolCall("read", {}, id=["x"])  # type: ignore[arg-type]
    assert session.before_call(call).action.value == "continue"
    decision = session.after_call(call, ToolResult("text"))
    assert (decision.action.value, decision.call_index) == ("continue", 0)


def test_a_new_no_progress_memory_applies_to_tools_already_seen() -> None:
    from loopguard import ToolCall, ToolResult, load_policy_text
    from loopguard.session import Session

    def policy(memory: int):
        return load_policy_text(f"version: 1\nextends: builtin:default\ndetectors:\n  no_progress: {{memory: {memory}}}\n")

    current = {"policy": policy(64)}
    session = Session(lambda: current["policy"], run_id="t")  # a policy source read on every step

    def lookup(index: int) -> str:
        call = ToolCall("lookup", {"id": index})
        session.before_call(call)
        decision = session.after_call(call, ToolResult(f"{'xyz' * index} record"))  # one skeleton per output
        return [signal.kind for signal in decision.signals if signal.detector == "no_progress"]

    for index in range(1, 9):
        lookup(index)
    current["policy"] = policy(4)  # the tool's store keeps only the 4 newest outputs now
    lookup(9)
    # Outputs 1 and 2 were forgotten, so reading them again is new information; with the
    # old memory of 64 the second of them would make a no-progress streak.
    assert lookup(1) + lookup(2) == []


def test_paging_forward_is_context_and_reading_a_page_again_is_a_signal() -> None:
    """Pages read once per signature's shape: the third read of page 2 (as 2.0) still counts."""
    session = default_session()
    seen = []
    for index, page in enumerate([1, 2, 3, 1, 2, 2.0]):
        call = ToolCall("list_orders", {"status": "open", "page": page}, id=f"c{index}")
        decision = session.before_call(call)
        session.after_call(call, ToolResult(f"orders {page * 10}-{page * 10 + 9}"))
        seen.append((decision.action.value, decision.risk, signals(decision)))
    assert seen == [
        ("continue", 0.0, []),
        ("continue", 0.0, []),  # paging on from pages with news: no signal
        ("continue", 0.0, []),
        ("continue", 0.0, []),
        ("warn", 0.6, [("near_duplicate", "reread_range")]),
        ("stop", 0.95, [("no_progress", "reread"), ("repeat", "interleaved_repeat"), ("near_duplicate", "reread_range")]),
    ]


def test_a_lone_signal_is_combined_like_several() -> None:
    """The one-signal shortcut of risk_of rounds as the general noisy_or product does."""
    from loopguard.decisions import Signal

    policy = load_policy_text("version: 1\nextends: builtin:default\nscoring: {combine: noisy_or}\n")
    lone = Signal("repeat", "identical_call", 0.3, "m")
    assert policy.risk_of((lone,)) == 0.30000000000000004  # 1 - (1 - 0.3), not 0.3
    assert policy.risk_of((lone, Signal("cycle", "cycle_of_2", 0.0, "m"))) == policy.risk_of((lone,))


def test_identical_calls_in_flight_read_their_arguments_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch of identical calls (no result yet, so no shared statistics) is read once."""
    import loopguard.detectors.near_duplicate as near_duplicate

    reads = []
    original = near_duplicate.shape_of
    monkeypatch.setattr(near_duplicate, "shape_of", lambda record, given=None: reads.append(record.index) or original(record, given))
    session = default_session()
    calls = [ToolCall("search", {"query": "flights to lisbon in may", "page": 1}, id=f"c{index}") for index in range(8)]
    session.before_batch(calls)
    for call in calls:
        session.after_call(call, ToolResult("3 flights"))
    session.before_call(ToolCall("search", {"query": "flights to lisbon in may", "page": 1}, id="again"))
    assert reads == [0]


@pytest.mark.parametrize(
    "outputs, advancing, signals_on_third_call",
    [
        (["stored record 7f02", "stored record 7f03"], False, [("repeat", "identical_call")]),  # equal once ids are normalised
        (["page 1 of results", "page 2 of results"], True, []),
    ],
)
def test_advancing_is_compared_when_first_read(outputs: list[str], advancing: bool, signals_on_third_call: list) -> None:
    """Outputs that share a skeleton are normalised only when repeat or cycle ask."""
    from loopguard.signature import signature_of

    session = default_session()
    call = ToolCall("lookup", {"id": 1})
    for output in outputs:
        session.before_call(call)
        session.after_call(call, ToolResult(output))
    stats = session._memory.signatures.get(signature_of("lookup", {"id": 1}).key)
    assert stats.advancing_between is not None and stats.last.text == outputs[1]  # not compared yet
    assert signals(session.before_call(call)) == signals_on_third_call  # the repeat detector reads it
    assert (stats.advancing_between, stats.advancing_value, stats.advancing) == (None, advancing, advancing)


def test_a_signature_in_use_keeps_its_history_through_many_other_calls() -> None:
    # A poll whose output keeps advancing, every third call, between 1,200 distinct calls:
    # its history must survive the run memory's bound (512 signatures), or the poll looks
    # like a fresh repeated call and draws a false repeat warning.
    session = default_session()
    poll = ToolCall("job_status", {"job": "build-77"})
    actions = set()
    for index in range(600):
        for offset in range(2):
            call = ToolCall("get_record", {"id": 2 * index + offset})
            actions.add(session.before_call(call).action.value)
            actions.add(session.after_call(call, ToolResult(f"record {2 * index + offset}: active")).action.value)
        actions.add(session.before_call(poll).action.value)
        actions.add(session.after_call(poll, ToolResult(f"progress {index % 100}% of step {index}")).action.value)
    assert actions == {"continue"}


def test_a_call_name_whose_text_reads_the_session_does_not_deadlock() -> None:
    # Converting an odd tool name runs the caller's __str__: never under the session's lock.
    session = default_session()

    class Name:
        def __str__(self) -> str:
            assert session.decisions is not None  # takes the session's lock
            return "search"

    decision = session.after_call(ToolCall(Name(), {"q": 1}, id="never-seen"), ToolResult("ok"))
    assert (decision.tool, decision.action.value) == ("search", "continue")


def test_rules_read_each_calls_own_arguments() -> None:
    # Calls whose arguments differ only in key order are one signature, but a rule reads the
    # arguments of the call it decides, as that call wrote them.
    policy = load_policy_text(
        "version: 1\nrules:\n  - {id: a-first, tool: t, match: \"keys(arguments)[0] == 'a'\", verdict: block, message: m}\n"
    )
    session = Guard(policy).session(run_id="order")
    first = ToolCall("t", {"b": 1, "a": 2}, id="1")
    assert session.before_call(first).verdict.kind.value == "allow"
    session.after_call(first, ToolResult("ok"))
    assert session.before_call(ToolCall("t", {"a": 2, "b": 1}, id="2")).verdict.kind.value == "block"


def test_a_long_run_does_not_keep_the_arguments_of_past_calls() -> None:
    # The run memory keeps 512 signatures' statistics, never their arguments: 600 calls with
    # 100 KB of arguments each leave a small session behind.
    import tracemalloc

    session = default_session()
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        for index in range(600):
            call = ToolCall("embed", {"documents": [f"{index:06d}-{part}" + "x" * 1990 for part in range(50)]}, id=str(index))
            session.before_call(call)
            session.after_call(call, ToolResult(f"embedded {index}"))
            del call
        held = tracemalloc.get_traced_memory()[0] - baseline
    finally:
        tracemalloc.stop()
    assert held < 5_000_000, held


def test_condition_roots_have_exactly_the_attributes_check_knows() -> None:
    # `loopguard check` rejects an attribute outside CONDITION_ATTRIBUTES; the session must
    # build every one of them, and no other, or a valid condition would fail at run time.
    from loopguard.detectors.base import CallRecord, SignatureStats
    from loopguard.policy.expressions import CONDITION_ATTRIBUTES
    from loopguard.signature import signature_of

    session = Guard.from_policy("builtin:default").session()
    call = ToolCall("search", {"q": "x"}, id="c1")
    record = CallRecord(0, 0, signature_of("search", {"q": "x"}), SignatureStats())
    built = {root: set(session._condition_root(root, call, record, "other")) for root in CONDITION_ATTRIBUTES}
    assert built == {root: set(attributes) for root, attributes in CONDITION_ATTRIBUTES.items()}
