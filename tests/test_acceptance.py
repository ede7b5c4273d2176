"""The foundation issue's acceptance criteria, on the shared labelled data and tau-bench.

Uses the shipped default policy with no tool traits. The data lives outside the
repository (``../shared/data``); these tests are skipped only where it is absent.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from loopguard.decisions import GuardAction
from loopguard.policy import load_policy
from loopguard.traces import read_trace, replay_file, replay_run

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TAU = DATA / "tau-bench" / "gpt-4o-airline.json"

KINDS = REPO / "tests" / "fixtures" / "kinds"


def judgements(reports) -> dict[str, str]:
    """run id → how cases/README.md judges the run (ok, premature, late, missed, false_alarm)."""
    return {report.run_id: report.expected.judged for report in reports}


needs_data = pytest.mark.skipif(not DATA.exists(), reason="../shared/data is not next to this checkout")


@pytest.fixture(scope="module")
def policy():
    return load_policy("builtin:default")


@needs_data
@pytest.mark.parametrize("name", ["basic.json", "incidents.json"])
def test_every_labelled_case_is_handled(policy, name: str) -> None:
    judged = judgements(replay_file(policy, DATA / "cases" / name))
    assert judged == {run_id: "ok" for run_id in judged}
    assert len(judged) == {"basic.json": 7, "incidents.json": 12}[name]


def test_more_cases_of_each_kind_are_handled(policy) -> None:
    """Kinds the issue names beyond the shared cases: interleaved repeats, wrap-around
    paging, near-duplicates, re-reads, condensation loops, monologues, and healthy shapes."""
    reports = replay_file(policy, KINDS / "held_back_kinds.json")
    assert judgements(reports) == {
        "interleaved-repeat": "ok",
        "wrap-around-paging": "ok",
        "near-duplicate-rewording": "ok",
        "near-duplicate-nonce": "ok",
        "reread-ranges": "ok",
        "condensation-loop": "ok",
        "monologue": "ok",
        "healthy-fanout-with-empties": "ok",
        "healthy-edit-test-cycle": "ok",
        "healthy-supervisor": "ok",
        "healthy-distinct-records": "ok",
        "same-call-new-generated-id": "ok",
        "healthy-write-fanout-acknowledged": "ok",
        "healthy-scalar-answers": "ok",
        "reworded-search-same-data": "ok",
    }
    verdicts = {report.run_id: report.verdict.value for report in reports}
    # The same acknowledgement or bare answer from distinct calls is not even a warning.
    assert verdicts["healthy-write-fanout-acknowledged"] == verdicts["healthy-scalar-answers"] == "continue"


#: Runs of the blind sets that the default policy still misjudges, and why they are left.
BLIND_EXCEPTIONS = {
    # Paging backwards by a moving `latest` timestamp is not recognised as paging.
    "st-page-05-history": "missed",
    # The same empty check three times with no wait between is the rw03 shape; only a wait
    # or a sleep tells a poll from an agent that does not read its results.
    "hx05-ticket-thread-poll-for-reply": "false_alarm",
    # Two clicks that change nothing, with the same screenshot between: its writer would
    # accept the stop at step 4 as well.
    "browser-load-more-does-nothing": "premature",
    # A count reworded in SQL whose answer is one short number: too short to tell from the
    # many different calls that share a short answer.
    "sql-reworded-count-same-answer": "missed",
    # go_back returns the same page each time, and a blank salary before it is an empty
    # answer: a repeat with nothing new, though the scrape moves on.
    "long-browser-job-scrape": "false_alarm",
    # The same vulnerability lookup for one package version, empty each time, among repos:
    # the k2b shape (one call that keeps answering nothing among calls that do).
    "long-security-dependency-sweep": "false_alarm",
    # {"active": 1, "succeeded": 0, "failed": 0} three times with no wait: "failed" as a
    # key reads as a final state, so the job poll is no pending poll.
    "k8s-job-poll-identical-active": "false_alarm",
    # Round 17 (the kinds and their healthy look-alikes, written against the round-16
    # code: 11 of 26 stuck and 24 of 26 healthy runs judged right when written, 19 of 26 and
    # 26 of 26 now).
    # Guessed columns, each "does not exist" under another name, with the schema re-read
    # between: a not-found names what was asked, so each guess is another question until the
    # query made before is made again (step 13).
    "b17s-interleave-sql-region-column": "late",
    # Reworded searches whose answers are the same documents in another order each time: a
    # ranking is an answer (the same documents ranked otherwise for different questions are
    # healthy), so only the same order counts, and it comes back too seldom.
    "b17s-neardup-rag-rephrase": "missed",
    # The test run again after a condensation fails the same way; the call after it re-reads
    # a file: a replan one step before its writer's window (the first recovery lap's second call).
    "b17s-condense-dst-fix-relapse": "premature",
    # Tickets re-triaged after each summary: the updates are changes, and "no changes applied"
    # inside a ticket's reply is not read; the round is made again whole only at step 17.
    "b17s-condense-triage-summary-loses-cursor": "missed",
    # Promises sent to the customer through a chat tool, each worded anew: the replies are the
    # tool's acknowledgements, and the customer's complaints are new messages each time.
    "b17s-mono-chat-promises-no-action": "missed",
    # A circle of three agents whose second lap repeats the first: read when control comes
    # around the second time (as round 12's circles of four).
    "b17s-handoff-refund-circle": "late",
    # A pod Pending for an hour, polled with growing sleeps: a pending state is waited on up to
    # poll_patience (20) polls; the blocker was said by another call (describe), not the poll.
    "b17s-poll-gpu-pod-never-schedules": "missed",
    # Round 18 (the kinds and incident-report kinds, and their healthy look-alikes,
    # written against the round-17 code: 10 of 26 stuck and 24 of 26 healthy runs judged right
    # when written, 16 of 26 and 26 of 26 now).
    # A permanent failure asked for again after something new came between (a listing that
    # shows the right name, another site fetched): stopped at its second identical
    # occurrence, as the issue asks (no later than the call after an identical failure's
    # second time: tau-bench's task0-trial3 needs it); its writer counted one double-check.
    "b18s-k8s-secret-name-interleaved": "premature",
    "b18s-crew-paywalled-source-interleaved": "premature",
    # Three queries, each answered [(0,)], are one answer to three wordings: a replan at the
    # third; its writer saw the first three (status spellings) as a debugging pass.
    "b18s-sql-reworded-queries-zero-rows": "premature",
    # A second view inside ranges already read (70-130 after 1-80, 60-134 and 40-120): its
    # writer allowed one more.
    "b18s-coding-overlapping-rereads": "premature",
    # A snapshot at page=6, 7, 8 showing page 5's rows: the position it claims and a session
    # countdown change each time, so the page reads as new (and so does the click's reply).
    "b18s-browser-next-clamps-last-page": "missed",
    # The same export answers the same page after each merge into the warehouse: each merge
    # names a new batch file, so its "0 inserted, 0 updated, 200 unchanged" is another call's
    # first reply (news between the exports), not the same change made again.
    "b18s-crm-sync-cursor-stuck-same-page": "missed",
    # Each lap after a summary sends a reworded reply to the same thread again: it was caught
    # only while the reads of other threads (hex ids) counted as rewordings of one read.
    "b18s-email-condensed-resends-replies": "missed",
    # Each recovery lap after a summary rewords its searches and appends the row with a new
    # timestamp: only the browse is made again whole, and the growing line count reads as news.
    "b18s-research-condensed-duplicate-rows": "missed",
    # Each edit is a change not tried before, and the same failure after it is forgiven twice
    # (an edit-test loop trying fixes); the traceback's stale source lines are not read.
    "b18s-pytest-stale-site-packages": "late",
    # A generator-critic loop whose summaries, drafts and critiques a model words anew each
    # lap: only the fetch repeats, and a re-read between new results is how agents check.
    "b18s-research-verify-loop-burn": "missed",
    # Round 19 (the five held-back kinds, four runs each, and their healthy
    # look-alikes, written against this session's code: 5 of 20 stuck and 19 of 20 healthy
    # runs judged right when written, 8 of 20 and 19 of 20 after it, 8 of 20 and 20 of 20 now).
    # The agent's fabricated "reduced from 50 to 10" brings a figure not said before, which
    # counts as work between handoffs (round 20: a negotiation's offers must); the commander's
    # challenges and a harness's reminder then never close the same cycle twice.
    "b19s-oncall-unbacked-claims": "missed",
    # A 404 asked for again after other calls brought news: stopped at its second identical
    # occurrence, as the issue asks (see round 18's); its writer waited for the third.
    "b19s-iot-ota-missing-execution": "premature",
    "b19s-legal-phantom-citation": "premature",
    # The same worker looked up with a fresh as_of each time: a time bound is part of the
    # question, and each not-found names its own request, so the lookups count late.
    "b19s-hr-worker-id-transposed": "late",
    # Products the agent updated come back on later pages of a cursor sorted by last update:
    # each page mixes new ids and old ones, so no page repeats whole.
    "b19s-ecom-updatedat-cursor-wrap": "missed",
    # search_after with a stale sort value under a fresh point-in-time id on every call: each
    # request is another call, and its page reads as news.
    "b19s-siem-search-after-stale": "missed",
    # NCBI queries reworded with other field tags and the taxid for the name: the wordings that
    # share few words are other questions, and each reply's history token (webenv "MCID_...")
    # is new, so the same id list never reads as the same answer.
    "b19s-bio-entrez-reworded-queries": "missed",
    # Purchase orders recreated after each summary get 422s that name each order anew: read
    # when the round is made again the second time.
    "b19s-procure-condense-recreate-po": "late",
    # Imports and index builds redone whole after each summary: the third lap is seen at its
    # first redone change (step 18); the re-import before it (step 16) is a shell command not
    # known to write, and its timings read as a new answer.
    "b19s-gis-condense-reimport": "late",
    # Reports read again after each summary: a lap of reads alone is a redo at its third
    # redone read (step 16), one step late (two re-reads are an agent finding its bearings).
    "b19s-lms-read-condense-cycle": "late",
    # The agent's messages come on handoff steps (with a caller): such a step is read as control
    # passing, its text not as the agent's message.
    "b19s-payments-apology-loop": "missed",
    # Ten plans and status lines with no nudge between: read as a monologue at its fourth
    # restatement.
    "b19s-dbt-plan-restatement": "late",
    # Round 20 (the five held-back kinds, four runs each, and their healthy
    # look-alikes, written against the round-19 code: 8 of 20 stuck and 19 of 20 healthy runs
    # judged right when written, 14 of 20 and 20 of 20 now).
    # A pod's crash answered by a restart each lap: the restart is a shell command that writes
    # nothing the guard can see, and each lap's pod names and restart counts read as news, so
    # only the fourth lap's identical reads stop it.
    "b20s-interleave-k8s-restart-missing-secret-key": "late",
    # Rows added to one tab while another tab's total never moves: a read that gives the same
    # answer after each new write is how agents verify writes (a health check after each deploy
    # step), so only the rows written again (step 12) make it stale.
    "b20s-interleave-sheet-edits-never-move-summary": "late",
    # Empty pages with has_more true and a fresh cursor: the envelope's pin_count reads as data,
    # and a cursor followed from an empty page is how event streams are polled.
    "b20s-wrap-slack-history-empty-pages-live-cursor": "missed",
    # A browser pager whose Next link leads back to page 1: the first page came from
    # browser_navigate, and the first click followed no earlier click, so the wrap shows only
    # when the second page comes round again.
    "b20s-wrap-portal-next-link-loops-crm-dupes": "late",
    # Reworded case-law searches whose answers are the same related cases, shuffled, with zero
    # matches counted: read as the same answer only once the order repeats.
    "b20s-neardup-reworded-search-phantom-citation": "late",
    # Two agents deferring to each other: the second closed cycle of handoffs (step 6) comes one
    # step before its writer's window.
    "b20s-monologue-writer-reviewer-polite-deadlock": "premature",
    # Round 21 (the five held-back kinds, four runs each, and their healthy look-alikes,
    # written against the round-20 code: 10 of 20 stuck and 20 of 20 healthy runs judged right
    # when written, 14 of 20 and 20 of 20 now).
    # A test that fails the same way after each new edit, between re-reads of an unchanged
    # file: the second read of the file with the failure repeated is a replan, two steps early.
    "b21s-go-ratelimit-config-reread": "premature",
    # A browser's Next link that wraps to page 1: each snapshot's element refs and URL differ.
    "b21s-browser-jobboard-next-wraps": "missed",
    # HEAD requests with a fresh cache buster each time: near-duplicates, warned only, since
    # the responses' ages and dates move.
    "b21s-cdn-cachebuster-origin-stale": "missed",
    # Labels and drafts made again after one summary: the first lap redone after a condensation
    # counts as the agent finding its bearings, and the run ends before the third lap.
    "b21s-gmail-triage-summary-duplicate-drafts": "missed",
    # A theory restated under the user's requests to fetch the lines: each request is news.
    "b21s-ap-invoice-rounding-reexplained": "missed",
    # A research lap redone after each summary: seen in the third lap (step 17), a lap late.
    "b21s-research-summary-memory-relap": "late",
    # Round 22 (the five held-back kinds and their healthy look-alikes, written against this
    # session's code midway: 6 of 20 stuck and 19 of 20 healthy runs judged right by the
    # session-start code, 10 of 20 and 20 of 20 now).
    # A pair of reads (pods, previous logs) between other reads: restart counts, ages and log
    # times move, so the answers read as news (warned only).
    "b22s-k8s-crashloop-pods-logs-cycle": "missed",
    # The same validation alert after each submit, with fields typed between (changes): the
    # submit clicks' refs differ each time, so they are other calls (warned only).
    "b22s-permit-portal-submit-without-parcel": "missed",
    # A last bundle whose next link points to offset 0: each page read again is staged again
    # between (a change), so the re-reads are only warned.
    "b22s-fhir-next-link-wraps": "missed",
    # A browser's Next link back to page 1, each page's items appended to a sheet between.
    "b22s-wholesale-catalog-next-wraps": "missed",
    # Reworded searches answered with the same papers shuffled (as b20s-neardup-reworded-...).
    "b22s-s2-reworded-dti-queries": "missed",
    # A permanent 404 retried with the id reformatted each time: each is another target.
    "b22s-parcel-404-nonce-retries": "missed",
    # Reworded LogQL queries with empty answers: each query reads as another question.
    "b22s-loki-timeout-query-variants": "missed",
    # The build redone after each compaction: a replan at its third failure (step 22).
    "b22s-claude-code-compaction-dbt-redo": "late",
    # A translation lap redone after each truncation: the first lap redone is recovery, so the
    # stop comes in the third (step 18).
    "b22s-cline-truncation-retranslate-de": "late",
    # init, validate and plan redone after each summary: their answers move (timings, a
    # refreshed state), so the laps read as news.
    "b22s-terraform-summary-replan-cycle": "missed",
    # Round 16 (the five held-back kinds and their healthy look-alikes, written against
    # the round-15 code: 14 of 26 stuck and 21 of 26 healthy runs judged right when written,
    # 23 of 26 and 26 of 26 now).
    # A re-read written otherwise between lookups: the variants (a time in another zone, an
    # added timeout argument, a word's case) are other signatures, so the laps between them
    # are not compared; case is kept, since "open" and "OPEN" may be two values of an enum.
    "b16s-calendar-room-freebusy-reread": "missed",
    "b16s-browser-checkout-summary-reread": "late",
    "b16s-treasury-balance-enum-case": "late",
    # Round 14 (the kinds in new domains, a third of them subtle, and healthy
    # look-alikes, written against the round-13 code: 15 of 24 stuck and 25 of 26 healthy runs
    # judged right when written, 17 of 24 and 25 of 26 now).
    # Pages past a stated total ("startIndex": 31 of "totalResults": "23") with no list at all:
    # totals are too often someone else's (a cart's total_items) or estimates to overrule a page.
    "b14s-search-cse-paging-past-total": "missed",
    # A DAG re-triggered, its failed task's log read and re-triggered again: each trigger
    # mints a new run id and a trigger is an action, so the reads between may change.
    "b14s-dataeng-airflow-retrigger-cycle": "missed",
    # A circle of four agents: read when control comes around the second time (as round 12's).
    "b14s-l10n-crew-four-agent-circle": "late",
    # A student written as an agent ("student", not "user") who says "next" each time: its
    # messages read as a monologue.
    "b14h-22-ode-tutor-next-next": "false_alarm",
    # Round 13 (all the kinds again, written against the round-12 code: 10 of 20
    # stuck runs judged right when written, 24 of 24 healthy; 13 of 20 now).
    # A circle through a status read that stays on HOLD: a pending state between handoffs
    # reads as a poll, which is work (a supervisor checking a running job through an agent).
    "b13s-port-customs-exam-handoff-circle": "missed",
    # A circle of delegate_task(to=...) calls: a delegate tool's result is the delegate's work
    # (a writer's draft), so its receipts here read as work done.
    "b13s-vet-refill-four-agent-circle": "missed",
    # A 422 span error retried with cosmetic changes: FastAPI's detail shape says nothing of
    # whether retrying helps, so it is read as deterministic, one step after the window.
    "b13s-mining-timeseries-422-span": "late",
    # An OAI-PMH harvest whose empty pages keep handing out resumption tokens past the stated
    # list size: a cursor followed from empty pages is also how event streams are polled.
    "b13s-library-oai-token-never-ends": "missed",
    # Re-reads after a condensation: one lap after a summary is a recovery in some runs and a
    # loop in this one; only the summaries' content tells which (kept or dropped).
    "b13s-satellite-memory-summary-redo": "premature",
    # The same paid call whose reply differs in a base-32 request id and the balance it
    # charged: a number that changes reads as new data.
    "b13s-agritech-paid-et-forecast-burn": "missed",
    # Round 12 (the issue's kinds, hard variants, and healthy runs that look like round 11's
    # kinds, written against this session's round-11 code):
    # A feeder's status re-read every few calls among other reads, the same but for its
    # request id and times: re-reading between other reads is how agents check.
    "b12s-grid-feeder-status-recheck": "missed",
    # Pods re-listed among describes and events, the same ImagePullBackOff each time: read at
    # the fourth listing, one step after the window.
    "b12s-k8s-imagepull-pods-recheck": "late",
    # Trigger, log, query in a cycle: each trigger mints a new run id, so no call repeats (as
    # b14s-dataeng-airflow-retrigger-cycle).
    "b12s-airflow-retrigger-cycle": "missed",
    # The same flight search with a fresh client reference: the replies are over 2 KB and
    # differ in their tails (offer ids), which are compared exactly.
    "b12s-flight-search-fresh-client-ref": "missed",
    # A query whose filter lists are reordered and respelled each time: lists are compared in
    # order, so each call is another query.
    "b12s-clinvar-reordered-filters": "missed",
    # Handoff circles of four agents: read when control comes around the second time; their
    # writers put the window at the first repeated handoff.
    "b12s-claims-four-agent-transfer-circle": "late",
    "b12s-calendar-four-agent-handoff-circle": "late",
    # A 422 retried with a BIC written with and without its branch code (COBADEFFXXX and
    # COBADEFF): read as another bank until the third alike.
    "b12s-payout-iban-checksum-reformat": "late",
    # A plan restated in paraphrase with think calls between, whose restatements announce
    # nothing ("Plan recap: 1) roster, 2) ..."): sections of a report share their topic's
    # nouns as much, so words alone cannot tell them apart.
    "b12s-lms-plan-think-monologue": "missed",
    # Round 11 (the kinds and healthy look-alikes in new domains, written against the
    # round-10 code):
    # An export poll stuck at 37% with its heartbeat frozen: polls with waits between are
    # healthy for 20 identical answers; the job's own estimate and heartbeat are not read.
    "b11s-export-poll-stalled-heartbeat": "missed",
    # A migration retried with growing sleeps on "connection refused": retryable, and each
    # command differs in its sleep; read at the third identical pg_isready failure.
    "b11s-alembic-connection-refused-backoff": "late",
    # An LLM regenerating a tweet that a counter rejects each time: every draft and count is
    # new text; only "valid": false repeats.
    "b11s-llm-tweet-regenerate-over-limit": "missed",
    # Round 10 (all the kinds, written after the round-9 fixes):
    # The identical failing query a second time, one step before the window (the rule).
    "b10s-sql-dag-listtables-3cycle": "premature",
    # A 403 retried with another value-input option and the range written three ways
    # (Sheet1!A1:F4, 'Sheet1'!A1:F4, A1:F4): read as writes of other things.
    "b10s-sheets-403-range-variants": "missed",
    # Round 9 (adversarial: healthy runs that look like round 8's kinds, and variations of them):
    # Page numbers past the last that the API answers with earlier pages, with a map and an
    # "unchanged" upsert between: caught at the third wrapped page.
    "b9s-hr-page-number-wraps": "late",
    # A 504 is retryable: retries with fresh idempotency keys stay healthy until the second
    # alike timeout after news; the duplicate charges are only in another tool's answer.
    "b9s-invoice-charge-timeout-new-key": "late",
    # The merge answers "queued" (a pending state, no failure), so the bounce reads as polling
    # until the check fails the same way again.
    "b9s-pr-merge-queue-bounce": "late",
    # A fresh scroll_id with each empty batch: as round 7's cursor pages past the end.
    "b9s-log-scroll-empty-fresh-ids": "missed",
    # A pause request answered "pending" each time, then overridden: each answer names the
    # advancing epoch, so every answer is new.
    "b9s-train-job-pause-overridden": "missed",
    # kubectl get/describe with other flags each time (-n / --namespace, -o yaml / json): the
    # commands' words differ both ways, so they read as other calls.
    "b9s-k8s-secret-forbidden-flags": "missed",
    # Round 8 (the kinds again, varied domains, written against the round-7 code):
    # An identical permanent failure a second time is intervened at once, as the issue asks
    # (no later than the following call); the writers' windows start later.
    "b8s-support-order-404-interleaved": "premature",
    "b8s-condense-reread-coding": "premature",
    # The second identical pull failure after a stash and pop that changed nothing, with the
    # stash answering what it answered before: a replan one step before the window.
    "b8s-git-pull-stash-pop-cycle": "premature",
    # Round 7 (coding loops, paging and long polls, written against the round-6 fixes):
    # A redelivered message with a new receipt handle and receive count each time: new text.
    "b7-stuck-sqs-message-never-deleted": "missed",
    # The same record read again at a fixed offset between inserts: caught one step late.
    "b7-stuck-kafka-fixed-offset-reconsume": "late",
    # An ignored page parameter (pg=) whose pages differ only in the echoed URL.
    "b7-stuck-page-param-ignored": "missed",
    # Round 6 (paging and token-following, written after the cursor work):
    # A client-side pager's "Next" click: refs renumbered on each load are set aside, but the
    # first page came from browser_navigate and the first click followed no click, so the
    # wrap shows only when the second page comes round (a replan at step 6; the window closes at 5).
    # (Taking a ref beside an element's description as a handle caught it in window, but made
    # "Load more" and "Add to cart" clicks that advance read as one call: tried in round 21, reverted.)
    "b6-stuck-wrap-browser-next-button-carousel": "late",
    # Paging backwards by a moving `latest` timestamp (as st-page-05).
    "b6-stuck-pastend-slack-latest-before-channel-created": "missed",
    # A1-notation ranges (Invoices!A77:F101) are no ranges, and a reply without `values` is not empty.
    "b6-stuck-pastend-sheets-ranges": "missed",
    # The same records with a new iterator, lag and request id in each reply: new text each time.
    "b6-stuck-samecursor-kinesis-stale-iterator": "missed",
    # Reference chains that cycle back with a fresh timing line, cookie or snapshot in each
    # reply: the outputs differ, so the cycle reads as progress.
    "b6-stuck-linked-dns-cname-loop": "missed",
    "b6-stuck-linked-browser-next-article-cycle": "missed",
    # A log line "status=404" reads as a failed result, which is not stale: one step late.
    "b6-stuck-reread-sed-line-windows": "late",
    # Time bounds are filters by design (start_time), and --tail=N or a "bytes=A-B" header
    # inside a command or a string is not read as a range.
    "b6-stuck-reread-journalctl-shifting-since": "missed",
    "b6-stuck-reread-kubectl-logs-tail-variants": "missed",
    "b6-stuck-reread-s3-byte-range-shifting": "missed",
}


@pytest.mark.parametrize("label", ["stuck", "healthy"])
def test_blind_cases_of_each_kind(policy, label: str) -> None:
    """Labelled runs written for this project by people who did not read the detectors
    (606 stuck, 672 healthy, written round after round), judged as cases/README.md judges."""
    judged = judgements(replay_file(policy, KINDS / f"blind_{label}.json"))
    assert len(judged) == {"stuck": 606, "healthy": 672}[label]
    assert {run_id: value for run_id, value in judged.items() if value != "ok"} == {
        run_id: value for run_id, value in BLIND_EXCEPTIONS.items() if run_id in judged
    }


def test_review_cases(policy) -> None:
    """Runs a break-it reviewer wrote against this session's detector changes."""
    assert judgements(replay_file(policy, KINDS / "review_cases.json")) == {
        "adk-hub-and-spoke": "ok",
        "writer-critic-no-tools": "ok",
        "poll-running-with-waits": "ok",
        "poll-running-no-waits": "ok",
        "slack-thread-fanout": "ok",
        "server-boot-poll": "ok",
        "ci-poll-0-failed": "ok",
        "bash-c-quoted-sleep-poll": "ok",
        "export-wait_minutes": "ok",
        "export-sleep_minutes": "ok",
        # A tool named wait_time may as well report a wait time: no wait is inferred from it.
        "export-wait_time": "false_alarm",
        "notion-empty-rewordings": "ok",
        # The second break-it review (round 8's changes): healthy fan-out, polls and time windows
        # that a first version stopped, and a wrap whose pages also carry next_offset.
        "status-poll-of-a-commit": "ok",
        "fetch-three-sites-403": "ok",
        "import-rows-invalid-email": "ok",
        "device-fanout-by-uuid": "ok",
        "distinct-searches-page-1": "ok",
        "hourly-metric-windows": "ok",
        "offsets-wrap-with-next-offset": "ok",
        # The third break-it review: fan-out, items with their own positions, long pages, records
        # named like request ids, writes named after what they write; cosmetic retries, checks
        # between unrelated edits, and offsets past 10**9.
        "kafka-messages-with-their-offsets": "ok",
        "pdf-hits-with-their-pages": "ok",
        "html-pages-longer-than-2kb": "ok",
        "approve-five-leave-requests": "ok",
        "ssh-to-three-hosts-denied": "ok",
        "three-build-logs-not-found": "ok",
        "three-daily-reports-forbidden": "ok",
        "three-mail-threads-forbidden": "ok",
        "scrape-toggles-options-403": "ok",
        "fetch-with-other-user-agents-403": "ok",
        "health-checks-between-notes": "ok",
        "read-past-eof-at-large-offsets": "ok",
        "append-log-lines": "ok",
        # A quick review of round 10's changes: a supervisor whose writer and critic answer in
        # messages, and a queue consumer whose tasks differ only in base-62 ids.
        "supervisor-writer-critic-rounds": "ok",
        "queue-consumer-with-request-ids": "ok",
        # The break-it review of round 11's changes: fan-out that gets one answer (a config on
        # each host, health checks, different tasks acknowledged alike), values followed from
        # last pages that are references, a wide table's pages, tests named after errors;
        # rewordings echoed in lowercase or URL-encoded or scored by distance, and Jira's and
        # Salesforce's last pages paged past.
        "ssh-config-same-on-each-host": "ok",
        "health-fanout-same-reply": "ok",
        "delegate-different-tasks-same-ack": "ok",
        "notion-tree-walk-last-pages": "ok",
        "graphql-nested-has-next-false": "ok",
        "bigquery-wide-schema-pages": "ok",
        "tdd-test-named-not-found": "ok",
        "tdd-test-named-invalid-value": "ok",
        "kb-rewordings-echo-lowercased": "ok",
        "kb-rewordings-vector-distance": "ok",
        "kb-rewordings-url-encoded-echo": "ok",
        "kb-rewordings-with-took": "ok",
        "kb-rewordings-with-request-ids": "ok",
        "jira-islast-cursor-past-end": "ok",
        "salesforce-done-cursor-past-end": "ok",
        # The break-it review of the later changes: rate limits whose text mentions a quota,
        # a metric's latency falling, pages whose items sit between head and end, searches by
        # day whose items differ only in dates, report sections and tutor steps in messages,
        # files named by their hashes; a no-op edit between identical test failures, and
        # rewordings whose answers all agree but the first.
        "gemini-free-tier-rpm-429": "ok",
        "firecrawl-rpm-429": "ok",
        "per-minute-quota-429": "ok",
        "latency-recovery-compact": "ok",
        "noop-edit-test-loop": "ok",
        "archive-pages-short-items": "ok",
        "reworded-search-same-answer-after-first-differs": "ok",
        "weekly-calendar-by-day": "ok",
        "flights-by-day": "ok",
        "report-sections": "ok",
        "tutor-steps": "ok",
        "release-notes-think-between": "ok",
        "sha256-named-files": "ok",
        # The break-it review of the final fixes: identities added by single-letter options,
        # spent allowances and rate limits, minutes as units, dates and server fields in
        # answers, announcements that share only "I'll now", an item between head and end.
        "flags-auth-header-after-401s": "ok",
        "flags-curl-u-after-401s": "ok",
        "flags-psql-U-after-auth-failures": "ok",
        "flags-ssh-i-after-denied": "ok",
        "quota-spent-says-retry-after-upgrade": "ok",
        "quota-minutes-exhausted-retry-after-period": "ok",
        "quota-daily-403-now-retryable": "ok",
        "quota-429-try-again-later": "ok",
        "quota-429-please-wait": "ok",
        "quota-exhausted-per-minute-deterministic": "ok",
        "retry-in-word-in-permanent-error": "ok",
        "metric-elapsed-min-failure": "ok",
        "metric-elapsed-min-poll": "ok",
        "answers-server-processed-fanout": "ok",
        "answers-requested-by-fanout": "ok",
        "answers-mongo-ids-fanout": "ok",
        "answers-created-at-items": "ok",
        "r13-answers-server-processed-fanout": "ok",
        "r13-answers-requested-by-fanout": "ok",
        "mono-announce-words-only": "ok",
        "mono-announce-letme": "ok",
        "pages-item-in-uncompared-gap": "ok",
        # The review of rounds 13 and 14: healthy delegations, SQL queues and time windows,
        # messages that open with -ing words, and slow queries paged past the end.
        "b14-delegate-writer-critic": "ok",
        "b14-delegate-tickets-to-people": "ok",
        "b14-sql-queue-drain-updates": "ok",
        "b14-sql-limit-shrunk-after-truncation": "ok",
        "b14-sql-slow-timing-past-end": "ok",
        "b14-sections-looking-at": "ok",
        "b14-messages-meeting-with": "ok",
        "b14-status-now-passing": "ok",
        "b14-validation-text-shortened": "ok",
        "b14-epoch-window-narrowed": "ok",
        "b14-validation-after-payment-capture": "ok",
        "b14-event-backfill-client-ts": "ok",
        "b14-supervisor-polls-running-job": "ok",
        "b14-client-timestamp-header-retries": "ok",
        # Round 17's break-it review.
        "r17-h-same-question-twice-4-checks": "ok",
        "r17-h-log-sweep-services": "ok",
        "r17-h-family-members-not-customers": "ok",
        "r17-h-kb-gap-analysis": "ok",
        "r17-h-issue-dedupe": "ok",
        "r17-h-tutor-continue": "ok",
        "r17-h-cooking-steps-done": "ok",
        "r17-h-port-in-use-kill-retry": "ok",
        "r17-h-hr-three-questions-same-docs": "ok",
        "r17-h-go-test-fix-loop": "ok",
        "r17-h-jest-fix-loop": "ok",
        "r17-h-cargo-test-fix-loop": "ok",
        "r17-s-2fa-spellings": "ok",
        "r17-s-german-2fa-rewordings": "ok",
        "r17-h-ssh-short-hosts": "ok",
        "r17-h-openssl-short-hosts": "ok",
        "r17-s-nudge-counter": "ok",
        # Round 17's second break-it review.
        "r17b-h-booking-numeric-answers": "ok",
        "r17b-h-sql-hypotheses-same-rows": "ok",
        "r17b-h-catalog-rankings-same-items": "ok",
        "r17b-h-parental-leave-three-questions": "ok",
        "r17b-h-parental-leave-four-questions": "ok",
        "r17b-h-oven-conversions": "ok",
        "r17b-h-homework-linear-equations": "ok",
        "r17b-h-tutor-great-prefix": "ok",
        "r17b-h-poetry-markdown-steps": "ok",
        "r17b-h-flashcards-next": "ok",
        "r17b-h-drafts-yes": "ok",
        "r17b-h-drafts-ok": "ok",
        "r17b-h-k8s-namespace-terminating-sleep": "ok",
        "r17b-h-contacts-name-company": "ok",
        # One verb swapped for a synonym each time: the same question with another verb.
        "r17b-s-2fa-verb-swaps": "ok",
        "r17b-s-cancel-subscription-verbs": "ok",
        # An ending swapped for a synonym ("refund for double charge / duplicate payment")
        # reads as another item of a template ("crash when uploading avatar / exporting pdf").
        "r17b-s-refund-suffix-swaps": "missed",
        "r17b-s-nudge-with-think-tool": "ok",
        "r17b-s-asks-permission-despite-nudges": "ok",
        # Round 18's break-it review (18 runs against this session's changes: 1 judged right
        # as written, 13 now).
        "br18-h-shoe-sizes-user-listed": "ok",
        "br18-h-writer-with-tools-continue": "ok",
        "br18-h-tutor-with-calculator-next": "ok",
        "br18-h-rollout-kubectl-out-of-wording": "ok",
        "br18-h-csv-import-rows-without-email": "ok",
        "br18-h-api-names-next-missing-field": "ok",
        "br18-h-label-batch-same-buttons": "ok",
        "br18-s-429-usage-counter-climbs": "ok",
        "br18-s-quota-percent-rises": "ok",
        "br18-s-flapping-healthcheck-rerun": "ok",
        "br18-s-approval-asked-other-phrasings": "ok",
        "br18-s-mcp-zod-required": "ok",
        "br18-s-cache-buster-t-param": "ok",
        # An audit of which actions have no help article ("how do I pause / downgrade /
        # transfer my subscription"), none named by the user: one question asked with another
        # verb each time reads as a rewording.
        "br18-h-helpcenter-gap-audit-verbs": "false_alarm",
        # Two builds benchmarked by turns, as the user asked: the elapsed time, all they report,
        # is a time taken and normalised away, so the rounds read as one answer repeated.
        "br18-h-ab-benchmark-alternation": "false_alarm",
        # The user's own synonyms ("cancel it, stop it, end it") are items the user gave.
        "br18-s-user-synonyms-as-items": "missed",
        # Eight wordings that share no word: each is kept but never counted (words alone cannot
        # tell synonyms from other questions).
        "br18-s-synonym-rotation-no-shared-words": "missed",
        # Nudges answered by a think() note and a finding each time: no announcement and no
        # permission asked, so nothing reads as a plan restated.
        "br18-s-think-and-findings-under-nudge": "missed",
        # Round 19's break-it review (14 runs against the latest changes: none right as
        # written, 9 now).
        "br19-h-ratelimit-value-is-the-data": "ok",
        "br19-h-youtube-v-param-is-the-video": "ok",
        "br19-h-prometheus-time-bisect": "ok",
        "br19-h-wiki-pageid-comments-fanout": "ok",
        "br19-h-notfound-pages-generic-last-line": "ok",
        "br19-h-dq-zero-counts-are-answers": "ok",
        "br19-h-posture-checklist-boolean-filters": "ok",
        "br19-h-ga4-distinct-questions-cosmetic-by-rule": "ok",
        "br19-h-order-search-prefixed-hex-ids": "ok",
        "br19-h-order-uuid-refund-fanout": "ok",
        # The property id written two ways ("properties/312448071", "312448071") reads as
        # another target, and the same report sent through runReport and batchRunReports
        # counts per tool: the resubmissions never reach four in a row.
        "br19-s-ga4-resubmit-property-id-reformatted": "missed",
        "br19-s-ga4-resubmit-alternating-run-and-batch": "missed",
        "br19-s-shopify-refetch-first-page-call-limit-header": "ok",
        "br19-s-shopify-graphql-refetch-throttle-status": "ok",
        # Round 20's break-it review (13 runs against this session's changes: 8 of them judged
        # worse than before the session as written; 10 judged right now, none worse than before).
        "br20-h-mysql-ddl-test-schema": "ok",
        "br20-h-dq-null-aggregate-checklist": "ok",
        "br20-h-langchain-sql-dlq-drain": "ok",
        "br20-h-runbook-provisioning-sections": "ok",
        "br20-h-gmail-invoice-label-audit": "ok",
        "br20-h-bolt-price-negotiation": "ok",
        "br20-s-handoff-bounce-timestamped": "ok",
        "br20-s-handoff-bounce-plain": "ok",
        "br20-s-swe-plan-restated-with-question": "ok",
        "br20-s-sandbox-recreate-importerror": "ok",
        # kubectl apply answering "configured" for one object and "unchanged" for another now
        # counts as a change, but each apply's later failure is deterministic and retried: a
        # replan at step 10 (older than this session).
        "br20-h-kubectl-apply-partial-unchanged": "false_alarm",
        # A negotiation of headlines with no figures: words are not read as offers.
        "br20-h-copy-headline-handoff": "false_alarm",
        # Templates recreated with fresh ids that the agent's own answers name: each is another
        # item, and the failures name each anew.
        "br20-s-sendgrid-recreate-no-list": "missed",
        # Round 21's break-it review (laps after condensations, cluster writes, the permanent
        # failure's grace): 10 of 18 right as written, 13 now.
        "br21-h1-reread-two-static-files-each-lap": "ok",
        "br21-h1b-reread-static-files-user-summaries": "ok",
        # Runbook and policy re-read each hour between new alerts, no condensation: two
        # unchanged reads in a row, the runbook's third in 12 calls (older than this session).
        "br21-h2-hourly-report-summary-of-events": "false_alarm",
        # The same email sent again each time the user asks: a cycle of two with the same
        # answers (older than this session).
        "br21-h3-user-asks-redo-with-summary-wording": "false_alarm",
        "br21-h3b-summary-of-requirements": "false_alarm",
        "br21-h4-kubectl-read-polling-verb-names": "ok",
        "br21-h4b-kubectl-readonly-diagnosis": "ok",
        "br21-s1-401-with-cosmetic-changes": "ok",
        "br21-s1b-auth-failure-with-reads": "ok",
        "br21-s1c-control-auth-failure-reads-prod": "ok",
        "br21-s2-condensation-loop-reworded": "ok",
        "br21-s3-codex-compaction-user-role": "ok",
        "br21-s4-chat-user-summary-loop": "ok",
        "br21-s5-chat-system-summary-loop": "ok",
        "br21-s6-summary-after-long-preamble": "ok",
        # Thirty harness notes in a row read as the harness's monologue (older than this session).
        "br21-c1-odd-messages": "false_alarm",
        "br21-h5-sync-each-lap-then-new-work": "ok",
        "br21-h6-user-requests-recheck-summary-wording": "false_alarm",
        # Round 21's second break-it review (user follow-ups to announced work; 29 of 45 right
        # before the round, 34 now, none worse).
        "br22-h1-order-corrections": "ok",
        "br22-h2-restaurant-corrections": "ok",
        "br22-h3-wrong-order": "ok",
        "br22-h4-tutor-reviews": "ok",
        "br22-h5-tutor-run-through": "ok",
        "br22-h6-crew-supervisor": "ok",
        "br22-h7-announce-ok-act": "ok",
        "br22-h8-chat-named-tools": "ok",
        "br22-h9-calendar-negotiation": "ok",
        "br22-h10-return-form-questions": "ok",
        "br22-h11-supervisor-revisions": "ok",
        "br22-h12-journal-reflection-tool": "ok",
        "br22-h13-announce-ok-then-act-long": "ok",
        # Follow-ups with words the announcements never said ("outage", "refund") are news.
        "br22-s1-long-followups": "missed",
        # Announcements are read in English only.
        "br22-s2-spanish": "missed",
        "br22-s3-english-agent-foreign-user": "missed",
        # "One moment while ...", "is being looked into": no first-person announcement.
        "br22-s4-other-wording": "missed",
        "br22-s5-booking-passive": "missed",
        # A 401 fixed by updating a secret the failing curl does not name: no grace (stopped at
        # step 7; the pre-round code stopped at step 4).
        "br22-h14-secret-rotation-restart": "false_alarm",
        "br22-s8-steps-summary-every-call": "ok",
        "br22-s6-chat-format-telecom": "ok",
        "br22-s7-chat-trim-note-every-turn": "ok",
        "br22-s7b-chat-no-notes-control": "ok",
        # Probes of odd outputs whose announcements come from an agent that made no real tool
        # call, or are empty: no announcement chain.
        "br22-c0-user-output-NoneType": "missed",
        "br22-c1-user-output-int": "ok",
        "br22-c2-user-output-list": "ok",
        "br22-c3-user-output-dict": "ok",
        "br22-c4-user-output-str": "ok",
        "br22-c5-user-output-str": "ok",
        "br22-c6-user-output-str": "ok",
        "br22-c7-user-output-str": "ok",
        "br22-c8-user-output-bool": "ok",
        "br22-c9-user-output-float": "ok",
        "br22-d0-agent-output-NoneType": "missed",
        "br22-d1-agent-output-int": "missed",
        "br22-d2-agent-output-list": "ok",
        "br22-d3-agent-output-dict": "ok",
        "br22-d4-agent-output-str": "missed",
        "br22-d5-agent-output-str": "missed",
        "br22-e0-system-content": "ok",
        "br22-e1-system-content": "ok",
        "br22-e2-system-content": "ok",
        "br22-e3-system-content": "ok",
        "br22-e4-system-content": "ok",
        "br22-e5-system-content": "ok",
        # Round 21's third break-it review (response stamps, stamping headers in pages, element
        # refs, command-line cursors): 14 of 22 right on the session-start code, 14 now (one
        # healthy run worse, the audit pages; the element-ref change that made three others
        # worse was reverted).
        "br23-monitor-checked-at-watch-window": "ok",
        "br23-wait-for-checked-at-to-advance": "ok",
        "br23-pegged-fx-as-of-dates": "ok",
        "br23-feed-refresh-fetched-at-verify": "ok",
        # A status re-read between order lookups, warned only (the control with checked_at too).
        "br23-refund-recheck-last-checked": "missed",
        "br23-refund-recheck-check-time": "missed",
        "br23-refund-recheck-as-of-time": "missed",
        "br23-refund-recheck-checked-at-CONTROL": "missed",
        "br23-two-service-watch-checked-at": "ok",
        # Two services checked in turn, no wait between, only checked_at moving (older than this round).
        "br23-two-service-watch-checked-at-nosleep": "false_alarm",
        "br23-browser-load-more-minimal-output": "ok",
        "br23-browser-five-checkboxes-same-description": "ok",
        "br23-browser-add-to-cart-three-products": "ok",
        "br23-browser-next-click-then-extract": "ok",
        # Older Playwright refs (s2e45) and a Next click whose reply shows no page.
        "br23-browser-carousel-legacy-refs": "missed",
        "br23-http-event-feed-long-poll": "ok",
        # Audit pages whose rows have no id or time: with their stamping headers and positions set
        # aside they are one page (borderline: real audit rows carry both).
        "br23-http-audit-pages-repetitive-rows": "false_alarm",
        # (Stripe's Request-Id and Kong's latency headers are stamping headers since this review.)
        "br23-http-clamp-stripe-style-headers": "ok",
        "br23-cli-private-token-poll": "ok",
        "br23-cli-two-buckets-interleaved-tokens": "ok",
        # --starting-after is Stripe's cursor option since this review: the third page for the
        # same cursor is stopped (step 11), two steps late.
        "br23-cli-stripe-starting-after-cycle": "late",
        "br23-cli-gcloud-page-token-cycle": "ok",
    }


