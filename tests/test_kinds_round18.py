"""Kinds from the round-18 session: one question asked again with another verb."""

from __future__ import annotations

import json
from pathlib import Path

from test_detector_kinds import first, replay, signals_at, step  # noqa: F401  (policy is a fixture)
from test_detector_kinds import policy  # noqa: F401

NOTHING = "No articles found"


def _searches(queries: list[str]) -> list[dict[str, object]]:
    return [step("search_help_center", {"query": query}, NOTHING) for query in queries]


def test_one_question_asked_with_another_verb_each_time_is_a_replan_at_its_fourth_wording(policy, tmp_path: Path) -> None:
    verbs = ["how do I cancel my subscription", "how do I end my subscription", "how do I stop my subscription", "how do I terminate my subscription"]
    report = replay(policy, tmp_path, _searches(verbs))
    assert first(report) == (3, "replan")
    assert signals_at(report, 3) == {"near_duplicate/reworded_call", "no_progress/empty_result"}
    imperative = ["reset 2FA without phone", "disable 2FA without phone", "remove 2FA without phone", "turn off 2FA without phone"]
    assert first(replay(policy, tmp_path, _searches(imperative))) == (3, "replan")


def test_actions_the_user_named_or_items_in_an_actions_place_are_a_fan_out(policy, tmp_path: Path) -> None:
    # The user asked about each action: a search for each that finds nothing is a fan-out.
    asked = [step(None, output="How do I pause, cancel, downgrade or transfer my subscription?", agent="user")]
    actions = ["how do I pause my subscription", "how do I cancel my subscription", "how do I downgrade my subscription", "how do I transfer my subscription"]
    assert first(replay(policy, tmp_path, asked + _searches(actions))) is None
    # So are actions an earlier answer listed.
    listing = [step("list_plan_actions", {"plan": "pro"}, '{"actions": ["pause", "cancel", "downgrade", "transfer"]}')]
    assert first(replay(policy, tmp_path, listing + _searches(actions))) is None
    # Names and numbers in an action's place are items.
    people = ["Anna Weber invoices", "Jonas Weber invoices", "Lea Weber invoices", "Paul Weber invoices"]
    models = ["reset X-200 without app", "reset X-300 without app", "reset X-400 without app", "reset X-500 without app"]
    for queries in (people, models):
        assert first(replay(policy, tmp_path, _searches(queries))) is None, queries
    # A stretch after a kept frame that is no action's place stays another item.
    crashes = ["crash when uploading avatar", "crash when exporting pdf", "crash when switching dark mode", "crash when opening push notification"]
    assert first(replay(policy, tmp_path, _searches(crashes))) is None


NUDGE = "Please continue working on the task on whatever approach you think is suitable. If you have solved it, send your answer."


def _nudged(replies: list[list[dict[str, object]]]) -> list[dict[str, object]]:
    """A task, one failing test run, then each reply (a list of steps) followed by the same nudge."""
    steps = [step(None, output="Fix the failing test in tests/test_dates.py.", agent="user")]
    steps.append(step("bash", {"command": "python -m pytest tests/test_dates.py -q"}, "FAILED tests/test_dates.py::test_leap_day - ValueError\n1 failed in 0.03s"))
    for reply in replies:
        steps.extend(reply)
        steps.append(step(None, output=NUDGE, agent="user"))
    return steps[:-1]


def _says(text: str) -> dict[str, object]:
    return step(None, output=text, agent="swe")


def test_permission_asked_again_under_the_same_nudge_is_a_monologue(policy, tmp_path: Path) -> None:
    questions = [
        "The February check rejects day 29 in leap years. Should I go ahead and change it?",
        "Do you want me to apply that fix to parse_date now?",
        "Shall I proceed with changing the leap-year check in src/dates.py?",
        "Would you like me to make this change to parse_date?",
        "Can I go ahead and edit the February condition?",
    ]
    report = replay(policy, tmp_path, _nudged([[_says(text)] for text in questions]))
    # Steps: 0 task, 1 test run, then a question (2, 4, 6, 8, 10) and a nudge after each.
    assert first(report) == (8, "replan")
    assert signals_at(report, 8) == {"near_duplicate/reworded_message", "no_progress/reworded_message"}
    # Answered by a person with something new each time, the questions are a conversation.
    answers = ["Which file?", "It's in src/dates.py, the parse_date function.", "Use calendar.isleap.", "Yes, keep the error message the same."]
    conversation = [step(None, output="Fix the failing test in tests/test_dates.py.", agent="user")]
    for question, answer in zip(questions, answers):
        conversation += [_says(question), step(None, output=answer, agent="user")]
    assert first(replay(policy, tmp_path, conversation)) is None


