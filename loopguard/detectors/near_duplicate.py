"""near_duplicate: calls that are the same in substance though not to the letter.

Compares a pending call with the last ``window`` calls of the same tool:

* **rewording / throwaway token**: the same keys and the same exact values, with
  text arguments (several words) whose word sets overlap by at least
  ``similarity`` (Jaccard) and throwaway parts (nonces, request ids, UUIDs,
  timestamps, cache busters) ignored. ``repeats`` such calls make the signal.
* **re-reading**: a range argument (offset/limit, start/end, page, view_range, …)
  that lies inside ranges already read with otherwise equal arguments;
  ``repeats - 1`` re-reads make the signal.
* **pagination**: a range that advances. This is healthy alone, so it is reported
  with a context score below every threshold; it only matters when it co-occurs
  with no_progress (paging past the end of the data), through ``scoring.escalate``.

Cost per call: O(window × arguments), independent of run length.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from typing import Any

from ..decisions import Signal
from ..policy.schema import NearDuplicateDetector
from ..signature import is_digest_placeholder
from .base import BoundedMap, CallRecord, RunMemory, describe

#: Score of the pagination context signal: below any sensible warn threshold on purpose.
PAGINATION_SCORE = 0.3

_THROWAWAY_KEYS = frozenset(
    {
        "nonce", "request_id", "requestid", "idempotency_key", "idempotencykey", "trace_id", "traceid", "span_id",
        "timestamp", "ts", "time", "now", "cache_buster", "cachebuster", "cache_bust", "_t", "_", "rand", "random",
        "seed", "uuid", "correlation_id", "correlationid", "client_request_id",
    }
)
_VOLATILE_VALUE = re.compile(
    r"^(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{12,}|\d{10,}|"
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)$"
)
_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    "a an the of in on at to for from by with and or is are was were be what which who how when where why "
    "please can could would should i me my we our you your it its this that these those do does did about into".split()
)
_RANGE_PAIRS = (
    ("offset", "limit"),
    ("start", "end"),
    ("start_line", "end_line"),
    ("line_start", "line_end"),
    ("begin", "end"),
    ("from", "to"),
    ("start_index", "end_index"),
    ("skip", "take"),
    ("offset", "count"),
)
_RANGE_KEYS = frozenset(key for pair in _RANGE_PAIRS for key in pair) | {"page", "page_number", "pagenumber", "view_range", "range", "lines"}
_LENGTH_KEYS = frozenset({"limit", "take", "count"})
_SPECIAL_KEYS = _RANGE_KEYS | _THROWAWAY_KEYS


@dataclass(slots=True)
class _Shape:
    signature: int
    structure: tuple[Any, ...]
    words: frozenset[str]
    span: tuple[float, float] | None
    span_text: str = ""  # the range as a message shows it (formatted once per signature)


#: The shape of arguments with no text, range, throwaway key or volatile value (see _plain).
_PLAIN = _Shape(0, (), frozenset(), None)


def _words(text: str) -> frozenset[str]:
    words = set()
    for word in _WORD.findall(text.lower()):
        if word in _STOPWORDS or (len(word) >= 10 and _VOLATILE_VALUE.match(word)):
            continue
        if len(word) > 3 and word.endswith("s"):
            word = word[:-1]
        words.add(word)
    return frozenset(words)


def _number(value: Any) -> float | None:
    """A range bound as a float, or None (never raises: "①" is a digit to str.isdigit but
    not a number to float, and 2**1024 overflows a float)."""
    if isinstance(value, bool):
        return None
    try:
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return float(value)
    except (ValueError, OverflowError):
        pass
    return None


def _span(arguments: dict[str, Any]) -> tuple[float, float] | None:
    """The range a call reads, if its arguments name one."""
    if _RANGE_KEYS.isdisjoint(map(str.lower, map(str, arguments))):
        return None  # most calls: no range key, found without building anything
    lowered = {str(key).lower(): value for key, value in arguments.items() if str(key).lower() in _RANGE_KEYS}
    for low_key, high_key in _RANGE_PAIRS:
        if low_key not in lowered:
            continue
        low, high = _number(lowered[low_key]), _number(lowered.get(high_key))
        if low is not None and high is not None:
            return (low, low + high) if high_key in _LENGTH_KEYS else (low, high)
        if low is not None and high_key in _LENGTH_KEYS and high_key not in lowered:
            return (low, low + 1)
    for key in ("page", "page_number", "pagenumber"):
        page = _number(lowered.get(key))
        if page is not None:
            return (page, page + 1)
    for key in ("view_range", "range", "lines"):
        value = lowered.get(key)
        if isinstance(value, list) and len(value) == 2:
            low, high = _number(value[0]), _number(value[1])
            if low is not None and high is not None:
                return (low, high)
    return None


def shape_of(record: CallRecord) -> _Shape:
    arguments = record.signature.arguments
    if not isinstance(arguments, dict):
        return _Shape(record.signature.key, (record.tool, repr(arguments)[:200]), frozenset(), None)
    span = _span(arguments)
    exact: list[tuple[str, str]] = []
    text_keys: list[str] = []
    words: set[str] = set()
    for key in sorted(arguments):
        lowered = key.lower()
        value = arguments[key]
        if lowered in _THROWAWAY_KEYS or (span is not None and lowered in _RANGE_KEYS):
            continue
        if isinstance(value, str):
            if _is_volatile(value.strip()):
                continue
            # A placeholder for a cut value is exact, not wording: two different ones share all their words.
            if " " in value.strip() and not is_digest_placeholder(value):
                text_keys.append(key)
                words |= _words(value)
                continue
        exact.append((key, value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)[:500]))
    structure = (record.tool, tuple(exact), tuple(text_keys), span is not None)
    return _Shape(record.signature.key, structure, frozenset(words), span, "" if span is None else f"{span[0]:g}–{span[1]:g}")


def _is_volatile(value: str) -> bool:
    """A throwaway value (UUID, hex id, digit run, timestamp), with a cheap necessary test
    first: a UUID is 36 long with dashes, hex ids and digit runs are alphanumeric,
    timestamps hold a colon."""
    return (
        len(value) >= 10
        and (value.isalnum() or ":" in value or (len(value) == 36 and "-" in value))
        and _VOLATILE_VALUE.match(value) is not None
    )


def _plain(arguments: Any) -> bool:
    """True for flat arguments with no text, range, throwaway key or volatile value."""
    if type(arguments) is not dict or not _SPECIAL_KEYS.isdisjoint(arguments):  # keys as written, in C
        return False
    for key, value in arguments.items():
        kind = type(value)
        if kind is str:
            if " " in value or (len(value) >= 10 and _is_volatile(value.strip())):
                return False
        elif kind is not int and kind is not bool and value is not None:
            return False
        if not key.islower() and key.lower() in _SPECIAL_KEYS:  # "Page", "OFFSET"
            return False
    return True


def _jaccard(left: frozenset[str], right: frozenset[str]) -> float:
    if not left and not right:
        return 1.0
    return len(left & right) / len(left | right)


class NearDuplicate:
    name = "near_duplicate"

    def __init__(self, config: NearDuplicateDetector) -> None:
        self.reconfigure(config)
        self._recent: BoundedMap[str, deque[tuple[_Shape, bool]]] = BoundedMap(256)
        # Shapes by signature key, for calls whose signature has no result yet (their stats
        # are fresh on every call): identical calls in flight are read once.
        self._shapes: BoundedMap[int, _Shape] = BoundedMap(256)

    def reconfigure(self, config: NearDuplicateDetector) -> None:
        self.config = config
        # Read on every call: plain attributes (a pydantic attribute costs several times more).
        self._window, self._similarity, self._repeats, self._active = config.window, config.similarity, config.repeats, config.enabled
        self._weight, self._pagination_score = config.weight, min(PAGINATION_SCORE, config.weight)

    def pending(self, record: CallRecord, memory: RunMemory) -> Signal | None:
        stats = record.stats
        shape = stats.arguments_shape  # read once per signature: arguments never change
        if shape is None:
            shape = stats.arguments_shape = self._read(record)
        if shape is _PLAIN:
            return None  # exact values only: a near-duplicate would be an identical call, the repeat detector's job
        tool = record.signature.tool
        recent = self._recent.get(tool)
        if recent is None or recent.maxlen != self._window:
            recent = deque(recent or (), maxlen=self._window)
            self._recent.put(tool, recent)
        # Only calls of the same structure compare; it records whether there is a range, so
        # either all of them have one or none has.
        structure, span = shape.structure, shape.span
        if span is not None:
            return self._ranged(record, shape, span, [entry for entry in recent if entry[0].structure == structure], recent)
        similar = 1
        signatures = {shape.signature}
        words, similarity = shape.words, self._similarity
        for earlier, _ in recent:
            if earlier.structure == structure and _jaccard(earlier.words, words) >= similarity:
                similar += 1
                signatures.add(earlier.signature)
        recent.append((shape, False))
        if self._active and similar >= self._repeats and len(signatures) >= 2:
            return Signal(
                detector=self.name,
                kind="reworded_call",
                score=self._weight,
                message=f"{tool} is called {similar} times with arguments that differ only in wording or throwaway values",
                evidence={"call": record.index, "similar_calls": similar},
            )
        return None

    def _read(self, record: CallRecord) -> _Shape:
        """What the arguments of a call with this signature say (``_PLAIN`` or their shape)."""
        if _plain(record.signature.arguments):
            return _PLAIN
        key = record.signature.key
        shape = self._shapes.get(key)
        if shape is None:
            shape = shape_of(record)
            self._shapes.put(key, shape)
        return shape

    def _ranged(
        self,
        record: CallRecord,
        shape: _Shape,
        span: tuple[float, float],
        earlier: list[tuple[_Shape, bool]],
        recent: deque[tuple[_Shape, bool]],
    ) -> Signal | None:
        """A call with a range, given the recent calls that differ from it only in their range."""
        reread = _inside(span, [entry[0].span for entry in earlier]) if earlier else False  # type: ignore[misc]
        record.rereads_known_range = reread  # its result can only repeat what was read (no_progress)
        recent.append((shape, reread))
        if not self._active:
            return None
        if reread:
            rereads = 1 + sum(entry[1] for entry in earlier)
            if rereads >= self._repeats - 1:
                return Signal(
                    self.name,
                    "reread_range",
                    self._weight,
                    f"{describe(record)} re-reads a range already read ({rereads} re-reads)",
                    {"call": record.index, "range": list(span), "rereads": rereads},
                )
            return None
        if earlier and span[0] >= earlier[-1][0].span[1]:  # type: ignore[index]
            # Healthy paging is common: this signal is built positionally from prepared parts.
            return Signal(
                self.name,
                "pagination",
                self._pagination_score,
                f"{record.signature.tool} pages forward (range {shape.span_text})",
                {"call": record.index, "range": list(span)},
            )
        return None


def _inside(span: tuple[float, float], covered: list[tuple[float, float]]) -> bool:
    """True when ``span`` lies inside the union of ``covered`` ranges."""
    if not covered:
        return False
    low, high = span
    for start, end in sorted(covered):
        if start > low:
            return False
        if end > low:
            low = end
        if low >= high:
            return True
    return low >= high
