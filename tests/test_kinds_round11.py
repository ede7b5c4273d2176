"""Kinds from blind round 11: the same answer to differently worded calls, a cursor followed
past a page that said it was the last, shell commands read by their options, error codes
spelled as identifiers, durations under field names, and scratchpad tools."""

from __future__ import annotations

import json
from pathlib import Path

from test_detector_kinds import first, pending_messages, policy, replay, signals_at, step  # noqa: F401  (policy is a fixture)

from loopguard.detectors.near_duplicate import same_target
from loopguard.observations import classify_failure, looks_like_error, observe
from loopguard.tool_names import inferred_kind


def kb_answer(query: str, scores: tuple[float, float]) -> str:
    return json.dumps(
        {
            "query": query,
            "total": 2,
            "results": [
                {"id": "KB-1182", "title": "Two-factor authentication for SSO-managed users", "score": scores[0]},
                {"id": "KB-0907", "title": "Managing members when SSO is enforced", "score": scores[1]},
            ],
        }
    )


def test_reworded_searches_that_keep_finding_the_same_articles_are_a_replan(policy, tmp_path: Path) -> None:
    queries = ["reset 2FA SSO user", "how to reset two-factor for single sign-on accounts", "admin console reset 2FA SSO member", "disable MFA for Okta user"]
    steps = [step("kb_search", {"query": query, "limit": 5}, kb_answer(query, (12.4 - index, 7.1 + index))) for index, query in enumerate(queries)]
    report = replay(policy, tmp_path, steps)
    assert first(report) == (2, "replan")
    assert signals_at(report, 2) == {"near_duplicate/reworded_call", "no_progress/same_answer"}
    (message,) = [s.message for entry in report.decisions if entry.step == 2 for s in entry.decision.signals if s.detector == "near_duplicate"]
    assert message == "kb_search got the same answer to 3 differently worded calls"


def test_the_same_answer_is_read_without_response_stamps_and_other_digits_are_data(policy, tmp_path: Path) -> None:
    def answer(query: str, index: int, total: int) -> str:
        return json.dumps({"took": 30 + index, "request_id": f"req_{index}f3a9c", "query": query, "total": total, "results": [{"id": "KB-1182", "title": "Two-factor authentication for SSO users"}]})

    queries = ["reset 2FA for SSO user", "reset two-factor for an SSO user", "SSO user 2FA reset steps"]
    stamped = [step("kb_search", {"query": query}, answer(query, index, 1)) for index, query in enumerate(queries)]
    assert first(replay(policy, tmp_path, stamped)) == (2, "replan")
    # The same report for other months: its sums are the answer, not stamps.
    monthly = [step("run_sql", {"query": f"SELECT region, sum(amount) FROM orders WHERE month = '2023-0{month}' GROUP BY region"}, f"region | sum\nAPAC | {42113000 + month * 913000}\nEMEA | {833400 + month * 21400}\nLATAM | {1323100 + month * 33100}\nNA | {2258700 + month * 48700}\n(4 rows)") for month in range(1, 5)]
    assert len(monthly[0]["output"]) >= 80
    assert first(replay(policy, tmp_path, monthly)) is None


def test_the_same_answer_to_calls_that_differ_in_more_than_wording_is_fan_out(policy, tmp_path: Path) -> None:
    # Suites of one building geocode to one point; a different limit is another call.
    point = json.dumps({"status": "OK", "results": [{"formatted_address": "233 S Wacker Dr, Chicago, IL 60606, USA", "location": {"lat": 41.878876, "lng": -87.635915}}]})
    suites = [step("geocode", {"address": f"233 S Wacker Dr, Suite {suite}, Chicago, IL 60606"}, point) for suite in (4100, 5200)]
    others = [
        step("geocode", {"address": address}, json.dumps({"status": "OK", "results": [{"formatted_address": address, "location": {"lat": lat, "lng": -87.62}}]}))
        for address, lat in (("875 N Michigan Ave, Chicago, IL 60611", 41.898903), ("1400 S Lake Shore Dr, Chicago, IL 60605", 41.866261))
    ]
    assert first(replay(policy, tmp_path, suites + others)) is None
    # Short answers ("sent", a count) are shared by many different calls: never compared.
    sends = [step("send_message", {"text": f"Hello team, the report for week {week} is ready"}, "Message sent to #ops") for week in range(5)]
    assert first(replay(policy, tmp_path, sends)) is None
    # The same question with other exact arguments (another locale) is another call.
    locales = [step("kb_search", {"query": f"reset two factor {word}", "locale": locale}, kb_answer("x", (1.0, 2.0))) for word, locale in (("now", "en"), ("today", "de"), ("please", "fr"))]
    assert first(replay(policy, tmp_path, locales)) is None


