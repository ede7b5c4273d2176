"""Kinds from the round-20 session: answers that differ only in the request budget left."""

from __future__ import annotations

import json
from pathlib import Path

from test_detector_kinds import first, replay, signals_at, step  # noqa: F401  (policy is a fixture)
from test_detector_kinds import policy  # noqa: F401
from test_kinds_round18 import NUDGE

ORDERS = [{"id": 5512001, "name": "#1041", "financial_status": "paid"}, {"id": 5512002, "name": "#1042", "financial_status": "refunded"}]


def test_the_same_page_refetched_with_only_the_call_limit_used_moving_is_no_progress(policy, tmp_path: Path) -> None:
    call = {"path": "/admin/api/2024-04/orders.json", "params": {"limit": 2, "status": "any"}}
    link = '<https://acme.myshopify.com/admin/api/2024-04/orders.json?page_info=eyJsYXN0X2lkIjo1NTEyMDAyfQ&limit=2>; rel="next"'

    def page(used: int) -> str:
        return json.dumps({"orders": ORDERS, "headers": {"x-shopify-shop-api-call-limit": f"{used}/40", "link": link}})

    report = replay(policy, tmp_path, [step("shopify_get", call, page(used)) for used in (3, 5, 7, 9, 11)])
    # The third fetch of one page: as if the answers were identical.
    assert first(report) == (2, "stop")
    assert signals_at(report, 2) == {"repeat/identical_call", "no_progress/same_output"}


def test_the_same_graphql_page_with_only_its_throttle_status_moving_is_no_progress(policy, tmp_path: Path) -> None:
    query = "{ orders(first: 2) { edges { node { id name } } pageInfo { hasNextPage endCursor } } }"

    def page(available: int) -> str:
        data = {"orders": {"edges": [{"node": {"id": f"gid://shopify/Order/{order['id']}", "name": order["name"]}} for order in ORDERS], "pageInfo": {"hasNextPage": True, "endCursor": "eyJsYXN0X2lkIjo1NTEyMDAyfQ"}}}
        cost = {"requestedQueryCost": 12, "actualQueryCost": 12, "throttleStatus": {"maximumAvailable": 1000.0, "currentlyAvailable": available, "restoreRate": 50.0}}
        return json.dumps({"data": data, "extensions": {"cost": cost}})

    report = replay(policy, tmp_path, [step("shopify_graphql", {"query": query}, page(available)) for available in (988, 976, 964, 952, 940)])
    assert first(report) == (2, "stop")
    # GitHub's GraphQL API says it as a rateLimit object beside the data.
    def issues(remaining: int) -> str:
        return json.dumps({"data": {"repository": {"issues": {"nodes": [{"number": 812, "title": "Crash on start"}]}}, "rateLimit": {"cost": 1, "remaining": remaining, "resetAt": "2024-06-01T12:00:00Z"}}})

    github = [step("github_graphql", {"query": "{ repository(owner: \"acme\", name: \"app\") { issues(first: 1) { nodes { number title } } } }"}, issues(remaining)) for remaining in (4999, 4998, 4997, 4996, 4995)]
    assert first(replay(policy, tmp_path, github)) == (2, "stop")


def test_a_count_of_a_total_that_moves_outside_a_limits_field_is_progress(policy, tmp_path: Path) -> None:
    # A job's rows done of its rows ("32/40") is how far it got, not a budget's use.
    polls = [step("get_import_job", {"job": "imp_77"}, json.dumps({"status": "running", "processed": f"{done}/40"})) for done in (8, 16, 24, 32, 40)]
    assert first(replay(policy, tmp_path, polls)) is None


