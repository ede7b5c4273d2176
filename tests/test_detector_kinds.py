"""Kinds of stuck and healthy runs beyond the shared cases, each replayed under the default
policy as the step format: where the guard first intervenes, and with which signals.

Each test is one kind (several shapes of it where they differ), written from how such
runs look, not from the detectors' code: the words, tools and argument names vary.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopguard import Guard, ToolCall, ToolResult
from loopguard.observations import exit_status_only, is_empty_data, normalize, observe
from loopguard.policy import load_policy
from loopguard.tool_names import inferred_kind, long_poll_command, long_polls_by_name, runs_command, searches, sleeps, split_name, waits_on_server, writes_by_name
from loopguard.traces import replay_file
from loopguard.traces.report import RunReport


@pytest.fixture(scope="module")
def policy():
    return load_policy("builtin:default")


def replay(policy, tmp_path: Path, steps: list[dict[str, Any]]) -> RunReport:
    path = tmp_path / "run.json"
    path.write_text(json.dumps([{"run_id": "run", "steps": steps}]), encoding="utf-8")
    (report,) = replay_file(policy, path)
    assert report.error is None
    return report


def first(report: RunReport) -> tuple[int, str] | None:
    found = report.first_intervention
    return None if found is None else (found.step, found.action.value)


def signals_at(report: RunReport, step: int) -> set[str]:
    return {f"{signal.detector}/{signal.kind}" for entry in report.decisions if entry.step == step for signal in entry.decision.signals}


def said(agent: str, texts: Any) -> list[dict[str, Any]]:
    """Steps in which ``agent`` writes each text as a message, with no tool call."""
    return [step(None, output=text, agent=agent) for text in texts]


def step(tool: str | None, args: Any = None, output: Any = "", **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"agent": extra.pop("agent", "agent"), "output": output, **extra}
    if tool is not None:
        entry["tool"] = tool
        entry["args"] = args if args is not None else {}
    return entry


# -- stuck -------------------------------------------------------------------------------


def test_the_agents_own_words_between_empty_retries_are_no_news(policy, tmp_path: Path) -> None:
    query = {"query": "warranty terms for the X-200 dishwasher", "top_k": 5}
    report = replay(policy, tmp_path, [
        step("retrieve", query, "No documents above the similarity threshold."),
        step(None, output="Nothing came back. I will try the retrieval again."),
        step("retrieve", query, "No documents above the similarity threshold."),
        step(None, output="Still nothing; retrying once more."),
        step("retrieve", query, "No documents above the similarity threshold."),
    ])
    assert first(report) == (4, "stop")  # blocked before the third identical retrieval runs
    assert signals_at(report, 4) >= {"repeat/interleaved_repeat", "no_progress/empty_result"}


def test_a_call_that_keeps_returning_nothing_is_caught_among_calls_that_bring_news(policy, tmp_path: Path) -> None:
    search = {"q": "refund for digital goods after download"}
    report = replay(policy, tmp_path, [
        step("kb_search", search, "No articles found."),
        step("get_ticket_tags", {"ticket": 4411}, '["billing", "refund"]'),
        step("kb_search", search, "No articles found."),
        step("get_customer_tier", {"customer": "c-77"}, "standard"),
        step("kb_search", search, "No articles found."),
        step("list_macros", {}, '["refund-policy", "escalate", "close"]'),
    ])
    assert first(report) == (4, "stop")
    assert signals_at(report, 4) == {"repeat/interleaved_repeat", "no_progress/same_call_no_progress"}


def test_the_same_failure_after_changes_that_do_not_help_is_a_replan(policy, tmp_path: Path) -> None:
    error = "ContextWindowExceededError: context length exceeded (requested 33105 tokens, limit 32768)"
    report = replay(policy, tmp_path, [
        step("generate", {"prompt_ref": "chapter-7"}, error, error=True),
        step("summarize_memory", {"target_tokens": 4000}, "Summary written: chapters 1-6, cast, open threads."),
        step("generate", {"prompt_ref": "chapter-7"}, error, error=True),
        step("summarize_memory", {"target_tokens": 4000}, "Summary written: recap of chapters 1-6 and characters."),
        step("generate", {"prompt_ref": "chapter-7"}, error, error=True),
        step("summarize_memory", {"target_tokens": 4000}, "Summary written: plot so far and the cast."),
        step("generate", {"prompt_ref": "chapter-7"}, error, error=True),
    ])
    # The second failure came after a change (a warning); the third, after another, is a replan.
    assert signals_at(report, 2) == {"failure/repeated_failure_after_change"}
    assert first(report) == (4, "replan")
    assert "failure/repeated_deterministic_failure" in signals_at(report, 4)


def test_an_empty_answer_in_an_api_envelope_is_empty(policy, tmp_path: Path) -> None:
    assert [
        observe(text).empty
        for text in (
            '{"results": []}',
            '{"users": [], "total": 68, "offset": 75, "limit": 25}',
            '{"ok": true, "messages": [], "has_more": false, "response_metadata": {"next_cursor": ""}}',
            '{"matches": [], "nextPageToken": null, "warnings": ["no published fares"]}',
            '{"id": "u1", "name": "Bob", "roles": []}',
            '{"errors": [], "message": "Created user 123"}',
            '{"order": "o-7", "items": []}',
        )
    ] == [True, True, True, True, False, False, False]
    # Paging on past the end while the API echoes the offset: each reply differs, all are empty.
    pages = [step("list_users", {"offset": offset, "limit": 25}, json.dumps({"users": [{"id": f"u{offset + n}"} for n in range(size)], "total": 60}))
             for offset, size in ((0, 25), (25, 25), (50, 10))]
    pages += [step("list_users", {"offset": offset, "limit": 25}, json.dumps({"users": [], "total": 60, "offset": offset, "limit": 25})) for offset in (75, 100, 125)]
    report = replay(policy, tmp_path, pages)
    assert first(report) == (4, "replan")
    assert signals_at(report, 4) >= {"near_duplicate/pagination", "no_progress/empty_result"}
    # The same search with a new request id each time, echoed in an empty reply.
    searches = [step("company_search", {"name": "Quillfeather GmbH", "country": "DE", "request_id": f"req-{n:04x}9c1e"}, json.dumps({"matches": [], "request_id": f"req-{n:04x}9c1e"})) for n in range(5)]
    report = replay(policy, tmp_path, searches)
    assert first(report) == (2, "replan")
    assert signals_at(report, 2) >= {"near_duplicate/reworded_call", "no_progress/empty_result"}


def test_a_paraphrased_monologue_is_a_replan(policy, tmp_path: Path) -> None:
    report = replay(policy, tmp_path, [
        step("get_service_health", {"service": "payments-api"}, '{"status": "degraded", "failing_checks": ["/healthz/db"]}', agent="ops"),
        step(None, output="The health check for payments-api fails on /healthz/db. I'll look at the database connection logs next.", agent="ops"),
        step(None, output="payments-api's /healthz/db check is failing. Next I'll check the database connection logs.", agent="ops"),
        step(None, output="The /healthz/db check of payments-api is failing, so I will read the database connection logs next.", agent="ops"),
        step(None, output="Checking the database connection logs next, since /healthz/db fails for payments-api.", agent="ops"),
    ])
    assert first(report) == (3, "replan")
    assert signals_at(report, 3) == {"near_duplicate/reworded_message", "no_progress/reworded_message"}
    # Messages between tool calls that bring news are not a monologue, however alike.
    healthy = replay(policy, tmp_path, [
        entry
        for day in range(1, 6)
        for entry in (
            step(None, output=f"Let me search flights from SFO to JFK on May {day}.", agent="travel"),
            step("search_flights", {"origin": "SFO", "destination": "JFK", "date": f"2024-05-0{day}"}, f'[{{"flight": "HAT{day}01", "price": {200 + day}}}]', agent="travel"),
        )
    ])
    assert healthy.verdict.value == "continue"


# -- healthy -----------------------------------------------------------------------------


@pytest.mark.parametrize("wait_tool", ["wait", "sleep", "wait_seconds", "sleepMs"])
def test_checks_between_deliberate_waits_are_polls(policy, tmp_path: Path, wait_tool: str) -> None:
    check = {"command": "aws s3 ls s3://lake/raw/orders/dt=2024-07-01/_SUCCESS"}
    steps = []
    for _ in range(4):
        steps += [step("bash", check, ""), step(wait_tool, {"seconds": 120}, "waited 120s")]
    steps += [step("bash", check, "2024-07-02 03:14:09          0 _SUCCESS"), step("bash", {"command": "spark-submit jobs/daily.py"}, "wrote 1,204,331 rows")]
    report = replay(policy, tmp_path, steps)
    assert report.verdict.value == "continue"


def test_a_command_that_sleeps_before_it_checks_is_a_poll(policy, tmp_path: Path) -> None:
    dig = {"command": "sleep 60; dig +short api.example.org @1.1.1.1"}
    report = replay(policy, tmp_path, [
        step("update_dns_record", {"name": "api", "type": "A", "content": "203.0.113.48"}, '{"success": true}'),
        step("bash", dig, "198.51.100.17"),
        step("bash", dig, "198.51.100.17"),
        step("bash", dig, "198.51.100.17"),
        step("bash", dig, "203.0.113.48"),
        step("bash", {"command": "curl -s https://api.example.org/healthz"}, "200 OK"),
    ])
    assert report.verdict.value == "continue"
    # Without the sleep the same three answers are the agent not reading its results.
    stuck = replay(policy, tmp_path, [step("bash", {"command": "dig +short api.example.org"}, "198.51.100.17") for _ in range(4)])
    assert first(stuck) == (2, "stop")


def test_quiet_success_and_write_replies_are_not_nothing_new(policy, tmp_path: Path) -> None:
    tsc = {"command": "npx tsc --noEmit -p ."}
    report = replay(policy, tmp_path, [
        step("bash", tsc, "src/api/client.ts(41,7): error TS2322: Type 'string | undefined' is not assignable", error=True),
        step("edit_file", {"path": "src/api/client.ts", "line": 41, "text": "const token = session.token ?? ''"}, "applied 2 edits"),
        step("bash", tsc, "src/components/Table.tsx(17,3): error TS2741: Property 'rowKey' is missing", error=True),
        step("edit_file", {"path": "src/components/Table.tsx", "line": 17, "text": "<DataTable rowKey='id' />"}, "applied 1 edit"),
        step("edit_file", {"path": "src/hooks/usePaging.ts", "line": 9, "text": "export function usePaging(p: Paging) {"}, "applied 1 edit"),
        step("bash", tsc, ""),  # tsc prints nothing when the project compiles
        step("bash", {"command": "npm run build"}, "built in 2.41s"),
    ])
    assert report.verdict.value in ("continue", "warn")
    assert first(report) is None
    # A command that keeps printing nothing is still nothing new.
    grep = replay(policy, tmp_path, [step("bash", {"command": "grep -rn TODO src/"}, "") for _ in range(3)])
    assert first(grep) == (2, "stop")


def test_a_test_rerun_after_an_edit_is_not_blocked(policy, tmp_path: Path) -> None:
    pytest_run = {"command": "pytest -q tests/test_slug.py"}
    failing = "FAILED tests/test_slug.py::test_unicode - AssertionError: assert 'caf' == 'cafe'\n1 failed, 3 passed"
    report = replay(policy, tmp_path, [
        step("bash", pytest_run, failing, error=True),
        step("edit_file", {"path": "src/slug.py", "old": "s = s.lower()", "new": "s = s.strip().lower()"}, "ok"),
        step("bash", pytest_run, failing, error=True),
        step("edit_file", {"path": "src/slug.py", "old": "s = re.sub(...)", "new": "s = unicodedata.normalize('NFKD', s)"}, "ok"),
        step("bash", pytest_run, "4 passed in 0.04s"),
    ])
    assert first(report) is None
    assert signals_at(report, 2) == {"failure/repeated_failure_after_change"}
    # The rerun after the second edit runs; that it is the third run of the command is noted only.
    assert signals_at(report, 4) == {"repeat/interleaved_repeat"} and report.verdict.value == "warn"


def test_handoffs_with_work_between_are_healthy_and_the_same_handoff_again_is_not(policy, tmp_path: Path) -> None:
    def to(agent: str, by: str) -> dict[str, Any]:
        return step("transfer_to_agent", {"agent_name": agent}, f"control transferred to {agent}", agent=by)

    report = replay(policy, tmp_path, [
        to("researcher", "supervisor"),
        step("web_search", {"query": "GPAI obligations timeline"}, "5 results: europarl ...", agent="researcher"),
        to("supervisor", "researcher"),
        to("writer", "supervisor"),
        step("write_draft", {"title": "What the AI Act asks"}, "draft v1 saved (812 words)", agent="writer"),
        to("supervisor", "writer"),
        to("reviewer", "supervisor"),
        step("review_draft", {"draft": "v1"}, "3 issues: dates, threshold, intro", agent="reviewer"),
        to("supervisor", "reviewer"),
        to("writer", "supervisor"),
        step("revise_draft", {"draft": "v1"}, "draft v2 saved (734 words)", agent="writer"),
        to("supervisor", "writer"),
        step("publish", {"draft": "v2"}, "published", agent="supervisor"),
    ])
    # The 3rd transfer back to the supervisor is a repeat (a warning); the same receipt from
    # it is no stale streak of its own, since work came between.
    assert report.verdict.value == "warn" and first(report) is None
    again = replay(policy, tmp_path, [to("billing", "triage") for _ in range(6)])
    assert first(again) == (2, "stop")


# -- what names and arguments say ---------------------------------------------------------


def test_tool_names_and_arguments_read_without_traits() -> None:
    assert [inferred_kind(name) for name in ("wait", "sleep", "wait_seconds", "sleepMs", "waitForJob", "wait_until_ready", "waiter", "delay_shipment")] == [
        "wait", "wait", "wait", "wait", "poll", "poll", "other", "other",
    ]
    assert [writes_by_name(name) for name in ("edit_file", "sendEmail", "update_reservation", "get_user", "search", "settings")] == [
        True, True, True, False, False, False,
    ]
    assert [split_name(name) for name in ("waitForJob", "wait_for_job", "X-Request-Id", "HTTPStatus")] == [
        ["wait", "for", "job"], ["wait", "for", "job"], ["x", "request", "id"], ["http", "status"],
    ]
    assert runs_command("run", {"command": "ls"}) and runs_command("bash", {}) and not runs_command("search", {"q": "bash"})
    assert sleeps("bash", {"command": "sleep 60; dig +short host"})
    assert sleeps("python", {"code": "import time\ntime.sleep(5)\nprint(status())"})
    assert not sleeps("search", {"q": "sleep 8 hours a night"})  # only commands sleep
    assert not sleeps("bash", {"command": "echo asleep 5"})


# -- what a break-it review found ----------------------------------------------------------


def test_rules_see_the_kind_the_policy_gives_not_the_poll_after_a_wait(tmp_path: Path) -> None:
    from loopguard import Guard, ToolCall, ToolResult

    path = tmp_path / "loopguard.yml"
    path.write_text(
        "version: 1\nextends: builtin:default\ntools:\n  export_table: {kind: read}\n  sleep: {kind: other}\n"
        "rules:\n  - id: no-read-export\n    tool: export_table\n    when: \"tool.kind == 'read'\"\n"
        "    verdict: block\n    message: exports are not reads here\n"
    )
    guard = Guard.from_policy(path)
    session = guard.session()
    wait = ToolCall("wait", {"seconds": 1}, id="1")
    session.before_call(wait)
    session.after_call(wait, ToolResult("waited 1s"))
    decision = session.before_call(ToolCall("export_table", {"table": "t"}, id="2"))
    assert (decision.verdict.kind.value, decision.rule) == ("block", "no-read-export")
    # A kind written in the policy is used as written, even 'other': no inference from the name.
    assert (guard.policy.tool_profile("sleep").kind, guard.policy.tool_profile("wait").kind) == ("other", "wait")


def test_messages_that_differ_in_what_they_name_or_share_no_words_are_not_rewordings(policy, tmp_path: Path) -> None:
    narrated = []
    for quarter in range(1, 5):
        narrated += [
            step(None, output=f"Loading report_q{quarter}.csv next.", agent="analyst"),
            step("load_csv", {"path": f"report_q{quarter}.csv"}, "" if quarter == 2 else f"{1000 * quarter} rows", agent="analyst"),
        ]
    assert replay(policy, tmp_path, narrated).verdict.value == "continue"
    chat = said("bot", ("好的，我来查一下。", "请稍等，我正在处理。", "👍", "🙂"))
    assert replay(policy, tmp_path, chat).verdict.value == "continue"


def test_an_identical_message_with_a_pending_word_is_a_monologue_not_a_poll(policy, tmp_path: Path) -> None:
    report = replay(policy, tmp_path, [step(None, output="Still waiting for the deployment to finish.", agent="ops") for _ in range(5)])
    assert first(report) == (2, "stop")


def test_a_command_that_only_mentions_sleep_is_no_poll(policy, tmp_path: Path) -> None:
    grep = {"command": "grep -rn 'sleep 5' src/"}
    report = replay(policy, tmp_path, [step("bash", grep, "src/run.sh:4: sleep 5") for _ in range(4)])
    assert first(report) == (2, "stop")
    assert not sleeps("bash", {"command": "git commit -m 'add sleep 2 before retry'"})
    assert sleeps("bash", {"command": "make && sleep .5 && curl -s localhost:8080/health"})


def test_a_poll_made_by_waits_is_stuck_after_half_the_poll_patience(policy, tmp_path: Path) -> None:
    steps = []
    for _ in range(14):
        steps += [step("wait", {"seconds": 30}, "waited 30s"), step("get_deploy", {"id": "d-9"}, '{"id": "d-9", "replicas": "2/4"}')]
    report = replay(policy, tmp_path, steps)
    # 10 identical answers are tolerated (half the poll patience of a declared poll): the 11th
    # (step 21) is stale, and the 12th check is a repeat that brings nothing new either.
    assert first(report) == (23, "stop")
    assert signals_at(report, 23) == {"repeat/identical_call", "no_progress/stalled_poll"}


def test_a_write_tool_reply_that_reports_a_failure_is_no_acknowledgement(policy, tmp_path: Path) -> None:
    edits = [step("edit_file", {"path": "app.py", "old": f"x = {n}", "new": "x = 0"}, "old string not found in app.py") for n in range(4)]
    report = replay(policy, tmp_path, edits)
    assert signals_at(report, 1) == {"no_progress/same_output"} or signals_at(report, 2) >= {"no_progress/same_output"}
    assert report.verdict.value == "warn"


def test_an_empty_error_field_is_no_failure() -> None:
    assert observe('{"error": null, "results": [1, 2]}').error is False
    assert observe('{"failed": [], "status": "ok"}').error is False
    assert observe('{"error": "token expired"}').error is True


# -- what a fourth blind set found ----------------------------------------------------------


def test_empty_answers_printed_as_python_or_with_a_message_are_empty() -> None:
    assert observe("{'messages': [], 'resultSizeEstimate': 0}").empty is True
    assert observe('{"series": [], "message": "no datapoints found for query"}').empty is True
    assert observe('{"row_count": 0, "offset": 1500, "rows_preview": [], "truncated": false}').empty is True
    assert observe("{'messages': [{'id': 'm1'}], 'resultSizeEstimate': 1}").empty is False
    assert observe('{"issues": [], "message": "a.py: all checks passed"}').empty is False


def test_a_sleeping_poll_whose_table_has_a_ready_column_is_still_a_poll(policy, tmp_path: Path) -> None:
    pod = {"command": "sleep 30 && kubectl get pod redis-master-0"}
    table = "NAME             READY   STATUS              RESTARTS   AGE\nredis-master-0   0/1     ContainerCreating   0          12s"
    report = replay(policy, tmp_path, [
        step("bash", {"command": "kubectl apply -f redis.yaml"}, "pod/redis-master-0 created"),
        *[step("bash", pod, table) for _ in range(3)],
        step("bash", pod, table.replace("0/1     ContainerCreating", "1/1     Running          ")),
        step("bash", {"command": "kubectl exec redis-master-0 -- redis-cli ping"}, "PONG"),
    ])
    assert report.verdict.value == "continue"
    # A failed state cannot be waited out: the same failed answer is no healthy poll.
    failed = replay(policy, tmp_path, [
        step("bash", {"command": "sleep 30 && kubectl get pod api-0"}, "NAME    READY   STATUS             RESTARTS   AGE\napi-0   0/1     CrashLoopBackOff   4          3m")
        for _ in range(4)
    ])
    assert first(failed) == (2, "stop")


def test_the_same_record_re_read_between_other_work_is_no_stuck_call(policy, tmp_path: Path) -> None:
    steps = []
    for n in range(4):
        steps += [
            step("get_order", {"id": "o-7"}, '{"id": "o-7", "status": "open", "items": 3}'),
            step("get_customer", {"id": f"c-{n}"}, f'{{"id": "c-{n}", "tier": "gold"}}'),
        ]
    assert first(replay(policy, tmp_path, steps)) is None


def test_conditions_may_call_methods_of_a_root_and_columns_count_characters(tmp_path: Path) -> None:
    from loopguard import Guard, ToolCall, ToolResult
    from loopguard.policy import check_policy

    path = tmp_path / "loopguard.yml"
    path.write_text(
        "version: 1\nrules:\n  - id: quota\n    tool: search\n    when: \"run.get('tool_calls', 0) >= 2\"\n"
        "    verdict: block\n    message: search quota reached\n"
    )
    session = Guard.from_policy(path).session()
    verdicts = []
    for n in range(3):
        call = ToolCall("search", {"q": f"q{n}"}, id=str(n))
        verdicts.append(session.before_call(call).verdict.kind.value)
        session.after_call(call, ToolResult(f"result {n}"))
    assert verdicts == ["allow", "allow", "block"]
    typo = tmp_path / "typo.yml"
    typo.write_text("version: 1\nrules:\n  - id: cafe\n    tool: search\n    when: \"turn.user_message == 'café' and run.toolcalls > 3\"\n    verdict: block\n    message: not here\n")
    [problem] = check_policy(str(typo)).problems
    assert (problem.line, problem.column, problem.code) == (5, 48, "LG304")


# -- what the fifth blind set found -----------------------------------------------------------


def test_a_time_taken_is_no_news_and_no_x_found_is_empty(policy, tmp_path: Path) -> None:
    failing = "ImportError while importing test module 'tests/test_parser.py'.\nE   ImportError: cannot import name 'parse_header'\n1 error in {}s"
    run = [step("run_shell", {"cmd": "pytest tests/test_parser.py -q"}, failing.format(seconds)) for seconds in ("0.21", "0.21", "0.22", "0.21")]
    assert first(replay(policy, tmp_path, run)) == (2, "stop")
    assert normalize("1 error in 0.21s; took 38 ms") == normalize("1 error in 0.22s; took 41 ms") == "1 error in <duration>; took <duration> ms"
    assert normalize("127 rows") != normalize("128 rows")  # a count is no duration
    assert [observe(text).empty for text in ("No customer found.", "no matching user found", "No issues found.", "No module named foo")] == [
        True, True, False, False,
    ]


def pending_messages(policy, steps: list[dict[str, Any]]) -> list[list[str]]:
    """The signal messages of each pending call when ``steps`` run through a live session."""
    session = Guard.from_policy(policy).session()
    messages = []
    for entry in steps:
        call = ToolCall(entry["tool"], entry["args"])
        messages.append([signal.message for signal in session.before_call(call).signals])
        session.after_call(call, ToolResult(entry["output"]))
    return messages


def _cursor_pages(replies: list[tuple[str, str | None]], first_arguments: dict[str, Any], cursor_key: str = "cursor") -> list[dict[str, Any]]:
    """One list call per (items, next cursor) reply, each following the previous reply's cursor."""
    steps, cursor = [], None
    for items, next_cursor in replies:
        arguments = dict(first_arguments) if cursor is None else {**first_arguments, cursor_key: cursor}
        steps.append(step("list_products", arguments, json.dumps({"items": items, "next_cursor": next_cursor})))
        cursor = next_cursor
    return steps