@needs_data
def test_specific_first_interventions(policy) -> None:
    reports = {report.run_id: report for report in replay_file(policy, DATA / "cases" / "incidents.json")}
    first = {run_id: (r.first_intervention.step, r.first_intervention.action.value) for run_id, r in reports.items() if r.first_intervention}
    assert first["rw11-openhands-invalid-api-key-loop"] == (1, "stop")  # a permanent 401 repeated
    assert first["rw04-claude-code-identical-failing-command"] == (1, "replan")  # deterministic, nothing new between
    assert first["rw07-openhands-build-install-pingpong"] == (3, "stop")  # not at 2: the install in between was new
    assert first["rw18-growing-page-empty-results"] == (4, "replan")
    assert first["rw13-adk-transfer-pingpong"] == (3, "stop")
    assert "rh03-job-status-polling-identical-results" not in first


def _identical_failure_twice(run: dict) -> int | None:
    """Index (among tool calls) of the call whose identical call + identical error is the second."""
    results = {m["tool_call_id"]: m["content"] for m in run["traj"] if m["role"] == "tool"}
    seen: Counter = Counter()
    index = -1
    for message in run["traj"]:
        for call in message.get("tool_calls") or []:
            index += 1
            output = results.get(call["id"], "")
            if not output.startswith("Error"):
                continue
            key = (call["function"]["name"], json.dumps(json.loads(call["function"]["arguments"]), sort_keys=True), output)
            seen[key] += 1
            if seen[key] == 2:
                return index
    return None


