"""The examples run offline, exit 0 and print what the guard did."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(name: str) -> str:
    done = subprocess.run([sys.executable, str(ROOT / "examples" / name)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_langchain_agent_example() -> None:
    out = run("langchain_agent.py")
    lines = [line.strip() for line in out.splitlines()]
    judged = [line for line in lines if line.startswith("[before_call]")]
    assert [("verdict=allow" in l, "verdict=block" in l) for l in judged] == [(True, False), (True, False), (False, True), (True, False)]
    assert "rule=detector:failure" in judged[2] and "action=replan" in judged[2]
    assert any(l.startswith("[after_call ]") and "action=replan" in l for l in lines)
    assert any('"type": "guard_error"' in l and "status=error" in l for l in lines)
    assert "book_table executed 3 times: 2 failures + 1 success; the blocked 3rd attempt never ran" in lines
    assert "ai: Your table at Chez Loop is booked (confirmation R-1042)." in lines


def test_plain_agent_example() -> None:
    out = run("plain_agent.py")
    assert "verdict=answer action=continue ran=False" in out
    assert "verdict=block action=replan ran=False" in out
    assert "book_flight executed 3 times: 2 failures + the changed call that succeeded; the blocked 3rd attempt never ran" in out
    assert "final answer: Booked LG 204, paid 240 EUR. Ticket T-77." in out