def test_a_plan_restated_from_a_scratchpad_under_a_nudge_is_a_monologue(policy, tmp_path: Path) -> None:
    def think(text: str) -> dict[str, object]:
        return step("think", {"thought": text}, "")

    replies = [
        [_says("I found the failing test; it comes from the leap-year check in parse_date.")],
        [think("The failing test is about leap days; I should run it first."), _says("Let me run the test suite now to see the current state.")],
        [think("I need to see the test output before editing parse_date."), _says("Running the baseline test suite first.")],
        [think("The test run will show whether the leap-year check is the cause."), _says("I'll execute the tests to check the failure.")],
        [think("I should run pytest before changing anything."), _says("Now I will run pytest on the dates module.")],
    ]
    report = replay(policy, tmp_path, _nudged(replies))
    # The fourth reply's message (step 11) says only what its thought and the replies before said.
    assert first(report) == (11, "replan")


def test_items_the_user_listed_in_a_two_slot_template_are_a_fan_out(policy, tmp_path: Path) -> None:
    leads = [("Anna Müller", "Bosch"), ("Jonas Weber", "Siemens"), ("Lea Schmidt", "SAP"), ("Paul Fischer", "Zeiss"), ("Mia Wagner", "Bayer")]
    queries = [f"contact {name} at {company}" for name, company in leads]
    listed = [step(None, output="Are any of these already in the CRM? " + ", ".join(f"{name} at {company}" for name, company in leads), agent="user")]
    assert first(replay(policy, tmp_path, listed + _searches(queries))) is None
    # Listed by an earlier answer, they are given too.
    listing = [step("list_leads", {"campaign": "fair-2026"}, json.dumps([{"name": name, "company": company} for name, company in leads]))]
    assert first(replay(policy, tmp_path, listing + _searches(queries))) is None
    # Nobody gave them: two slots filled in again read as one question reworded (what tells a
    # template of two slots from a rewording is where its items came from).
    assert first(replay(policy, tmp_path, _searches(queries))) == (3, "replan")


def _rollout(available: list[int]) -> list[dict[str, object]]:
    command = {"cmd": "kubectl -n payments rollout status deployment/checkout-api --timeout=45s"}
    text = 'Waiting for deployment "checkout-api" rollout to finish: {} of 4 updated replicas are available...\nerror: timed out waiting for the condition'
    return [step("shell", command, text.format(count), error=True) for count in available]


def test_a_wait_that_times_out_while_its_progress_moves_is_a_poll(policy, tmp_path: Path) -> None:
    # 1, 2, 2, 2, 3 of 4: the same shape of timeout five times, but the rollout moves on.
    assert first(replay(policy, tmp_path, _rollout([1, 2, 2, 2, 3, 3]))) is None
    # Stuck at 2 of 4, the fifth identical timeout is a replan (retryable_attempts).
    assert first(replay(policy, tmp_path, _rollout([1, 2, 2, 2, 2, 2]))) == (5, "replan")


def test_progress_counters_in_a_failure() -> None:
    from loopguard.detectors.failure import advanced, progress_of

    assert progress_of("rollout: 1 of 4 updated replicas are available, 40% done") == ((1.0, 4.0), (40.0, 100.0))
    assert progress_of("retry 2/5: timeout; attempt 3 of 5") == ()
    assert advanced(((1.0, 4.0),), ((2.0, 4.0),)) is True
    assert advanced(((2.0, 4.0),), ((2.0, 4.0),)) is False
    assert advanced(((2.0, 4.0),), ((1.0, 4.0),)) is False  # back
    assert advanced(((2.0, 4.0),), ((3.0, 5.0),)) is False  # another counter
    assert advanced(None, ((1.0, 4.0),)) is False