def test_a_cursor_that_wraps_around_is_caught_with_the_same_or_fresh_cursors(policy, tmp_path: Path) -> None:
    pages = ["SKU-0001..SKU-0050", "SKU-0051..SKU-0100", "SKU-0101..SKU-0133"]
    # The last page's cursor leads back to the first page, whose reply carries its cursor again.
    same_cursors = _cursor_pages([(pages[index % 3], ["Y3Vyc29yOjUw", "Y3Vyc29yOjEwMA", "Y3Vyc29yOjA"][index % 3]) for index in range(8)], {"limit": 50})
    report = replay(policy, tmp_path, same_cursors)
    assert first(report) == (4, "replan")
    assert "near_duplicate/pagination" in signals_at(report, 4)
    # Every reply carries a fresh cursor while the items wrap: only the pages, with their
    # cursors set aside, tell that the data was read before.
    fresh_cursors = _cursor_pages([(pages[index % 3], f"c{index + 2}") for index in range(8)], {"limit": 50})
    report = replay(policy, tmp_path, fresh_cursors)
    assert first(report) == (5, "replan")
    messages = pending_messages(policy, fresh_cursors)
    assert messages[1] == messages[2] == messages[3] == []  # following a cursor alone is no signal
    assert messages[4] == ["list_products follows the cursor of a page it had read before"]


