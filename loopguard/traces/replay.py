"""Replay recorded runs through a policy: "what would this policy have decided?"

Each run gets a fresh :class:`~loopguard.session.Session`. Items are fed in order:
a user message → ``observe_user_message``; a single tool call → ``before_call``; a
batch → ``before_batch``; a result → ``after_call``; a handoff → ``observe_handoff``;
an agent message → ``observe_agent_message``; model usage → ``observe_model_call``.

**The recorded result is always fed**, even when the policy would have blocked,
cancelled or answered the call, and the replay goes on after a ``stop``. A replay
cannot know what the agent would have done instead, so every later step is judged
on what really happened; the report records the verdicts, and the first step at
which the policy intervened is what matters for evaluation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopguard.decisions import Decision
from loopguard.traces.formats import read_trace
from loopguard.traces.model import (
    AgentMessage,
    Batch,
    ModelCall,
    TraceError,
    TraceFileError,
    TraceHandoff,
    TraceIOError,
    TraceRun,
    TraceToolCall,
    TraceToolResult,
    UserMessage,
)
from loopguard.traces.report import ReportedDecision, RunReport, is_reported

if TYPE_CHECKING:
    from loopguard.policy.compile import CompiledPolicy

SessionFactory = Callable[[Any], Any]
"""Builds the session for one run from the policy (default: ``loopguard.session.Session``)."""

TRACE_SUFFIXES = (".json", ".jsonl", ".ndjson")


def _default_session(policy: Any) -> Any:
    from loopguard.session import Session  # imported late: the session imports the detectors

    return Session(policy, end_on_stop=False)  # judge the whole recorded run, not only up to a stop


def replay_run(policy: "CompiledPolicy", run: TraceRun, *, session_factory: SessionFactory | None = None) -> RunReport:
    """Replay one run through a fresh session.

    Returns:
        the run's report. A run with a trace error is not replayed; its report
        carries the error. An exception raised by the session is reported as the
        run's error (naming the step) rather than aborting the other runs.
    """
    report = RunReport(
        run_id=run.run_id,
        steps=run.steps,
        tool_calls=len(run.tool_calls),
        meta=run.meta,
        source=run.error.file if run.error is not None else None,
    )
    if run.error is not None:
        report.error = str(run.error)
        return report
    session = (session_factory or _default_session)(policy)

    def record(step: int, decision: Decision) -> None:
        if is_reported(decision):
            report.decisions.append(ReportedDecision(step=step, decision=decision))

    step = 0
    try:
        for item in run.items:
            step = item.step
            if isinstance(item, TraceToolCall):
                record(item.step, session.before_call(item.call))
            elif isinstance(item, Batch):
                decisions = session.before_batch([entry.call for entry in item.calls])
                for entry, decision in zip(item.calls, decisions, strict=True):
                    record(entry.step, decision)
            elif isinstance(item, TraceToolResult):
                record(item.step, session.after_call(item.call, item.result))
            elif isinstance(item, UserMessage):
                session.observe_user_message(item.text)
            elif isinstance(item, TraceHandoff):
                handoff = item.handoff
                if item.message is None:
                    record(item.step, session.observe_handoff(handoff.agent, handoff.caller))
                else:
                    record(item.step, session.observe_handoff(handoff.agent, handoff.caller, message=item.message))
            elif isinstance(item, AgentMessage):
                record(item.step, session.observe_agent_message(item.agent, item.text))
            elif isinstance(item, ModelCall):
                record(item.step, session.observe_model_call(item.usage))
    except Exception as exc:  # a session bug must not hide the other runs' results
        report.error = f"run {run.run_id!r}: step {step}: replay failed: {type(exc).__name__}: {exc}"
    return report


def replay_runs(
    policy: "CompiledPolicy", runs: Iterable[TraceRun], *, session_factory: SessionFactory | None = None
) -> list[RunReport]:
    """Replay each run with its own session."""
    return [replay_run(policy, run, session_factory=session_factory) for run in runs]


def replay_file(
    policy: "CompiledPolicy", path: str | Path, *, session_factory: SessionFactory | None = None
) -> list[RunReport]:
    """Replay every run of one trace file.

    A file that is not JSON or not a trace yields a single report (``run_id`` = the
    file name) carrying the error, so other files are still reported.

    Raises:
        TraceIOError: the file cannot be read.
    """
    try:
        runs = read_trace(path)
    except TraceIOError:
        raise
    except TraceFileError as exc:
        return [RunReport(run_id=Path(path).name, error=str(exc), source=str(path))]
    reports = replay_runs(policy, runs, session_factory=session_factory)
    for report in reports:
        report.source = str(path)
    return reports


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Paths as given, with each directory replaced by its ``*.json`` / ``*.jsonl`` /
    ``*.ndjson`` files in name order (not recursive).

    Raises:
        TraceIOError: a directory holds no trace file (a mistyped folder must not pass as
            "0 runs, nothing found").
    """
    expanded: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found = sorted(child for child in path.iterdir() if child.suffix.lower() in TRACE_SUFFIXES)
            if not found:
                suffixes = ", ".join(f"*{suffix}" for suffix in TRACE_SUFFIXES)
                raise TraceIOError(TraceError(f"cannot read: no trace files ({suffixes}) in this directory", file=str(path)))
            expanded.extend(found)
        else:
            expanded.append(path)
    return expanded


def replay_paths(
    policy: "CompiledPolicy", paths: Iterable[str | Path], *, session_factory: SessionFactory | None = None
) -> list[RunReport]:
    """Replay every run of every file (directories expanded, see :func:`expand_paths`).

    Raises:
        TraceIOError: a file cannot be read (checked before anything is replayed).
    """
    files = expand_paths(paths)
    for path in files:
        if not path.is_file():
            reason = "no such file" if not path.exists() else "not a regular file"
            raise TraceIOError(TraceError(f"cannot read: {reason}", file=str(path)))
    reports: list[RunReport] = []
    for path in files:
        reports.extend(replay_file(policy, path, session_factory=session_factory))
    return reports