def test_a_check_run_again_after_it_passed_and_more_edits_is_a_verification(policy, tmp_path: Path) -> None:
    lint = {"command": "npx eslint src --ext .ts,.tsx", "cwd": "/workspace/storefront"}
    def edit(path: str, number: int) -> dict[str, object]:
        return step("edit_file", {"path": path, "old_string": f"old {number}", "new_string": f"new {number}"}, f"Edited {path}: 1 replacement")
    steps = [
        step("terminal", lint, "src/api/client.ts\n  12:28  error  Unexpected any  @typescript-eslint/no-explicit-any\n\n✖ 23 problems (23 errors, 0 warnings)", error=True),
        step("terminal", {**lint, "command": lint["command"] + " --fix"}, "src/api/client.ts\n  12:28  error  Unexpected any  @typescript-eslint/no-explicit-any\n\n✖ 12 problems (12 errors, 0 warnings)", error=True),
        edit("src/api/client.ts", 1),
        edit("src/hooks/useOrders.ts", 2),
        step("terminal", lint, "src/components/OrderTable.tsx\n  58:11  error  Missing \"key\" prop  react/jsx-key\n\n✖ 4 problems (4 errors, 0 warnings)", error=True),
        edit("src/components/OrderTable.tsx", 3),
        edit("src/pages/Settings.tsx", 4),
        step("terminal", lint, ""),  # clean
        step("terminal", {"command": "npx tsc --noEmit", "cwd": "/workspace/storefront"}, "src/api/orders.ts(22,10): error TS2339: Property 'items' does not exist on type 'unknown'.", error=True),
        edit("src/api/orders.ts", 5),
        step("terminal", {"command": "npx tsc --noEmit", "cwd": "/workspace/storefront"}, ""),
        step("terminal", lint, ""),  # still clean after the type fixes
    ]
    assert first(replay(policy, tmp_path, steps)) is None


def test_a_required_argument_left_out_whatever_the_values_is_one_failure(policy, tmp_path: Path) -> None:
    def write(arguments: dict[str, str]) -> dict[str, object]:
        echoed = ", ".join(f"'{key}': '{value[:20]}...'" for key, value in arguments.items())
        text = (
            f"Error invoking tool 'write_file' with kwargs {{{echoed}}} with error:\n 1 validation error for write_file\nfile_path\n"
            f"  Field required [type=missing, input_value={{{echoed}}}, input_type=dict]\n Please fix your mistakes."
        )
        return step("write_file", arguments, text, error=True)

    drafts = [
        {"path": "docs/INC-4471.md", "content": "# INC-4471 Checkout latency regression"},
        {"path": "docs/INC-4471.md", "content": "# Postmortem: INC-4471 (checkout latency)"},
        {"path": "./docs/INC-4471.md", "content": "# INC-4471 Postmortem, checkout latency"},
    ]
    report = replay(policy, tmp_path, [write(arguments) for arguments in drafts])
    assert first(report) == (2, "replan")
    assert signals_at(report, 2) == {"failure/repeated_permanent_failure_of_tool"}
    # The call that names the argument right is not blocked before it runs.
    fixed = replay(policy, tmp_path, [write(arguments) for arguments in drafts] + [step("write_file", {"file_path": "docs/INC-4471.md", "content": "# INC-4471"}, "Wrote 1 file")])
    assert all(entry.decision.action.value != "replan" for entry in fixed.decisions if entry.step == 3 and entry.decision.phase == "before_call")


def test_one_question_reworded_with_fewer_words_or_more_results_is_still_one_question(policy, tmp_path: Path) -> None:
    empty = '{"index": "policies-v3", "results": [], "total": 0, "took_ms": 38}'
    filters = {"department": "HR", "region": "EMEA"}
    queries = [("PTO carryover policy contractors", 8), ("contractor paid time off carry over", 8), ("annual leave carry forward for contingent workers", 8), ("PTO carryover", 20), ("unused PTO rollover contractors", 8)]
    steps = [step("search_knowledge_base", {"query": query, "filters": filters, "top_k": top_k}, empty) for query, top_k in queries]
    report = replay(policy, tmp_path, steps)
    # "annual leave ..." shares no word with the wordings before: kept, not counted. "PTO
    # carryover" (more results asked for) narrows the first wording: the third counted; the
    # last is the fourth.
    assert first(report) == (4, "replan")
    assert signals_at(report, 4) == {"near_duplicate/reworded_call", "no_progress/empty_result"}


def test_an_envelope_naming_its_index_holds_an_empty_answer() -> None:
    from loopguard.observations import observe

    assert observe('{"index": "policies-v3", "results": [], "total": 0, "took_ms": 38}').empty is True
    assert observe('{"collection": "docs", "namespace": "eu", "matches": []}').empty is True
    assert observe('{"index": "policies-v3", "results": [{"id": "hr-7"}], "total": 1}').empty is False


