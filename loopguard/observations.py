"""Reading tool outputs: volatile-part normalisation, emptiness, pending states, failures.

Everything here is a pure function of one output, computed once per result and
shared by the detectors. The word lists are deliberately small and documented in
``docs/detectors.md``; they are matched as whole words, never as substrings
("author" is not "auth", "page 1401" is not a 401).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from .signature import canonical_value

#: Outputs are compared on at most this many characters (plus a digest of the rest).
MAX_COMPARED = 4096

_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
_TIMESTAMP = re.compile(
    r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?\b|\b\d{1,2}:\d{2}:\d{2}(?:\.\d+)?\b"
)
# A token that mixes letters and digits and is at least 4 long reads as a generated id
# ("7f02", "req_9ac1"); long digit runs read as counters, epochs or request numbers.
_GENERATED_ID = re.compile(r"\b(?=[A-Za-z_-]*\d)(?=\d*[A-Za-z])[A-Za-z0-9_-]{4,}\b")
_LONG_NUMBER = re.compile(r"\b\d{6,}\b")
_COUNTER = re.compile(r"(?i)\b(attempt|try|retry|iteration|request|req|seq|sequence|run|trace|pid)\s*[#:=]?\s*\d+\b|#\d+\b")
_SPACE = re.compile(r"\s+")
_DIGITS = re.compile(r"\d+(?:\.\d+)?")


def output_text(output: Any) -> str:
    """The output as text: strings unchanged, anything else as canonical JSON (never raises)."""
    if isinstance(output, str):
        return output
    if output is None:
        return ""
    try:
        return json.dumps(canonical_value(output), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return str(output)


def normalize(text: str) -> str:
    """Replace volatile parts (UUIDs, timestamps, generated ids, long numbers, counters) and fold space."""
    if len(text) > MAX_COMPARED:
        text = text[:MAX_COMPARED] + hashlib.blake2b(text[MAX_COMPARED:].encode("utf-8", "replace"), digest_size=8).hexdigest()
    text = _UUID.sub("<uuid>", text)
    text = _TIMESTAMP.sub("<time>", text)
    text = _COUNTER.sub("<counter>", text)
    text = _GENERATED_ID.sub("<id>", text)
    text = _LONG_NUMBER.sub("<n>", text)
    return _SPACE.sub(" ", text).strip().lower()


def fingerprint(text: str) -> int:
    """64-bit digest of a normalised text."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=8).digest(), "big")


_EMPTY_LITERALS = frozenset({"", "[]", "{}", "null", "none", "nil", "n/a", '""', "''", "[[]]", "no", "nothing", "empty"})
_EMPTY_PHRASE = re.compile(
    r"^\W*(?:(?:no|zero|0)\s+(?:\w+\s+){0,2}?(?:results?|rows?|items?|records?|matches|entries|hits|data|output|documents?|files?|pages?|"
    r"annotations?|messages?|events?|objects?|values?|lines?|\w+s)\b|nothing\b|empty\b|(?:no|none)\s+(?:found|returned|available))"
)
_PENDING = re.compile(
    r"(?i)\b(queued|pending|running|in[ _-]?progress|processing|waiting|not[ _-]ready|scheduled|starting|"
    r"initiali[sz]ing|building|deploying|provisioning|started|accepted)\b"
)
_TERMINAL = re.compile(r"(?i)\b(succeeded|success|completed?|done|finished|failed|failure|error|cancell?ed|aborted|ready)\b")


def is_empty(normalized: str) -> bool:
    """True when the output carries no information: blank, an empty container, or "no results"-like."""
    if normalized in _EMPTY_LITERALS:
        return True
    if len(normalized) > 120:
        return False
    return _EMPTY_PHRASE.match(normalized) is not None


def is_pending(text: str) -> bool:
    """True when the output reports a valid non-terminal state (a healthy poll), e.g. "state: RUNNING"."""
    if len(text) > 400:
        return False
    return _PENDING.search(text) is not None and _TERMINAL.search(text) is None


# --- failures -----------------------------------------------------------------------

PERMANENT = "permanent"
RETRYABLE = "retryable"
DETERMINISTIC = "deterministic"

