"""Kinds from blind round 13: SQL paging past the end, a client's own request stamp, handoff
circles through a pending status and through delegate_* tools, request validation errors
retried with times written another way, and a plan restated in participles."""

from __future__ import annotations

import json
from pathlib import Path

from test_detector_kinds import first, policy, replay, signals_at, step  # noqa: F401  (policy is a fixture)

from loopguard.detectors.near_duplicate import _announces, _is_identity, _sql_range, same_target
from loopguard.observations import classify_failure, observe
from loopguard.policy import load_policy

HEADER = " mls_id  |      address       | list_price\n---------+--------------------+-----------\n"


def _page(rows: int) -> str:
    lines = "".join(f" {4410000 + row} | {row} Barton Springs Rd | {300000 + row * 1000}\n" for row in range(rows))
    return f"{HEADER}{lines}({rows} rows)\n\nTime: {12 + rows / 10:.3f} ms"


def _listing_query(offset: int) -> dict[str, str]:
    return {"database": "mls", "sql": f"SELECT mls_id, address, list_price FROM listings WHERE zip = '78704' ORDER BY mls_id LIMIT 50 OFFSET {offset};"}


def test_a_query_paging_past_the_end_with_limit_and_offset(policy, tmp_path: Path) -> None:
    rows = [50, 50, 37, 0, 0, 0, 0]
    steps = [step("sql_query", _listing_query(50 * index), _page(count)) for index, count in enumerate(rows)]
    report = replay(policy, tmp_path, steps)
    assert first(report) == (4, "replan")  # the second empty page in a row
    assert signals_at(report, 4) == {"near_duplicate/pagination", "no_progress/empty_result"}
    # Stopping at the first empty page is healthy paging.
    assert first(replay(policy, tmp_path, steps[:4])) is None


def test_sql_paging_clauses_are_ranges() -> None:
    assert _sql_range("SELECT * FROM t LIMIT 50 OFFSET 100") == ((100.0, 150.0), "SELECT * FROM t <range>")
    assert _sql_range("select * from t offset 20 rows fetch next 10 rows only") == ((20.0, 30.0), "select * from t <range> rows only")
    assert _sql_range("SELECT * FROM t LIMIT 40, 20") == ((40.0, 60.0), "SELECT * FROM t <range>")
    assert _sql_range("SELECT * FROM t LIMIT 10") is None  # no position: every call reads the same rows
    assert _sql_range("SELECT * FROM t LIMIT 0 OFFSET 10") is None


def test_a_timing_line_after_zero_rows_is_still_an_empty_answer() -> None:
    assert observe(f"{HEADER}(0 rows)\n\nTime: 12.118 ms").empty
    assert observe(f"{HEADER}(0 rows)").empty
    assert not observe(_page(3)).empty
    assert not observe(f"{HEADER}(0 rows)\n(2 rows)\n\nTime: 3.2 ms").empty  # (two row counts: a batch of queries)


def test_a_search_repeated_with_a_fresh_request_id_and_client_stamp(policy, tmp_path: Path) -> None:
    def search(number: int) -> dict[str, object]:
        request_id = f"8c1f2e4a-0b7d-4c55-9e3a-51d0a7b2c9{number:02d}"
        arguments = {"base": "ORD", "position": "FO", "fleet": "B737", "request_id": request_id, "client_ts": f"2024-07-09T11:42:{number * 6:02d}Z"}
        answer = {"request_id": request_id, "generated_at": f"2024-07-09T11:42:{number * 6:02d}.411Z", "results": [], "excluded": {"in_required_rest": 3, "already_assigned": 5}, "message": "No legal reserve found for criteria"}
        return step("search_reserve_crew", arguments, answer)

    report = replay(policy, tmp_path, [search(number) for number in range(5)])
    assert first(report) == (2, "replan")
    assert "no_progress/same_output" in signals_at(report, 2)


def test_a_clients_own_stamp_is_a_request_identity() -> None:
    assert [_is_identity(key) for key in ("client_ts", "clientTimestamp", "request_ts", "x_request_timestamp")] == [True] * 4
    # A time that says what is asked for is no identity.
    assert [_is_identity(key) for key in ("timestamp", "ts", "event_ts", "request_time", "client_id")] == [False] * 5


