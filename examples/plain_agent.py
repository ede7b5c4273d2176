"""A plain-Python agent loop guarded by loopguard, runnable offline.

The "model" is a scripted planner: it looks up a flight, then keeps retrying the same
failing booking call until the guard blocks it, then changes the call. The tools are
ordinary functions wrapped in :class:`loopguard.adapters.plain.GuardedTools`; a rule in
an inline policy answers weather questions from the policy without running the tool.

Run: ``python examples/plain_agent.py`` (no network, no API key).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from loopguard import Guard, load_policy_text
from loopguard.adapters.plain import GuardedTools

POLICY = """
version: 1
extends: builtin:default
rules:
  - id: weather-cached
    tool: get_weather
    verdict: answer
    result: {forecast: sunny, source: policy}
"""

executions = {"find_flight": 0, "book_flight": 0, "get_weather": 0}


def find_flight(origin: str, destination: str) -> dict[str, Any]:
    executions["find_flight"] += 1
    return {"flight": "LG 204", "fare": 240}


def book_flight(flight: str, amount: int) -> str:
    executions["book_flight"] += 1
    if amount != 240:
        return "Error: payment amount does not add up"
    return f"Booked {flight}, paid {amount} EUR. Ticket T-77."


def get_weather(city: str) -> str:
    executions["get_weather"] += 1
    return "rain"


def planner(history: list[tuple[str, dict[str, Any], Any]]) -> tuple[str, dict[str, Any]] | None:
    """The scripted model: the next call from what happened so far (None: answer)."""
    if not history:
        return "find_flight", {"origin": "OSL", "destination": "LIS"}
    if len(history) == 1:
        return "get_weather", {"city": "Lisbon"}
    last = history[-1][2]
    if isinstance(last, str) and last.startswith("Booked"):
        return None
    if isinstance(last, dict) and last.get("type") == "guard_error":
        return "book_flight", {"flight": "LG 204", "amount": 240}  # the guard said: change the approach
    return "book_flight", {"flight": "LG 204", "amount": 200}  # the stubborn retry


def main() -> int:
    session = Guard.from_policy(load_policy_text(POLICY)).session(run_id="plain-demo")
    tools = GuardedTools(session, {"find_flight": find_flight, "book_flight": book_flight, "get_weather": get_weather})
    session.observe_user_message("Book me the flight to Lisbon and tell me the weather.")
    history: list[tuple[str, dict[str, Any], Any]] = []
    print("plain-Python agent loop with loopguard (builtin:default + one answer rule)")
    while (step := planner(history)) is not None:
        name, arguments = step
        outcome = tools.run_call(name, arguments)
        decision = outcome.decision
        after = f" -> after: {outcome.after.action.value}" if outcome.after else ""
        print(f"  {name}({arguments}): verdict={decision.verdict.kind.value} action={decision.action.value} ran={outcome.ran}{after}")
        print(f"      result: {str(outcome.result)[:100]}")
        history.append((name, arguments, outcome.result))
        if len(history) > 10:
            print("  giving up")
            return 1
    print(f"executions: {executions}")
    print(f"book_flight executed {executions['book_flight']} times: 2 failures + the changed call that succeeded; the blocked 3rd attempt never ran")
    print(f"final answer: {history[-1][2]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