def test_wrapped_pages_stamped_with_the_call_limit_used_are_pages_already_read(policy, tmp_path: Path) -> None:
    def page(ids: list[int], next_cursor: str, used: int) -> str:
        orders = [{"id": order, "name": f"#{order - 5511000}"} for order in ids]
        return json.dumps({"orders": orders, "headers": {"x-shopify-shop-api-call-limit": f"{used}/40"}, "page_info": {"next": next_cursor}})

    second, third = "eyJsYXN0X2lkIjo1NTEyMDAyfQ", "eyJsYXN0X2lkIjo1NTEyMDA0fQ"
    steps = [step("shopify_orders", {"limit": 2}, page([5512001, 5512002], second, 2))]
    used = 3
    for _ in range(4):  # the third page's cursor leads back to the second page
        steps.append(step("shopify_orders", {"limit": 2, "page_info": second}, page([5512003, 5512004], third, used)))
        steps.append(step("shopify_orders", {"limit": 2, "page_info": third}, page([5512005, 5512006], second, used + 1)))
        used += 2
    report = replay(policy, tmp_path, steps)
    assert first(report) == (4, "stop")
    assert signals_at(report, 4) == {"cycle/cycle_of_2", "near_duplicate/pagination", "no_progress/reread"}


ORDER_UUIDS = [
    "5b0d2c8e-7a41-4f0e-9c3d-1e6f2a9b8c01",
    "a3e1f7d2-0c5b-4b8e-8f21-6d7c9e0a4b12",
    "0f9c8b7a-6e5d-4c3b-a2f1-e0d9c8b7a623",
    "7c2e4a91-b3d5-4f68-9a0c-2b4d6f8e1a34",
    "e1d2c3b4-a5f6-4789-b0c1-d2e3f4a5b645",
]
NO_REFUNDS = '{"object": "list", "data": [], "has_more": false, "url": "/v1/refunds"}'


def test_ids_the_run_was_given_are_items_however_generated_they_look(policy, tmp_path: Path) -> None:
    # The user names five orders by their UUIDs: a refund check for each that finds none is a fan-out.
    asked = [step(None, output=f"These orders were charged twice. Check each for refunds: {', '.join(ORDER_UUIDS)}", agent="user")]
    checks = [step("payments_list_refunds", {"order_id": uuid}, NO_REFUNDS) for uuid in ORDER_UUIDS]
    assert first(replay(policy, tmp_path, asked + checks)) is None
    # So are ids an earlier answer listed (with an argument of text beside them).
    listing = [step("list_disputed_orders", {"since": "2024-06-01"}, json.dumps({"orders": [{"id": uuid.upper()} for uuid in ORDER_UUIDS]}))]
    notes = [step("search_notes", {"order_id": uuid.upper(), "text": "refund issued"}, "[]") for uuid in ORDER_UUIDS]
    assert first(replay(policy, tmp_path, listing + notes)) is None


def test_a_fresh_uuid_nobody_named_is_still_a_throwaway_value(policy, tmp_path: Path) -> None:
    # The same search sent with a new session UUID each time finds nothing each time.
    searches = [step("search_audit_log", {"query": "login failures for admin", "session": uuid}, "[]") for uuid in ORDER_UUIDS]
    report = replay(policy, tmp_path, searches)
    assert first(report) == (2, "replan")
    assert signals_at(report, 2) == {"near_duplicate/reworded_call", "no_progress/empty_result"}


def _snapshot(page: int, first_ref: int) -> str:
    rows = "\n".join(f'    - row "T-2024-{page}{row:02d} tender {page}-{row}" [ref=e{first_ref + row}]' for row in range(12))
    return f"- Page URL: https://eprocure.example.gov/tenders?page={page}\n- Page Snapshot:\n```yaml\n- table:\n{rows}\n- link \"Next »\" [ref=e{first_ref + 40}]\n```"


def test_a_browser_page_served_again_with_its_element_refs_renumbered_is_a_page_already_read(policy, tmp_path: Path) -> None:
    steps = [step("browser_navigate", {"url": "https://eprocure.example.gov/tenders?page=1"}, _snapshot(1, 100))]
    ref = 100
    for page in (2, 3, 1) * 3:  # Next on the last page leads back to the first
        following = ref + 40
        ref += 50
        steps.append(step("browser_click", {"element": "Next » pagination link", "ref": f"e{following}"}, _snapshot(page, ref)))
    report = replay(policy, tmp_path, steps)
    # A click follows a ref of the page the previous click showed: the click at step 5 follows
    # one from page 2 again (first shown at step 1), and the next one, from page 3 again,
    # makes two pages in a row that brought nothing new.
    assert first(report) == (6, "replan")
    assert signals_at(report, 6) == {"near_duplicate/pagination", "no_progress/reread"}