def test_a_handoff_circle_through_a_status_that_stays_on_hold(policy, tmp_path: Path) -> None:
    status = {"container": "MSCU7301452", "status": "HOLD", "holds": [{"type": "CBP_EXAM", "note": "Exam to be scheduled by terminal"}]}
    lap = [
        step("handoff", {"to": "customs_broker", "task": "Get customs release for MSCU7301452"}, "control transferred to customs_broker", agent="coordinator"),
        step("get_customs_status", {"container": "MSCU7301452"}, status, agent="customs_broker", caller="coordinator"),
        step("handoff", {"to": "yard_ops", "task": "Schedule the exam move"}, "control transferred to yard_ops", agent="customs_broker"),
        step("handoff", {"to": "coordinator", "task": "Exam moves need release authorization"}, "control transferred to coordinator", agent="yard_ops"),
    ]
    report = replay(policy, tmp_path, lap * 3)
    # Control went around twice since the first status read, the last news.
    assert first(report) == (8, "stop")
    assert "handoff/handoff_cycle" in signals_at(report, 8)
    # A status that moves on between the handoffs is work done.
    moving = [dict(entry) for entry in lap * 3]
    for lap_number, index in enumerate((1, 5, 9)):
        moving[index]["output"] = {**status, "status": ("HOLD", "EXAM_SCHEDULED", "RELEASED")[lap_number]}
    assert first(replay(policy, tmp_path, moving)) is None


def test_delegate_tools_hand_off_to_the_agent_they_name(policy, tmp_path: Path) -> None:
    circle = [("front_desk", "records_clerk"), ("records_clerk", "pharmacy"), ("pharmacy", "vet_review"), ("vet_review", "front_desk")]
    steps = [
        step("delegate_task", {"to": target, "task": f"Carprofen refill for P-55310 ({target})"}, {"status": "delegated", "to": target, "task_id": f"tsk-{40211 + number}"}, agent=source)
        for number, (source, target) in enumerate(circle * 3)
    ]
    report = replay(policy, tmp_path, steps)
    assert first(report) == (7, "stop")
    assert "handoff/handoff_cycle" in signals_at(report, 7)
    compiled = load_policy("builtin:default")
    assert [compiled.tool_profile(name).hands_off for name in ("delegate_task", "delegateWork", "delegated_reports", "transfer_funds")] == [True, True, False, False]
    assert compiled.tool_profile("delegate_task").handoff_target is None  # ("task" names no agent)


def test_a_request_validation_error_is_permanent() -> None:
    fastapi_v1 = '{"detail":[{"ctx":{"max_span":"7d"},"loc":["query","end"],"msg":"requested span 30d exceeds max 7d","type":"value_error.span_too_large"}]}'
    fastapi_v2 = '{"detail": [{"type": "int_parsing", "loc": ["query", "limit"], "msg": "Input should be a valid integer"}]}'
    assert [classify_failure(text) for text in (fastapi_v1, fastapi_v2, '{"detail": "Internal Server Error"}')] == ["permanent", "permanent", "deterministic"]


def test_a_validation_error_retried_with_times_written_another_way(policy, tmp_path: Path) -> None:
    error = '{"detail":[{"loc":["query","end"],"msg":"requested span 30d exceeds max 7d for resolution=1m; use resolution >= 1h","type":"value_error.span_too_large"}]}'
    spans = [
        ("2024-08-01T00:00:00Z", "2024-08-31T00:00:00Z"),
        ("2024-08-01T00:00:00+00:00", "2024-08-31T00:00:00+00:00"),
        (1722470400000, 1725062400000),
        ("2024-08-01T00:00:00.000Z", "2024-08-31T00:00:00.000Z"),
    ]
    steps = [step("get_timeseries", {"sensor_id": "KN-PC01-VIB-DE", "start": start, "end": end, "resolution": "1m"}, error, error=True) for start, end in spans]
    report = replay(policy, tmp_path, steps)
    assert first(report) == (2, "replan")
    assert "failure/repeated_permanent_failure_of_tool" in signals_at(report, 2)
    assert same_target({"start": "2024-08-01T00:00:00Z"}, {"start": 1722470400000})
    assert same_target({"since": 1722470400}, {"since": "2024-08-01T00:00:00Z"})
    assert not same_target({"user_id": 1722470400000}, {"user_id": 1722470400001})  # a number under another name is data


def test_a_plan_restated_as_actions_under_way_is_a_monologue(policy, tmp_path: Path) -> None:
    messages = [
        "The Grove (V-2231) is free on June 14 and allows a 7-day courtesy hold; two other couples have pending inquiries.",
        "I'll now place the courtesy hold on V-2231 for June 14 using place_venue_hold, then request tasting dates.",
        "Placing the 7-day courtesy hold on V-2231 now so we don't lose June 14 to the pending inquiries.",
        "Next step: call place_venue_hold for V-2231 on June 14 with a 7-day hold, then the tasting.",
        "Proceeding to place the courtesy hold for June 14 on V-2231.",
    ]
    report = replay(policy, tmp_path, [step(None, output=text, agent="planner") for text in messages])
    assert first(report) == (3, "replan")
    assert "near_duplicate/reworded_message" in signals_at(report, 3)
    assert [_announces(text) for text in ("placing the hold now.", "running screen_party for the first ubo.", "now executing step 1.")] == [True] * 3
    assert [_announces(text) for text in ("nothing new came back.", "during the audit we found three gaps.", "the service is running.")] == [False] * 3
