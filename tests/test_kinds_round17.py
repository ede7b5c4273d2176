"""Kinds from the round-17 session: one question reworded again and again with nothing found."""

from __future__ import annotations

import json
from pathlib import Path

from test_detector_kinds import first, replay, signals_at, step  # noqa: F401  (policy is a fixture)
from test_detector_kinds import policy  # noqa: F401

from loopguard.detectors.near_duplicate import _TOKEN, _named_items, _url_search, replaced_stretch
from loopguard.observations import classify_failure, is_not_found, observe
from loopguard.tool_names import echoes

NOTHING = '{"hits": [], "total": 0, "took_ms": 12}'
FOUND = '{"hits": [{"id": "kb-2207", "title": "Recover access when you lose your 2FA device"}], "total": 1, "took_ms": 14}'

LOST_DEVICE = [
    "reset 2FA without phone",
    "two-factor authentication reset lost device",
    "2FA recovery when phone is lost",
    "disable two factor auth lost phone",
    "lost authenticator app recovery",
    "MFA reset lost phone cannot log in",
]


def _searches(queries: list[str], answers: dict[int, str] | None = None, **arguments: object) -> list[dict[str, object]]:
    return [step("search_help_center", {"query": query, **arguments}, (answers or {}).get(index, NOTHING)) for index, query in enumerate(queries)]


def test_one_question_reworded_with_nothing_found_is_a_replan_at_its_fourth_wording(policy, tmp_path: Path) -> None:
    report = replay(policy, tmp_path, _searches(LOST_DEVICE))
    assert first(report) == (3, "replan")
    assert signals_at(report, 3) == {"near_duplicate/reworded_call", "no_progress/empty_result"}
    assert [signal.message for entry in report.decisions if entry.step == 3 for signal in entry.decision.signals if signal.detector == "near_duplicate"] == [
        "search_help_center found nothing for 4 differently worded calls of one question in a row"
    ]
    # The other arguments are part of the question: another locale is another question.
    mixed = [step("search_help_center", {"query": query, "locale": locale}, NOTHING) for query, locale in zip(LOST_DEVICE[:4], ["en", "de", "en", "de"])]
    assert first(replay(policy, tmp_path, mixed)) is None


def test_searches_that_find_something_or_ask_about_other_items_are_left_alone(policy, tmp_path: Path) -> None:
    # Found at the fourth wording: the rewording was worth it.
    assert first(replay(policy, tmp_path, _searches(LOST_DEVICE[:3] + [LOST_DEVICE[3]], {3: FOUND}))) is None
    # An answer between ends the run of empty ones.
    assert first(replay(policy, tmp_path, _searches(LOST_DEVICE[:5], {2: FOUND}))) is None
    # Each search names another item (a customer, a model): a fan-out that finds none of them.
    customers = ["find customer Jürgen Maier", "find customer Hans Müller", "find customer Ana Silva", "find customer Li Wei", "find customer Olu Ade"]
    models = [f"warranty terms for model X-{number}00" for number in range(1, 6)]
    topics = ["refund policy digital goods", "shipping times to Canada", "warranty on refurbished laptops", "gift card expiry rules", "change billing address"]
    for queries in (customers, models, topics):
        assert first(replay(policy, tmp_path, _searches(queries))) is None, queries
    # A user message between: the question is asked again with what the user said.
    user_between = _searches(LOST_DEVICE[:2]) + [step(None, output="It's an Okta account, if that helps.", agent="user")] + _searches(LOST_DEVICE[2:4])
    assert first(replay(policy, tmp_path, user_between)) is None


def test_what_a_text_names_and_other_items_of_a_template() -> None:
    assert _named_items(("warranty for model X-200 and order INV-88213 for Jürgen Maier",)) == frozenset({"x-200", "inv-88213"})
    # A term with one digit is no item ("2FA", "2-step"); neither are capitalised words (German nouns).
    assert _named_items(("Reset 2FA or 2-step for the SSO Konto",)) == frozenset()
    tokens = lambda text: tuple(_TOKEN.findall(text.lower()))  # noqa: E731
    assert replaced_stretch(tokens("how to export calendar events"), tokens("how to export invoices")) == (3, 0)
    assert replaced_stretch(tokens("Jonas Müller"), tokens("Anna Müller")) == (0, 1)
    assert replaced_stretch(tokens("two-factor authentication reset lost device"), tokens("reset 2FA without phone")) is None
    assert replaced_stretch(tokens("reset 2FA without phone"), tokens("reset 2FA without phone")) is None


