"""Benchmarks for reload-while-running and the decision log.

    python bench/bench_reload.py [--edits 30] [--decisions 50000]

Reports:

* **write → deciding**: median (and p90, max) time from a policy file write to the first
  decision made against the new revision, with the store watching (target ≤ 300 ms).
  Measured for in-place writes and for rename-saves.
* **decision-log overhead**: extra µs per decision when every decision is sent to a JSON
  Lines decision log (the hot path only queues; a thread writes), and the cost of one
  ``DecisionLog.record`` call. Everything is flushed before the run ends, so the figure
  includes the writer thread's share of the GIL.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loopguard import decision_log  # noqa: E402
from loopguard.calls import ToolCall, ToolResult  # noqa: E402
from loopguard.decision_log import DecisionLog  # noqa: E402
from loopguard.policy import load_policy  # noqa: E402
from loopguard.policy.store import PolicyStore  # noqa: E402
from loopguard.session import Session  # noqa: E402


def policy_text(warn: float, log: str = "") -> str:
    return f"version: 1\nextends: builtin:default\nthresholds: {{warn: {warn}, replan: 0.7, pause: 0.85, stop: 0.9}}\n{log}"


def write(path: Path, text: str, rename: bool) -> None:
    if rename:
        temp = path.with_name(f".{path.name}.tmp")
        temp.write_text(text, encoding="utf-8")
        os.chmod(temp, 0o644)
        os.replace(temp, path)
    else:
        path.write_text(text, encoding="utf-8")


def bench_reload(edits: int, rename: bool, debounce_ms: int) -> list[float]:
    """Seconds from each write to the first decision recording the new revision."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "loopguard.yml"
        path.write_text(policy_text(0.5), encoding="utf-8")
        os.chmod(path, 0o644)
        timings: list[float] = []
        with PolicyStore(path, watch=True, debounce_ms=debounce_ms) as store:
            session = Session(store, run_id="bench")
            time.sleep(0.3)  # the watcher is up
            for number in range(edits):
                before = session.before_call(ToolCall("search", {"q": number})).revision
                started = time.perf_counter()
                write(path, policy_text(0.30 + (number % 2) * 0.1 + number * 1e-4), rename)
                while True:
                    decision = session.before_call(ToolCall("search", {"q": number}))
                    if decision.revision != before:
                        break
                    time.sleep(0.0005)
                    if time.perf_counter() - started > 5:
                        raise SystemExit(f"edit {number} not in effect after 5 s")
                timings.append(time.perf_counter() - started)
                time.sleep(0.05)
        return timings


def run_decisions(policy_path: Path | None, count: int, log: bool) -> float:
    """Seconds for ``count`` before/after decisions (a repeating cycle of 5 calls), logging
    every decision when ``log`` is set."""
    policy = load_policy(policy_path) if policy_path else load_policy("builtin:default")
    session = Session(policy, run_id="bench", history=64)
    calls = [ToolCall("search", {"q": index}) for index in range(5)]
    result = ToolResult(output=[1])
    started = time.perf_counter()
    # The session records every decision of a policy with a log section itself.
    for index in range(count // 2):
        call = calls[index % 5]
        session.before_call(call)
        session.after_call(call, result)
    if log:
        decision_log.close_all()  # the writer's work counts: flush everything before stopping the clock
    return time.perf_counter() - started


def bench_log(count: int) -> tuple[float, float, float]:
    """(µs per decision without a log, µs with every decision logged, µs per record() call)."""
    with tempfile.TemporaryDirectory() as directory:
        plain = Path(directory) / "plain.yml"
        plain.write_text(policy_text(0.5, ""), encoding="utf-8")
        path = Path(directory) / "loopguard.yml"
        path.write_text(
            policy_text(0.5, "log:\n  path: decisions.jsonl\n  actions: [continue, warn, replan, pause, stop]\n"), encoding="utf-8"
        )
        for file in (plain, path):
            os.chmod(file, 0o644)
        base = min(run_decisions(plain, count, log=False) for _ in range(3))
        logged = min(run_decisions(path, count, log=True) for _ in range(3))
        lines = sum(1 for _ in open(Path(directory) / "decisions.jsonl", encoding="utf-8"))
        assert lines == 3 * (count // 2) * 2, lines
        from loopguard.decisions import Decision, GuardAction

        decision = Decision(step=1, phase="before_call", action=GuardAction.WARN, risk=0.6, revision="r")
        sink = DecisionLog(Path(directory) / "raw.jsonl", actions=["warn"])
        started = time.perf_counter()
        for _ in range(count):
            sink.record("bench", decision)
        record_cost = (time.perf_counter() - started) / count
        sink.close()
    return base / count * 1e6, logged / count * 1e6, record_cost * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--decisions", type=int, default=50_000)
    parser.add_argument("--debounce-ms", type=int, default=50)
    args = parser.parse_args()

    for rename in (False, True):
        timings = sorted(bench_reload(args.edits, rename, args.debounce_ms))
        median = statistics.median(timings) * 1000
        p90 = timings[int(len(timings) * 0.9) - 1] * 1000
        label = "rename-save" if rename else "in-place write"
        verdict = "ok" if median <= 300 else "ABOVE TARGET"
        print(f"write -> deciding ({label}, debounce {args.debounce_ms} ms, {args.edits} edits): median {median:.1f} ms, p90 {p90:.1f} ms, max {timings[-1] * 1000:.1f} ms [{verdict}: target <= 300 ms]")

    base, logged, record = bench_log(args.decisions)
    print(f"decision: {base:.2f} us without a log, {logged:.2f} us with every decision logged (overhead {logged - base:.2f} us per decision, writer included)")
    print(f"DecisionLog.record (queue put, filter passed): {record:.2f} us per call")


if __name__ == "__main__":
    main()