def test_a_delegation_reworded_that_gets_the_same_refusal_is_a_replan(policy, tmp_path: Path) -> None:
    refusal = "As I said, I need the Financial Analyst's vendor master check for Baltic Freight OU before I can review the flagged invoices. Please ask them first."
    tasks = ["Provide the sanctions screening for Baltic Freight OU.", "Please screen Baltic Freight OU for sanctions and review INV-7719.", "Review INV-7719 and provide the screening for the vendor."]
    steps = [step("delegate_work", {"coworker": "Compliance Reviewer", "task": task}, refusal) for task in tasks]
    report = replay(policy, tmp_path, steps)
    assert first(report) == (2, "replan")
    assert "near_duplicate/reworded_call" in signals_at(report, 2)


def test_a_cursor_followed_past_a_page_that_said_it_was_the_last_is_a_replan(policy, tmp_path: Path) -> None:
    url = "https://api.ledger.example/v1/events?limit=10"
    pages = [
        ({"data": [{"id": f"evt_{index}"} for index in range(10)], "has_more": True, "next_cursor": "c10"}, ""),
        ({"data": [{"id": "evt_10"}, {"id": "evt_11"}], "has_more": False, "next_cursor": "c20"}, "&cursor=c10"),
        ({"data": [], "has_more": False, "next_cursor": "c30"}, "&cursor=c20"),
        ({"data": [], "has_more": False, "next_cursor": "c40"}, "&cursor=c30"),
    ]
    steps = [step("http_get", {"url": url + suffix}, json.dumps(page)) for page, suffix in pages]
    report = replay(policy, tmp_path, steps)
    assert first(report) == (3, "replan")
    assert signals_at(report, 3) >= {"near_duplicate/pagination", "no_progress/empty_result"}
    # Following a cursor of a page that has more is healthy to its end.
    healthy = [step("http_get", {"url": url + suffix}, json.dumps(page | {"has_more": True})) for page, suffix in pages[:2]]
    assert first(replay(policy, tmp_path, healthy)) is None


def test_a_long_page_reached_again_through_a_cursor_of_another_length_is_a_wrap(policy, tmp_path: Path) -> None:
    # Pages of 25 tickets (over 2 KB); the cursor after the last page leads back to the first.
    def page(first_id: int, cursor: str) -> str:
        tickets = [{"id": first_id + number, "subject": f"Ticket about invoice {first_id + number}", "priority": "normal", "status": "open"} for number in range(25)]
        return json.dumps({"tickets": tickets, "meta": {"has_more": True, "after_cursor": cursor}})

    cursors = ["eyJvIjoyNX0", "eyJvIjo1MH0", "eyJvIjo3NX0", "eyJvIjoxMDB9", "eyJvIjoxMjV9"]
    firsts = [1000, 1025, 1050, 1000, 1025]
    steps = []
    for index, (first_id, cursor) in enumerate(zip(firsts, cursors)):
        arguments = {"query": "tags:billing"} | ({"page_after": cursors[index - 1]} if index else {})
        steps.append(step("export_search", arguments, page(first_id, cursor)))
    assert len(steps[0]["output"]) > 2048
    messages = pending_messages(policy, steps)
    assert messages[:4] == [[]] * 4
    assert messages[4] == ["export_search follows the cursor of a page it had read before"]


