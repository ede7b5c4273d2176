"""Read trace files into :class:`~loopguard.traces.model.TraceRun` objects.

The format is detected from the JSON value, per run:

* **step format** (:mod:`loopguard.traces.steps`): a run ``{"steps": [...]}``, a
  list of such runs, or a bare list of steps;
* **chat messages** (:mod:`loopguard.traces.chat`): a bare message list,
  ``{"messages": [...]}``, a run ``{"traj": [...]}`` (tau-bench), or a list of such runs.

A top-level ``{"runs": [...]}`` is a list of runs. Runs of one list may mix formats.

**JSON Lines** (``.jsonl`` / ``.ndjson``, or any file whose text is several JSON
values one per line): when the first line is a run (it has ``steps``, ``messages``
or ``traj``) every line is one run; otherwise the lines together are one run, each
line a step or a message.

Run ids: ``run_id`` (or ``id``) when present; ``task{task_id}-trial{trial}`` for
tau-bench entries; else the file's stem, with ``#N`` (0-based position) appended
when the file holds more than one run.

A bad step or message makes its run carry a :class:`TraceError`; the other runs
are read as usual. A file that cannot be read raises :class:`TraceIOError`; one
that is not JSON, or whose shape is not a trace, raises :class:`TraceFileError`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from loopguard.decisions import GuardAction
from loopguard.traces.chat import is_message, parse_messages
from loopguard.traces.model import (
    MalformedTrace,
    TraceError,
    TraceFileError,
    TraceIOError,
    TraceRun,
    type_name,
)
from loopguard.traces.report import window_of
from loopguard.traces.steps import is_step, parse_steps

RUN_BODY_KEYS = ("steps", "messages", "traj")
JSONL_SUFFIXES = frozenset({".jsonl", ".ndjson"})


def read_trace(path: str | Path) -> list[TraceRun]:
    """Read every run of the trace file at ``path``.

    Returns:
        the runs in file order; a run that could not be read has ``error`` set.

    Raises:
        TraceIOError: the file cannot be opened or read.
        TraceFileError: the file is not UTF-8 JSON / JSON Lines, not a trace, or holds no run
            (an empty or blank file, ``[]``: a trace that was never written must not pass).
    """
    runs = _read_runs(path)
    if not runs:
        raise TraceFileError(TraceError("no runs: the file holds no steps or messages", file=str(path)))
    return runs


def _read_runs(path: str | Path) -> list[TraceRun]:
    name = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise TraceIOError(TraceError(f"cannot read: {exc.strerror or exc}", file=name)) from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TraceFileError(TraceError(f"not UTF-8 text (byte {exc.start})", file=name)) from exc
    stem = Path(path).stem or name
    if not text.strip():
        raise TraceFileError(TraceError("the file is empty: a trace is JSON (a list of steps or chat messages) or JSON Lines", file=name))
    if Path(path).suffix.lower() in JSONL_SUFFIXES:
        return _from_lines(text, name, stem)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":
            return _from_lines(text, name, stem)
        raise TraceFileError(
            TraceError(f"invalid JSON: {exc.msg}", file=name, location=f"line {exc.lineno}, column {exc.colno}")
        ) from exc
    except (RecursionError, ValueError) as exc:  # nesting past the recursion limit, a 5,000-digit number
        raise TraceFileError(TraceError(f"cannot read JSON: {_reason(exc)}", file=name)) from exc
    try:
        return parse_trace(data, source=name, default_id=stem)
    except RecursionError as exc:
        raise TraceFileError(TraceError(f"cannot read the trace: {_reason(exc)}", file=name)) from exc


def _reason(error: Exception) -> str:
    if isinstance(error, RecursionError):
        return "it nests too deeply"
    return str(error)


def _from_lines(text: str, name: str, stem: str) -> list[TraceRun]:
    """JSON Lines: one run per line (a bad line is that run's error, the others still
    report), or the lines together are the steps or messages of one run."""
    values: list[Any] = []
    problems: list[tuple[int, TraceError]] = []  # (position among the values, error)
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            values.append(json.loads(line))
        except json.JSONDecodeError as exc:
            problems.append((len(values), TraceError(f"invalid JSON: {exc.msg}", file=name, location=f"line {number}, column {exc.colno}")))
        except (RecursionError, ValueError) as exc:
            problems.append((len(values), TraceError(f"cannot read JSON: {_reason(exc)}", file=name, location=f"line {number}")))
    if values and _is_run(values[0]):
        runs = _runs(values, name, stem)
        for offset, (position, error) in enumerate(problems):
            line = error.location.split(",")[0] if error.location else "?"
            runs.insert(position + offset, TraceRun(run_id=f"{stem} ({line})", items=[], meta={}, error=error))
        return runs
    if problems:
        raise TraceFileError(problems[0][1])
    return parse_trace(values, source=name, default_id=stem)


def parse_trace(data: Any, *, source: str = "<memory>", default_id: str = "run") -> list[TraceRun]:
    """Read runs from an already-parsed JSON value (see the module docstring for shapes).

    Args:
        data: the JSON value.
        source: the file name used in errors.
        default_id: the base of run ids for runs that have none.

    Raises:
        TraceFileError: ``data`` has no recognisable trace shape.
    """
    if isinstance(data, dict):
        if isinstance(data.get("runs"), list) and not any(key in data for key in RUN_BODY_KEYS):
            return _runs(data["runs"], source, default_id)
        if _is_run(data):
            return _runs([data], source, default_id)
    elif isinstance(data, list):
        if not data:
            return []
        if _is_run(data[0]) or isinstance(data[0], list):
            return _runs(data, source, default_id)
        if is_message(data[0]) or is_step(data[0]):
            return _runs([data], source, default_id)
    raise TraceFileError(
        TraceError(
            f"not a trace: expected a run ({{'steps': [...]}} or {{'messages': [...]}}), "
            f"a list of runs, or a list of steps or chat messages; got {_shape(data)}",
            file=source,
        )
    )


def _shape(data: Any) -> str:
    if isinstance(data, list) and data:
        return f"a list of {type_name(data[0])}s"
    if isinstance(data, dict):
        keys = ", ".join(repr(key) for key in list(data)[:5])
        return f"an object with keys {keys}" if keys else "an empty object"
    return type_name(data)


def _is_run(value: Any) -> bool:
    return isinstance(value, dict) and any(key in value for key in RUN_BODY_KEYS)


def _runs(values: list[Any], source: str, default_id: str) -> list[TraceRun]:
    many = len(values) > 1
    return [
        _run(value, source, f"{default_id}#{index}" if many else default_id) for index, value in enumerate(values)
    ]


def _run_id(entry: dict[str, Any], fallback: str) -> str:
    for key in ("run_id", "id"):
        value = entry.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            return str(value)
    if "task_id" in entry:
        if "trial" in entry:
            return f"task{entry['task_id']}-trial{entry['trial']}"
        return f"task{entry['task_id']}"
    return fallback


_ACTIONS = tuple(action.value for action in GuardAction)
#: The labels of a labelled case (``data/cases/README.md``).
LABELS = ("stuck", "healthy")


def _is_window(value: Any) -> bool:
    """Whether ``value`` is a usable ``acceptable_window``: two step indexes, first <= last."""
    window = window_of(value)
    return window is not None and 0 <= window[0] <= window[1]


def _shown(value: Any) -> str:
    """A label's value as an error message shows it: its JSON when short, else its shape."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        return _shape(value)
    return text if len(text) <= 40 else _shape(value)