def test_empty_searches_for_items_of_a_template_are_a_fan_out(policy, tmp_path: Path) -> None:
    features = ["how to export invoices", "how to export contacts", "how to export reports", "how to export calendar events", "how to export time entries"]
    crashes = ["crash when uploading avatar", "crash when exporting pdf", "crash when rotating device on login screen", "crash when switching dark mode"]
    services = [f"service:{name} level:error" for name in ("checkout", "payments", "search", "auth", "cart")]
    people = ["Anna Müller", "Jonas Müller", "Lea Müller", "Paul Müller", "Mia Müller"]
    for queries in (features, crashes, services, people):
        assert first(replay(policy, tmp_path, _searches(queries))) is None, queries
    # Rewordings that mix terms with a digit stay one question.
    spellings = ["reset 2FA lost phone", "two-factor reset after losing my phone", "2-step verification reset new phone", "lost phone cannot pass 2FA", "disable two factor auth lost phone"]
    assert first(replay(policy, tmp_path, _searches(spellings))) == (3, "replan")


def test_one_command_swept_over_hosts_is_a_fan_out(policy, tmp_path: Path) -> None:
    hosts = [f"edge-0{number}.{site}.cdn.example.net" for site in ("fra", "ams") for number in (1, 2, 3)]
    answer = "serial=04A1F93C7D22E8B10F6A55D2C3B18E7E\nnotAfter=Sep  9 23:59:59 2024 GMT"
    command = "echo | openssl s_client -connect {host}:443 -servername www.example.com 2>/dev/null | openssl x509 -noout -serial -enddate"
    sweep = [step("bash", {"command": command.format(host=host)}, answer) for host in hosts]
    assert first(replay(policy, tmp_path, sweep)) is None
    # Hosts named without dots: after user@, or before a port.
    short = [step("bash", {"command": f"ssh -o BatchMode=yes deploy@lb{number} 'sudo nginx -t 2>&1'"}, "nginx: configuration file /etc/nginx/nginx.conf test is successful") for number in range(1, 6)]
    assert first(replay(policy, tmp_path, short)) is None
    ported = [step("bash", {"command": command.format(host=f"edge-0{number}")}, answer) for number in range(1, 6)]
    assert first(replay(policy, tmp_path, ported)) is None
    # The same host asked again and again is no sweep.
    again = [step("bash", {"command": command.format(host=hosts[0]) + suffix}, answer) for suffix in ("", " ", " | cat", "  | cat", " | head")]
    assert first(replay(policy, tmp_path, again)) is not None


def test_a_row_of_nulls_is_an_empty_answer_and_a_long_poll_may_get_it_again_and_again(policy, tmp_path: Path) -> None:
    assert [observe(text).empty for text in ("None\tNone", "null null", "None of the above", "None\tNone\tRUNNING")] == [True, True, False, False]
    receive = {"command": "aws sqs receive-message --queue-url https://sqs.eu-west-1.amazonaws.com/123456789012/job-events --wait-time-seconds 20 --query 'Messages[0].[ReceiptHandle,Body]' --output text"}
    event = 'AQEB3yJ0s9Lr	{"detail": {"jobId": "1718102231442-x7qk2d", "status": "COMPLETE"}}'
    steps = [step("bash", receive, "None\tNone") for _ in range(6)] + [step("bash", receive, event)]
    assert first(replay(policy, tmp_path, steps)) is None
    # Without the wait it is no long poll: the same empty answer again and again is stuck.
    plain = {"command": receive["command"].replace("--wait-time-seconds 20 ", "")}
    assert first(replay(policy, tmp_path, [step("bash", plain, "None\tNone") for _ in range(6)])) is not None