def test_outputs_read_for_what_they_say() -> None:
    # A null beside an empty list carries nothing; a reply whose own status is not_found failed.
    assert observe('{"took": 41, "hits": {"total": {"value": 237}, "returned": 0, "hits": []}, "note": null}').empty
    assert not observe('{"roles": [], "manager": "ada"}').empty
    assert looks_like_error('{"status": "not_found", "message": "No company matched the supplied identifiers."}')
    assert not looks_like_error('{"job": "exp_1", "state": "failed", "status": "done"}')
    # Error codes spelled as identifiers, with words as boundaries ("author" is no "auth").
    assert [classify_failure(text) for text in (
        "An error occurred (AccessDenied) when calling the PutObject operation",
        '{"error": {"type": "invalid_request_error", "message": "Invalid integer: 18.40"}}',
        "rpc error: code = PERMISSION_DENIED",
        "User: arn:aws:sts::1:assumed-role/x is not authorized to perform: s3:PutObject",
        "ValidationException: 1 validation error detected",
        "ThrottlingException: Rate exceeded",
        "the author field is required",
        "FAILED tests/test_api.py::test_get_user_not_found - AssertionError",
        "HTTP 400: This model's maximum context length is 128000 tokens",
    )] == ["permanent"] * 5 + ["retryable", "deterministic", "deterministic", "deterministic"]
    # A time taken under a field's name is jitter, a time left is news.
    assert observe('{"total_time_taken": 0.31, "hits": 3}').fingerprint == observe('{"total_time_taken": 1.42, "hits": 3}').fingerprint
    assert observe('{"elapsed_ms": 38, "rows": 3}').fingerprint == observe('{"elapsed_ms": 41, "rows": 3}').fingerprint
    assert observe('{"time_remaining": 120}').fingerprint != observe('{"time_remaining": 60}').fingerprint


def test_commands_are_the_same_target_by_their_program_paths_and_option_values() -> None:
    copy = "aws s3 cp ./out/report.parquet s3://finops/2024/06/"
    assert same_target({"command": copy}, {"command": copy + " --region eu-west-1"})  # an option added
    assert same_target({"command": copy + " --region eu-west-1"}, {"command": copy + " --no-progress --sse AES256"})  # options swapped
    assert same_target({"command": "curl -s https://x.test/a"}, {"command": "curl -sS https://x.test/a --no-progress-meter"})  # flags for the printout
    assert same_target({"command": "grep -rn 'refused' logs/"}, {"command": "grep -rni 'refused' logs/"})  # -i added
    assert same_target({"command": "ls /root/secret"}, {"command": "ls -lah /root/secret"})
    # A flag that may be the fix is a real change: create parents, force, recurse, a symlink.
    assert not same_target({"command": "mkdir build/out"}, {"command": "mkdir -p build/out"})
    assert not same_target({"command": "rm build/out"}, {"command": "rm -rf build/out"})
    assert not same_target({"command": "cp a.txt b.txt"}, {"command": "cp --force a.txt b.txt"})
    assert not same_target({"command": "ln /data/a /srv/a"}, {"command": "ln -s /data/a /srv/a"})
    assert not same_target({"command": "kubectl get pods -n payments"}, {"command": "kubectl get pods -n billing"})
    assert same_target({"command": copy}, {"command": "AWS_DEFAULT_REGION=eu-west-1 " + copy})  # an environment assignment
    # Another identity added is a real change: it may fix a 403.
    assert not same_target({"command": copy}, {"command": "AWS_PROFILE=ops " + copy})
    assert not same_target({"command": "kubectl get pods"}, {"command": "kubectl get pods --context prod-admin"})
    assert not same_target({"url": "https://x.test/a", "headers": {"Accept": "*/*"}}, {"url": "https://x.test/a", "headers": {"Accept": "*/*", "Authorization": "Bearer t"}})
    assert not same_target({"command": copy + " --region eu-west-1"}, {"command": copy + " --region us-east-1"})
    assert not same_target({"command": "kubectl get pods -n payments"}, {"command": "kubectl get pods -n billing"})
    assert not same_target({"command": "grep -rn refused logs/"}, {"command": "grep -rn refused src/"})
    # One amount however it is written; another amount is another target.
    assert same_target({"amount": "18.40"}, {"amount": 18.4}) and same_target({"amount": "18,40"}, {"amount": "18.4"})
    assert same_target({"count": 18}, {"count": 18.0}) and not same_target({"amount": "18.40"}, {"amount": 1840})
    assert not same_target({"python_version": "3.1"}, {"python_version": "3.10"})  # a version is no number
    assert not same_target({"amount": "1,000"}, {"amount": 1})  # a thousands separator is no decimal comma