def test_a_write_that_says_it_changed_nothing_is_told_by_its_reply() -> None:
    from loopguard.observations import reports_no_change

    no_ops = [
        "Copy executed with 0 files processed.",
        "0 inserted, 0 updated",
        "UPDATE 0",
        "INSERT 0 0",
        "Query OK, 0 rows affected (0.01 sec)",
        "deployment.apps/api unchanged",
        "On branch main\nnothing to commit, working tree clean",
        "Already up to date.",
        "No changes. Your infrastructure matches the configuration.",
        "ok=3 changed=0 unreachable=0 failed=0",
        '{"created": 0, "errors": []}',
    ]
    changes = [
        "files: 1000 LOADED, 0 LOAD_FAILED",
        "0 inserted, 5 updated",
        "UPDATE 3",
        "INSERT 0 1",
        "Query OK, 1 row affected (0.01 sec)",
        "deployment.apps/api configured",
        "ok=3 changed=2 unreachable=0 failed=0",
        '{"created": 20, "ids": "LEAD-10441..LEAD-10460", "errors": []}',
        "Edited src/app.py: 1 replacement",
        "Plan: 0 to add, 1 to change, 0 to destroy.",
        "deployment.apps/api configured\nservice/api unchanged",  # one object of two changed
        "Inserted 1 row; no changes to the schema",
    ]
    assert [text for text in no_ops if not reports_no_change(text)] == []
    assert [text for text in changes if reports_no_change(text)] == []
    assert reports_no_change("Everything up-to-date") is True  # git push
    # MySQL answers a schema change with no rows counted.
    assert reports_no_change("Query OK, 0 rows affected (0.02 sec)", {"sql": "CREATE TABLE t (id int)"}) is False
    assert reports_no_change("Query OK, 0 rows affected (0.02 sec)", {"sql": "GRANT SELECT ON t TO app"}) is False
    assert reports_no_change("Query OK, 0 rows affected (0.02 sec)", {"sql": "UPDATE t SET a = 1 WHERE id = 7"}) is True


def _copy(first_key: str, reply: str) -> dict[str, object]:
    sql = f"COPY INTO raw.events FROM @raw.stage FILES = (SELECT key FROM TABLE(listing_page('{first_key}')))"
    return step("snowflake_execute", {"sql": sql}, reply)


def test_a_listing_started_over_whose_loads_each_change_nothing_is_no_progress(policy, tmp_path: Path) -> None:
    def listing(token: str | None, first_key: str, next_token: str) -> dict[str, object]:
        command = "aws s3api list-objects-v2 --bucket raw --prefix logs/2024/06/" + (f" --continuation-token {token}" if token else "")
        return step("shell", {"command": command}, json.dumps({"KeyCount": 1000, "IsTruncated": True, "NextContinuationToken": next_token, "First": first_key}))

    pages = [(None, "logs/2024/06/01/part-0", "x80ZZyH245EpZe"), ("x80ZZyH245EpZe", "logs/2024/06/03/part-3", "Z3ensYmlr6fsHY")]
    steps = []
    for lap in range(3):  # the agent lists from the start again after each pair of pages
        for token, first_key, next_token in pages:
            steps.append(listing(token, first_key, next_token))
            query = f"query_id: 01b5{len(steps):04x}-0206-{lap}{len(steps):03d}-0000-7960e660ba62\nstatus: SUCCESS  elapsed: {2.1 + len(steps) / 10:.1f}s\n"
            steps.append(_copy(first_key, query + ("files: 1000 LOADED, 0 LOAD_FAILED\nrows_loaded: 2,104,733" if lap == 0 else "Copy executed with 0 files processed.")))
    report = replay(policy, tmp_path, steps)
    # The loads of the second lap load nothing, so nothing was written since the first lap:
    # its listings are re-reads, and the third lap starts a replayed round (before: step 10).
    assert first(report) == (8, "stop")
    assert signals_at(report, 8) == {"repeat/interleaved_repeat", "cycle/replayed_sequence", "no_progress/same_output"}