REVOKED = (
    "HTTP/1.1 401 Unauthorized\ncontent-type: application/json\nx-request-id: {request}\ndate: Tue, 11 Jun 2024 08:1{second}:37 GMT\n\n"
    '{{"error": {{"message": "Unauthorized", "code": 2006, "errors": ["The API key provided has been revoked or does not exist."]}}}}'
)


def test_a_revoked_key_retried_with_other_headers_is_a_replan(policy, tmp_path: Path) -> None:
    assert is_not_found(REVOKED.format(request="a", second=1)) is False
    assert is_not_found("HTTP/1.1 404 Not Found\n\nno such incident") is True
    url = "https://api.pagerduty.com/incidents?statuses[]=triggered"
    headers = [{"Authorization": "Token token=${PD_API_KEY}"}, {"Authorization": "Bearer ${PD_API_KEY}"}, {"authorization": "Token token=${PD_API_KEY}", "Accept": "application/json"}]
    steps = [step("http_request", {"method": "GET", "url": url, "headers": header}, REVOKED.format(request=f"req{index}x9", second=index), error=True) for index, header in enumerate(headers)]
    report = replay(policy, tmp_path, steps)
    assert first(report) == (2, "replan")
    assert "failure/repeated_permanent_failure_of_tool" in signals_at(report, 2)


def test_a_name_already_taken_is_a_permanent_failure(policy, tmp_path: Path) -> None:
    taken = 'POST https://api.github.com/orgs/acme/repos -> 422\n{"message": "Repository creation failed.", "errors": [{"field": "name", "message": "name already exists on this account"}]}'
    assert [classify_failure(text) for text in (taken, 'Error from server (AlreadyExists): namespaces "team-a" already exists', "Error: username already taken")] == ["permanent"] * 3
    # A port or a name in use is freed by a change elsewhere: no permanent failure.
    assert classify_failure("Error: listen EADDRINUSE: address already in use :::3000") == "deterministic"
    names = ["billing-service", "Billing-Service", "billing-service "]
    steps = [step("github_create_repository", {"org": "acme", "name": name, "private": True}, taken, error=True) for name in names]
    assert first(replay(policy, tmp_path, steps)) == (2, "replan")


def test_a_search_url_reworded_in_case_and_encoding_is_a_rewording(policy, tmp_path: Path) -> None:
    assert _url_search("https://html.duckduckgo.com/html/?q=Bosch+GSR+18V-55&kl=de-de&_=1718100934") == ("https://html.duckduckgo.com/html/?kl=de-de", "Bosch GSR 18V-55")
    assert _url_search("https://api.example.com/items?page=2&sort=name") is None
    page = "# Search results\n\n1. **Bosch Professional GSR 18V-55 - HORNBACH**\n   https://www.hornbach.de/p/gsr-18v-55/10483102/\n   Jetzt online bestellen"
    queries = ["bosch+gsr+18v-55+hornbach+preis&_=1718100911", "Bosch+GSR+18V-55+Hornbach+Preis&_=1718100934", "bosch%20gsr%2018v-55%20hornbach%20preis&_=1718100958"]
    steps = [step("fetch", {"url": f"https://html.duckduckgo.com/html/?q={query}", "max_length": 5000}, page) for query in queries]
    report = replay(policy, tmp_path, steps)
    assert first(report) == (2, "replan")
    assert "near_duplicate/reworded_call" in signals_at(report, 2)
    # Searches for other things through the same engine are a fan-out.
    others = ["bosch+gsr+18v-55+hornbach+preis", "makita+ddf485z+obi+preis", "dewalt+dcd791n+bauhaus+preis"]
    assert first(replay(policy, tmp_path, [step("fetch", {"url": f"https://html.duckduckgo.com/html/?q={query}"}, f"# Search results for {query}") for query in others])) is None