def test_cursor_paging_to_its_end_and_calls_that_only_look_like_it_are_healthy(policy, tmp_path: Path) -> None:
    # Pages of one shape, the cursor at the end of a long page (Notion, Slack, S3 shapes).
    rows = lambda first_id: [{"id": f"p-{number:05d}", "title": f"Runbook {number}", "owner": "ops"} for number in range(first_id, first_id + 60)]
    long_pages = [
        step("notion_query", {"database_id": "db-1"} | ({} if index == 0 else {"start_cursor": f"cur-{index}"}),
             json.dumps({"results": rows(index * 60), "has_more": index < 3, "next_cursor": f"cur-{index + 1}" if index < 3 else None}))
        for index in range(4)
    ]
    assert len(long_pages[0]["output"]) > 3000
    report = replay(policy, tmp_path, long_pages)
    assert report.verdict.value == "continue"
    assert pending_messages(policy, long_pages) == [[]] * 4
    # A browser agent clicks refs taken from snapshots that look alike: following a value
    # from the previous output is no wrap-around while the pages change.
    snapshot = "- textbox \"Name\" [ref=e{0}]\n- textbox \"Email\" [ref=e{1}]\n- button \"Next\" [ref=e{2}]\nstep {3} of 4"
    clicks = [step("browser_click", {"ref": f"e{3 * index + 2}"} if index else {"ref": "start"}, snapshot.format(3 * (index + 1), 3 * (index + 1) + 1, 3 * (index + 1) + 2, index + 1)) for index in range(4)]
    assert replay(policy, tmp_path, clicks).verdict.value == "continue"
    # An event stream polled with a since-token: empty polls carry a fresh token and are no pages.
    stream = [step("get_events", {"topic": "deploys"} | ({"since": f"tok-{index}"} if index else {}), json.dumps({"events": [] if index % 2 else [{"id": index}], "next": f"tok-{index + 1}"})) for index in range(8)]
    assert first(replay(policy, tmp_path, stream)) is None