def _run(value: Any, source: str, fallback_id: str) -> TraceRun:
    """One run; a malformed run comes back with ``error`` set instead of raising."""
    if isinstance(value, list):
        run = TraceRun(run_id=fallback_id)
        body: Any = value
        chat = bool(value) and is_message(value[0])
    elif _is_run(value):
        run = TraceRun(run_id=_run_id(value, fallback_id))
        key = next(key for key in RUN_BODY_KEYS if key in value)
        body = value[key]
        chat = key != "steps"
        run.meta = {name: item for name, item in value.items() if name not in RUN_BODY_KEYS}
        label = run.meta.get("label")
        if label is not None and label not in LABELS:
            # A mistyped label would silently judge a healthy run as stuck.
            shown = repr(label) if isinstance(label, str) else _shape(label)
            run.error = TraceError(f"'label' must be 'stuck' or 'healthy', got {shown}", file=source, run=run.run_id)
            return run
        accepted = run.meta.get("acceptable_decisions")
        if accepted is not None and not (isinstance(accepted, list) and all(isinstance(item, str) and item in _ACTIONS for item in accepted)):
            # A string or a misspelt action would silently accept any action.
            run.error = TraceError(f"'acceptable_decisions' must be a list of actions ({', '.join(_ACTIONS)}), got {_shown(accepted)}", file=source, run=run.run_id)
            return run
        window = run.meta.get("acceptable_window")
        if window is not None and not _is_window(window):
            # A malformed window would silently judge every intervention as in time.
            run.error = TraceError(
                f"'acceptable_window' must be [first, last]: two step indexes, first <= last, got {_shown(window)}", file=source, run=run.run_id
            )
            return run
    else:
        run = TraceRun(run_id=fallback_id)
        if isinstance(value, dict):
            run_id = _run_id(value, fallback_id)
            run.run_id = run_id
        run.error = TraceError(
            f"a run must have 'steps' or 'messages', got {_shape(value)}", file=source, run=run.run_id
        )
        return run
    try:
        if chat:
            parse_messages(run, body)
        else:
            parse_steps(run, body)
    except MalformedTrace as exc:
        run.error = TraceError(exc.message, file=source, run=run.run_id, location=exc.location)
    return run
