"""Kinds from the round-18 session: one question asked again with another verb."""

from __future__ import annotations

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