def test_a_search_that_matches_nothing_is_an_empty_answer_not_a_failure(policy, tmp_path: Path) -> None:
    grep = {"command": 'grep -rn "FEATURE_FLAG_BETA" src/'}
    run = [step("bash", {"command": "ls src"}, "api\ncli\nflags.py\n[exit code 0]")] + [step("bash", grep, "[exit code 1]") for _ in range(4)]
    report = replay(policy, tmp_path, run)
    assert first(report) == (3, "stop")  # the third identical empty search, not the second "failure"
    assert signals_at(report, 3) >= {"repeat/identical_call", "no_progress/empty_result"}
    assert [searches("bash", {"command": command}) for command in (
        'grep -rn "X" src/', "cd src && git grep X", "find . -name '*.py' | xargs -0 grep X", "rg foo", "grep -rnE 'A|B' src/",
        "sudo -u app grep -rn X /srv", "timeout 10 grep x f", "LC_ALL=C grep x f", "grep x f | wc -l", "echo grep", "python grep.py",
    )] == [True] * 8 + [False] * 3
    assert (exit_status_only("[exit code 1]"), exit_status_only("Exit code: 2"), exit_status_only("src/a.py:3: x\n[exit code 1]")) == (1, 2, None)
    # Exit status 2 is grep's own error: a permanent failure, repeated.
    assert first(replay(policy, tmp_path, [step("bash", grep, "grep: src/: No such file or directory\n[exit code 2]")] * 3)) == (1, "stop")