_PERMANENT_CODES = frozenset({400, 401, 403, 404, 405, 410, 422})
_RETRYABLE_CODES = frozenset({408, 425, 429, 500, 502, 503, 504})
# A status code counts only at the start of the output or after a status word, so
# "page 1401" and "401 rows" in a sentence are not failures.
_STATUS = re.compile(
    r"(?i)(?:^\W*|\b(?:http(?:/\d(?:\.\d)?)?|status(?:[ _]code)?|error(?:[ _]code)?|code|response)\W{0,3})([1-5]\d\d)\b"
)
_RETRYABLE_WORDS = re.compile(
    r"(?i)\b(rate[ _-]?limit(?:ed)?|too many requests|time[ _-]?out|timed out|temporarily unavailable|service unavailable|"
    r"try again|retry[ _-]after|connection (?:reset|refused|aborted)|overloaded|server busy|throttl(?:ed|ing)|bad gateway|gateway timeout)\b"
)
_PERMANENT_WORDS = re.compile(
    r"(?i)\b(unauthori[sz]ed|unauthenticated|not authenticated|authentication failed|auth(?:entication)? error|invalid (?:api )?(?:key|token|credentials?)|"
    r"forbidden|permission denied|access denied|not permitted|invalid request|bad request|not found|no such \w+|does not exist|"
    r"unknown (?:tool|function|command|parameter|argument)|schema|validation error|invalid (?:argument|parameter|input)s?|"
    r"missing required|unprocessable|not supported|unsupported)\b"
)
_ERROR_START = re.compile(r"(?i)^\W*(error|exception|traceback|fatal|failed|failure|panic)\b")
_EXIT_CODE = re.compile(r"(?i)\[?exit(?:ed)?(?: with)? (?:code|status)[:= ]*([1-9]\d*)\]?")


def status_code(text: str) -> int | None:
    """The HTTP-like status code the output reports, if any (only in a status context)."""
    match = _STATUS.search(text[:300])
    return int(match.group(1)) if match else None


def looks_like_error(text: str, output: Any = None) -> bool:
    """Infer a failure when the result carries no error flag."""
    if isinstance(output, dict):
        flag = output.get("error")
        if flag not in (None, False, "", 0):
            return True
    head = text[:300]
    if _ERROR_START.match(head):
        return True
    code = status_code(head)
    if code is not None and code >= 400:
        return True
    return _EXIT_CODE.search(text[-200:]) is not None


def classify_failure(text: str) -> str:
    """``permanent`` (401/403, invalid request, not found, schema), ``retryable`` (429, 503, timeouts)
    or ``deterministic`` (anything else: the same input will fail the same way)."""
    head = text[:600]
    code = status_code(head)
    if code in _RETRYABLE_CODES:
        return RETRYABLE
    if code in _PERMANENT_CODES:
        return PERMANENT
    if _RETRYABLE_WORDS.search(head):
        return RETRYABLE
    if _PERMANENT_WORDS.search(head):
        return PERMANENT
    return DETERMINISTIC


@dataclass(frozen=True, slots=True)
class Observation:
    """One tool output, read once.

    Attributes:
        text: the output as text.
        fingerprint: digest of the normalised text (volatile parts replaced).
        shape: digest of the normalised text with all numbers removed (for errors and messages).
        empty: the output carries no information.
        pending: the output reports a non-terminal state (queued, running, ...).
        error: the call failed (flagged by the tool or inferred from the output).
        failure_class: ``permanent``, ``retryable`` or ``deterministic`` for failures, else ``None``.
    """

    text: str
    fingerprint: int
    shape: int
    empty: bool
    pending: bool
    error: bool
    failure_class: str | None


def observe(output: Any, error: bool | None = None) -> Observation:
    """Read one output (never raises)."""
    text = output_text(output)
    normalized = normalize(text)
    failed = looks_like_error(text, output) if error is None else bool(error)
    return Observation(
        text=text,
        fingerprint=fingerprint(normalized),
        shape=fingerprint(_DIGITS.sub("#", normalized)),
        empty=(not failed) and is_empty(normalized),
        pending=(not failed) and is_pending(text),
        error=failed,
        failure_class=classify_failure(text) if failed else None,
    )
