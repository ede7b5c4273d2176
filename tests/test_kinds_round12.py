"""Kinds from blind round 12: handoff tools that name their target, ids and IBANs written
another way, a plan's allowance spent, Chromium's error codes, times taken in compact JSON,
write-ups that are no monologue, wrapped offsets on long pages, and response stamps in answers."""

from __future__ import annotations

import json
from pathlib import Path

from test_detector_kinds import first, policy, replay, said, signals_at, step  # noqa: F401  (policy is a fixture)

from loopguard.detectors.near_duplicate import same_target
from loopguard.observations import classify_failure, observe


def test_a_circle_of_transfer_to_tools_is_a_handoff_cycle(policy, tmp_path: Path) -> None:
    receipt = lambda agent, number: json.dumps({"handoff": "accepted", "to": agent, "handoff_id": f"ho_{number:04x}a9"})  # noqa: E731
    cycle = [("intake", "coverage"), ("coverage", "fraud"), ("fraud", "adjuster"), ("adjuster", "intake")]
    steps = [
        step(f"transfer_to_{target}", {"summary": f"Please handle claim CLM-118604 ({target})"}, receipt(target, number), agent=source)
        for number, (source, target) in enumerate(cycle * 3)
    ]
    report = replay(policy, tmp_path, steps)
    assert first(report) == (7, "stop")  # the second time control comes back to intake
    assert "handoff/handoff_cycle" in signals_at(report, 7)


def test_ids_written_another_way_are_the_same_target() -> None:
    assert same_target({"employee_id": "E-004127"}, {"employee_id": "004127"})
    assert not same_target({"employee_id": "E-004127"}, {"employee_id": "E-004128"})
    assert not same_target({"invoice": "ORD-1001"}, {"invoice": "INV-1001"})
    assert same_target({"iban": "DE89 3704 0044 0532 0130 01"}, {"iban": "de89370400440532013001"})
    assert not same_target({"iban": "DE89 3704 0044 0532 0130 01"}, {"iban": "DE89 3704 0044 0532 0130 02"})
    assert not same_target({"query": "go to bed now"}, {"query": "wake up"})


def test_failures_classified_by_what_they_say() -> None:
    assert [classify_failure(text) for text in (
        "{'status': 429, 'error_code': 'PLAN_MINUTES_EXHAUSTED', 'message': 'Monthly minutes exhausted for plan Team. Upgrade the plan.'}",
        'Error code: 429 - {"error": {"message": "You exceeded your current quota, please check your plan and billing details.", "type": "insufficient_quota"}}',
        "429 Too Many Requests: rate limited, retry after 2s",
        "Error: page.goto: net::ERR_CONNECTION_RESET at https://portal.example/statements",
        "net::ERR_TIMED_OUT",
    )] == ["permanent", "permanent", "retryable", "retryable", "retryable"]


def test_a_time_taken_in_compact_json_is_volatile() -> None:
    status = lambda latency, battery: {"trace_id": "991b2dbc4ae7d2ddd8fa9c07", "latency_ms": latency, "robot": {"id": "AMR-031", "state": "BLOCKED", "battery_pct": battery}}  # noqa: E731
    assert observe(status(46, 58)).same_as(observe(status(18, 58)))
    assert not observe(status(46, 58)).same_as(observe(status(46, 57)))


def test_a_plan_announced_again_and_again_in_paraphrase_is_a_monologue(policy, tmp_path: Path) -> None:
    messages = [
        "I'll check the export job logs for the nightly run to find the failure.",
        "Let me look at the nightly export job logs to see why it failed.",
        "Proceeding to check the logs of the nightly export job for the failure.",
        "I will now inspect the nightly export job logs to find what failed.",
        "Starting with the nightly export job logs, I'll find the failure cause.",
    ]
    report = replay(policy, tmp_path, said("producer", messages))
    assert first(report) == (3, "replan")
    assert "near_duplicate/reworded_message" in signals_at(report, 3)
    # A tutor's or a builder's next step brings its own words: no restatement.
    steps = [
        "I'll start by outlining the database schema for the inventory service.",
        "I'll now write the SQL migration for the inventory tables.",
        "I'll now write the Python models with SQLAlchemy.",
        "I'll now add the REST endpoints for stock levels and reservations.",
        "I'll now cover the endpoints with pytest unit tests and fixtures.",
    ]
    assert first(replay(policy, tmp_path, said("builder", steps))) is None


def test_sections_of_a_write_up_are_no_monologue(policy, tmp_path: Path) -> None:
    # Sections share their topic's nouns as a restated plan shares its plan's, but announce nothing.
    sections = [
        "## 1. EMEA sales: revenue grew 12 percent in the second quarter, driven by enterprise renewals in Germany.",
        "## 2. APAC sales: revenue grew 7 percent in the second quarter, driven by new enterprise accounts in Japan.",
        "## 3. Americas sales: revenue was flat in the second quarter; enterprise renewals offset churn in Brazil.",
        "## 4. Outlook: two large enterprise customers renew in October, and the currency hedge expires in December.",
        "## 5. Next steps: hire a second account manager for the Nordics and renegotiate the CDN contract.",
    ]
    assert first(replay(policy, tmp_path, said("analyst", sections))) is None


def test_offsets_past_the_end_that_return_long_earlier_pages_are_a_wrap(policy, tmp_path: Path) -> None:
    orders = lambda first_id: [{"id": f"ord_{first_id + n}", "name": f"#{104100 + first_id + n}", "email": f"customer{first_id + n}@example.com", "total_price": f"{100 + n}.50", "financial_status": "pending"} for n in range(20)]  # noqa: E731
    def page(offset: int, request: int) -> dict:
        wrapped = offset % 60
        return {"request_id": f"req_{request:08x}c2df2fd1", "data": {"orders": orders(wrapped)}, "pagination": {"offset": offset, "limit": 20, "total_count": 47}}

    steps = [step("list_orders", {"status": "review", "limit": 20, "offset": offset}, page(offset, index)) for index, offset in enumerate(range(0, 140, 20))]
    assert len(json.dumps(steps[0]["output"])) > 2048
    report = replay(policy, tmp_path, steps)
    assert first(report) == (4, "replan")
    assert "no_progress/reread" in signals_at(report, 4)


def test_answers_to_rewordings_are_compared_without_their_generated_values(policy, tmp_path: Path) -> None:
    def answer(index: int, query: str) -> dict:
        return {
            "search_metadata": {"id": f"{index}068d1490f9d27a03396a1aa", "created_at": f"2025-07-23 14:0{index}:43.670 UTC", "total_time_taken": 1.2 + index},
            "search_parameters": {"q": query},
            "organic_results": [{"position": 1, "title": "Battery Recycling Services | Ohio | Redline", "link": "https://redline.example/ohio"}],
        }

    queries = ["industrial lithium-ion battery recycling companies Ohio", "Ohio companies that recycle industrial Li-ion batteries", "lithium ion battery recyclers in Ohio for industry"]
    report = replay(policy, tmp_path, [step("web_search", {"query": query}, answer(index, query)) for index, query in enumerate(queries)])
    assert first(report) == (2, "replan")