def test_an_empty_answer_beside_response_metadata_is_empty() -> None:
    boto3 = "{'Items': [], 'Count': 0, 'ScannedCount': 0, 'ResponseMetadata': {'RequestId': 'EG52U77O', 'HTTPStatusCode': 200, 'HTTPHeaders': {'server': 'Server'}, 'RetryAttempts': 0}}"
    assert observe(boto3).empty
    assert not observe('{"users": [{"id": 1}], "metadata": {"request": "r-1"}}').empty


def test_a_wrapped_cursor_is_caught_through_request_ids_and_echoed_cursors(policy, tmp_path: Path) -> None:
    # S3-like replies echo the token they were asked with and carry their own request ids; the
    # items of page 3 are page 0's again. Page bodies differ only in those.
    items = [["a.csv", "b.csv"], ["c.csv", "d.csv"], ["e.csv"]]
    steps, token = [], None
    for index in range(8):
        reply = {"RequestId": f"REQ{index}X7Q", "IsTruncated": True, "Contents": items[index % 3], "NextContinuationToken": f"tok/{index + 1}=="}
        if token is not None:
            reply["ContinuationToken"] = token
        steps.append(step("s3.list_objects_v2", {"Bucket": "lake", "MaxKeys": 2} | ({"ContinuationToken": token} if token else {}), repr(reply)))
        token = reply["NextContinuationToken"]
    assert first(replay(policy, tmp_path, steps)) == (5, "replan")
    # A cursor written inside a data field is data: Stripe pages that name their last id stay new.
    pages = [step("list_charges", {"limit": 100} | ({"starting_after": f"ch_{index * 100}"} if index else {}),
                  repr({"data": f"100 charges ch_{index * 100 + 1}..ch_{index * 100 + 100}", "has_more": True, "next": f"ch_{index * 100 + 100}"}))
             for index in range(5)]
    assert first(replay(policy, tmp_path, pages)) is None


