"""Kinds from the round-17 session: one question reworded again and again with nothing found."""

from __future__ import annotations

from pathlib import Path

from test_detector_kinds import first, replay, signals_at, step  # noqa: F401  (policy is a fixture)
from test_detector_kinds import policy  # noqa: F401

from loopguard.detectors.near_duplicate import _named_items

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


def test_what_a_text_names() -> None:
    arguments = {"query": "warranty for model X-200 and order INV-88213 for Jürgen Maier", "note": "Okta SSO"}
    assert _named_items(arguments, ("query",)) == frozenset({"x-200", "inv-88213", "jürgen", "maier"})
    # Terms in capitals are not names; neither is the first word, capitalised as a sentence starts.
    assert _named_items({"query": "Reset MFA for SSO users"}, ("query",)) == frozenset()