def test_a_read_made_anew_past_the_cache_is_the_plain_read_again(policy, tmp_path: Path) -> None:
    url = "https://deploy.acme.internal/api/v2/deployments/dpl_8841"
    body = '{"id": "dpl_8841", "status": "failed", "phase": "rollout_aborted", "failure_reason": "ImagePullBackOff: image not found", "rolled_back_to": "checkout:4.11.3"}'

    def reply(request_id: str, second: int) -> str:
        return f"HTTP/1.1 200 OK\ncontent-type: application/json\ncache-control: no-store\nx-request-id: {request_id}\ndate: Mon, 10 Jun 2024 12:43:{second:02d} GMT\n\n{body}"

    calls = [
        {"method": "GET", "url": url},
        {"method": "GET", "url": url + "?_=1718023413664", "headers": {"Cache-Control": "no-cache"}},
        {"method": "GET", "url": url + "?_=1718023433462", "headers": {"Cache-Control": "no-cache", "Pragma": "no-cache"}},
        {"method": "GET", "url": url + "?nocache=0fffd77a6811"},
    ]
    ids = ["0df84a11-8e90-435d-b605-628b5f0b0749", "9731a5b3-e1a8-4d4c-af56-aefda4ed743b", "36769bba-5e1e-423a-91e9-e725cd7a4500", "052a40c8-482e-4fda-9aa6-cbff6a12a02b"]
    steps = [step("http_request", arguments, reply(request_id, index * 9)) for index, (arguments, request_id) in enumerate(zip(calls, ids))]
    report = replay(policy, tmp_path, steps)
    # The second call past the cache got the plain call's reply again: no progress (warn); the
    # third is a replan.
    assert [(entry.step, entry.decision.action.value) for entry in report.decisions if entry.decision.phase == "after_call" and entry.decision.action.value != "continue"] == [(2, "warn"), (3, "replan")]
    # A header that sets what a write stores is part of the call: two uploads are two calls.
    from loopguard.detectors.near_duplicate import _defeats_cache

    assert _defeats_cache("Cache-Control", "no-cache") is True
    assert _defeats_cache("CacheControl", "max-age=3600") is False


def test_continue_said_again_to_an_agent_that_used_tools_and_announces_instead_is_a_monologue(policy, tmp_path: Path) -> None:
    steps = [
        step(None, output="Give me monthly revenue by region from sales_2024.parquet.", agent="user"),
        step("execute_cell", {"code": "df = pd.read_parquet('sales_2024.parquet')"}, "[execution_count=1, 0.41s]"),
        _says("The data mixes currencies; I'll load fx_rates.csv and merge it first."),
        step(None, output="continue", agent="user"),
        _says("Loading fx_rates.csv now and merging it onto the sales data."),
        step(None, output="continue", agent="user"),
        _says("Next I'll run the net_amount_usd computation and group by month and region."),
        step(None, output="continue", agent="user"),
        _says("I'm executing the merge cell and will share the monthly table right after."),
        step(None, output="continue", agent="user"),
        _says("Running the aggregation now."),
    ]
    report = replay(policy, tmp_path, steps)
    # "continue" is news the first time; from its second copy on, each announcement without a
    # call restates the plan: the third (step 8) makes the signal.
    assert first(report) == (8, "replan")
    # In a chat without tools, "continue" is the next part asked for, however alike the parts.
    lesson = [step(None, output="Teach me derivatives step by step.", agent="user")]
    for part in ["Next I'll explain limits: a limit is the value f approaches.", "Next I'll show the power rule: d/dx x^n = n x^(n-1).", "Next I'll cover the chain rule for composed functions.", "Next I'll work through the product rule with an example."]:
        lesson += [_says(part), step(None, output="continue", agent="user")]
    assert first(replay(policy, tmp_path, lesson)) is None
    # Nor does a tool used once make the next parts a monologue: they announce no tool's work.
    checked = lesson[:1] + [step("python", {"code": "round(stats.t.ppf(0.975, 24), 3)"}, "2.064")] + lesson[1:]
    assert first(replay(policy, tmp_path, checked)) is None


def _page(url: str, title: str, lines: list[str]) -> str:
    return "### Page state\n- Page URL: " + url + "\n- Page Title: " + title + "\n- Page Snapshot:\n```yaml\n" + "\n".join(lines) + "\n```"