def _hits(order: list[str], scores: list[float], latency: int) -> str:
    documents = {
        "POL-017": ("Data Retention Policy v3.2", "Customer account data held in the CRM is retained for the duration of the contract plus 7 years."),
        "OPS-112": ("Contact Centre QA Guidelines", "Supervisors review a 5% sample of recorded calls weekly. For retention see the Data Retention Policy."),
        "PRV-004": ("GDPR Data Subject Request Procedure", "On receiving an erasure request, locate all personal data including call recordings."),
    }
    hits = [{"doc_id": doc, "title": documents[doc][0], "chunk": documents[doc][1], "score": score} for doc, score in zip(order, scores)]
    return json.dumps({"hits": hits, "latency_ms": latency})


def test_the_same_documents_in_another_order_are_another_answer(policy, tmp_path: Path) -> None:
    # A ranking is an answer: the same documents ranked otherwise for each question (a small
    # knowledge base) are no rewording, and neither are questions that share one word or two.
    wordings = ["retention period call recordings EU customers", "how long do we keep call recordings for European customers", "how long are customer calls stored"]
    orders = [["POL-017", "OPS-112", "PRV-004"], ["OPS-112", "POL-017", "PRV-004"], ["OPS-112", "PRV-004", "POL-017"]]
    steps = [step("vector_search", {"collection": "policies", "query": query, "top_k": 5}, _hits(order, [0.71 - index / 100, 0.69, 0.66], 40 + index)) for index, (query, order) in enumerate(zip(wordings, orders))]
    assert first(replay(policy, tmp_path, steps)) is None
    # The same documents in the same order, for one question reworded, are the same answer.
    same = [dict(entry, output=_hits(orders[0], [0.71 - index / 100, 0.69, 0.66], 40 + index)) for index, entry in enumerate(steps)]
    report = replay(policy, tmp_path, same)
    assert first(report) == (2, "replan")
    assert "near_duplicate/reworded_call" in signals_at(report, 2)


NUDGE = "Please continue working on the task on whatever approach you think is suitable. If you think you have solved the task, please finish the interaction."
PLANS = [
    "I'll begin by running the test suite to get a baseline before touching any Pydantic code: pytest -q",
    "Understood. My first step is to establish a baseline by running the tests, then grep for @validator usages.",
    "Let me run the test suite now to establish the baseline, then migrate validators to field_validator.",
    "Continuing. Plan: 1. Run pytest for a baseline. 2. Migrate validators and config. 3. Re-run tests. Starting with step 1.",
    "Running the baseline test suite first: cd /workspace/api && pytest -q",
]


def test_the_same_nudge_answered_by_plans_and_no_tool_call_is_a_monologue(policy, tmp_path: Path) -> None:
    steps = [step(None, output="Upgrade the service to Pydantic v2 and make the tests pass.", agent="user")]
    for plan in PLANS:
        steps += [step(None, output=plan, agent="coder"), step(None, output=NUDGE, agent="user")]
    report = replay(policy, tmp_path, steps[:-1])
    assert first(report) == (7, "replan")
    assert signals_at(report, 7) == {"near_duplicate/reworded_message", "no_progress/reworded_message"}
    # A tool call between the nudges: the agent acts, each nudge counts from there.
    acting = steps[:6] + [step("bash", {"command": "cd /workspace/api && pytest -q"}, "12 failed, 88 passed in 4.1s")] + steps[6:]
    assert first(replay(policy, tmp_path, acting[:-1])) is None
    # A nudge that counts its copies ("reminder 2/10") is the same nudge.
    counted = [dict(entry, output=f"{entry['output']} (reminder {index}/10)") if entry["output"] == NUDGE else entry for index, entry in enumerate(steps[:-1])]
    assert first(replay(policy, tmp_path, counted)) == (7, "replan")
    # Other user messages between the plans are news: a conversation, not a nudge.
    replies = iter(["Sounds good.", "OK, what is next?", "Go ahead with that.", "Fine by me, carry on.", "Right."])
    talk = [dict(entry, output=next(replies)) if entry["output"] == NUDGE else entry for entry in steps[:-1]]
    assert first(replay(policy, tmp_path, talk)) is None


def _export_page(first_id: int, count: int, next_cursor: str) -> str:
    tickets = [{"id": first_id + index * 7, "subject": f"Billing question {first_id + index * 7}", "status": "solved"} for index in range(count)]
    return json.dumps({"tickets": tickets, "has_more": True, "next_cursor": next_cursor, "request_id": f"req_{first_id}{count}"})