def test_an_apply_that_changes_nothing_once_is_no_stall(policy, tmp_path: Path) -> None:
    apply = {"command": "kubectl apply -f k8s/api.yaml"}
    steps = [
        step("bash", apply, "deployment.apps/api unchanged\nservice/api unchanged"),
        step("bash", {"command": "kubectl set image deploy/api api=registry.example/api:4.12.1"}, "deployment.apps/api image updated"),
        step("bash", {"command": "kubectl rollout status deploy/api --timeout=120s"}, 'deployment "api" successfully rolled out'),
        step("bash", apply, "deployment.apps/api configured\nservice/api unchanged"),
        step("bash", {"command": "kubectl get pods -l app=api"}, "api-7f9c5d-2kq8x   1/1   Running   0   40s"),
    ]
    assert first(replay(policy, tmp_path, steps)) is None


def test_one_row_of_nulls_is_an_empty_answer_and_a_zero_count_is_not() -> None:
    from loopguard.observations import observe

    empty = [
        "query_id: 01b546de-0305-1797-0000-7119829c45ce | status: SUCCESS | elapsed: 998 ms\nREVENUE\nNULL\n(1 row)",
        " revenue \n---------\n         \n(1 row)",  # psql prints a null as nothing
        " a | b \n---+---\n   |   \n(1 row)\n\nTime: 3.1 ms",
    ]
    answers = ["N\n0\n(1 row)", " count \n-------\n     0\n(1 row)", " a | b \n---+---\n 1 |   \n(1 row)", " name \n------\n acme \n(1 row)"]
    assert [text for text in empty if not observe(text).empty] == []
    assert [text for text in answers if observe(text).empty] == []


def test_one_filter_resubmitted_with_cosmetic_sql_changes_that_finds_nothing_is_a_replan(policy, tmp_path: Path) -> None:
    window = "order_date BETWEEN '2024-04-01' AND '2024-06-30'"
    queries = [
        f"SELECT SUM(amount_usd) AS revenue FROM fct_orders WHERE region = 'EMEA' AND {window}",
        f"SELECT SUM(o.amount_usd) AS revenue_usd FROM fct_orders o WHERE o.region = 'EMEA' AND o.{window}",
        f"SELECT SUM(amount_usd) AS revenue FROM analytics.public.fct_orders WHERE region = 'EMEA' AND {window}",
        f"SELECT SUM(amount_usd) AS revenue FROM fct_orders WHERE TRIM(region) = 'EMEA' AND {window}",
    ]
    steps = [
        step("run_query", {"warehouse": "ANALYTICS_XS", "sql": sql}, f"query_id: 01b5{index:04x}-0305-1797-0000-7119829c45ce | status: SUCCESS | elapsed: {400 + 97 * index} ms\nREVENUE\nNULL\n(1 row)")
        for index, sql in enumerate(queries)
    ]
    report = replay(policy, tmp_path, steps)
    assert first(report) == (2, "replan")
    assert signals_at(report, 2) == {"near_duplicate/reworded_call", "no_progress/empty_result"}


