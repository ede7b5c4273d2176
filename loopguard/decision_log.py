"""The decision log: decisions written as JSON Lines (or to a ``logging`` logger) off the hot path.

A policy turns it on with a ``log`` section::

    log:
      path: decisions.jsonl          # relative to the policy file
      logger: loopguard.decisions    # and/or a Python logging logger
      actions: [warn, replan, pause, stop]   # default: everything but continue
      verdicts: true                 # also every decision whose verdict is not allow

One record per line (all keys always present)::

    {"time": "2026-11-29T22:49:09.123456Z", "run_id": "run-1", "thread_id": null,
     "step": 4, "phase": "before_call", "tool": "search", "call_index": 2,
     "action": "stop", "risk": 0.95, "verdict": "block", "rule": "detector:repeat",
     "signals": [{"detector": "repeat", "kind": "identical_call", "score": 0.6, "message": "..."}],
     "revision": "f9b3b479ac1b", "mode": "enforce"}

Cost and durability: :meth:`DecisionLog.record` checks the filter and puts a tuple on a
queue (well under a microsecond); a background thread formats and writes. Records are
never dropped: :meth:`DecisionLog.close` (called for every open log at interpreter exit)
and :meth:`DecisionLog.flush` wait until every queued record is written.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Iterable

from .decisions import Decision, GuardAction, VerdictKind

if TYPE_CHECKING:
    from .policy.compile import CompiledPolicy

_logger = logging.getLogger("loopguard.decision_log")

#: Actions logged when a policy's ``log`` section does not say.
DEFAULT_ACTIONS = frozenset({"warn", "replan", "pause", "stop"})

_STOP = object()  # queue sentinel: write what is queued before it, then end the thread


@dataclass(frozen=True)
class _Flush:
    done: threading.Event


class DecisionLog:
    """Writes decisions to a JSON Lines file and/or a logger from a background thread.

    Args:
        path: the JSON Lines file (appended to; parent directories are created), or ``None``.
        logger: name of a ``logging`` logger, or ``None``. Records go out at INFO
            (``pause``/``stop`` at WARNING) with the JSON line as the message and the record
            as ``extra={"loopguard": {...}}``.
        actions: the actions logged (``continue``, ``warn``, ``replan``, ``pause``, ``stop``).
        verdicts: also log every decision whose verdict is not ``allow``.

    Raises:
        ValueError: neither ``path`` nor ``logger`` is given.
        OSError: the file cannot be opened for appending.

    Thread-safe: any number of sessions may record concurrently.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        logger: str | None = None,
        actions: Iterable[str] = DEFAULT_ACTIONS,
        verdicts: bool = True,
    ) -> None:
        if path is None and logger is None:
            raise ValueError("a decision log needs a path or a logger")
        self.path = Path(path) if path is not None else None
        self.logger_name = logger
        self.actions: frozenset[str] = frozenset()
        self.verdicts = True
        self.configure(actions, verdicts)
        self._file: IO[str] | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Line buffering is not enough (a batch is flushed at once); open eagerly so that a
            # bad path fails where the policy is loaded, not silently in the writer thread.
            self._file = open(self.path, "a", encoding="utf-8")
        self._logger = logging.getLogger(logger) if logger is not None else None
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._closed = False
        self._close_lock = threading.Lock()
        self.written = 0
        self.errors = 0
        self._thread = threading.Thread(target=self._run, name=f"loopguard-log:{path or logger}", daemon=True)
        self._thread.start()
        _open_logs.add(self)

    def configure(self, actions: Iterable[str], verdicts: bool) -> None:
        """Change which decisions are logged (the latest policy revision's settings win)."""
        self.actions = frozenset(GuardAction(action).value for action in actions)
        self.verdicts = bool(verdicts)

    def wants(self, decision: Decision) -> bool:
        """True when ``decision`` passes the filter (its action is logged, or ``verdicts`` is
        on and its verdict is not ``allow``)."""
        return decision.action.value in self.actions or (self.verdicts and decision.verdict.kind is not VerdictKind.ALLOW)

    def record(self, run_id: str | None, decision: Decision, thread_id: str | None = None) -> None:
        """Queue ``decision`` for writing if it passes the filter. Never blocks, never raises.

        Decisions recorded after :meth:`close` are written synchronously (a late session
        at shutdown must not lose its last records)."""
        if not (decision.action.value in self.actions or (self.verdicts and decision.verdict.kind is not VerdictKind.ALLOW)):
            return
        item = (time.time(), run_id, thread_id, decision)
        if self._closed:
            self._write_late(item)
            return
        self._queue.put(item)

    def flush(self, timeout: float | None = 10.0) -> bool:
        """Wait until every record queued before this call is written and flushed.

        Returns:
            True when done, False when ``timeout`` (seconds) passed first or the log is closed.
        """
        if self._closed:
            return False
        marker = _Flush(threading.Event())
        self._queue.put(marker)
        return marker.done.wait(timeout)

    def close(self, timeout: float | None = 10.0) -> None:
        """Write every queued record, flush and close the file. Idempotent."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(_STOP)
        self._thread.join(timeout)
        with self._close_lock:
            if self._file is not None:
                self._file.flush()
                self._file.close()
                self._file = None
        _open_logs.discard(self)

    def __enter__(self) -> "DecisionLog":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write_late(self, item: tuple[float, str | None, str | None, Decision]) -> None:
        with self._close_lock:
            if self.path is not None and self._file is None:
                try:
                    self._file = open(self.path, "a", encoding="utf-8")
                except OSError:
                    self.errors += 1
                    _logger.exception("decision log %s: cannot reopen for a late record", self.path)
                    return
                try:
                    self._write([item])
                finally:
                    self._file.close()
                    self._file = None
            else:
                self._write([item])

    # -- the writer thread ------------------------------------------------------------

    def _run(self) -> None:
        get = self._queue.get
        while True:
            batch: list[tuple[float, str | None, str | None, Decision]] = []
            markers: list[_Flush] = []
            item = get()
            stop = False
            while True:  # drain what is queued so one write and one flush serve many records
                if item is _STOP:
                    stop = True
                elif isinstance(item, _Flush):
                    markers.append(item)
                else:
                    batch.append(item)
                if len(batch) >= 4096:
                    break
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            with self._close_lock:
                self._write(batch)
            for marker in markers:
                marker.done.set()
            if stop:
                return

    def _write(self, items: list[tuple[float, str | None, str | None, Decision]]) -> None:
        if not items:
            return
        try:
            lines = [(record, _encode(record)) for record in (to_record(*item) for item in items)]
            if self._file is not None:
                self._file.write("".join(line + "\n" for _, line in lines))
                self._file.flush()
            if self._logger is not None:
                for record, line in lines:
                    level = logging.WARNING if record["action"] in ("pause", "stop") else logging.INFO
                    self._logger.log(level, line, extra={"loopguard": record})
            self.written += len(lines)
        except Exception:  # a full disk must not kill the writer; say so once per batch
            self.errors += len(items)
            _logger.exception("decision log %s: could not write %d records", self.path or self.logger_name, len(items))


_second: list[Any] = [None, ""]  # (epoch second, its formatted prefix): strftime once per second, not per record


def _iso(at: float) -> str:
    """UTC ISO 8601 with microseconds, e.g. ``2026-11-29T22:49:09.123456Z``."""
    second = int(at)
    cached = _second
    if cached[0] != second:
        cached[1] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        cached[0] = second
    return f"{cached[1]}.{int((at - second) * 1_000_000):06d}Z"


#: One encoder for every line: ``json.dumps`` with options builds a new encoder per call.
_encode = json.JSONEncoder(ensure_ascii=False, default=str, separators=(", ", ": ")).encode


def to_record(at: float, run_id: str | None, thread_id: str | None, decision: Decision) -> dict[str, Any]:
    """One decision as the log's JSON object (see the module docstring for the shape).

    ``time`` is UTC ISO 8601 with microseconds; ``risk`` is rounded to 4 places; signals
    carry ``detector``, ``kind``, ``score`` and ``message`` (evidence is left out: it can
    hold tool arguments and outputs, which belong in traces, not in an audit log)."""
    return {
        "time": _iso(at),
        "run_id": run_id,
        "thread_id": thread_id,
        "step": decision.step,
        "phase": decision.phase,
        "tool": decision.tool,
        "call_index": decision.call_index,
        "action": decision.action.value,
        "risk": round(decision.risk, 4),
        "verdict": decision.verdict.kind.value,
        "rule": decision.rule,
        "signals": [
            {"detector": signal.detector, "kind": signal.kind, "score": round(signal.score, 4), "message": signal.message}
            for signal in decision.signals
        ],
        "revision": decision.revision,
        "mode": decision.mode,
    }


# --------------------------------------------------------------------------- per policy

_open_logs: set[DecisionLog] = set()
_logs: dict[tuple[str | None, str | None], DecisionLog] = {}
_by_policy: dict[tuple[str, str], DecisionLog | None] = {}
_registry_lock = threading.Lock()


def _log_path(policy: "CompiledPolicy", path: str) -> str:
    """``path`` made absolute: relative paths are relative to the policy file's directory."""
    expanded = os.path.expanduser(path)
    if os.path.isabs(expanded):
        return expanded
    base = Path.cwd()
    source = policy.source
    if source and not source.startswith("<"):
        try:
            from .policy.load import resolve_source

            base = resolve_source(source).parent
        except Exception:  # an odd source label: fall back to the working directory
            pass
    return os.path.abspath(base / expanded)


