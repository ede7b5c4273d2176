"""Kinds from the round-16 blind traces: long resources polled in a pending state, lock
contention, per-item narration, a record re-read between unrelated lookups, ids and words
written otherwise, wrapped pages stamped with times taken and rate limits, and cache
busters in URLs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_detector_kinds import first, replay, said, signals_at, step  # noqa: F401  (policy is a fixture)
from test_detector_kinds import policy  # noqa: F401

from loopguard.detectors.near_duplicate import _without_cache_buster, _without_response_stamps
from loopguard.observations import classify_failure, is_pending
from loopguard.signature import signature_of
from loopguard.tool_names import operation_of


def _job(state: str, extra: dict[str, object] | None = None) -> str:
    """A job resource of about 600 characters, as a cloud API returns it whole on every poll."""
    resource = {
        "kind": "bigquery#job",
        "id": "acme-analytics:US.job_Yk3vQ9cR2m8TzL1pWf0aXb",
        "selfLink": "https://bigquery.googleapis.com/bigquery/v2/projects/acme-analytics/jobs/job_Yk3vQ9cR2m8TzL1pWf0aXb?location=US",
        "configuration": {"extract": {"sourceTable": {"projectId": "acme-analytics", "datasetId": "events", "tableId": "sessions_2024q3"}, "destinationUris": ["gs://acme-exports/sessions/part-*.parquet"], "destinationFormat": "PARQUET"}},
        "statistics": {"creationTime": "1727690412331", "startTime": "1727690413102"},
        "status": {"state": state},
        "user_email": "etl-runner@acme-analytics.iam.gserviceaccount.com",
        **(extra or {}),
    }
    return json.dumps(resource)


def test_a_long_resource_in_a_pending_state_is_a_healthy_poll(policy, tmp_path: Path) -> None:
    assert len(_job("RUNNING")) > 400
    assert [is_pending(_job(state)) for state in ("RUNNING", "PENDING", "DONE")] == [True, True, False]
    # A list whose items are pending is data, not a resource's state.
    orders = json.dumps({"orders": [{"id": f"o-{index}", "status": "pending", "note": "x" * 40} for index in range(8)]})
    assert is_pending(orders) is False
    poll = {"project_id": "acme-analytics", "job_id": "job_Yk3vQ9cR2m8TzL1pWf0aXb"}
    steps = [step("bigquery_get_job", poll, _job("RUNNING")) for _ in range(8)] + [step("bigquery_get_job", poll, _job("DONE"))]
    assert first(replay(policy, tmp_path, steps)) is None
    # One that says what it waits for is blocked on someone: polling does not move it.
    blocked = _job("PENDING", {"blocking": {"code": "SOLVENT_LEVEL_LOW", "action": "operator refill required"}})
    assert is_pending(blocked) is False
    assert first(replay(policy, tmp_path, [step("bigquery_get_job", poll, blocked) for _ in range(6)])) == (2, "stop")


TERRAFORM_LOCK = (
    "Error: Error acquiring the state lock\n\nError message: operation error DynamoDB: PutItem, https response error "
    "StatusCode: 400, RequestID: G70QPMLPH5RETEUP8YW40V4DAJ65B1DPNXOI6DJIO4B81MNUFYZQ, ConditionalCheckFailedException: "
    "The conditional request failed\nLock Info:\n  ID: 9db590f1-b6fe-c5f2-2678-8804f089deba\n  Operation: OperationTypeApply"
)


def test_lock_contention_is_retryable_whatever_its_status_code(policy, tmp_path: Path) -> None:
    assert [classify_failure(text) for text in (TERRAFORM_LOCK, "sqlite3.OperationalError: database is locked", "error: another operation is in progress", "HTTP 400 bad request")] == [
        "retryable",
        "retryable",
        "retryable",
        "permanent",
    ]
    plan = {"command": "terraform -chdir=envs/prod plan -input=false -out=tfplan"}
    steps = []
    for seconds in (60, 90, 120):
        steps += [step("bash", plan, TERRAFORM_LOCK, error=True), step("sleep", {"seconds": seconds}, f"slept {seconds}s")]
    steps.append(step("bash", plan, "Plan: 1 to add, 0 to change, 0 to destroy."))
    report = replay(policy, tmp_path, steps)
    assert first(report) is None and report.verdict.value == "warn"


def test_reports_on_one_item_each_are_no_monologue(policy, tmp_path: Path) -> None:
    hosts = ("web-01", "web-02", "api-01", "api-02", "worker-01", "worker-02")
    steps = [step(None, output=f"Checked {host}: kernel 6.8.0-47 running and current, no pending restarts, nginx active — OK.", agent="auditor") for host in hosts]
    assert first(replay(policy, tmp_path, steps)) is None
    # The same report about the same host, again and again, is one.
    again = said("auditor", ["Checked web-01: kernel 6.8.0-47 running and current, no pending restarts, nginx active — OK."] * 6)
    assert first(replay(policy, tmp_path, again)) is not None


POD = "kubectl get pod payments-api-7d9f8c6b5-x2kqp -n payments"
POD_STATUS = "NAME                           READY   STATUS             RESTARTS\npayments-api-7d9f8c6b5-x2kqp   0/1     CrashLoopBackOff   14 (2m ago)"


def test_a_record_re_read_between_lookups_elsewhere_is_stuck(policy, tmp_path: Path) -> None:
    between = ["kubectl logs payments-api-7d9f8c6b5-x2kqp -n payments --previous", "kubectl describe svc postgres -n payments", "kubectl get endpoints postgres -n payments"]
    steps = []
    for command in between:
        steps += [step("bash", {"command": POD}, POD_STATUS), step("bash", {"command": command}, f"output of {command}")]
    steps.append(step("bash", {"command": POD}, POD_STATUS))
    report = replay(policy, tmp_path, steps)
    # The fourth same answer, after three laps each elsewhere than the one before.
    assert first(report) == (6, "stop")
    assert "no_progress/same_answer_between" in signals_at(report, 6)
    # A policy read before each of three questions, each needing another tool: healthy.
    policy_text = "Returns: 30 days with receipt; store credit after that; no returns on final-sale items."
    steps = []
    for tool, arguments in (("get_order", {"order": "A-1"}), ("search_kb", {"query": "final sale"}), ("get_store_hours", {"store": "Berlin"})):
        steps += [step("read_policy", {"name": "returns"}, policy_text), step(tool, arguments, f"answer from {tool}")]
    assert first(replay(policy, tmp_path, steps)) is None
    # A checklist read before each item, the item's steps the same each time: healthy.
    steps = []
    for node in ("ip-10-0-1-17", "ip-10-0-2-33", "ip-10-0-3-51", "ip-10-0-1-88"):
        steps += [
            step("get_runbook", {"name": "k8s-node-rotation"}, "RUNBOOK k8s-node-rotation v3\n1. cordon the node\n2. drain it\n3. terminate it"),
            step("bash", {"command": f"kubectl cordon {node}"}, f"node/{node} cordoned"),
            step("bash", {"command": f"kubectl drain {node} --ignore-daemonsets"}, f"node/{node} drained"),
        ]
    assert first(replay(policy, tmp_path, steps)) is None


@pytest.mark.parametrize(
    ("command", "operation"),
    [
        ("kubectl get pod x -n payments -o wide", "bash: kubectl get"),
        ("cd /repo && pytest -q tests/", "bash: pytest"),
        ("LC_ALL=C timeout 10 /usr/bin/grep -rn foo .", "bash: grep"),
        ("git -C repo diff", "bash: git diff"),
        ("kubectl -n team-a describe quota compute", "bash: kubectl describe"),
        ("sudo -u app aws --region us-east-1 s3 ls", "bash: aws s3"),
    ],
)
def test_what_a_command_does_is_its_program_and_subcommand(command: str, operation: str) -> None:
    assert operation_of("bash", {"command": command}) == operation
    assert operation_of("zendesk_get_user", {"user_id": 7}) == "zendesk_get_user"


def test_ids_and_words_written_otherwise_are_one_call() -> None:
    def key(arguments: dict[str, object]) -> int:
        return signature_of("get", arguments).key

    assert key({"ticket_id": 48213}) == key({"ticket_id": "48213"}) == key({"ticket_id": "48213 "})
    assert key({"selector": "#order-summary "}) == key({"selector": "#order-summary"})
    # A leading zero, a longer number, a word's case, leading spaces (an edit's indentation) and
    # a line break stay as written.
    assert key({"ticket_id": "048213"}) != key({"ticket_id": 48213})
    assert key({"ticket_id": "1234567890123456"}) != key({"ticket_id": 1234567890123456})
    assert key({"state": "OPEN"}) != key({"state": "open"})
    assert key({"old_str": "    return x"}) != key({"old_str": "return x"})
    assert key({"content": "line\n"}) != key({"content": "line"})
    assert signature_of("get", {"ticket_id": "48213 "}).arguments == {"ticket_id": "48213 "}  # (what rules see)


def _audit_page(offset: int, remaining: int, rows: list[str]) -> str:
    head = f"GET /api/v1/logs?since=2024-06-01T00:00:00Z&limit=25&offset={offset}  200 OK  (x-rate-limit-remaining: {remaining})\ntotal=61 returned={len(rows)}\n"
    return head + "\n".join(rows)


def test_a_wrapped_page_stamped_with_its_offset_and_rate_limit_is_a_page_already_read(policy, tmp_path: Path) -> None:
    events = [f"2024-06-30T{23 - index // 3:02d}:{index % 60:02d}:00Z  evt_{index:012x}  user.session.start   user{index}@example.test  198.51.100.{index}  SUCCESS" for index in range(61)]
    pages = [events[0:25], events[25:50], events[50:61]]
    steps = []
    for number, offset in enumerate(range(0, 200, 25)):
        rows = pages[number % 3]
        steps.append(step("idp_get_system_log", {"since": "2024-06-01T00:00:00Z", "limit": 25, "offset": offset}, _audit_page(offset, 560 - number * 7, rows)))
    assert len(steps[0]["output"]) > 2048
    report = replay(policy, tmp_path, steps)
    assert first(report) == (4, "replan")


def test_a_search_page_that_took_another_time_is_the_same_page(policy, tmp_path: Path) -> None:
    hits = [{"id": f"doc_{index:010x}", "title": f"Retention note {index}", "url": f"https://intra.example/d/{index}", "score": round(1 - index / 50, 3)} for index in range(34)]

    def page(number: int) -> str:
        start = (number - 1) % 4 * 10
        return json.dumps({"query": "data retention", "page": number, "per_page": 10, "total_pages": 4, "took_ms": 40 + number * 7, "results": hits[start : start + 10]})

    steps = [step("enterprise_search", {"q": "data retention", "page": number, "per_page": 10}, page(number)) for number in range(1, 9)]
    assert first(replay(policy, tmp_path, steps)) == (5, "replan")


def test_cache_busters_in_urls_make_the_same_request(policy, tmp_path: Path) -> None:
    assert _without_cache_buster("https://cdn.example/app/manifest.json?cb=1719565921") == "https://cdn.example/app/manifest.json"
    assert _without_cache_buster("https://cdn.example/app/manifest.json?page=2&_=1719565950318") == "https://cdn.example/app/manifest.json?page=2"
    assert _without_cache_buster("https://api.example/search?q=usb&page=2") == "https://api.example/search?q=usb&page=2"
    response = "HTTP/2 200\ncontent-type: application/json\ndate: Fri, 28 Jun 2024 09:1{n}:17 GMT\netag: \"6f1d0c2b\"\nx-cache: Miss from cloudfront\nx-amz-cf-id: {cf}==\n\n{{\"build\": \"2024.06.27-3\", \"commit\": \"9c2e71f\", \"entry\": \"/assets/index-4f1a9b2c.js\"}}"
    bodies = [response.format(n=n, cf=cf) for n, cf in enumerate(("z_j9zsb-iiksux_2-z0ae9o58joryct1z66sciygiktxq", "r57d8jxio9hu2nfxu6436g91jsrhafjdnsetmm473bcq2", "Yk3vQ9cR2m8TzL1pWf0aXbYk3vQ9cR2m8TzL1pWf0aXbq"))]
    assert len({_without_response_stamps(body.lower()) for body in bodies}) == 1
    busters = ("cb=1719565921", "_=1719565950318", "nocache=8f2c41")
    steps = [step("http_get", {"url": f"https://cdn.example/app/manifest.json?{buster}"}, body) for buster, body in zip(busters, bodies)]
    assert first(replay(policy, tmp_path, steps)) == (2, "replan")


def test_short_announcements_restated_without_acting(policy, tmp_path: Path) -> None:
    steps = [step("airflow_get_dag_run", {"dag_id": "nightly_sales_load"}, {"state": "failed", "failed_task": "load_to_redshift"}, agent="ops")]
    steps += said("ops", ["The DAG run failed at task load_to_redshift after 3 tries. I will now check the logs.", "Let me check the logs now.", "Checking the logs now.", "I will check the logs.", "Now checking the logs.", "Let me check the logs."])
    report = replay(policy, tmp_path, steps)
    assert first(report) == (4, "replan")
    assert "near_duplicate/reworded_message" in signals_at(report, 4)
    # Short steps that each say something new are a plan carried out in words.
    steps = steps[:1] + said("ops", ["The DAG run failed at task load_to_redshift after 3 tries. I will now check the logs.", "Let me check the logs now.", "Checking the scheduler now.", "Now checking the warehouse.", "Let me open a ticket."])
    assert first(replay(policy, tmp_path, steps)) is None


def _exploration() -> list[dict[str, object]]:
    return [
        step("bash", {"command": "dbt ls --select fct_orders+"}, "Found 214 models, 612 data tests"),
        step("read_file", {"path": "models/marts/fct_orders.sql"}, "select * from {{ ref('stg_orders') }} inner join customers using (customer_id)"),
        step("snowflake_query", {"sql": "select count(*) from marts.fct_orders"}, "| N |\n| 18204 |"),
        step("snowflake_query", {"sql": "select count(*) from raw.orders"}, "| N |\n| 18391 |"),
        step("snowflake_query", {"sql": "select count(*) from raw.orders where customer_id like 'guest_%'"}, "| GUEST |\n| 187 |"),
    ]


def test_an_exploration_replayed_after_a_condensation(policy, tmp_path: Path) -> None:
    summary = step("memory_summarize", {"strategy": "rolling"}, "Summary: 187 guest orders are dropped by the inner join; next, change it to a left join.", agent="memory")
    steps = _exploration() + [summary] + _exploration() + [summary] + _exploration()
    report = replay(policy, tmp_path, steps)
    # The whole round made again: the second summary completes it.
    assert first(report) == (11, "stop")
    assert "cycle/replayed_sequence" in signals_at(report, 11)
    # The same round run again because the user asked for it is the user's request.
    asked = _exploration() + [step(None, output="I changed the join myself; run the same checks again please.", agent="user")] + _exploration()
    assert first(replay(policy, tmp_path, asked)) is None
    # The same checks after an edit, which they show took effect: the fix verified.
    edit = step("edit_file", {"path": "models/marts/fct_orders.sql", "old": "inner join", "new": "left join"}, "applied 1 edit")
    after = _exploration()
    after[1]["output"] = "select * from {{ ref('stg_orders') }} left join customers using (customer_id)"
    after[2]["output"] = "| N |\n| 18391 |"
    after[4]["output"] = "| GUEST |\n| 0 |"
    assert first(replay(policy, tmp_path, _exploration() + [edit] + after)) is None


def test_a_page_asked_for_again_with_its_cursor_is_no_progress(policy, tmp_path: Path) -> None:
    from loopguard.detectors.near_duplicate import sends_cursor

    token = "1qT7Vb0xNw2Ue4kLr9sYh5cJm/0ZkbW9uLWV2ZW50cy8yMDI0LzA2LzI0"
    assert [sends_cursor(arguments) for arguments in ({"ContinuationToken": token}, {"pageToken": token}, {"access_token": token}, {"pageToken": "2"})] == [True, True, False, False]
    listing = {"Bucket": "datalake-raw", "Prefix": "events/2024/06/", "ContinuationToken": token}

    def page(request_id: str) -> str:
        return json.dumps({"ResponseMetadata": {"RequestId": request_id}, "IsTruncated": True, "NextContinuationToken": token, "Contents": [{"Key": f"events/2024/06/24/part-{index:05d}.json.gz"} for index in range(1409, 1414)]})

    steps = []
    for number, request_id in enumerate(("DEDB22DC54662B09", "7D438D4F546210F6", "C322932D8573F5AC", "30F3FCDAC2A2718E")):
        steps += [step("s3_list_objects_v2", listing, page(request_id)), step("append_manifest", {"manifest": "s3://staging/manifest.jsonl", "from_listing": f"page-{number + 3}"}, {"appended": 1000, "rows_total": 3000 + 1000 * number})]
    report = replay(policy, tmp_path, steps)
    assert first(report) == (4, "stop")
    # The third copy of the page: one more fetch (to redo what failed after it) is healthy.
    assert "no_progress/same_page" in signals_at(report, 4) and "no_progress/same_page" not in signals_at(report, 2)


def test_a_message_from_the_user_in_the_step_format_starts_a_turn(tmp_path: Path) -> None:
    from loopguard.traces.steps import parse_step
    from loopguard.traces.model import AgentMessage, UserMessage

    assert [type(item) for item in parse_step({"agent": "user", "output": "run the checks again"}, 0)] == [UserMessage]
    assert [type(item) for item in parse_step({"agent": "Human", "output": "thanks"}, 1)] == [UserMessage]
    assert [type(item) for item in parse_step({"agent": "planner", "output": "I will check"}, 2)] == [AgentMessage]