def test_notebook_cells_replayed_after_each_summary_are_stuck_whatever_their_execution_counts(policy, tmp_path: Path) -> None:
    cells = [
        ("import pandas as pd\ndf = pd.read_csv('data/trips_2023.csv')\ndf.shape", "(8412230, 19)", 44.0),
        ("df.isna().mean().sort_values(ascending=False).head(3)", "congestion_fee 0.0412\nairport_fee 0.0409", 1.8),
        ("df = df[(df.fare_amount > 0) & (df.trip_distance.between(0.1, 100))]\ndf.shape", "(8190544, 19)", 0.4),
    ]
    summary = "[Earlier conversation condensed. Summary: the user wants trips_2023.csv cleaned and a fare model fitted; cleaning is in progress.]"
    steps, count = [], 0
    for lap in range(3):
        if lap:
            steps.append(step(None, output=summary, agent="system"))
        for code, out, seconds in cells:
            count += 1
            steps.append(step("execute_cell", {"notebook": "fare_model.ipynb", "code": code}, f"[{count}] executed in {seconds + lap / 10:.1f}s\nOut[{count}]: {out}"))
    report = replay(policy, tmp_path, steps)
    # The third lap's first cell (step 8) closes the second lap of the same four steps, the
    # summary one of them, the cells' answers alike but for their execution counts (before
    # round 20: no intervention at all; round 21: a harness's note is no agent's message, so
    # the lap is seen on the call after it).
    assert first(report) == (8, "stop")
    assert signals_at(report, 8) == {"cycle/cycle_of_4", "no_progress/same_output"}


def test_execution_counts_are_normalised_only_where_a_notebook_prints_them() -> None:
    from loopguard.observations import observe

    assert observe("[1] executed in 44.0s\nOut[1]: (8412230, 19)").same_as(observe("[5] executed in 46.8s\nOut[5]: (8412230, 19)")) is True
    assert observe("In [3]: x\nOut[3]: 4").same_as(observe("In [7]: x\nOut[7]: 4")) is True
    assert observe("Out[3]: 4").same_as(observe("Out[3]: 5")) is False
    assert observe("queue depths [5] and [6]").same_as(observe("queue depths [7] and [8]")) is False
    assert observe("[(31,)]").same_as(observe("[(21,)]")) is False  # rows as LangChain's SQLDatabase prints them


NEXT_TOOL = "Continue working on the request. If it is complete, call `finish`; otherwise call the next tool."


def test_an_agent_that_says_it_is_now_doing_the_work_under_each_nudge_and_never_calls_a_tool_is_a_replan(policy, tmp_path: Path) -> None:
    steps = [
        step(None, output="Create an Okta account for the new hire E-20931 and add him to data-eng.", agent="user"),
        step("hris_get_employee", {"employee_id": "E-20931"}, '{"id": "E-20931", "first_name": "Tomás", "last_name": "Ferreira", "work_email": "tomas.ferreira@northwind.io"}'),
        step("okta_list_groups", {"q": "data-eng"}, '[{"id": "00g1x9qk7dTRmW2Lp5d7", "profile": {"name": "data-eng"}}]'),
    ]
    replies = [
        "I have everything I need. I'll now create his Okta account and then add him to data-eng.",
        "Creating the Okta account for tomas.ferreira@northwind.io now, set to activate on his start date.",
        "Next step: I'll call okta_create_user for Tomás Ferreira, then add the group membership.",
        "Proceeding to create the account now. As soon as it exists I'll assign data-eng.",
        "I'm now creating Tomás's Okta user with login tomas.ferreira@northwind.io.",
    ]
    for reply in replies:
        steps += [step(None, output=reply, agent="it_ops_agent"), step(None, output=NEXT_TOOL, agent="user")]
    report = replay(policy, tmp_path, steps[:-1])
    # The fifth announcement, the fourth under the same nudge: it is doing the work "now".
    assert first(report) == (11, "replan")
    assert signals_at(report, 11) == {"near_duplicate/reworded_message", "no_progress/reworded_message"}


def test_a_tutor_that_creates_a_new_exercise_after_each_next_is_no_monologue(policy, tmp_path: Path) -> None:
    steps = [step(None, output="Teach me adding fractions, one exercise at a time.", agent="user"), step("lookup_curriculum", {"topic": "fractions"}, "unit 4: adding fractions with unlike denominators")]
    exercises = [
        "a pizza is cut into 8 slices; you eat 3/8 and your friend eats 1/4. How much of the pizza is gone?",
        "a recipe needs 2/3 cup of milk and 1/6 cup of cream. How much liquid is that altogether?",
        "Mia runs 5/6 of a mile before school and 1/4 of a mile after. How far does she run that day?",
        "a tank is 1/2 full and a hose adds 2/5 of its volume. What fraction of the tank is filled now?",
        "in a class, 3/5 of pupils walk to school and 1/3 cycle. What fraction walks or cycles?",
    ]
    for exercise in exercises:
        steps += [step(None, output=f"Let me create the next exercise for you: {exercise}", agent="tutor"), step(None, output="next", agent="user")]
    assert first(replay(policy, tmp_path, steps[:-1])) is None


