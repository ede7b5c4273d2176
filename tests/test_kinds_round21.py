"""Kinds from the round-21 session: work redone after each context condensation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopguard import Guard, ToolCall, ToolResult
from loopguard.observations import is_context_summary
from test_detector_kinds import first, replay, signals_at, step  # noqa: F401  (policy is a fixture)
from test_detector_kinds import policy  # noqa: F401

SUMMARY = "[Context summary #{n} - earlier turns were compacted] Goal: enrich the three accounts in the CRM. Progress: enrichment has started."


def _lap(lap: int) -> list[dict[str, object]]:
    """One lap of an enrichment run: a lookup, an enrichment call answered with its own timing,
    and a note saved (a write: each save gets a new note id and a higher count)."""
    return [
        step("crm_get_account", {"account_id": "acc_5521"}, '{"id": "acc_5521", "name": "Hollis Freight", "domain": "hollisfreight.com", "enriched": false}'),
        step("enrich_company", {"domain": "hollisfreight.com"}, f'{{"employees": 240, "industry": "Logistics", "hq": "Columbus, OH", "took_ms": {310 + 47 * lap}}}'),
        step("crm_add_note", {"account_id": "acc_5521", "body": "Enriched: 240 employees, Logistics, HQ Columbus OH"}, f"Note n_{7301 + 17 * lap} added to acc_5521 ({lap + 1} notes total)."),
    ]


def _condensed_laps(laps: int, summary: str = SUMMARY, agent: str = "harness") -> list[dict[str, object]]:
    steps: list[dict[str, object]] = []
    for lap in range(laps):
        if lap:
            steps.append(step(None, output=summary.format(n=lap), agent=agent))
        steps.extend(_lap(lap))
    return steps


def test_a_lap_with_a_write_redone_after_each_of_two_condensations_is_stopped(policy, tmp_path: Path) -> None:
    report = replay(policy, tmp_path, _condensed_laps(3))
    # Steps 0-2, summary 3, steps 4-6, summary 7, then the third lap: its note (step 10), the
    # change made again after the lookup and the enrichment made again, is a lap redone.
    assert first(report) == (10, "stop")
    (decision,) = [entry.decision for entry in report.decisions if entry.step == 10 and entry.decision.phase == "before_call"]
    assert decision.action.value == "stop"
    assert {signal.message for signal in decision.signals} == {
        "after each of the last 2 context condensations the agent made the same calls again (crm_get_account, enrich_company and crm_add_note): the work is done again",
        "enrich_company returned what it had returned before; the last 2 results brought nothing new",
    }
    # Without the condensations the same calls are no laps.
    plain = [entry for entry in _condensed_laps(3) if "tool" in entry]
    assert not any(signal.kind == "lap_redone" for entry in replay(policy, tmp_path, plain).decisions for signal in entry.decision.signals)


def test_an_agent_that_rereads_its_guidance_after_each_condensation_and_goes_on_is_healthy(policy, tmp_path: Path) -> None:
    # Harnesses tell agents to re-read their guidance files after a compaction: two unchanged
    # reads, then new work, each lap.
    steps: list[dict[str, object]] = []
    for lap, module in enumerate(["billing", "accounts", "invoices", "refunds"]):
        if lap:
            steps.append(step(None, output=SUMMARY.format(n=lap), agent="harness"))
        steps.append(step("read_file", {"path": "AGENTS.md"}, "# Agents\nRun `make check` before each commit. Keep handlers small."))
        steps.append(step("read_file", {"path": "docs/style.md"}, "# Style\nErrors are problem+json; ids are UUIDs."))
        steps.append(step("edit_file", {"path": f"api/{module}.py", "old": "raise ValueError", "new": "raise ProblemError"}, f"Edited api/{module}.py"))
        steps.append(step("bash", {"command": f"pytest tests/test_{module}.py -q"}, f"{12 + lap} passed in 0.{lap + 3}s"))
    assert first(replay(policy, tmp_path, steps)) is None


def test_one_lap_redone_after_one_condensation_is_the_agent_finding_its_bearings(policy, tmp_path: Path) -> None:
    assert first(replay(policy, tmp_path, _condensed_laps(2))) is None


def test_a_lap_whose_reads_bring_news_each_time_is_no_redo(policy, tmp_path: Path) -> None:
    steps = _condensed_laps(3)
    # The account's state moves on each lap (another agent enriches it meanwhile).
    for index, state in ((0, "queued"), (4, "running"), (8, "done")):
        steps[index]["output"] = f'{{"id": "acc_5521", "name": "Hollis Freight", "enrichment": "{state}"}}'
    steps[9]["output"] = '{"employees": 240, "industry": "Logistics", "hq": "Columbus, OH", "took_ms": 402}'
    # (The third lap's lookup brought news: only the enrichment and the note are redone, and
    # the enrichment's earlier answers were alike: the note is the second redone call.)
    assert first(replay(policy, tmp_path, steps)) == (10, "stop")
    steps[5]["output"] = '{"employees": 250, "industry": "Logistics", "hq": "Columbus, OH", "took_ms": 355}'
    assert first(replay(policy, tmp_path, steps)) is None


def test_an_agent_that_rereads_its_plan_after_each_condensation_and_goes_on_is_healthy(policy, tmp_path: Path) -> None:
    plan = "1. acc_5521 Hollis Freight\n2. acc_5522 Brightlane\n3. acc_5523 Cedar Row\n4. acc_5524 Dunmore\n"
    steps: list[dict[str, object]] = []
    for lap, (account, domain) in enumerate([("acc_5521", "hollisfreight.com"), ("acc_5522", "brightlane.io"), ("acc_5523", "cedarrow.co"), ("acc_5524", "dunmore.com")]):
        if lap:
            steps.append(step(None, output=SUMMARY.format(n=lap), agent="harness"))
        steps.append(step("read_file", {"path": "plan.md"}, plan))
        steps.append(step("crm_get_account", {"account_id": account}, f'{{"id": "{account}", "domain": "{domain}", "enriched": false}}'))
        steps.append(step("enrich_company", {"domain": domain}, f'{{"domain": "{domain}", "employees": {120 + 40 * lap}, "took_ms": 300}}'))
        steps.append(step("crm_add_note", {"account_id": account, "body": f"Enriched {domain}"}, f"Note n_{7301 + lap} added to {account} (1 notes total)."))
    assert first(replay(policy, tmp_path, steps)) is None


def test_a_summary_handed_in_as_a_user_message_starts_a_lap_and_is_no_request() -> None:
    # LangChain's SummarizationMiddleware hands the summary back as a human message.
    summary = "Here is a summary of the conversation to date: the user wants the three accounts enriched; enrichment has started."
    guard = Guard.from_policy("builtin:default")

    def run(between: str) -> tuple[list[tuple[int, str]], set[str]]:
        session = guard.session(run_id="run")
        session.observe_user_message("Enrich the three accounts in the CRM.")
        interventions, kinds, index = [], set(), 0
        for lap in range(3):
            if lap:
                session.observe_user_message(between)
            for entry in _lap(lap):
                call = ToolCall(str(entry["tool"]), entry["args"])  # type: ignore[arg-type]
                decision = session.before_call(call)
                session.after_call(call, ToolResult(entry["output"]))
                kinds |= {signal.kind for signal in decision.signals}
                if decision.action.value not in ("continue", "warn"):
                    interventions.append((index, decision.action.value))
                index += 1
        return interventions, kinds

    # The third lap's note, the change made again, is stopped, as when a harness's agent says
    # the summary.
    interventions, kinds = run(summary)
    assert interventions == [(8, "stop")]
    assert "lap_redone" in kinds
    # A user's message is a request: no lap starts (the same calls made again are judged as
    # any calls made again, here as a cycle of three calls with the same answers).
    interventions, kinds = run("Please run the enrichment for acc_5521 again.")
    assert "lap_redone" not in kinds
    assert interventions[0] == (5, "stop")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[Context summary #2] The user asked me to triage the Billing queue.", True),
        ("CONDENSATION: earlier events (1-8) were removed from context. Summary: ...", True),
        ("This session is being continued from a previous conversation that ran out of context.", True),
        ("[Condensed history: LLMSummarizingCondenser, events 1-41 replaced] USER_CONTEXT: ...", True),
        ("<condensed_history> Task: memo on the licence fees", True),
        ("Context window at 94% (123647 tokens). Condensing 6 events into a summary.", True),
        ("[Conversation trimmed to fit the context window: 12 earlier messages removed.]", True),
        ("Here is a summary of the conversation to date: the user wants a refund.", True),
        ("Please summarize the conversation with the customer.", False),
        ("I removed the old messages from the queue.", False),
        ("Final QoE summary v3 saved to the buyer folder.", False),
        ("To summarize the plan: (1) hold the room, (2) send the invites.", False),
        # Said late in an agent's report: no harness's note.
        ("requests -> httpx migration complete: 9 modules, 57 call sites, full suite 97 passed, requests dropped; context was condensed twice", False),
    ],
)
def test_a_context_summary_is_told_by_how_harnesses_open_it(text: str, expected: bool) -> None:
    assert is_context_summary(text) is expected


@pytest.mark.parametrize(
    ("command", "changes"),
    [
        ("kubectl -n payments set resources deploy/payments-api -c api --limits=memory=1Gi", True),
        ("kubectl -n payments rollout restart deploy/payments-api", True),
        ("kubectl -n payments scale deploy/payments-api --replicas=0 && sleep 5", True),
        ("helm upgrade payments ./chart -f values.yaml", True),
        ("terraform apply -auto-approve", True),
        ("systemctl restart nginx", True),
        ("kubectl -n payments logs deploy/payments-api --tail=5", False),
        ("kubectl rollout status deploy/payments-api", False),
        ("kubectl get configmap payments-config -o jsonpath='{.data}'", False),
        ("terraform plan", False),
        ("systemctl status nginx", False),
    ],
)
def test_cluster_and_infrastructure_commands_that_change_state_are_writes(command: str, changes: bool) -> None:
    from loopguard.tool_names import changes_state

    assert changes_state("bash", {"command": command}) is changes


def _logs(minute: int) -> str:
    return (
        f"2024-05-14T09:{minute:02d}:02.118Z INFO  payments-api v2.8.1 starting (pid=1)\n"
        f"2024-05-14T09:{minute:02d}:02.201Z FATAL db init failed: pq: password authentication failed for user \"payments_app\"\n"
        f"2024-05-14T09:{minute:02d}:02.233Z INFO  shutting down, exit status 1"
    )


def test_a_permanent_failure_seen_again_after_a_change_not_tried_before_gets_one_more_chance(policy, tmp_path: Path) -> None:
    logs = {"command": "kubectl -n payments logs deploy/payments-api --tail=5"}
    steps = [
        step("bash", logs, _logs(11)),
        step("bash", {"command": "kubectl -n payments set resources deploy/payments-api -c api --limits=memory=1Gi"}, "deployment.apps/payments-api resource requirements updated"),
        step("bash", logs, _logs(12)),
        step("bash", {"command": "kubectl -n payments rollout restart deploy/payments-api"}, "deployment.apps/payments-api restarted"),
        step("bash", logs, _logs(14)),
    ]
    report = replay(policy, tmp_path, steps)
    # The same refusal after the limits changed (step 2) is only a warning: the change might
    # have been the fix. After another change, the third (step 4) is stopped before it runs.
    assert signals_at(report, 2) == {"failure/repeated_failure_after_change"}
    assert first(report) == (4, "stop")
    # With nothing changed between, the second is stopped as before.
    assert first(replay(policy, tmp_path, [steps[0], step("bash", {"command": "kubectl -n payments get pods"}, "NAME READY STATUS\npayments-api-7d9f 0/1 CrashLoopBackOff"), steps[2]])) == (2, "stop")


def test_a_short_reply_that_names_a_long_path_still_only_acknowledges_the_write(policy, tmp_path: Path) -> None:
    notes = "/Users/mika/src/trailhead-ios/Documentation/MIGRATION_NOTES.md"
    steps = []
    for module in ("NetworkingKit", "Persistence", "FeatureFeed", "FeatureProfile", "AppShell"):
        steps.append(step("Edit", {"file_path": f"Packages/{module}/Sources/{module}/Client.swift", "old_string": "class", "new_string": "final class"}, "The file has been edited."))
        steps.append(step("Bash", {"command": f"xcodebuild -scheme {module} SWIFT_VERSION=6 build"}, "** BUILD SUCCEEDED **"))
        steps.append(step("Write", {"file_path": notes, "content": f"# Swift 6 migration\n- {module}: done\n"}, f"The file {notes} has been updated."))
    # Each write brings other content: its acknowledgement, the same each time, is no stale
    # answer (the reply is 89 characters, 27 once the path it echoes is set aside).
    assert first(replay(policy, tmp_path, steps)) is None
    assert not any(signal.detector == "no_progress" for entry in replay(policy, tmp_path, steps).decisions for signal in entry.decision.signals)


@pytest.mark.parametrize(
    "command",
    [
        "kubectl get deploy create-order-api",
        "kubectl -n scale-0 get secret db-creds -o yaml",
        "kubectl describe node drain-pool-1",
        "kubectl auth can-i create pods",
        "docker compose ps",
    ],
)
def test_a_cluster_command_is_read_at_its_subcommand(command: str) -> None:
    from loopguard.tool_names import changes_state

    # (A resource or namespace named like a subcommand changes nothing.)
    assert changes_state("bash", {"command": command}) is False
    assert changes_state("bash", {"command": "kubectl --context prod -n payments rollout restart deploy/payments-api"}) is True


def test_a_permanent_failure_after_a_change_to_something_else_gets_no_grace(policy, tmp_path: Path) -> None:
    charge = {"amount": 4200, "currency": "eur", "customer": "cus_88120"}
    refused = '{"error": {"type": "invalid_request_error", "message": "Invalid API Key provided: sk_live_****3xQ1"}, "status": 401}'
    steps = [
        step("stripe_create_charge", charge, refused),
        step("bash", {"command": "kubectl -n payments annotate deploy/payments-api debug-attempt=1 --overwrite"}, "deployment.apps/payments-api annotated"),
        step("stripe_create_charge", charge, refused),
    ]
    # The annotation touches nothing the charge names: the second 401 is stopped as it came.
    assert first(replay(policy, tmp_path, steps)) == (2, "stop")


def test_a_summary_said_as_a_system_message_in_a_chat_trace_starts_a_lap(policy, tmp_path: Path) -> None:
    import json

    from loopguard.traces import replay_file

    def call(index: int, name: str, arguments: dict[str, object], output: str) -> list[dict[str, object]]:
        return [
            {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{index}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]},
            {"role": "tool", "tool_call_id": f"c{index}", "content": output},
        ]

    messages: list[dict[str, object]] = [{"role": "system", "content": "You are a CRM assistant."}, {"role": "user", "content": "Enrich account acc_5521."}]
    index = 0
    for lap in range(3):
        if lap:
            messages.append({"role": "system", "content": SUMMARY.format(n=lap)})
        for entry in _lap(lap):
            messages += call(index, str(entry["tool"]), entry["args"], str(entry["output"]))  # type: ignore[arg-type]
            index += 1
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"messages": messages}), encoding="utf-8")
    (report,) = replay_file(policy, path)
    # Steps count tool calls in a chat trace: the third lap's note is call 8.
    assert report.first_intervention is not None and (report.first_intervention.step, report.first_intervention.action.value) == (8, "stop")
    assert any(signal.kind == "lap_redone" for entry in report.decisions for signal in entry.decision.signals)
    # The opening system prompt is no condensation: with it alone, no lap is seen.
    plain = [message for message in messages if message["role"] != "system" or message["content"] == "You are a CRM assistant."]
    path.write_text(json.dumps({"messages": plain}), encoding="utf-8")
    (report,) = replay_file(policy, path)
    assert not any(signal.kind == "lap_redone" for entry in report.decisions for signal in entry.decision.signals)


def _support_chat(replies: list[str], follow_ups: list[str]) -> list[dict[str, object]]:
    steps: list[dict[str, object]] = [
        step(None, output="My parcel 4471-XK was due yesterday and the tracking page says nothing.", agent="user"),
        step("get_shipment", {"tracking": "4471-XK"}, '{"tracking": "4471-XK", "status": "exception", "reason": "address_unreadable", "depot": "Leeds"}'),
    ]
    for reply, follow_up in zip(replies, follow_ups + [""]):
        steps.append(step(None, output=reply, agent="care_bot"))
        if follow_up:
            steps.append(step(None, output=follow_up, agent="user"))
    return steps


def test_work_announced_again_under_a_users_short_follow_ups_and_never_done_is_a_replan(policy, tmp_path: Path) -> None:
    replies = [
        "Thanks for waiting! I'm checking with the Leeds depot now.",
        "I'm still checking with the depot about your parcel.",
        "Sorry for the delay, I'm looking into the depot's scan records for your parcel now.",
        "I'm just checking the depot records once more and will update you shortly.",
    ]
    report = replay(policy, tmp_path, _support_chat(replies, ["ok and?", "hello??", "is it lost or not?"]))
    # The follow-ups ask for what was announced: they bring no news, and the third
    # announcement (step 6), the second that says it again, is the agent talking instead of acting.
    assert first(report) == (6, "replan")
    assert signals_at(report, 6) == {"near_duplicate/reworded_message", "no_progress/reworded_message"}
    # The agent acting on the follow-up (a tool call) ends the announcing.
    acted = _support_chat(replies[:1], ["ok and?"]) + [step("reschedule_delivery", {"tracking": "4471-XK", "address": "12 Ash Grove, Leeds LS6 2QT"}, '{"rescheduled": "2024-06-05"}')]
    acted += [step(None, output="Done: your parcel is rescheduled for 5 June to 12 Ash Grove.", agent="care_bot"), step(None, output="thanks!", agent="user")]
    assert first(replay(policy, tmp_path, acted)) is None


def test_a_tutor_without_tools_answering_short_replies_is_no_follow_up(policy, tmp_path: Path) -> None:
    steps: list[dict[str, object]] = [step(None, output="Teach me the chain rule with examples.", agent="user")]
    for number, (inner, outer) in enumerate([("3x+1", "sin"), ("x^2", "exp"), ("5x", "ln"), ("2x-7", "cos")]):
        steps.append(step(None, output=f"Let me show you example {number + 1}: d/dx {outer}({inner}). I'm checking each step with you: first differentiate {outer}, then multiply by d/dx({inner}).", agent="tutor"))
        steps.append(step(None, output="ok next", agent="user"))
    assert first(replay(policy, tmp_path, steps)) is None


def test_a_status_read_again_between_lookups_the_same_but_for_when_it_was_checked_is_no_news(policy, tmp_path: Path) -> None:
    def status(checked: str, request: str) -> str:
        return (
            '{"order_id": "100-4471-88", "status": "refund_pending", "refund": {"id": "re_3PGx8sLk2vT9qQ1b", "processor_state": "awaiting_bank_confirmation"}, '
            f'"checked_at": "2024-05-14T13:{checked}Z", "request_id": "req_{request}"}}'
        )

    lookups = [
        step("kb_search", {"query": "refund timeline SEPA"}, '{"results": [{"id": "kb-1182", "title": "How long do refunds take?"}]}'),
        step("crm_get_customer", {"email": "ilse@example.org"}, '{"customer_id": "cus_88120", "tier": "member"}'),
        step("macros_list", {"category": "refunds"}, '{"macros": [{"id": 3301, "title": "Refund issued"}]}'),
    ]
    steps = []
    for index, (checked, request) in enumerate([("40:02", "mf266qv9ocdwer"), ("40:33", "0kg9rprchvbu07"), ("41:00", "p71dytsn0ppwre"), ("41:29", "x8k2mq0a7zt1vb")]):
        steps.append(step("orders_get_status", {"order_id": "100-4471-88"}, status(checked, request)))
        if index < len(lookups):
            steps.append(lookups[index])
    # The third read (step 4), the same status but for when it was checked and the request id,
    # is a repeat; its answer the same again, the fourth (step 6) is stopped.
    report = replay(policy, tmp_path, steps)
    assert signals_at(report, 4) >= {"repeat/interleaved_repeat"}
    assert first(report) == (6, "stop")
    # A bank confirmation that moves on between the same reads is news.
    for index, state in zip((0, 2, 4, 6), ("awaiting_bank_confirmation", "bank_confirmed", "settling", "settled")):
        steps[index]["output"] = str(steps[index]["output"]).replace("awaiting_bank_confirmation", state)
    assert first(replay(policy, tmp_path, steps)) is None


def _products_page(page: int, shown: int, second: int, request: str) -> str:
    ids = range(4410001 + 50 * (shown - 1), 4410001 + 50 * (shown - 1) + (50 if shown < 3 else 23))
    body = json.dumps({"data": [{"id": item, "sku": f"NW-{item - 4400000}"} for item in list(ids)[:3]], "meta": {"per_page": 50, "count": len(ids)}})
    headers = f"HTTP/1.1 200 OK\nDate: Sun, 02 Jun 2024 04:00:{second:02d} GMT\nX-Total-Count: 123\nX-Request-Id: {request}\nX-Response-Time: {60 + second}ms"
    return f"{headers}\n\n{body}"


def test_pages_past_the_end_clamped_to_the_last_page_are_pages_already_read(policy, tmp_path: Path) -> None:
    url = "https://api.shopwave.io/v2/stores/st_88213/products?page={page}&per_page=50"
    requests = ["bad879cd-b58e-4b5d-aaad-84fede418fcf", "9bbbe261-6101-4b6d-8bba-e9f032ed3dd7", "0c4f1e2a-77d1-4c0e-9a51-3f2b8d6e0a19", "5e7d9a10-2b3c-4d8e-9f01-a2b3c4d5e6f7", "1f2e3d4c-5b6a-4798-8a1b-2c3d4e5f6a7b", "aa11bb22-cc33-4d44-8e55-ff6677889900"]
    # Three real pages (the third short), then pages 4, 5 and 6 answered with page 3 again:
    # only the stamping headers (Date, X-Request-Id, X-Response-Time) move.
    steps = [step("http_get", {"url": url.format(page=page)}, _products_page(page, min(page, 3), 10 + 3 * page, requests[page - 1])) for page in range(1, 7)]
    report = replay(policy, tmp_path, steps)
    # Page 4 is the last page again; page 5 (step 4), the second, is a replan.
    assert first(report) == (4, "replan")
    # The same pages with their own products each time are paging.
    steps = [step("http_get", {"url": url.format(page=page)}, _products_page(page, page, 10 + 3 * page, requests[page - 1]).replace("4410", f"44{page}0")) for page in range(1, 7)]
    assert first(replay(policy, tmp_path, steps)) is None


def test_a_users_short_correction_after_an_announcement_is_news(policy, tmp_path: Path) -> None:
    # (From the break-it review: corrections of two or three words are what users answer.)
    steps: list[dict[str, object]] = [
        step(None, output="Please reorder my last purchase.", agent="user"),
        step("list_orders", {"customer": "cus_88120", "limit": 3}, '{"orders": [{"id": "o_771", "item": "kettle"}, {"id": "o_768", "item": "blender"}]}'),
    ]
    for announcement, correction in [
        ("I'm preparing a reorder of your kettle now.", "no, the other order"),
        ("I'm preparing a reorder of your blender now.", "two of them please"),
        ("I'm preparing a reorder of two blenders now.", "ship to my work address"),
        ("I'm preparing a reorder of two blenders to your work address now.", "ok"),
    ]:
        steps += [step(None, output=announcement, agent="shop_bot"), step(None, output=correction, agent="user")]
    steps.append(step("create_order", {"customer": "cus_88120", "item": "blender", "quantity": 2, "address": "work"}, '{"id": "o_772", "status": "placed"}'))
    assert first(replay(policy, tmp_path, steps)) is None


def test_a_continuation_token_handed_back_again_on_a_command_line_is_paging_that_does_not_advance(policy, tmp_path: Path) -> None:
    from loopguard.detectors.near_duplicate import sends_cursor

    assert sends_cursor({"command": "aws s3api list-objects-v2 --bucket raw --continuation-token 'aYkbwfrKUfYfxlgY+Xkz'"}) is True
    assert sends_cursor({"command": "gcloud logging read 'severity>=ERROR' --page-token=CiAKGgoYK2xvZ3M"}) is True
    assert sends_cursor({"command": "gh api repos/acme/app/issues --token ghp_1a2b3c4d5e6f7a8b"}) is False  # (a credential)
    # A listing whose continuation token is handed back unchanged: the same page for the same
    # token, again and again, each page appended to a manifest between.
    token = "hDTYak6vXnTbkaagBoQliqYTUxcus"
    listing = {"command": f"aws s3api list-objects-v2 --bucket fleet-telemetry --prefix raw/2024/11/ --max-keys 1000 --continuation-token '{token}'"}
    page = json.dumps({"KeyCount": 1000, "IsTruncated": True, "NextContinuationToken": token, "first": "raw/2024/11/dev-000044/00.parquet"}, indent=2)
    steps = []
    for index in range(4):
        steps.append(step("bash", listing, page))
        steps.append(step("bash", {"command": "jq -r '.Contents[].Key' /tmp/page.json >> manifests/2024-11.keys && wc -l < manifests/2024-11.keys"}, str(1000 * (index + 1))))
    report = replay(policy, tmp_path, steps)
    # The third same page (step 4) is paging that does not advance.
    assert first(report) == (4, "stop")
    assert "no_progress/same_page" in signals_at(report, 4)


def test_an_empty_log_query_with_its_execution_stats_is_an_empty_answer() -> None:
    from loopguard.observations import observe

    loki = {"status": "success", "data": {"resultType": "streams", "result": [], "stats": {"summary": {"bytesProcessedPerSecond": 202419869, "totalLinesProcessed": 7438395, "execTime": 8.7}}}}
    assert observe(json.dumps(loki)).empty is True
    # A stats object is data when the answer is only it.
    assert observe(json.dumps({"status": "success", "stats": {"visits": 120, "bounce_rate": 0.41}})).empty is False


def test_a_page_clamped_past_the_end_is_a_page_already_read_whatever_headers_stamp_it(policy, tmp_path: Path) -> None:
    def page(number: int) -> str:
        shown = min(number, 3)
        rows = json.dumps({"data": [{"id": f"cus_{shown}{item:02d}"} for item in range(3)], "has_more": number < 3})
        return f"HTTP/1.1 200 OK\nDate: Sat, 01 Jun 2024 10:00:0{number} GMT\nRequest-Id: req_{number}Xk29aQ{number}\nX-Kong-Upstream-Latency: {40 + number}\n\n{rows}"

    # No field says where a page is; only Stripe's and Kong's headers stamp the pages past 3.
    steps = [step("http_get", {"url": f"https://api.example.com/v1/customers?page={number}"}, page(number)) for number in range(1, 6)]
    assert first(replay(policy, tmp_path, steps)) == (4, "replan")