def test_following_references_and_pages_alike_are_no_wrap(policy, tmp_path: Path) -> None:
    # A value from the previous output followed after other tools' empty answers (break-it review).
    run = [step("get_order", {"id": "o-1"}, "order o-1: shipped; replaced by o-2"), step("search", {"q": "o-1 refund"}, "no results"),
           step("search", {"q": "o-1 chargeback"}, "no results"), step("get_order", {"id": "o-2"}, "order o-2: delivered")]
    assert first(replay(policy, tmp_path, run)) is None
    # Filtered scan pages that look alike in a row, then a page that finds something.
    scan = [step("scan", {"table": "t"} | ({"after": f"k{index}"} if index else {}), f"matched 0 of 1000, next: k{index + 1}") for index in range(3)]
    scan.append(step("scan", {"table": "t", "after": "k3"}, "matched 2 of 1000: user#3412, user#3977"))
    assert first(replay(policy, tmp_path, scan)) is None
    # Pages told apart only by their items' uuids or timestamps are different pages.
    pages = [step("list_instances", {"region": "eu"} | ({"cursor": f"c{index}"} if index else {}),
                  json.dumps({"instances": [{"uuid": f"9f1c{index}a2e-0000-4000-8000-00000000000{index}", "state": "running"}], "next": f"c{index + 1}"}))
             for index in range(5)]
    assert first(replay(policy, tmp_path, pages)) is None