def test_a_login_that_bounces_back_round_after_round_is_a_cycle(policy, tmp_path: Path) -> None:
    login = "https://portal.example.com/login?next=%2Fbilling%2Finvoices"

    def login_page(first_ref: int) -> str:
        return _page(login, "Sign in", [f'- textbox "Email" [ref=e{first_ref}]', f'- textbox "Password" [ref=e{first_ref + 2}]', f'- button "Sign in" [ref=e{first_ref + 5}]'])

    def dashboard(token: str) -> str:
        return _page("https://portal.example.com/dashboard", "Dashboard", ['- link "Invoices" [ref=e41]', "- text: 3 open purchase orders", f'- text: "csrf: {token}"'])

    def round_(token: str, refs: int) -> list[dict[str, object]]:
        return [
            step("browser_type", {"element": "Email textbox", "ref": "e12", "text": "ap@buyer.example"}, 'Typed "ap@buyer.example" into "Email textbox"'),
            step("browser_type", {"element": "Password textbox", "ref": "e14", "text": "<secret>"}, 'Typed "********" into "Password textbox"'),
            step("browser_click", {"element": "Sign in button", "ref": "e17"}, dashboard(token)),
            step("browser_click", {"element": "Invoices link", "ref": "e41"}, login_page(refs)),
        ]

    steps = [step("browser_navigate", {"url": "https://portal.example.com/billing/invoices"}, login_page(12))]
    steps += round_("kX9vGImjXojXHK7g2wyZ3Q", 12) + round_("Ev8A8CvcHZdmOGRjfHfblu", 13)
    report = replay(policy, tmp_path, steps)
    # The second round lands on the login page again: the dashboard differs only in its CSRF
    # token and the login page only in its element refs.
    assert first(report) == (8, "stop")
    assert signals_at(report, 8) == {"cycle/replayed_sequence", "no_progress/same_output"}


def test_generated_tokens_beyond_hex_are_volatile() -> None:
    from loopguard.detectors.near_duplicate import unstamped_digest
    from loopguard.observations import observe

    def page(token: str, ref: int) -> str:
        return _page("https://portal.example.com/dashboard", "Dashboard", [f'- link "Invoices" [ref=e{ref}]', "- text: 3 open purchase orders", f'- text: "csrf: {token}"'])

    first_page, second_page = observe(page("kX9vGImjXojXHK7g2wyZ3Q", 41)), observe(page("Ev8A8CvcHZdmOGRjfHfblu", 44))
    assert first_page.skeleton != second_page.skeleton  # letters beyond hex stay in a skeleton
    assert first_page.same_as(second_page) is True
    assert unstamped_digest(first_page) == unstamped_digest(second_page)
    # Another page of about one length is not the same.
    assert first_page.same_as(observe(page("kX9vGImjXojXHK7g2wyZ3Q", 41).replace("3 open purchase", "4 open sales"))) is False


def test_a_round_of_max_period_calls_with_an_edit_made_again_is_a_cycle(policy, tmp_path: Path) -> None:
    round_ = [
        step("read_file", {"path": "src/app.py"}, "def main():\n    return 1\n"),
        step("edit_file", {"path": "src/app.py", "old_string": "return 1", "new_string": "return 2"}, "Edited src/app.py: 1 replacement"),
        step("bash", {"command": "pytest -q"}, "F\nFAILED tests/test_app.py::test_main - assert 2 == 3\n1 failed in 0.02s", error=True),
        step("bash", {"command": "git diff --stat"}, " src/app.py | 2 +-\n 1 file changed"),
    ]
    report = replay(policy, tmp_path, round_ + round_)
    # The round's edit, made again with the same reply, writes nothing new: the round is
    # replayed whole (round 20; before, a cycle of 4 stopped it at the same step).
    assert first(report) == (7, "stop")
    assert signals_at(report, 7) == {"cycle/replayed_sequence", "failure/repeated_failure", "no_progress/same_failure", "no_progress/same_output"}


def test_the_same_rows_for_each_rewording_of_a_query_are_the_same_answer(policy, tmp_path: Path) -> None:
    rows = '"total_rows": 3, "rows": [{"country": "US", "wau": 412118}, {"country": "DE", "wau": 198402}, {"country": "GB", "wau": 171930}]'

    def reply(job: str, elapsed: int, slots: int) -> str:
        return f'{{"job_id": "bquxjob_{job}", "location": "EU", "cache_hit": false, "total_bytes_billed": "1384211836928", "elapsed_ms": {elapsed}, "slot_ms": {slots}, {rows}}}'

    where = "FROM `acme.analytics.events` WHERE event_ts >= TIMESTAMP('2024-05-13') AND event_ts < TIMESTAMP('2024-05-20') GROUP BY country ORDER BY wau DESC LIMIT 3"
    queries = [
        f"SELECT country, COUNT(DISTINCT user_id) AS wau {where}",
        f"SELECT\n  country, COUNT(DISTINCT user_id) AS wau\n{where}",
        f"SELECT country, COUNT(DISTINCT user_id) AS wau {where} -- double-check",
    ]
    jobs = [("db06ae30_84d3ebe7d96", 41233, 13153327), ("9242465d_ccf58a551bd", 39802, 14089908), ("7e0f385d_3f7181ea2cd", 44117, 15617418)]
    steps = [step("bigquery_query", {"sql": sql}, reply(*job)) for sql, job in zip(queries, jobs)]
    report = replay(policy, tmp_path, steps)
    # Each run is another job with its own id and slot time: the same three rows, reworded.
    assert first(report) == (2, "replan")
    assert "no_progress/same_answer" in signals_at(report, 2)