@needs_data
def test_tau_bench_successful_runs_are_left_alone_and_repeated_failures_caught(policy) -> None:
    raw = {f"task{run['task_id']}-trial{run['trial']}": run for run in json.loads(TAU.read_text())}
    reports = [replay_run(policy, run) for run in read_trace(TAU)]
    assert len(reports) == 200 and sum(report.tool_calls for report in reports) == 1164
    assert all(report.error is None for report in reports)
    successful = [report for report in reports if raw[report.run_id]["reward"] == 1.0]
    assert len(successful) == 84
    assert [r.run_id for r in successful if r.verdict is GuardAction.STOP] == []
    intervened = [r.run_id for r in successful if r.verdict.at_least(GuardAction.REPLAN)]
    assert len(intervened) <= 3
    # The one success that does retry an identical failing call verbatim (steps 4 and 6).
    assert intervened == ["task13-trial2"]
    late = []
    for report in reports:
        second = _identical_failure_twice(raw[report.run_id])
        if second is None:
            continue
        first = report.first_intervention
        if first is None or first.step > second + 1:
            late.append(report.run_id)
    assert late == []
    assert sum(_identical_failure_twice(run) is not None for run in raw.values()) == 11


def test_example_traces(policy) -> None:
    verdicts = {}
    for path in sorted((REPO / "examples" / "traces").glob("*.json")):
        verdicts.update({report.run_id: report.verdict.value for report in replay_file(policy, path)})
    assert verdicts == {
        "booking-retry-loop": "stop",
        "parallel-lookups": "continue",
        "order-lookup-loop": "stop",
        "export-polling": "continue",
        "expired-token": "stop",
        "rate-limited-then-ok": "continue",
        "paging-past-the-end": "replan",
        "triage-pingpong": "stop",
    }