@pytest.mark.parametrize("where", ["url", "nested"])
def test_a_cursor_in_a_url_or_inside_an_object_is_followed(policy, tmp_path: Path, where: str) -> None:
    """Break-it s2/s2b: the cursor travels in the query string of a URL or in a params object."""
    cursors = ["eyJvIjo1MH0=", "eyJvIjoxMDB9", "eyJvIjowfQ=="]
    pages = [["usr_001", "usr_002"], ["usr_051", "usr_052"], ["usr_101", "usr_102"]]
    steps, cursor = [], None
    for index in range(8):
        if where == "url":
            arguments = {"url": "https://api.example.test/users?limit=50" + (f"&cursor={cursor}" if cursor else "")}
        else:
            arguments = {"path": "/users", "params": {"limit": 50} | ({"cursor": cursor} if cursor else {})}
        output = json.dumps({"data": [{"id": user} for user in pages[index % 3]], "took": 5, "next_cursor": cursors[index % 3]})
        steps.append(step("fetch", arguments, output))
        cursor = cursors[index % 3]
    report = replay(policy, tmp_path, steps)
    assert first(report) == (4, "replan")
    assert "near_duplicate/pagination" in signals_at(report, 4)


def test_a_long_poll_that_times_out_empty_is_a_poll_and_the_same_news_again_is_not(policy, tmp_path: Path) -> None:
    updates = {"offset": 90412003, "timeout": 50, "allowed_updates": ["message"]}
    news = json.dumps({"ok": True, "result": [{"update_id": 90412003, "message": {"text": "/status"}}]})
    run = [step("telegram.getUpdates", updates, '{"ok": true, "result": []}') for _ in range(3)] + [step("telegram.getUpdates", updates, news)]
    assert first(replay(policy, tmp_path, run)) is None
    # Without the server-side wait the same empty check three times is the rw03 shape.
    quick = [dict(entry, args={"offset": 90412003}) for entry in run]
    assert first(replay(policy, tmp_path, quick)) == (2, "stop")
    assert [waits_on_server(arguments) for arguments in ({"timeout": 50}, {"WaitTimeSeconds": 20}, {"feed": "longpoll"}, {"watch": True}, {"timeout": 0}, {"limit": 50})] == [
        True, True, True, True, False, False,
    ]
    assert [long_polls_by_name(name) for name in ("getUpdates", "sqs.receive_message", "watch_pods", "search_flights", "get_order")] == [True, True, True, False, False]


