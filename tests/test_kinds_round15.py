"""Kinds the round-14 reviews left missed: CloudFront's request ids in answers, client stamps
named "client_time" or "..._ms" beside a nonce, langgraph-supervisor's way back to the
supervisor, and clickhouse-client's printout of no rows."""

from __future__ import annotations

from pathlib import Path

from test_detector_kinds import first, replay, signals_at, step  # noqa: F401  (policy is a fixture)
from test_detector_kinds import policy  # noqa: F401

from loopguard.detectors.near_duplicate import _signs_request
from loopguard.observations import observe

TICKET = {"id": 88412, "subject": "Refund not received for order #A-55190", "status": "open", "priority": "high"}
CLOUDFRONT_IDS = ["iK2ZWeqhFWCEPyYngFb51yBMWXaSCrUZoL8g5ubb==", "bPIa84yRnBUbHoWC8FJowoRoWD8s7bA16J7PglOU==", "3shVv5UTG79BG16QmtsL4F28GzL2cEpVZzAQlxJ4==", "SXRVxfCQGgXkH1zxFUbEctT2NLLzPkkGoaXmI63J=="]


def test_answers_alike_but_for_cloudfront_request_ids(policy, tmp_path: Path) -> None:
    def read(ticket: dict[str, object], cloudfront_id: str) -> dict[str, object]:
        return step("get_ticket", {"ticket_id": 88412}, {"ticket": ticket, "headers": {"x-amz-cf-id": cloudfront_id, "x-amz-id-2": cloudfront_id[::-1], "x-cache": "Hit from cloudfront"}})

    steps = [read(TICKET, cloudfront_id) for cloudfront_id in CLOUDFRONT_IDS]
    assert first(replay(policy, tmp_path, steps)) == (2, "stop")
    # The ticket moving on is news, however the response is stamped.
    moving = [read({**TICKET, "status": status}, cloudfront_id) for status, cloudfront_id in zip(("open", "pending", "solved", "closed"), CLOUDFRONT_IDS)]
    assert first(replay(policy, tmp_path, moving)) is None


def test_client_stamps_beside_a_nonce_are_part_of_the_request(policy, tmp_path: Path) -> None:
    def lookup(number: int) -> dict[str, object]:
        params = {"sku": "WX-2291", "nonce": f"c3d81f0a77e2{number:02d}", "client_timestamp_ms": 1720525323000 + 61_000 * number, "client_time": f"2024-07-09T11:{42 + number:02d}:03Z"}
        return step("inventory_lookup", params, {"sku": "WX-2291", "warehouses": [], "error": None})

    assert first(replay(policy, tmp_path, [lookup(number) for number in range(5)])) == (2, "replan")
    assert [_signs_request(name, value) for name, value in (("request_time", 1720525323), ("sent_at", "2024-07-09T11:42:03.123Z"), ("client_timestamp_ms", 1720525323000))] == [True, True, True]
    # What a request asks for stays: a table booked for a time, an event's own time.
    assert [_signs_request(name, "2024-07-01T19:00:00Z") for name in ("time", "booking_time", "event_ts", "at")] == [False, False, False, False]


def _worker_lap(work: str | None) -> list[dict[str, object]]:
    lap = [step("transfer_to_researcher", {}, "Successfully transferred to researcher", agent="supervisor")]
    if work is not None:
        lap.append(step("web_search", {"query": work}, {"results": [{"title": f"{work}: findings", "url": f"https://example.test/{len(work)}"}]}, agent="researcher"))
    lap.append(step("transfer_back_to_supervisor", {}, "Successfully transferred back to supervisor", agent="researcher"))
    return lap


def test_a_supervisor_and_a_worker_handing_back_and_forth_with_no_work(policy, tmp_path: Path) -> None:
    steps = [entry for _ in range(4) for entry in _worker_lap(None)]
    report = replay(policy, tmp_path, steps)
    assert first(report) == (3, "stop")
    assert "handoff/handoff_cycle" in signals_at(report, 3)
    # The worker's work between the handoffs: delegation, not a circle.
    steps = [entry for topic in ("GDP of Chile 2023", "copper exports 2023", "lithium prices 2024", "peso exchange rate") for entry in _worker_lap(topic)]
    assert first(replay(policy, tmp_path, steps)) is None


def test_clickhouse_clients_printout_of_no_rows_is_empty(policy, tmp_path: Path) -> None:
    no_rows = "Ok.\n\n0 rows in set. Elapsed: 0.004 sec. Processed 1.02 thousand rows, 8.19 KB (271.34 thousand rows/s., 2.17 MB/s.)"
    assert [observe(text).empty for text in (no_rows, "Ok.\n\n0 rows in set. Elapsed: 0.001 sec.", "Ok.\n\n1 row in set. Elapsed: 0.001 sec.")] == [True, True, False]
    query = "SELECT order_id FROM orders WHERE status = 'stuck' AND region = 'eu-west'"
    steps = [step("clickhouse_query", {"query": query}, no_rows) for _ in range(4)]
    assert first(replay(policy, tmp_path, steps)) == (2, "stop")