def test_readme_quick_start_output_is_true(capsys) -> None:
    """The README shows the first command's output; the lines it shows (not the elided
    ones) must be what `loopguard replay examples/traces/` prints, exit code included."""
    import os

    from loopguard.cli import main

    readme = (REPO / "README.md").read_text()
    shown = readme.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        code = main(["replay", "examples/traces/"])
    finally:
        os.chdir(cwd)
    printed = capsys.readouterr().out.splitlines()
    assert code == 1
    assert [line for line in shown if "..." not in line] == [line for line in printed if line in shown]
    assert len([line for line in shown if "..." not in line]) >= 6


def test_readme_plain_python_loop_runs(tmp_path, monkeypatch) -> None:
    """The README's plain-Python loop runs as shown: a call that raises is recorded as a
    failed result, and a refused call's payload is recorded as its result."""
    readme = (REPO / "README.md").read_text()
    code = readme.split("```python\nfrom loopguard import Guard, ToolCall, ToolResult\n", 1)[1].split("```", 1)[0]
    code = "from loopguard import Guard, ToolCall, ToolResult\n" + code
    (tmp_path / "loopguard.yml").write_text("version: 1\nextends: builtin:default\nrules:\n  - {id: no-search, tool: search, verdict: block, message: no searching, mode: observe}\n")
    monkeypatch.chdir(tmp_path)

    def failing_search(q: str) -> str:
        raise TimeoutError("upstream timed out")

    names: dict = {"search": failing_search}
    exec(compile(code, "README.md", "exec"), names)
    session = names["session"]
    assert names["decision"].runs_tool is True  # the rule only observes
    assert (session.run.tool_calls, session.run.failures) == (1, 1)
    assert [decision.phase for decision in session.decisions] == ["before_call", "after_call"]
    assert names["guard"].status().watching is False  # closed at the end, as shown

    (tmp_path / "loopguard.yml").write_text("version: 1\nextends: builtin:default\nrules:\n  - {id: no-search, tool: search, verdict: block, message: no searching}\n")
    names = {"search": failing_search}
    exec(compile(code, "README.md", "exec"), names)
    assert names["decision"].runs_tool is False
    assert names["tool_message"] == '{"error": true, "type": "policy_block", "message": "no searching"}'
    assert (names["session"].run.tool_calls, names["session"].run.failures) == (0, 0)  # (a refused call never ran)
