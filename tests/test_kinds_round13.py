"""Kinds from blind round 13 and the review of its changes: SQL paging past the end, a
client's own request stamp, handoffs through delegate tools and pending polls that are healthy,
validation errors, time windows compared by the times they name, and a plan restated in
participles."""

from __future__ import annotations

from pathlib import Path

from test_detector_kinds import first, policy, replay, said, signals_at, step  # noqa: F401  (policy is a fixture)

from loopguard.detectors.near_duplicate import _announces, _is_identity, _signs_request, _sql_range, same_target
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


def test_a_clients_own_stamp_is_part_of_a_request_identity_only_beside_one() -> None:
    assert _signs_request("client_ts", "2024-07-09T11:42:03Z") and _signs_request("clientTimestamp", 1717424834)
    # Alone a "client_ts" is data (a tracked event's time), and a time that is asked for is no stamp.
    assert [_is_identity(key) for key in ("client_ts", "timestamp", "ts", "event_ts", "request_time", "client_id")] == [False] * 6
    assert not _signs_request("event_ts", "2024-07-09T11:42:03Z")


def test_a_backfill_of_events_with_their_own_times_is_healthy(policy, tmp_path: Path) -> None:
    steps = [
        step("track_event", {"event": "app_opened", "user_id": "u_55102", "client_ts": f"2024-07-09T{hour:02d}:14:02Z"}, {"status": "ok", "events_ingested": 1, "request_id": f"req_00{hour}", "warnings": []})
        for hour in (8, 9, 13, 16, 19)
    ]
    assert first(replay(policy, tmp_path, steps)) is None


def test_a_supervisor_polling_a_running_job_through_an_agent_is_healthy(policy, tmp_path: Path) -> None:
    lap = lambda state: [  # noqa: E731
        step("transfer_to_ops_agent", {}, "Successfully transferred to ops_agent", agent="supervisor"),
        step("get_migration_status", {"migration_id": "mig-2024-07"}, {"migration_id": "mig-2024-07", "state": state, "phase": "backfill"}, agent="ops_agent"),
        step("transfer_to_supervisor", {}, "Successfully transferred to supervisor", agent="ops_agent"),
    ]
    steps = lap("running") + lap("running") + lap("running") + lap("succeeded")
    assert first(replay(policy, tmp_path, steps)) is None


def test_delegating_work_that_comes_back_done_is_no_handoff_circle(policy, tmp_path: Path) -> None:
    # A synchronous delegate tool's result is the delegate's work: a writer and a critic in turn.
    outputs = ["Draft v1: ...", "Review: tighten the intro", "Draft v2: ...", "Review: cite the 2023 figures", "Draft v3: ...", "Review: approved"]
    steps = [
        step("delegate_task", {"to": ("writer", "critic")[number % 2], "task": f"round {number // 2 + 1}"}, f"{output} ({number})" + " details" * 12, agent="editor_in_chief")
        for number, output in enumerate(outputs)
    ]
    assert first(replay(policy, tmp_path, steps)) is None
    compiled = load_policy("builtin:default")
    assert [compiled.tool_profile(name).hands_off for name in ("delegate_task", "delegate_to_billing", "transfer_to_billing")] == [False, True, True]


def test_a_validation_error_that_depends_on_state_is_retried_after_the_change(policy, tmp_path: Path) -> None:
    error = '{"detail":[{"loc":["body","order_id"],"msg":"order must be paid before it can ship","type":"value_error.order_state"}]}'
    assert classify_failure(error) == "deterministic"  # (FastAPI's detail shape says nothing of whether retrying helps)
    steps = [
        step("create_shipment", {"order_id": "o_981"}, error, error=True),
        step("capture_payment", {"payment_id": "pay_3QmZ"}, {"payment_id": "pay_3QmZ", "status": "capture_pending"}),
        step("create_shipment", {"order_id": "o_981"}, error, error=True),
        step("get_payment", {"payment_id": "pay_3QmZ"}, {"payment_id": "pay_3QmZ", "status": "captured", "amount": 129.0}),
        step("create_shipment", {"order_id": "o_981"}, {"shipment_id": "shp_7781", "status": "label_created"}),
    ]
    assert first(replay(policy, tmp_path, steps)) is None


def test_a_time_window_is_compared_by_the_times_it_names() -> None:
    # One time written three ways is one target; a narrowed window is another.
    assert same_target({"start": "2024-08-01T00:00:00Z"}, {"start": 1722470400000})
    assert same_target({"since": 1722470400}, {"since": "2024-08-01T00:00:00+00:00"})
    assert not same_target({"start": "2024-07-02T00:00:00Z"}, {"start": "2024-07-18T00:00:00Z"})
    assert not same_target({"start": 1722470400000}, {"start": 1721000000000})
    # A request's own stamp is no target, and a number under another name is data.
    assert same_target({"timestamp": 1722470400}, {"timestamp": 1721000000})
    assert not same_target({"user_id": 1722470400000}, {"user_id": 1722470400001})


def test_a_plan_restated_as_actions_under_way_is_a_monologue(policy, tmp_path: Path) -> None:
    messages = [
        "The Grove (V-2231) is free on June 14 and allows a 7-day courtesy hold; two other couples have pending inquiries.",
        "I'll now place the courtesy hold on V-2231 for June 14 using place_venue_hold, then request tasting dates.",
        "Placing the 7-day courtesy hold on V-2231 now so we don't lose June 14 to the pending inquiries.",
        "Next step: call place_venue_hold for V-2231 on June 14 with a 7-day hold, then the tasting.",
        "Proceeding to place the courtesy hold for June 14 on V-2231.",
    ]
    report = replay(policy, tmp_path, said("planner", messages))
    assert first(report) == (3, "replan")
    assert "near_duplicate/reworded_message" in signals_at(report, 3)
    assert [_announces(text) for text in ("placing the hold now.", "running screen_party for the first ubo.", "now executing step 1.")] == [True] * 3
    negatives = ("nothing new came back.", "during the audit we found three gaps.", "the service is running.", "looking at emea sales: up 12%",
                 "meeting with acme on monday.", "build 4121 on main is now passing.", "the job is now running.")
    assert [_announces(text) for text in negatives] == [False] * len(negatives)