def test_a_rate_limits_usage_climbing_is_no_progress(policy, tmp_path: Path) -> None:
    call = {"url": "https://api.example.test/v1/reports"}
    usage = [step("http_get", call, f"HTTP 429 Too Many Requests: {count}/60 requests this minute, retry later", error=True) for count in range(61, 67)]
    assert first(replay(policy, tmp_path, usage)) == (4, "replan")  # the 5th identical failure (retryable_attempts)
    # kubectl's own wording of a rollout that moves on is progress.
    text = 'Waiting for deployment "api" rollout to finish: {} out of 4 new replicas have been updated...\nerror: timed out waiting for the condition'
    rollout = [step("shell", {"cmd": "kubectl rollout status deploy/api --timeout=30s"}, text.format(count), error=True) for count in (1, 2, 2, 2, 3, 3)]
    assert first(replay(policy, tmp_path, rollout)) is None


def test_a_check_that_fails_and_passes_by_turns_with_nothing_written_is_flapping(policy, tmp_path: Path) -> None:
    check = {"command": "curl -sf https://shop.example.test/healthz"}
    steps = [step("bash", check, "curl: (22) The requested URL returned error: 503", error=True) if index % 2 == 0 else step("bash", check, "") for index in range(8)]
    first_step, action = first(replay(policy, tmp_path, steps))
    assert first_step <= 5 and action in ("replan", "stop")


def test_a_field_each_record_lacks_or_another_field_each_time_is_no_misnamed_argument(policy, tmp_path: Path) -> None:
    from loopguard.detectors.failure import misnamed_arguments, missing_fields

    def lacking(field: str, arguments: dict[str, object]) -> str:
        return f"Error invoking tool 'create' with kwargs {arguments} with error:\n 1 validation error for create\n{field}\n  Field required [type=missing, input_type=dict]\n Please fix your mistakes."

    leads = [{"first_name": name, "company": company} for name, company in [("Jonas", "Siemens"), ("Lea", "SAP"), ("Paul", "Zeiss"), ("Mia", "Bayer")]]
    rows = [step("hubspot_create_contact", lead, lacking("email", lead), error=True) for lead in leads]
    assert first(replay(policy, tmp_path, rows)) is None  # each lead lacks its own email: fan-out
    # A schema learned field by field: each failure names another missing field.
    fields, incident = ["severity", "components", "status"], {"title": "Checkout latency"}
    learned = []
    for field in fields:
        learned.append(step("create_incident", {"incident": dict(incident)}, lacking(field, incident), error=True))
        incident[field] = "x"
    learned.append(step("create_incident", {"incident": dict(incident)}, '{"id": "inc_01J8ZK4Q"}'))
    assert first(replay(policy, tmp_path, learned)) is None
    # zod's answer through an MCP server names the field too.
    zod = 'MCP error -32602: Invalid arguments for tool write_file: [\n  {\n    "code": "invalid_type",\n    "path": [\n      "path"\n    ],\n    "message": "Required"\n  }\n]'
    assert missing_fields(zod) == frozenset({"path"})
    assert misnamed_arguments(zod, {"file_path": "/docs/a.md", "content": "# A"}) is True
    assert misnamed_arguments(lacking("email", leads[0]), leads[0]) is False
    assert misnamed_arguments("write() got an unexpected keyword argument 'filename'", {"filename": "a.md"}) is True


def test_numbers_that_name_the_item_are_part_of_the_question(policy, tmp_path: Path) -> None:
    sizes = [step("search_products", {"query": "trail running shoes waterproof", "size": size}, "[]") for size in (7, 7.5, 8, 8.5, 9)]
    assert first(replay(policy, tmp_path, sizes)) is None


