"""The LangGraph examples run offline, exit 0 and print what the guard did."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(name: str) -> list[str]:
    done = subprocess.run([sys.executable, str(ROOT / "examples" / name)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return [line.rstrip() for line in done.stdout.splitlines()]


def test_langgraph_toolnode_example() -> None:
    lines = run("langgraph_toolnode.py")
    kinds = [line.split()[0] for line in lines if line]
    assert kinds[0] == "event" and "user_message" in lines[0]
    decisions = [line for line in lines if line.startswith("decision")]
    assert "tool=get_weather action=continue verdict=answer rule=weather-cache" in decisions[0]
    assert '"source": "cache"' in decisions[0]
    assert "tool=shell action=continue verdict=block rule=shell-disabled" in decisions[1]
    assert "before_call tool=search action=stop verdict=block rule=detector:repeat" in decisions[-1]
    batch = [line for line in lines if "tool_call " in line][:3]
    assert ["search" in batch[0], "get_weather" in batch[1], "shell" in batch[2]] == [True, True, True]
    assert any(line.startswith("signal") and "no_progress/same_call_no_progress" in line for line in lines)
    metrics = next(line for line in lines if line.startswith("metrics"))
    done = next(line for line in lines if line.startswith("done"))
    assert lines.index(metrics) + 1 == lines.index(done)
    assert "interrupted=true verdict=stop" in done
    assert 'tools executed: {"search": 2}' in lines  # the 3rd identical search was blocked
    assert "model asked 3 times (never after the stop)" in lines


def test_callback_stop_example() -> None:
    lines = run("callback_stop.py")
    assert lines[0].startswith("LoopGuardInterrupt: loopguard stopped the run at tool 'search_orders' (action=stop)")
    assert "before_call of call 3" in lines[1]
    assert "interrupted=true verdict=stop at step 5" in lines
    decisions = [line.strip() for line in lines if "action=" in line and line.startswith("  step=")]
    assert [d.split()[1] + " " + d.split()[3] for d in decisions] == [
        "after_call action=warn", "before_call action=stop",
    ]
    assert "search_orders executed 2 times; the model was asked 3 times" in lines