def log_for(policy: "CompiledPolicy") -> DecisionLog | None:
    """The decision log a policy's ``log`` section asks for, or ``None`` when it has none.

    Logs are shared per (absolute path, logger name), so every revision of a policy and every
    session append to one file through one writer; the filter (``actions``, ``verdicts``)
    follows the revision most recently looked up. The answer is memoised per (source,
    revision), so calling this once per decision costs one dict lookup.

    Raises:
        OSError: the log file cannot be opened (the first time it is asked for).
    """
    key = (policy.source, policy.revision)
    try:
        return _by_policy[key]
    except KeyError:
        pass
    settings = policy.model.log
    with _registry_lock:
        if settings is None or (settings.path is None and settings.logger is None):
            log = None
        else:
            path = _log_path(policy, settings.path) if settings.path is not None else None
            log_key = (path, settings.logger)
            log = _logs.get(log_key)
            if log is None or log._closed:
                log = DecisionLog(path, settings.logger, settings.actions, settings.verdicts)
                _logs[log_key] = log
            else:
                log.configure(settings.actions, settings.verdicts)
        if len(_by_policy) > 1024:  # a long-lived process with many reloads: forget old revisions
            _by_policy.clear()
        _by_policy[key] = log
    return log


def record_decision(policy: "CompiledPolicy", run_id: str | None, decision: Decision, thread_id: str | None = None) -> None:
    """Log ``decision`` if ``policy`` has a ``log`` section; never raises (a log that cannot
    be opened is reported once on the ``loopguard.decision_log`` logger)."""
    try:
        log = log_for(policy)
    except OSError:
        _logger.exception("decision log of policy %s (revision %s) cannot be opened", policy.source, policy.revision)
        _by_policy[(policy.source, policy.revision)] = None
        return
    if log is not None:
        log.record(run_id, decision, thread_id)


def close_all() -> None:
    """Flush and close every open decision log (registered with :mod:`atexit`)."""
    for log in list(_open_logs):
        try:
            log.close()
        except Exception:
            _logger.exception("decision log %s: close failed", log.path or log.logger_name)
    with _registry_lock:
        _logs.clear()
        _by_policy.clear()


atexit.register(close_all)