def test_short_query_names_with_a_made_up_value_bust_caches(policy, tmp_path: Path) -> None:
    from loopguard.detectors.near_duplicate import _without_cache_buster

    body = '{"deploy": "dpl_8841", "status": "failed", "reason": "image not found", "rolled_back_to": "4.11.3"}'
    busted = [step("http_get", {"url": f"https://deploy.example.test/api/deployments/dpl_8841?t={1718023413664 + 9000 * index}"}, body) for index in range(5)]
    assert first(replay(policy, tmp_path, busted)) == (2, "replan")  # the third read of one answer
    assert _without_cache_buster("https://a.example/x?v=3") == "https://a.example/x?v=3"  # a version
    assert _without_cache_buster("https://a.example/x?v=8f2c41d9e0&q=1") == "https://a.example/x?q=1"
    assert _without_cache_buster("https://a.example/x?t=7") == "https://a.example/x?t=7"  # a page, not a time


def test_tracking_numbers_are_data_not_generated_tokens() -> None:
    from loopguard.observations import observe

    def label(tracking: str) -> str:
        return f"Label ready for parcel {tracking}: DHL Paket, 2.4 kg, Zone 3. Print and attach to the box."

    # Letters beyond hex tell these apart (a skeleton keeps them); only an anti-forgery token
    # is set aside so.
    assert observe(label("1ZX99AA10123456784")).same_as(observe(label("1ZY99AA10123456791"))) is False


def test_pages_alike_but_for_the_rate_limit_left_are_the_same_pages(policy, tmp_path: Path) -> None:
    def page(cursor: str, texts: list[str], left: int) -> str:
        messages = ", ".join(f'{{"type": "message", "ts": "17179{index}8199.871204", "text": "{text}"}}' for index, text in enumerate(texts))
        return f'{{"ok": true, "messages": [{messages}], "has_more": true, "response_metadata": {{"next_cursor": "{cursor}", "x-ratelimit-remaining-tier3": {left}}}}}'

    def history(cursor: str) -> dict[str, object]:
        return {"method": "conversations.history", "params": {"channel": "C06F2K9QH7A", "limit": 200, "cursor": cursor}}

    second = page("bmV4dF90czoxNzE3ODEy", ["escalated to eng, INC-5582", "hotfix ETA friday"], 46)
    third = page("bmV4dF90czoxNzE3OTk4", ["checkout still timing out for their EU tenant", "rolled back 4.12"], 45)
    steps = [step("slack_api", history("bmV4dF90czoxNzE3OTk4"), second), step("slack_api", history("bmV4dF90czoxNzE3ODEy"), third)]
    for left in (48, 21, 27):  # the cursors come round again: the same two pages, the rate limit left aside
        steps += [step("slack_api", history("bmV4dF90czoxNzE3OTk4"), second.replace(": 46}", f": {left}}}")), step("slack_api", history("bmV4dF90czoxNzE3ODEy"), third.replace(": 45}", f": {left - 1}}}"))]
    report = replay(policy, tmp_path, steps)
    # The fourth call asks for the second page again with its cursor and gets it again.
    assert first(report) == (3, "stop")


def test_the_same_not_found_after_a_verbose_request_log_is_the_same_failure(policy, tmp_path: Path) -> None:
    missing = "❌ Translation file 'src/locales/fr-FR/messages.json' does not exist\n❌ No translation files were found to upload for language(s): fr\n[exit code 1]"
    verbose = "GET https://api.crowdin.com/api/v2/projects/612034 200 {}ms\n✔️  Fetching project info\n" + missing
    commands = ["crowdin upload translations -l fr --branch release-3.4", "crowdin upload translations --branch release-3.4 -l fr --verbose", "crowdin upload translations --language=fr --branch=release-3.4 --no-progress", "crowdin upload translations -l fr -b release-3.4 --verbose --dryrun"]
    outputs = ["✔️  Fetching project info\n" + missing, verbose.format(144), "✔️  Fetching project info\n" + missing, verbose.format(151)]
    steps = [step("shell", {"command": command, "workdir": "/repo"}, output, error=True) for command, output in zip(commands, outputs)]
    assert first(replay(policy, tmp_path, steps)) == (2, "replan")


def _report(dimensions: list[str], extra: dict[str, object] | None = None, day: str = "2024-06-01") -> dict[str, object]:
    return {
        "property": "properties/312448071",
        "dateRanges": [{"startDate": day, "endDate": "2024-06-30"}],
        "dimensions": [{"name": name} for name in dimensions],
        "metrics": [{"name": "sessions"}],
        "dimensionFilter": {"filter": {"fieldName": "sessionCampaignName", "stringFilter": {"value": "june_newsletter_2024"}}},
        **(extra or {}),
    }