def test_empty_data_printed_by_a_command_is_an_empty_answer_and_a_sentence_is_not() -> None:
    assert [is_empty_data(text) for text in ("[]", 'HTTP/1.1 200 OK\r\nA: b\r\n\r\n{"items": [], "total": 0}', "No changes. Your infrastructure matches.", "", "(no output)")] == [
        True, True, False, False, False,
    ]
    assert observe("HTTP/2.0 200 OK\nContent-Type: application/json\n\n[]").empty
    assert not observe('HTTP/2.0 200 OK\n\n[{"id": 1}]').empty


def test_break_it_round_two(policy, tmp_path: Path) -> None:
    """Runs a second break-it review wrote against cursors, edits and long polls."""
    # A failed edit changes nothing: views between str_replace calls that keep failing re-read.
    view = lambda low, high: step("str_replace_editor", {"command": "view", "path": "/repo/app.py", "view_range": [low, high]}, f"<lines {low}-{high}>")
    failing = lambda count: step("str_replace_editor", {"command": "str_replace", "path": "/repo/app.py", "old_str": f"if retries > {count}:", "new_str": "x"},
                                 f"No replacement was performed, old_str `if retries > {count}:` did not appear verbatim in /repo/app.py.")
    run = [view(1, 120)] + [entry for count in range(6) for entry in (failing(count), view(40, 80))]
    assert first(replay(policy, tmp_path, run))[1] in ("replan", "stop")
    # A client-side timeout on a tool not named for long polling changes nothing.
    events = [step("list_events", {"calendar": "primary", "date": "2024-05-01", "timeout": 30}, "No events found") for _ in range(4)]
    assert first(replay(policy, tmp_path, events)) == (2, "stop")
    # A check after a wait stays a poll when it also carries a timeout.
    waits = [entry for _ in range(4) for entry in (step("bash", {"command": "sleep 30"}, ""),
             step("get_deployment_events", {"deployment": "web", "timeout": 10}, "web: 3 of 5 replicas updated"))]
    assert first(replay(policy, tmp_path, waits)) is None
    # An item's "host" is data, not a response stamp: alternating pages of distinct hosts.
    pages = [step("list_instances", {"zone": "a"} | ({"next_token": f"tok{index:03d}"} if index else {}),
                  json.dumps({"instances": [{"host": f"web-{index:02d}", "status": "running" if index % 2 else "stopped"}], "next_token": f"tok{index + 1:03d}"}))
             for index in range(6)]
    assert first(replay(policy, tmp_path, pages)) is None


def test_long_polls_run_as_shell_commands_are_polls(policy, tmp_path: Path) -> None:
    """Blind round 7: Telegram by curl, SQS by the AWS CLI and Redis BLPOP, each empty a few
    times before a message comes."""
    commands = {
        'curl -s "https://api.telegram.org/bot$T/getUpdates?offset=7&timeout=30"': '{"ok":true,"result":[]}\n[exit code 0]',
        "aws sqs receive-message --queue-url https://sqs.test/q --wait-time-seconds 20": "[exit code 0]",
        "redis-cli -h queue.internal BLPOP jobs:pdf-render 30": "(nil)\n[exit code 0]",
    }
    for command, empty in commands.items():
        run = [step("bash", {"command": command}, empty) for _ in range(3)] + [step("bash", {"command": command}, "job 55821\n[exit code 0]")]
        assert first(replay(policy, tmp_path, run)) is None, command
    assert [long_poll_command({"command": command}) for command in (*commands, "kubectl get pods -w", "ls -w 80 x", "redis-cli LPOP jobs", "curl https://x.test/getUpdates?offset=1")] == [
        True, True, True, True, False, False, False,
    ]
    assert [observe(text).empty for text in ("(nil)\n[exit code 0]", "[exit code 0]", "api\ncli\n[exit code 0]", '{"ok":true,"result":[]}\n[exit code 0]')] == [True, True, False, True]


def test_empty_data_with_a_shell_suffix_and_searches_ending_in_a_separator() -> None:
    """From the docs check: redis-cli's (nil) and '[]' before '[exit code 0]' are empty data,
    and a grep command ending in a newline or ';' is still a search."""
    assert [is_empty_data(text) for text in ("(nil)", "[]\n[exit code 0]", '{"items": []}\n[exit code 0]', "(empty list or set)")] == [True] * 4
    assert searches("bash", {"command": "grep -rn needle src\n"}) and searches("bash", {"command": "grep -rn needle src;"})