def test_the_same_delegation_made_again_with_the_same_reply_writes_nothing_new(policy, tmp_path: Path) -> None:
    # After each memory compaction the supervisor delegates the same two tasks again (each
    # reply the same but for the task's id) and the agents read the same records: the
    # delegations are no change that makes the records worth reading again.
    policy_record = '{"policy_id": "HO-5521937", "form": "HO-3", "status": "in_force", "deductible": 1000}'
    inspection = '{"claim_id": "CLM-2024-118734", "cause": "failed compression fitting", "damage": "flooring, cabinets"}'
    steps, task = [], 4355
    for lap in range(3):
        steps.append(step("delegate_task", {"agent": "policy_agent", "task": "Check policy HO-5521937 covers a burst pipe"}, f"task T-{task + lap * 7} assigned to policy_agent"))
        steps.append(step("policy_lookup", {"policy_id": "HO-5521937"}, policy_record))
        steps.append(step("delegate_task", {"agent": "adjuster_agent", "task": "Summarise the inspection of CLM-2024-118734"}, f"task T-{task + lap * 7 + 3} assigned to adjuster_agent"))
        steps.append(step("claims_get_inspection", {"claim_id": "CLM-2024-118734"}, inspection))
        steps.append(step("compact_memory", {"strategy": "summarize", "keep_last": 1}, "Memory compacted. Summary: handling claim CLM-2024-118734; coverage and inspection pending."))
    report = replay(policy, tmp_path, steps)
    # The second lap replayed whole (before: step 11, when the records' third reads came).
    assert first(report) == (9, "stop")
    assert signals_at(report, 9) == {"no_progress/same_output", "cycle/replayed_sequence"}


def _exchange(messages: list[tuple[str, str, str]]) -> list[dict[str, object]]:
    return [{"agent": agent, "caller": caller, "output": text} for agent, caller, text in messages]


def test_agents_trading_new_offers_negotiate_and_agents_repeating_a_request_hand_it_back(policy, tmp_path: Path) -> None:
    opening = [step(None, output="Negotiate 60,000 mailer boxes with Corrugo. Target $1.70/unit, walk-away $1.85.", agent="user")]
    offers = _exchange([
        ("supplier", "buyer", "We can offer $1.94/unit, net 30, first delivery in 5 weeks, plus $450 for plates."),
        ("buyer", "supplier", "Your price to us last year was $1.78. We propose $1.62/unit, net 60, plates waived."),
        ("supplier", "buyer", "We can move to $1.82/unit with net 45 and halve the plates to $225."),
        ("buyer", "supplier", "Closer. With a 12-month commitment, could you do $1.68 fixed, net 45?"),
        ("supplier", "buyer", "With a firm commitment we can do $1.74 fixed, net 45, plates waived."),
        ("buyer", "supplier", "We accept a surcharge clause capped at 5%. On that basis, $1.71?"),
    ])
    assert first(replay(policy, tmp_path, opening + offers)) is None
    handback = _exchange([
        ("analyst", "lead", "To assess it I need the firewall logs for 02:00-03:00 UTC. Could you share them?"),
        ("lead", "analyst", "You have SIEM access. Query the firewall index for 02:00-03:00 UTC yourself."),
        ("analyst", "lead", "Thanks for confirming the window. Once I have the 02:00-03:00 UTC logs I can confirm it."),
        ("lead", "analyst", "I don't have them either; retrieve them with siem_query and report."),
        ("analyst", "lead", "Acknowledged. I still need the 02:00-03:00 UTC firewall logs to make the call."),
    ])
    report = replay(policy, tmp_path, handback)
    # (The window's times are no figures: a time of day stamps messages as often as it asks.)
    assert first(report) == (3, "stop")
    assert signals_at(report, 3) == {"handoff/handoff_cycle"}
    stamped = _exchange([(agent, caller, f"[09:{14 + index}:0{index} UTC] {text}") for index, (agent, caller, text) in enumerate(
        [("analyst", "lead", "Please send me the firewall logs."), ("lead", "analyst", "Pull them yourself with siem_query."),
         ("analyst", "lead", "I still need the firewall logs from you."), ("lead", "analyst", "Use siem_query and report back."),
         ("analyst", "lead", "Could you send the firewall logs?")])])
    assert first(replay(policy, tmp_path, stamped)) == (3, "stop")