def test_a_cursor_that_wraps_around_while_each_page_is_appended_is_a_replan(policy, tmp_path: Path) -> None:
    cursors = ["eyJvZmZzZXQiOjEwMH0=", "eyJvZmZzZXQiOjIwMH0=", "eyJvZmZzZXQiOjB9"]
    pages = [_export_page(48812, 6, cursors[0]), _export_page(50131, 6, cursors[1]), _export_page(51460, 3, cursors[2])]
    steps = []
    rows = 0
    for lap in range(3):
        for index, page in enumerate(pages):
            arguments: dict[str, object] = {"query": "tags:billing", "limit": 100}
            if lap or index:
                arguments["cursor"] = cursors[index - 1]
            steps.append(step("helpdesk_search_export", arguments, page))
            rows += 6 if index < 2 else 3
            steps.append(step("csv_append_rows", {"path": "exports/billing.csv", "rows_from": "last_result"}, f"appended rows (file now {rows} data rows)"))
    report = replay(policy, tmp_path, steps)
    # Page 1 again at step 6; followed from it, page 2 again at step 8 and page 3 at step 10.
    assert first(report) == (10, "replan")
    assert signals_at(report, 10) >= {"near_duplicate/pagination", "no_progress/reread"}
    # Paging that moves on is healthy, however many pages are appended.
    fresh = [step("helpdesk_search_export", {"query": "tags:billing", "limit": 100, **({"cursor": f"c{index}"} if index else {})}, _export_page(40000 + index * 100, 6, f"c{index + 1}")) for index in range(9)]
    appended = [entry for page in fresh for entry in (page, step("csv_append_rows", {"path": "exports/billing.csv"}, "appended 6 rows"))]
    assert first(replay(policy, tmp_path, appended)) is None


def test_a_command_that_prints_its_own_text_brings_no_news(policy, tmp_path: Path) -> None:
    assert echoes({"command": "python3 -c \"print('running total: 3000 objects')\""}, "running total: 3000 objects\n") is True
    assert echoes({"command": "wc -l data.csv"}, "3000 data.csv") is False
    # (The first page listed again and again: no cursor sent. The same cursor sent again for
    # the same page is paging that does not advance, whatever is printed between: round 21.)
    listing = {"command": "aws s3api list-objects-v2 --bucket raw --prefix 2024/ --max-keys 1000"}
    page = '{\n  "n": 1000,\n  "truncated": true,\n  "next": "1yT2vLkq8WcN4hReOf"\n}\n\nreal\t0m1.{}s'
    steps = []
    for lap in range(4):
        steps.append(step("bash", listing, page.replace("{}", str(200 + lap * 37))))
        steps.append(step("bash", {"command": f"python3 -c \"print('running total: {(lap + 1) * 1000} objects')\""}, f"running total: {(lap + 1) * 1000} objects"))
    assert first(replay(policy, tmp_path, steps)) == (4, "stop")
    # A command that computes what it prints is news.
    computed = [dict(entry, args={"command": "python3 tally.py"}) if index % 2 else entry for index, entry in enumerate(steps)]
    assert first(replay(policy, tmp_path, computed)) is None