NO_ROWS = '{"dimensionHeaders": [{"name": "sessionCampaignName"}, {"name": "date"}], "metricHeaders": [{"name": "sessions", "type": "TYPE_INTEGER"}], "rowCount": 0, "metadata": {"currencyCode": "EUR"}, "kind": "analyticsData#runReport", "propertyQuota": {"tokensPerDay": {"consumed": 11, "remaining": 198973}}}'


def test_one_report_resubmitted_with_cosmetic_changes_and_nothing_found_is_a_replan(policy, tmp_path: Path) -> None:
    reports = [
        _report(["sessionCampaignName", "date"]),
        _report(["date", "sessionCampaignName"]),
        _report(["sessionCampaignName", "date"], {"keepEmptyRows": True}),
        _report(["date", "sessionCampaignName"], {"keepEmptyRows": True, "currencyCode": "EUR"}),
    ]
    report = replay(policy, tmp_path, [step("ga4_run_report", arguments, NO_ROWS) for arguments in reports])
    assert first(report) == (3, "replan")
    assert signals_at(report, 3) == {"near_duplicate/reworded_call", "no_progress/empty_result"}
    # The same report for other date ranges, none with rows: a fan-out.
    days = [_report(["sessionCampaignName", "date"], day=f"2024-06-{day:02d}") for day in (1, 8, 15, 22)]
    assert first(replay(policy, tmp_path, [step("ga4_run_report", arguments, NO_ROWS) for arguments in days])) is None


def test_a_report_that_counts_no_rows_is_an_empty_answer() -> None:
    from loopguard.observations import observe

    assert observe(NO_ROWS).empty is True
    assert observe('{"rowCount": 3, "rows": [{"dimensionValues": [{"value": "google"}]}], "kind": "analyticsData#runReport"}').empty is False
    assert observe('{"unread_count": 0, "status": "ok"}').empty is False  # a count that is the answer


def test_a_hex_id_after_a_prefix_is_data() -> None:
    from loopguard.detectors.near_duplicate import _without_response_stamps

    first_answer = '{"latest_order": {"id": "ord_5f3a9c0e1b2d4f6a", "total": "49.00"}}'
    assert _without_response_stamps(first_answer) == first_answer
    assert _without_response_stamps('{"search_id": "5f3a9c0e1b2d4f6a7b8c"}') != '{"search_id": "5f3a9c0e1b2d4f6a7b8c"}'


def test_what_names_an_item_is_no_setting_and_no_cache_buster() -> None:
    from loopguard.detectors.near_duplicate import _names_setting, _resubmitted, _without_cache_buster, _without_response_stamps

    assert [_names_setting((key,)) for key in ("per_page", "max_results", "timeout", "page_id", "shoe_size", "account_num")] == [True, True, True, False, False, False]
    assert _without_cache_buster("https://www.youtube.com/watch?v=dQw4w9WgXcQ") == "https://www.youtube.com/watch?v=dQw4w9WgXcQ"
    assert _without_cache_buster("https://prom.example/api/v1/query?query=up&time=1718023413") == "https://prom.example/api/v1/query?query=up&time=1718023413"
    # The rate limit left is a stamp; the limit itself may be the answer.
    assert _without_response_stamps('{"rate_limit": 1200}') == '{"rate_limit": 1200}'
    assert _without_response_stamps('{"rate_limit_remaining": 46}') != '{"rate_limit_remaining": 46}'
    # One checklist filter for another is another question; a report padded otherwise is not.
    assert _resubmitted({"resource": "s3", "public": True}, {"resource": "s3", "encrypted": False}) is False
    report = {"property": "p/1", "dates": ["2024-06-01", "2024-06-30"], "metrics": ["sessions"], "filter": "june"}
    assert _resubmitted({**report, "keepEmptyRows": True}, {**report, "caseSensitive": False}) is True
    assert _resubmitted(report, {**report, "metrics": ["sessions", "users"]}) is False  # a metric added: another report


def test_empty_comments_on_each_of_several_pages_are_a_fan_out(policy, tmp_path: Path) -> None:
    pages = [step("confluence_get_comments", {"page_id": page, "status": "open"}, '{"results": [], "size": 0}') for page in (18350081, 18350094, 18350107, 18350113, 18350140)]
    assert first(replay(policy, tmp_path, pages)) is None