def test_single_digit_prices_with_their_currency_sign_are_figures(policy, tmp_path: Path) -> None:
    offers = _exchange([
        ("grower", "buyer", "We can do $9 per crate for the season."),
        ("buyer", "grower", "That is high for us; $6 per crate and we take every crate."),
        ("grower", "buyer", "Meet us at $8 and we deliver twice a week."),
        ("buyer", "grower", "$7 with delivery twice a week, and 5% off for early payment?"),
        ("grower", "buyer", "Agreed at $7 with twice-weekly delivery, and 3% off for early payment."),
    ])
    assert first(replay(policy, tmp_path, offers)) is None


def test_an_agents_message_in_a_cycle_is_named_as_the_agents_message(policy, tmp_path: Path) -> None:
    steps = []
    for _ in range(3):
        steps.append(step(None, output="Please send me the firewall logs for the window first.", agent="analyst"))
        steps.append(step(None, output="Pull them yourself with siem_query and report back.", agent="lead"))
    report = replay(policy, tmp_path, steps)
    messages = [signal.message for entry in report.decisions for signal in entry.decision.signals if signal.detector == "cycle"]
    assert messages and messages[0] == "the calls analyst's message → lead's message repeat as a cycle 2 times in a row"


def test_a_plan_put_up_for_confirmation_again_under_each_nudge_is_a_replan(policy, tmp_path: Path) -> None:
    steps = [step(None, output="Fix paginate() in utils/pagination.py: page 2 returns items 12-21.", agent="user"),
             step("read_file", {"path": "utils/pagination.py"}, "def paginate(items, page, per_page):\n    start = page * per_page - per_page + 1\n")]
    plans = [
        "The bug is the + 1 in the start index. I'll remove it so start = (page - 1) * per_page. Does that match what you expected?",
        "To fix it I'll change the start index to (page - 1) * per_page, dropping the stray + 1. Does that sound right?",
        "My plan: compute start as (page - 1) * per_page instead, which removes the off-by-one. Is that the fix you want?",
        "I'll update paginate() so the start index is (page - 1) * per_page. Shall we go with that?",
    ]
    for plan in plans:
        steps += [step(None, output=plan, agent="swe"), step(None, output=NUDGE, agent="user")]
    report = replay(policy, tmp_path, steps[:-1])
    assert first(report) == (8, "replan")  # the fourth plan, the third under the same nudge


def test_data_checks_over_other_tables_that_find_nothing_are_other_checks(policy, tmp_path: Path) -> None:
    checks = [
        "SELECT string_agg(order_id::text, ', ') AS dup_order_ids FROM (SELECT order_id FROM payments GROUP BY order_id HAVING count(*) > 1) d",
        "SELECT min(amount_cents) AS negative_min FROM refunds WHERE amount_cents < 0",
        "SELECT max(created_at) AS future_ts FROM orders WHERE created_at > now() + interval '1 day'",
        "SELECT string_agg(DISTINCT currency, ',') AS bad_currencies FROM payments WHERE currency NOT IN (SELECT code FROM iso_currencies)",
        "SELECT string_agg(c.id::text, ',') AS orphans FROM orders o LEFT JOIN customers c ON c.id = o.customer_id WHERE c.id IS NULL",
    ]
    steps = [step("psql", {"database": "warehouse_2024_06", "sql": sql}, " result \n--------\n \n(1 row)\n") for sql in checks]
    assert first(replay(policy, tmp_path, steps)) is None
