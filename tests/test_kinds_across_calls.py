"""Kinds that span calls with different arguments (blind round 8): the same permanent error
whatever the arguments, pages of one paging sequence that bring nothing new with other
calls between, offsets that wrap around to pages already read, a write's own pending
state, throwaway values inside a command, and empty answers that echo the request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from test_detector_kinds import first, policy, replay, signals_at, step  # noqa: F401  (policy is a fixture)

from loopguard.observations import is_not_found, observe
from loopguard.tool_names import writes_by_name


BAD_CREDENTIALS = 'HTTP/1.1 401 Unauthorized\n{"message": "Bad credentials", "status": "401"}'


def test_the_same_permanent_error_with_other_arguments_each_time_is_a_replan_at_the_third(policy, tmp_path: Path) -> None:
    steps = [
        step("http_request", {"url": "https://api.example.test/runs?per_page=5"}, BAD_CREDENTIALS, error=True),
        step("http_request", {"url": "https://api.example.test/runs?per_page=10"}, BAD_CREDENTIALS, error=True),
        step("http_request", {"url": "https://api.example.test/runs?per_page=10&branch=main"}, BAD_CREDENTIALS, error=True),
    ]
    report = replay(policy, tmp_path, steps)
    assert first(report) == (2, "replan")
    (signal,) = [s for entry in report.decisions if entry.step == 2 for s in entry.decision.signals if s.detector == "failure"]
    assert signal.kind == "repeated_permanent_failure_of_tool"
    assert signal.score == 0.75
    assert signal.message == (
        'http_request failed 3 times in a row with the same permanent error, whatever its arguments: HTTP/1.1 401 Unauthorized {"message": "Bad credentials", "status": "401"}'
    )


def test_a_success_of_the_tool_or_another_error_starts_the_count_again(policy, tmp_path: Path) -> None:
    ok = '{"runs": [{"id": 1}]}'
    forbidden = "HTTP 403 Forbidden: resource not accessible by integration"
    steps = [
        step("http_request", {"url": "https://api.example.test/a"}, BAD_CREDENTIALS, error=True),
        step("http_request", {"url": "https://api.example.test/b"}, BAD_CREDENTIALS, error=True),
        step("http_request", {"url": "https://api.example.test/c"}, ok),
        step("http_request", {"url": "https://api.example.test/d"}, BAD_CREDENTIALS, error=True),
        step("http_request", {"url": "https://api.example.test/e"}, forbidden, error=True),
        step("http_request", {"url": "https://api.example.test/f"}, BAD_CREDENTIALS, error=True),
        step("http_request", {"url": "https://api.example.test/g"}, BAD_CREDENTIALS, error=True),
    ]
    assert first(replay(policy, tmp_path, steps)) is None


def test_not_found_for_other_ids_is_fan_out_and_the_same_not_found_again_is_a_retry(policy, tmp_path: Path) -> None:
    fan_out = [step("get_order", {"order_id": f"A-{number}"}, f"HTTP 404: no order with id 'A-{number}'", error=True) for number in (101, 102, 103, 104)]
    assert first(replay(policy, tmp_path, fan_out)) is None
    reformatted = [
        step("notion_query_database", {"database_id": database}, 'HTTP 404\n{"code": "object_not_found", "message": "Could not find database with ID: 8f2c3b1e-9a4d"}', error=True)
        for database in ("8f2c3b1e9a4d", "8f2c3b1e-9a4d", "8F2C3B1E-9A4D")
    ]
    assert first(replay(policy, tmp_path, reformatted)) == (2, "replan")
    assert is_not_found("HTTP 404 Not Found") and is_not_found("error: no such file or directory") and not is_not_found("HTTP 401 Unauthorized")


def test_offsets_that_wrap_around_with_other_calls_between_are_a_replan(policy, tmp_path: Path) -> None:
    def page(offset: int, first_item: int) -> dict[str, Any]:
        output = json.dumps({"account": "ACC-1", "offset": offset, "limit": 50, "transactions": f"[T-{first_item:04d} ... T-{first_item + 49:04d}]"})
        return step("ledger_get_transactions", {"account": "ACC-1", "offset": offset, "limit": 50}, output)

    def append(row: int) -> dict[str, Any]:
        return step("sheets_append", {"spreadsheet_id": "sheet-1", "values": f"<50 rows from T-{row:04d}>"}, json.dumps({"updatedRange": f"A{row}:F{row + 49}"}))

    steps = [page(0, 1), append(2), page(50, 51), append(52), page(100, 1), append(102), page(150, 51), append(152), page(200, 1)]
    report = replay(policy, tmp_path, steps)
    assert first(report) == (6, "replan")
    assert signals_at(report, 6) == {"near_duplicate/pagination", "no_progress/reread"}
    # The same pages at new offsets with no wrap (new items each time) are healthy.
    healthy = [page(0, 1), append(2), page(50, 51), append(52), page(100, 101), append(102), page(150, 151), append(152)]
    assert first(replay(policy, tmp_path, healthy)) is None


def test_empty_pages_past_the_end_with_processing_between_are_a_replan(policy, tmp_path: Path) -> None:
    def page(number: int, reviews: Any) -> dict[str, Any]:
        return step("fetch_reviews", {"product": "B0C7", "page": number}, json.dumps({"product": "B0C7", "page": number, "reviews": reviews, "next_page": None}))

    def classify(number: int) -> dict[str, Any]:
        return step("store_batch", {"page": f"p{number}"}, json.dumps({"stored_at": f"2024-06-11T10:0{number}:00Z", "batch": f"b-{number}"}))

    steps = [page(1, ["r1", "r2"]), classify(1), page(2, []), classify(2), page(3, []), classify(3), page(4, [])]
    report = replay(policy, tmp_path, steps)
    # The second empty page in a row of the sequence, as without the calls between.
    assert first(report) == (4, "replan")
    assert signals_at(report, 4) == {"near_duplicate/pagination", "no_progress/empty_result"}
    # Before the next page runs, the sequence's own streak holds.
    assert "no_progress/same_call_no_progress" in signals_at(report, 6)


def test_a_pending_state_in_the_reply_of_a_change_is_no_poll(policy, tmp_path: Path) -> None:
    steps = [
        step("get_ticket", {"id": 5}, '{"id": 5, "status": "open", "last_audit": "trigger reopened it"}'),
        step("update_ticket", {"id": 5, "status": "pending"}, '{"id": 5, "status": "pending"}'),
        step("get_ticket", {"id": 5}, '{"id": 5, "status": "open", "last_audit": "trigger reopened it"}'),
        step("update_ticket", {"id": 5, "status": "pending"}, '{"id": 5, "status": "pending"}'),
        step("get_ticket", {"id": 5}, '{"id": 5, "status": "open", "last_audit": "trigger reopened it"}'),
    ]
    assert first(replay(policy, tmp_path, steps)) == (3, "stop")
    assert [writes_by_name(name) for name in ("sheets_update", "mailgun_send", "transfer_to_billing", "get_update_status", "message_history")] == [
        True, True, True, False, False,
    ]


def test_a_command_that_changes_only_an_embedded_timestamp_is_a_near_duplicate(policy, tmp_path: Path) -> None:
    failure = 'Error from server (BadRequest): container "api" is waiting to start\n[exit code 1]'
    steps = [
        step("bash", {"command": f"kubectl logs -n shop api-7d9f -c api --since-time=2024-06-11T09:{minute}Z"}, failure, error=True)
        for minute in ("14:02", "14:31", "15:03", "15:40")
    ]
    report = replay(policy, tmp_path, steps)
    assert first(report) == (2, "replan")
    assert "near_duplicate/reworded_call" in signals_at(report, 2)


def test_empty_answers_that_echo_the_request_or_print_zero_rows_are_empty() -> None:
    reply = '{"product": "B0C7", "page": 4, "reviews": [], "next_page": null}'
    assert observe(reply, None, {"product": "B0C7", "page": 4}).empty
    assert not observe(reply, None, {"product": "OTHER", "page": 4}).empty  # "product" then carries data
    assert not observe(reply).empty
    assert observe(" region | revenue \n--------+---------\n(0 rows)").empty
    assert observe("name\n----\n(0 rows affected)").empty
    assert observe("no rows selected").empty
    assert not observe(" a | b \n---+---\n 1 | 2\n(1 row)").empty


def test_the_same_send_with_a_fresh_idempotency_key_each_time_is_a_replan(policy, tmp_path: Path) -> None:
    def send(key: str, message_id: str) -> dict[str, Any]:
        arguments = {"to": "accounts@example.test", "subject": "Copy of invoice INV-0193", "body": "Please find the invoice attached.", "idempotency_key": key}
        return step("mailgun_send", arguments, json.dumps({"id": f"<{message_id}@mg.example.test>", "status": "queued"}))

    steps = [send("inv-1718100201-a91c", "20240611102001.1a2b3c"), send("inv-1718100214-7e02", "20240611102014.9f8e7d"), send("inv-1718100229-d5b8", "20240611102029.0a1b2c")]
    report = replay(policy, tmp_path, steps)
    assert first(report) == (2, "replan")
    assert signals_at(report, 2) == {"near_duplicate/reworded_call", "no_progress/same_output"}


def test_a_time_that_changes_between_calls_stays_part_of_what_is_asked(policy, tmp_path: Path) -> None:
    steps = [
        step("get_temperature", {"city": "Lyon", "time": f"2024-06-11T{hour:02d}:00:00Z"}, json.dumps({"city": "Lyon", "celsius": 14 + hour % 7}))
        for hour in (6, 9, 12, 15, 18)
    ]
    assert first(replay(policy, tmp_path, steps)) is None


def test_calls_about_the_same_thing_are_told_from_calls_about_other_things() -> None:
    from loopguard.detectors.near_duplicate import same_target

    same = [
        ({"url": "https://api.example.test/runs?per_page=5"}, {"url": "https://api.example.test/runs/?per_page=10&branch=main"}),
        ({"database_id": "8f2c3b1e9a4d"}, {"database_id": "8F2C3B1E-9A4D", "page_size": 100}),
        ({"command": "kubectl logs api --since-time=2024-06-11T09:14:02Z"}, {"command": "kubectl logs api --since-time=2024-06-11T09:15:03Z"}),
        ({"to": "+1 555-0100", "body": "Your order shipped"}, {"to": "+15550100", "body": "Your order shipped"}),
        ({"events": ["order.created", "order.paid"], "summary": "Q3 budget sync"}, {"events": ["order.paid", "order.created"], "summary": "Sync: Q3 budget (30 min)"}),
        ({"url": "https://a.test/x", "headers": {"X-Request-ID": "r-1"}}, {"url": "https://a.test/x", "headers": {"X-Request-ID": "r-2"}}),
    ]
    other = [
        ({"invoice_id": "INV-3101", "schema": "eu_vat_v2"}, {"invoice_id": "INV-3102", "schema": "eu_vat_v2"}),
        ({"url": "https://api.example.test/v4/shipments"}, {"url": "https://api.example.test/v3/shipments"}),
        ({"user_id": 1042}, {"user_id": 1043}),
        ({"url": "https://www.nytimes.com/a"}, {"url": "https://www.wsj.com/b"}),
    ]
    assert [same_target(before, after) for before, after in same] == [True] * len(same)
    assert [same_target(before, after) for before, after in other] == [False] * len(other)


def test_a_re_read_after_an_edit_compares_exactly(policy, tmp_path: Path) -> None:
    view = lambda first, last, text: step("read_file", {"path": "nginx.conf", "start_line": first, "end_line": last}, text)  # noqa: E731
    steps = [
        view(1, 120, "1: user nginx;\n120: keepalive_timeout 65;"),
        view(121, 240, "121: server {\n164: client_max_body_size 1m;"),
        view(241, 318, "241: root /srv/app/static;\n318: }"),
        step("edit_file", {"path": "nginx.conf", "old": "client_max_body_size 1m;", "new": "client_max_body_size 25m;"}, "1 replacement made at line 164"),
        view(121, 240, "121: server {\n164: client_max_body_size 25m;"),
        view(241, 318, "241: root /srv/app/static;\n318: }"),
    ]
    report = replay(policy, tmp_path, steps)
    assert first(report) is None
    # The first re-read shows the edit (news); only the unchanged chunk is the same again.
    assert signals_at(report, 4) == set()


def test_the_same_order_placed_again_with_a_fresh_client_id_is_a_replan_with_checks_between(policy, tmp_path: Path) -> None:
    def place(client_id: str, order: int) -> dict[str, Any]:
        arguments = {"supplier": "acme", "sku": "BRK-2210", "qty": 200, "client_order_id": client_id}
        return step("place_order", arguments, json.dumps({"order_id": f"SO-{order}", "client_order_id": client_id, "status": "pending_confirmation"}))

    def check(order: int) -> dict[str, Any]:
        return step("get_order", {"order_id": f"SO-{order}"}, json.dumps({"order_id": f"SO-{order}", "status": "pending_confirmation"}))

    steps = [place("po-4f1a", 77120), check(77120), place("po-8b2c", 77121), check(77121), place("po-c913", 77122)]
    report = replay(policy, tmp_path, steps)
    assert first(report) == (4, "replan")
    assert signals_at(report, 4) == {"near_duplicate/reworded_call", "no_progress/same_output"}
    (signal,) = [s for entry in report.decisions if entry.step == 4 for s in entry.decision.signals if s.detector == "no_progress"]
    assert signal.message == "place_order returned what it had returned before; its last 2 calls, the same but for a request id, brought nothing new"


def test_a_live_agent_s_next_cosmetic_retry_is_blocked_before_it_runs() -> None:
    from loopguard import Guard, ToolCall, ToolResult

    session = Guard.from_policy("builtin:default").session(run_id="live")
    ran = []
    for attempt in range(5):
        call = ToolCall("fetch_report", {"report": "q3", "cb": attempt}, id=str(attempt))
        decision = session.before_call(call)
        if decision.runs_tool:
            ran.append(attempt)
            session.after_call(call, ToolResult("401 Unauthorized", error=True))
        else:
            assert (decision.action.value, decision.verdict.kind.value, decision.rule) == ("replan", "block", "detector:failure")
            session.after_call(call, ToolResult({"error": True, "type": "guard_error", "message": decision.verdict.message}))
    assert ran == [0, 1, 2]  # the guard's refusals do not start the count again


def test_names_and_arguments_read_for_calls_across_arguments() -> None:
    from loopguard.detectors.near_duplicate import _is_identity, _range_of
    from loopguard.tool_names import resources_of

    assert [writes_by_name(name) for name in ("append_log", "update_order_status", "add_to_list", "commit_status", "tag_list", "book_search")] == [
        True, True, True, False, False, False,
    ]
    assert [_is_identity(key) for key in ("idempotency_key", "X-Request-ID", "client_order_id", "_", "leave_request_id", "client_id", "uuid", "ts")] == [
        True, True, True, True, False, False, False, False,
    ]
    assert resources_of({"command": "echo '- attempt 2' >> NOTES.md"}) == frozenset({"NOTES.md"})
    assert resources_of({"path": "nginx.conf", "start_line": 1}) == frozenset({"nginx.conf"})
    assert _range_of({"start": 1718000000, "end": 1718003600}) is None  # an hour, not a page
    assert _range_of({"offset": 3_221_225_472, "length": 65536}).span == (3_221_225_472.0, 3_221_291_008.0)  # a byte offset


def test_a_hub_that_bounces_control_between_two_agents_is_a_handoff_cycle() -> None:
    from loopguard import Guard

    session = Guard.from_policy("builtin:default").session(run_id="hub")
    transfers = [("k8s", "supervisor"), ("supervisor", "k8s"), ("network", "supervisor"), ("supervisor", "network")] * 2
    decisions = [session.observe_handoff(agent, caller) for agent, caller in transfers]
    # The first transfer records the hub too: the eighth closes the cycle a second time.
    assert [decision.action.value for decision in decisions] == ["continue"] * 7 + ["stop"]
    assert decisions[-1].signals[0].message == "control went around supervisor → k8s → supervisor → network → supervisor 2 times with no work done"
