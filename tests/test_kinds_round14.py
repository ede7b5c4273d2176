"""Kinds from blind round 14 and its review: answers that differ only in the response's own
stamps, signed requests, a permanent failure said last after a command's progress lines, SQL
queues and slow queries, and refusals the agent ignores."""

from __future__ import annotations

import json
from pathlib import Path

from test_detector_kinds import first, policy, replay, signals_at, step  # noqa: F401  (policy is a fixture)

from loopguard.detectors.near_duplicate import _signs_request
from loopguard.observations import failure_line
from loopguard.tool_names import acts_by_name

TICKET = {"ticket": {"id": 88412, "subject": "Refund not received for order #A-55190", "status": "open", "priority": "high", "requester_id": 39120044}}


def _lookups(count: int) -> list[dict[str, object]]:
    """Reads of other things, each with news."""
    return [step("search_kb", {"query": f"refund question {number}"}, {"results": [{"id": 360000 + number, "title": f"Refund article {number}"}]}) for number in range(count)]


def test_a_record_re_read_around_actions_is_healthy(policy, tmp_path: Path) -> None:
    state = step("instrument_get_state", {"instrument": "hamilton-star-02"}, {"instrument": "hamilton-star-02", "state": "idle", "door": "closed", "errors": []})
    steps = []
    for plate in "ABCD":
        run = {"run_id": f"HS2-5177{plate}", "plate": f"P24-0611-{plate}", "status": "completed", "warnings": []}
        steps += [state, step("instrument_run_protocol", {"protocol": "elisa_il6_v7.hsl", "plate_barcode": f"P24-0611-{plate}"}, run)]
    assert first(replay(policy, tmp_path, steps)) is None
    # A read between updates sees what they changed: no re-read either.
    steps = [entry for number in range(4) for entry in (step("sheets_update", {"range": f"Budget!B{number + 7}", "value": number}, {"updatedCells": 1}), step("sheets_get", {"range": "Budget!B15"}, {"formula": "=SUM(B2:B14)", "value": 405930}))]
    assert first(replay(policy, tmp_path, steps)) is None
    assert [acts_by_name(name) for name in ("instrument_run_protocol", "trigger_dag", "sheets_update", "run_query", "get_fx_rate", "list_macros")] == [True, True, True, False, False, False]


def test_answers_alike_but_for_the_responses_stamps(policy, tmp_path: Path) -> None:
    def rate(request_id: str, served: str, cache: str) -> dict[str, object]:
        answer = {"data": {"base": "EUR", "quote": "USD", "date": "2024-05-14", "rate": "1.0802", "source": "ECB"}, "meta": {"served_at": served, "request_id": request_id, "cache": cache}}
        return step("get_fx_rate", {"base": "EUR", "quote": "USD", "date": "2024-05-14"}, answer)

    stamps = [("fx_2fDzKGvrvDYP", "2024-06-03T09:12:47.708Z", "MISS"), ("fx_kt6xXOGQQSdn", "2024-06-03T09:14:08.963Z", "HIT"), ("fx_v0jyuwaJ5YkN", "2024-06-03T09:16:13.251Z", "HIT"), ("fx_I64YZyLY0nJJ", "2024-06-03T09:18:25.209Z", "HIT")]
    steps = [rate(request_id, served, cache) for request_id, served, cache in stamps]
    # The same call again and again with the same answer: stopped before its third run.
    assert first(replay(policy, tmp_path, steps)) == (2, "stop")
    # Another rate is news, however it is stamped.
    moving = [dict(entry) for entry in steps]
    for index, value in zip((1, 2, 3), ("1.0811", "1.0797", "1.0830")):
        moving[index]["output"] = json.loads(json.dumps(moving[index]["output"]).replace("1.0802", value))
    assert first(replay(policy, tmp_path, moving)) is None


def test_a_signed_request_made_anew_is_the_same_call(policy, tmp_path: Path) -> None:
    def geocode(number: int) -> dict[str, object]:
        params = {"address": "Industriestr. 14b, 7I336 Heilbronn, DE", "timestamp": 1717424834 + 60 * number, "nonce": f"a1809bfe0c9ecc{number:02d}", "signature": f"{number:02d}e94e0b834523c836a292f7afd44aedc3fafb36aee361ba6f76aa949d8192"}
        answer = {"status": "ZERO_RESULTS", "results": [], "query": {"address": params["address"]}, "request_id": f"829601d7-4fd8-48ef-900d-c35c84b2a3{number:02d}"}
        return step("http_request", {"method": "GET", "url": "https://geo.example.test/v2/geocode", "params": params}, answer)

    report = replay(policy, tmp_path, [geocode(number) for number in range(5)])
    assert first(report) == (2, "replan")
    assert _signs_request("timestamp", 1717424834) and _signs_request("signature", "00e94e0b834523c836a292f7afd44aedc3fafb36")
    assert not _signs_request("timestamp", "last week") and not _signs_request("address", "7I336")