def test_the_same_command_for_other_regions_is_fan_out_not_a_rewording(policy, tmp_path: Path) -> None:
    command = "aws ec2 describe-instances --region {} --filters Name=instance-state-name,Values=running --query 'Reservations[].Instances[].InstanceId' --output json"
    regions = ["us-east-2", "us-west-1", "us-west-2", "ca-central-1", "eu-west-1"]
    report = replay(policy, tmp_path, [step("bash", {"command": command.format(region)}, "[]") for region in regions])
    assert report.verdict.value == "warn"  # empty answers in a row: a warning, no rewording
    assert not any("near_duplicate" in name for index in range(5) for name in signals_at(report, index))
    # The same command with a throwaway value changed is still one call reworded.
    busting = [step("bash", {"command": f"curl -s 'https://api.example.test/items?limit=5' -H 'X-Request-Id: {token}'"}, "[]") for token in ("a1f3c9d2e7b4", "c4d2e9f1a3b7", "e7b1c3d9f2a4")]
    assert "near_duplicate/reworded_call" in signals_at(replay(policy, tmp_path, busting), 2)


def test_scratchpad_tools_are_thinking_and_do_not_break_a_monologue(policy, tmp_path: Path) -> None:
    assert [inferred_kind(name) for name in ("think", "think_tool", "mcp__sequential-thinking__sequentialthinking", "scratchpad", "reflect", "think_about_order", "get_thoughts", "add_note")] == (
        ["think"] * 5 + ["other"] * 3
    )
    announce = "The rollout of payments-api {} to prod has completed successfully (revision 57, 4 pods Running). Next, I will update change ticket CHG-20931."
    steps = [
        step(None, output=announce.format("v2.14.3")),
        step("think", {"thought": "Update CHG-20931 next."}, "Your thought has been logged."),
        step(None, output=announce.format("2.14.3")),
        step("think", {"thought": "Need to update CHG-20931 now."}, "Your thought has been logged."),
        step(None, output=announce.format("version 2.14.3")),
    ]
    report = replay(policy, tmp_path, steps)
    assert first(report) == (4, "replan")
    assert signals_at(report, 4) >= {"near_duplicate/reworded_message"}


def test_the_same_thought_again_and_again_is_stuck_and_a_thought_had_twice_is_not(policy, tmp_path: Path) -> None:
    thought = step("think", {"thought": "I should run the tests next to see what fails."}, "")
    report = replay(policy, tmp_path, [step("read_file", {"path": "README.md"}, "Run make test to run the tests.")] + [thought] * 4)
    assert first(report) == (3, "stop")
    assert signals_at(report, 3) == {"repeat/identical_call", "no_progress/repeated_thought"}
    waiting = [thought, step("get_messages", {"channel": "C1"}, "[]"), thought, step("get_messages", {"channel": "C1"}, '[{"text": "go ahead"}]')]
    assert first(replay(policy, tmp_path, waiting)) is None


def test_a_test_that_fails_the_same_way_while_each_fix_is_new_is_an_edit_test_loop(policy, tmp_path: Path) -> None:
    failing = "FAILED tests/test_orders.py::test_unique_order_ids - AssertionError: 14 duplicate order ids\n1 failed, 22 passed\n[exit code 1]"
    run = step("bash", {"command": "pytest -q tests/test_orders.py"}, failing, error=True)
    edits = [step("edit_file", {"path": "orders.py", "old": f"line {number}", "new": f"fix {number}"}, "edited 1 hunk") for number in range(3)]
    passing = step("bash", {"command": "pytest -q tests/test_orders.py"}, "23 passed\n[exit code 0]")
    steps = [run, edits[0], run, edits[1], run, edits[2], passing]
    report = replay(policy, tmp_path, steps)
    assert first(report) is None  # each failure after a fix not tried before is forgiven
    # The same "fix" again is no new change: made a second time after the same failure, it stops.
    same_edit = [run, edits[0], run, edits[0], run, edits[0], run]
    report = replay(policy, tmp_path, same_edit)
    assert first(report) == (3, "stop")
    assert "failure/repeated_failure" in signals_at(report, 3)