def test_a_log_re_read_between_a_pod_listing_and_one_off_checks_is_stuck(policy, tmp_path: Path) -> None:
    log = "2024-06-11T14:{:02d}:03.412Z INFO starting payments-api v2.31.0\n2024-06-11T14:{:02d}:03.702Z FATAL password authentication failed for user \"payments_app\""
    pods = "NAME                           READY   STATUS             RESTARTS   AGE\npayments-api-7d9f8c6b5-x2k4q   0/1     CrashLoopBackOff   {}          {}m"
    checks = [
        ("kubectl describe pod -n prod payments-api-7d9f8c6b5-x2k4q", "Name: payments-api-7d9f8c6b5-x2k4q\nStatus: Running\nLast State: Terminated (Error)"),
        ("kubectl get events -n prod --sort-by=.lastTimestamp | tail -8", "17m Normal ScalingReplicaSet deployment/payments-api Scaled up replica set"),
        ("kubectl rollout history deployment/payments-api -n prod", "REVISION  CHANGE-CAUSE\n15        switch DB credentials to payments-db-v2 secret"),
        ("kubectl get networkpolicy -n prod", "NAME                  POD-SELECTOR        AGE\nallow-payments-to-pg  app=payments-api    212d"),
    ]
    steps = []
    for lap, (command, output) in enumerate(checks):
        steps.append(step("bash", {"command": "kubectl get pods -n prod -l app=payments-api"}, pods.format(7 + lap, 14 + 2 * lap)))
        steps.append(step("bash", {"command": "kubectl logs -n prod payments-api-7d9f8c6b5-x2k4q --previous --tail=50"}, log.format(17 + 3 * lap, 17 + 3 * lap)))
        steps.append(step("bash", {"command": command}, output))
    report = replay(policy, tmp_path, steps)
    assert first(report) == (10, "stop")
    assert "no_progress/same_answer_between" in signals_at(report, 10)
    # The same lookups per item (a checklist read before each item) stay healthy.
    checklist = []
    for item in ("cus_1001", "cus_1002", "cus_1003", "cus_1004"):
        checklist.append(step("read_file", {"path": "RENEWALS.md"}, "For each customer: look up the plan, then quote the renewal at list price minus 5 %."))
        checklist.append(step("lookup_customer", {"id": item}, f'{{"id": "{item}", "plan": "team", "seats": {int(item[-1]) * 4}}}'))
        checklist.append(step("quote_renewal", {"id": item}, f'{{"id": "{item}", "quote_usd": {int(item[-1]) * 380}}}'))
    assert first(replay(policy, tmp_path, checklist)) is None


def test_a_round_of_four_calls_made_again_whole_between_messages_is_a_cycle(policy, tmp_path: Path) -> None:
    round_ = [
        ("bash", {"command": "cd live/prod/network && terraform plan -no-color -target=aws_security_group.api"}, "Note: Objects have changed outside of Terraform\n  ~ ingress 10.40.0.0/16:5432 added"),
        ("bash", {"command": "cd live/prod/network && terraform state show aws_security_group.api"}, 'resource "aws_security_group" "api" {\n  id = "sg-0a1b2c3d4e5f60718"\n}'),
        ("bash", {"command": "aws ec2 describe-security-group-rules --filters Name=group-id,Values=sg-0a1b2c3d4e5f60718"}, "sgr-0c9d8e7f6a5b4c3d2\t10.40.0.0/16\t5432\ttemp analytics access"),
        ("bash", {"command": "aws cloudtrail lookup-events --lookup-attributes AttributeKey=ResourceName,AttributeValue=sg-0a1b2c3d4e5f60718"}, "2024-06-03T09:14:22+00:00\tAuthorizeSecurityGroupIngress\tj.morales"),
    ]
    finding = "Found the drift: j.morales added ingress 10.40.0.0/16:5432 by hand on 2024-06-03. Next: ask analytics whether it is still needed."
    steps = [step(tool, arguments, output) for tool, arguments, output in round_]
    steps += [step(None, output=finding, agent="infra_agent"), step(None, output="[Conversation trimmed to fit the context window: 11 earlier messages removed.]", agent="system")]
    steps += [step(None, output="Let me start by checking the current drift on the prod network stack.", agent="infra_agent")]
    steps += [step(tool, arguments, output) for tool, arguments, output in round_]
    report = replay(policy, tmp_path, steps)
    assert first(report) == (10, "stop")
    assert "cycle/replayed_sequence" in signals_at(report, 10)
    # The same round after the user asked for it again is the user's request.
    asked = steps[:7] + [step(None, output="Please run those checks once more, I changed something.", agent="user")] + steps[7:]
    assert first(replay(policy, tmp_path, asked)) is None


PYTEST_REPORT = (
    "..........F\n=================================== FAILURES ===================================\n"
    "    def test_next_run_across_dst():\n        # 02:30 does not exist on 2024-03-31 in Berlin\n"
    ">       assert job.next_run(after) == expected\nE       AssertionError: assert 02:30 == 03:30\n"
)


