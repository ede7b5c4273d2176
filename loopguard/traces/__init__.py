"""Trace formats and replay: read recorded agent runs and replay them through a policy.

Public API::

    read_trace(path) -> list[TraceRun]              # formats.py: step format, chat messages, JSONL
    parse_trace(data, source=..., default_id=...)   # the same from an already-parsed JSON value
    replay_run(policy, run) -> RunReport            # replay.py
    replay_file(policy, path) -> list[RunReport]
    replay_paths(policy, paths) -> list[RunReport]
    summarize(reports) / render_text(reports)       # report.py
"""

from loopguard.traces.formats import parse_trace, read_trace
from loopguard.traces.model import (
    AgentMessage,
    Batch,
    ModelCall,
    TraceError,
    TraceFileError,
    TraceHandoff,
    TraceIOError,
    TraceItem,
    TraceRun,
    TraceToolCall,
    TraceToolResult,
    UserMessage,
)
from loopguard.traces.replay import expand_paths, replay_file, replay_paths, replay_run, replay_runs
from loopguard.traces.report import Expected, ReportedDecision, RunReport, judge, render_text, summarize

__all__ = [
    "AgentMessage",
    "Batch",
    "Expected",
    "ModelCall",
    "ReportedDecision",
    "RunReport",
    "TraceError",
    "TraceFileError",
    "TraceHandoff",
    "TraceIOError",
    "TraceItem",
    "TraceRun",
    "TraceToolCall",
    "TraceToolResult",
    "UserMessage",
    "expand_paths",
    "judge",
    "parse_trace",
    "read_trace",
    "render_text",
    "replay_file",
    "replay_paths",
    "replay_run",
    "replay_runs",
    "summarize",
]