def test_a_permanent_failure_said_last_after_progress_lines(policy, tmp_path: Path) -> None:
    denied = "denied: permission_denied: The token provided does not match expected scopes.\n[exit code 1]"
    progress = "The push refers to repository [ghcr.io/acme/ledger-api]\n5f70bf18a086: Preparing\nc1e2a4b7d903: Waiting\n"
    commands = ["docker push ghcr.io/acme/ledger-api:2.8.1", "docker push --quiet ghcr.io/acme/ledger-api:2.8.1", "docker image push ghcr.io/acme/ledger-api:2.8.1", "docker push --disable-content-trust ghcr.io/acme/ledger-api:2.8.1"]
    steps = [step("bash", {"command": command}, denied if "--quiet" in command else progress + denied, error=True) for command in commands]
    report = replay(policy, tmp_path, steps)
    assert first(report) == (2, "replan")
    assert "failure/repeated_permanent_failure_of_tool" in signals_at(report, 2)
    assert failure_line(progress + denied) == failure_line(denied) == "denied: permission_denied: the token provided does not match expected scopes."
    assert failure_line("Error\n[exit code 2]") is None


def test_a_lone_surrogate_in_a_reworded_call_does_not_raise() -> None:
    from loopguard import Guard, ToolCall, ToolResult

    session = Guard.from_policy("builtin:default").session(run_id="surrogate")
    answer = ToolResult('{"results": [{"title": "Python documentation", "url": "https://docs.python.org/3/"}], "note": "' + "x" * 80 + '"}')
    actions = []
    for number, text in enumerate(["search for .python\ud800 docs", "search for the .python\ud800 docs", "look for .python\ud800 docs"]):
        call = ToolCall("kb_search", {"query": text}, id=f"c{number}")
        session.before_call(call)
        actions.append(session.after_call(call, answer).action.value)
    assert actions == ["continue", "continue", "replan"]  # the same answer to three wordings


def test_a_queue_drained_page_by_page_through_sql_is_read_anew(policy, tmp_path: Path) -> None:
    select = {"sql": "SELECT id, amount FROM refunds WHERE status = 'pending' ORDER BY id LIMIT 5 OFFSET 5"}
    steps = []
    for batch in range(3):
        rows = "".join(f" {100 + 5 * batch + row} | 12.50\n" for row in range(5))
        steps.append(step("run_sql", select, f" id | amount\n----+-------\n{rows}(5 rows)"))
        steps.append(step("run_sql", {"sql": f"UPDATE refunds SET status = 'approved' WHERE id BETWEEN {100 + 5 * batch} AND {104 + 5 * batch}"}, "UPDATE 5"))
    assert first(replay(policy, tmp_path, steps)) is None


def test_a_slow_querys_timing_line_does_not_hide_an_empty_page(policy, tmp_path: Path) -> None:
    steps = [step("run_sql", {"sql": f"SELECT id FROM events ORDER BY id LIMIT 100 OFFSET {100 * page}"}, f" id\n----\n(0 rows)\n\nTime: {1523 + page}.411 ms (00:01.{523 + page})") for page in range(1, 6)]
    assert first(replay(policy, tmp_path, steps)) == (1, "replan")  # the second empty page


def test_an_agent_that_ignores_refusals_is_stopped() -> None:
    from loopguard import Guard, ToolCall, ToolResult

    session = Guard.from_policy("builtin:default").session(run_id="paging")
    ran = 0
    for page in range(40):
        call = ToolCall("run_sql", {"query": f"SELECT id FROM orders ORDER BY id LIMIT 50 OFFSET {50 * page}"})
        decision = session.before_call(call)
        if decision.runs_tool:
            ran += 1
            rows = max(0, min(50, 112 - 50 * page))
            session.after_call(call, ToolResult("".join(f" {50 * page + row}\n" for row in range(rows)) + f"({rows} rows)"))
        else:
            session.after_call(call, ToolResult(decision.verdict.payload()))  # the refusal, as adapters record it
        if session.stopped:
            break
    # Three pages with rows, two empty ones, then three refusals in a row: the agent ignores the guard.
    assert (ran, page, session.worst.action.value) == (5, 7, "stop")
    assert "the guard refused the last 3 calls" in session.worst.reasons[-1]
    assert session.run.failures == 0  # (refused calls never ran)