def test_a_test_report_is_a_deterministic_failure_whatever_its_source_says() -> None:
    assert classify_failure(PYTEST_REPORT) == "deterministic"
    assert classify_failure("FAIL: test_login (tests.test_auth.LoginTest)\nAssertionError: 403 != 200") == "deterministic"
    go = "--- FAIL: TestParseConfig (0.00s)\n    config_test.go:41: open testdata/missing.yaml: no such file or directory\nFAIL\nexit status 1"
    jest = "FAIL src/config.test.ts\n  ● parses the config\n    ENOENT: no such file or directory, open 'fixtures/app.json'"
    cargo = "running 3 tests\ntest parse::reads_file ... FAILED\n\nfailures:\n\n---- parse::reads_file stdout ----\nNotFound: no such file\n\ntest result: FAILED. 2 passed; 1 failed"
    assert [classify_failure(text) for text in (go, jest, cargo)] == ["deterministic"] * 3
    # A status code still classifies: a test runner is not what answered 401.
    assert classify_failure("HTTP/1.1 401 Unauthorized\n\nE   not a test report") == "permanent"


def test_the_same_question_asked_again_after_the_agent_acted_is_a_request(policy, tmp_path: Path) -> None:
    question = step(None, output="Is payments-api OK to release on top of?", agent="user")
    checks = [
        step("bash", {"command": "kubectl get deploy payments-api -n prod"}, "NAME READY UP-TO-DATE AVAILABLE\npayments-api 3/3 3 3"),
        step("bash", {"command": "gh run list --workflow ci.yml -L 1"}, "completed success main ci.yml 8812"),
        step("bash", {"command": "curl -s https://status.example.com/api/v2/status.json"}, '{"status": {"indicator": "none", "description": "All Systems Operational"}}'),
        step("bash", {"command": "git log -1 --format=%h origin/main"}, "9e1c4ab"),
    ]
    steps = [question, *checks, step(None, output="Yes: the deploy is healthy, CI is green and status is operational.", agent="ops"), question, *checks]
    assert first(replay(policy, tmp_path, steps)) is None


def test_a_lesson_in_parts_after_each_continue_is_no_monologue(policy, tmp_path: Path) -> None:
    parts = [
        "Part 1: a derivative measures how fast a function changes. Next, I'll explain the power rule.",
        "Part 2: the power rule says the derivative of x^n is n x^(n-1). Next, I'll explain the product rule.",
        "Part 3: the product rule says (fg)' = f'g + fg'. Next, I'll explain the quotient rule.",
        "Part 4: the quotient rule says (f/g)' = (f'g - fg')/g^2. Next, I'll explain the chain rule.",
        "Part 5: the chain rule says (f(g(x)))' = f'(g(x)) g'(x). Next, I'll show worked examples.",
    ]
    steps = [step(None, output="Teach me derivatives, one part at a time.", agent="user")]
    for part in parts:
        steps += [step(None, output=part, agent="tutor"), step(None, output="continue", agent="user")]
    assert first(replay(policy, tmp_path, steps[:-1])) is None


def test_short_replies_said_again_are_a_conversation_not_a_nudge(policy, tmp_path: Path) -> None:
    steps = []
    for fahrenheit in (350, 400, 425, 450, 300):
        celsius = round((fahrenheit - 32) * 5 / 9)
        steps += [step(None, output=f"Convert {fahrenheit} F to Celsius for my oven", agent="user"), step(None, output=f"{fahrenheit}°F is about {celsius}°C. That's a hot oven temperature, good for roasting vegetables.", agent="assistant")]
    assert first(replay(policy, tmp_path, steps)) is None


def test_a_name_still_being_deleted_is_waited_on() -> None:
    assert classify_failure('Error from server (AlreadyExists): object is being deleted: namespaces "staging-preview" already exists') == "retryable"
    assert classify_failure('Error from server (AlreadyExists): namespaces "staging-preview" already exists') == "permanent"
