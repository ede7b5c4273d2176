"""near_duplicate: calls that are the same in substance though not to the letter.

Compares a pending call with the last ``window`` calls of the same tool:

* **rewording / throwaway token**: the same keys and the same exact values, with
  text arguments (several words) whose word sets overlap by at least
  ``similarity`` (Jaccard) and throwaway parts (nonces, request ids, UUIDs,
  timestamps, cache busters) ignored. ``repeats`` such calls make the signal.
* **re-reading**: a range argument that lies inside ranges already read with otherwise
  equal arguments, since the latest call that may have changed state (an edit); ``repeats -
  1`` re-reads make the signal. A range is recognised by the
  words of its keys, not by a list of spellings (see ``_classify``): a low bound
  (offset, start, from, skip, …) paired with a high bound (end, to, …) or a length
  (limit, rows, size, …), a page number, or a two-number list (view_range, range, lines).
* **pagination**: a range that advances from a page that brought nothing new (the previous
  call of the same shape is ``stale``). This is healthy alone, so it is reported with a
  context score below every threshold; it only matters when it co-occurs with no_progress
  (paging past the end of the data), through ``scoring.escalate``.
* **wrapped offsets**: calls that differ only in their range are one paging sequence
  (``record.sequence``); a page read through a new range that says what a page of the
  sequence said before, the fields that say where a page is aside, is a re-read
  (``record.repeats_known``, judged in ``result``, before no_progress reads it).
* **wrapped cursor**: a call that follows a cursor (it differs from the tool's previous call
  in one text value, found as a token in that call's non-empty output) taken from a page
  that says what an earlier page of the tool said, once cursors and request ids are set
  aside, while the page before it said something else. The cursor leads where it led
  before, so the call's result can only repeat what was read (``record.repeats_known``),
  and the call gets the pagination context signal. Following a cursor alone is no signal:
  it is also how agents follow references.

An agent's own messages (no tool call) are compared the same way with the messages it wrote
since the last news, at ``message_similarity``: a paraphrased monologue.

Cost per call: O(window × arguments), independent of run length.
"""

from __future__ import annotations

import re
from collections import deque
from datetime import datetime, timezone
from dataclasses import dataclass
from functools import lru_cache
from itertools import islice
from typing import Any, Callable, NamedTuple, Sequence
from urllib.parse import parse_qsl, quote_plus, urlsplit

from ..decisions import Signal
from ..policy.schema import NearDuplicateDetector
from ..observations import END_KEPT, HAS_DIGIT, MAX_COMPARED, Observation, names_duration, skeleton_digest, without_anti_forgery_token
from ..signature import is_digest_placeholder, signature_of
from ..tool_names import COMMAND_ARGUMENT_NAMES, NAME_LIMIT, operation_of, split_name
from .base import BoundedMap, CallRecord, RunMemory, describe, resources

#: Score of the pagination context signal: below any sensible warn threshold on purpose.
PAGINATION_SCORE = 0.3
#: Shortest cursor recognised (a cursor "c2" is as short as they come).
CURSOR_MIN_LENGTH = 2
#: Shortest answer compared across differently worded calls: shorter ones ("sent", "ok",
#: a count) are acknowledgements and values that many different calls share.
ANSWER_MIN_LENGTH = 80
#: Answers remembered, and calls counted per answer.
ANSWERS_REMEMBERED, ANSWERS_COUNTED = 256, 16
#: Words a call's text must share with one of the calls that got the same answer (over the
#: smaller word set) to be read as a rewording of it.
ANSWER_OVERLAP = 0.25
#: Differently worded calls of one question in a row that all got an empty answer, the
#: first included, that make a ``reworded_call`` signal: on top of ``repeats``, since a search
#: reworded after an empty answer is also how healthy searching goes on.
EMPTY_REWORDINGS_EXTRA = 1
#: Questions whose empty answers are followed (bounded: structures come from the agent).
EMPTY_QUESTIONS_REMEMBERED = 32
#: Page digests kept per tool that follows cursors (to tell a page already read).
PAGES_REMEMBERED = 64
#: Kinds whose calls never page.
_NEVER_PAGES = frozenset({"write", "handoff", "think", "wait"})
#: Characters of a long page's head and end that a cursor page's digest reads (cursors whose
#: lengths differ by up to 64 characters in all cannot shift what is read).
_ALIGNED_HEAD, _ALIGNED_END = MAX_COMPARED - 64, END_KEPT - 64
#: The same for a paging sequence's page, whose position fields and stamps differ by a few
#: characters (Observation.middle, read back from the end, reaches as far as this end's start).
_RANGE_ALIGNED_HEAD, _RANGE_ALIGNED_END = MAX_COMPARED - 64, END_KEPT - 64
#: Tools whose recent calls, previous call and cursor pages are remembered.
_TOOLS_REMEMBERED = 256

_THROWAWAY_KEYS = frozenset(
    {
        "nonce", "request_id", "requestid", "idempotency_key", "idempotencykey", "trace_id", "traceid", "span_id",
        "timestamp", "ts", "time", "now", "cache_buster", "cachebuster", "cache_bust", "_t", "_", "rand", "random",
        "seed", "uuid", "correlation_id", "correlationid", "client_request_id",
    }
)
#: Last words of a request's own stamp, throwaway after a word of _REQUEST_WORDS ("request_ts").
_THROWAWAY_WORDS = frozenset({"ts", "timestamp", "time", "uuid", "guid", "id"})
_REQUEST_WORDS = frozenset({"request", "req", "client", "call", "trace", "span", "correlation", "idempotency", "cache", "sent"})
_VOLATILE_VALUE = re.compile(
    r"^(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{12,}|\d{10,}|"
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)$"
)
_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    "a an the of in on at to for from by with and or is are was were be what which who how when where why "
    "please can could would should i me my we our you your it its this that these those do does did about into".split()
)
# Range keys are recognised by the words of their names, so that start_line/end_line,
# startLine/endLine, line_from/line_to, start/rows (Solr), from/size (Elasticsearch) and
# offset/length all read as ranges without a list of every spelling. Only the first and
# last word of a name give it a role: a bound is named "start_x" or "x_start", while a
# role word inside a name ("time_to_live", "path_to_file") is not a bound.
_LOW_WORDS = frozenset({"offset", "start", "from", "skip", "begin", "first"})
_HIGH_WORDS = frozenset({"end", "to", "stop", "until", "last"})
_LENGTH_WORDS = frozenset({"limit", "count", "rows", "size", "length", "take", "max", "num", "top"})
_RANGE_WORDS = _LOW_WORDS | _HIGH_WORDS | _LENGTH_WORDS
# Whole names, as word tuples: a page number, and a range given as a [low, high] list.
_PAGE_NAMES = frozenset({("page",), ("pagenumber",), ("page", "number"), ("page", "num"), ("page", "no"), ("page", "index")})
_BOUNDS_LIST_NAMES = frozenset({("range",), ("view", "range"), ("viewrange",), ("line", "range"), ("lines",)})

#: Low bounds, and high bounds or lengths, that are paired at most (the first ones written).
_BOUNDS_PAIRED = 16

# The role a key plays in a range.
_LOW, _HIGH, _LENGTH, _PAGE, _BOUNDS_LIST, _THROWAWAY, _NONE = "low", "high", "length", "page", "bounds_list", "throwaway", ""


@dataclass(frozen=True, slots=True)
class _KeyKind:
    """What a key name says about its value.

    Attributes:
        role: one of ``_LOW``, ``_HIGH``, ``_LENGTH``, ``_PAGE``, ``_BOUNDS_LIST``,
            ``_THROWAWAY``, or ``_NONE`` for a key that plays no part.
        qualifier: the name's words other than range words ({"line"} for ``start_line``
            and ``line_to``); bounds with the same qualifier belong together.
        marks_shape: True when the key alone makes arguments not plain (see ``_plain``):
            a throwaway key, or one that can make a range by itself (a low bound, a page,
            a list). A high bound or a length alone cannot, so it keeps a call plain.
    """

    role: str
    qualifier: frozenset[str] = frozenset()
    marks_shape: bool = False


_ORDINARY = _KeyKind(_NONE)
_THROWAWAY_KIND = _KeyKind(_THROWAWAY, marks_shape=True)
#: What a range's bounds may count, besides nothing ("offset"): a bound of anything else
#: (a year, a price, an account, a time) is a filter, not a position in the data.
_POSITION_WORDS = frozenset(
    "line lines byte bytes char chars character characters index idx row rows item items record records result "
    "results entry entries position pos at page cursor hit hits message messages chunk chunks block blocks num "
    "number no n k".split()
)

#: Kinds of the key names seen, so that ``_plain`` pays one dict lookup per key. Bounded
#: (cleared when full) because key names come from the agent and may be unbounded.
_KEY_KINDS: dict[Any, _KeyKind] = {}
_KEY_KINDS_LIMIT = 4096


def _kind_of(key: Any) -> _KeyKind:
    """The memoised ``_classify`` of a key name."""
    kind = _KEY_KINDS.get(key)
    if kind is None:
        if len(_KEY_KINDS) >= _KEY_KINDS_LIMIT:
            _KEY_KINDS.clear()
        kind = _KEY_KINDS[key] = _classify(str(key))
    return kind


def _classify(key: str) -> _KeyKind:
    """The kind of a key name, from its words.

    Examples: "offset", "startLine", "line_from", "page_start" are low bounds; "end_byte",
    "line_to", "last" high bounds; "rows", "size", "max_results" lengths; "page" and
    "pageNumber" pages; "view_range" a [low, high] list; "request_id" throwaway; "first_name"
    is a low bound with qualifier {"name"} (harmless: its values are not numbers).
    """
    if key.lower() in _THROWAWAY_KEYS:
        return _THROWAWAY_KIND
    words = tuple(split_name(key))
    if "_".join(words) in _THROWAWAY_KEYS or "".join(words) in _THROWAWAY_KEYS or "_".join(words[-2:]) in _THROWAWAY_KEYS:
        return _THROWAWAY_KIND  # "Idempotency-Key", "requestId", "X-Request-Id"
    if words in _PAGE_NAMES:
        return _KeyKind(_PAGE, marks_shape=True)
    if words in _BOUNDS_LIST_NAMES:
        return _KeyKind(_BOUNDS_LIST, marks_shape=True)
    if not words:
        return _ORDINARY
    edges = {words[0], words[-1]}
    qualifier = frozenset(words) - _RANGE_WORDS
    if not edges.isdisjoint(_RANGE_WORDS) and not all(word in _POSITION_WORDS or word.isdigit() for word in qualifier):
        # A bound of something that is not a position: start_year/end_year, price_from,
        # from_account/to_account, start_time are filters; narrowing one is a new query.
        return _throwaway_or_ordinary(words)
    # A name with two role words is a high bound before a low one ("end_offset" ends the
    # range that "start_offset" starts) and a low one before a length ("skip_count").
    if not edges.isdisjoint(_HIGH_WORDS):
        return _KeyKind(_HIGH, qualifier)
    if not edges.isdisjoint(_LOW_WORDS):
        return _KeyKind(_LOW, qualifier, marks_shape=True)
    if not edges.isdisjoint(_LENGTH_WORDS):
        return _KeyKind(_LENGTH, qualifier)
    return _throwaway_or_ordinary(words)


def _throwaway_or_ordinary(words: tuple[str, ...]) -> _KeyKind:
    """A key that is no range bound: throwaway when it is a nonce ("client_nonce") or a request's
    own stamp ("request_ts", "client_request_uuid"), else ordinary; "thread_ts" or "order_uuid"
    name a record."""
    words = _without_unit(words)
    last = words[-1]
    if last == "nonce" or (last in _THROWAWAY_WORDS and not _REQUEST_WORDS.isdisjoint(words[:-1])):
        return _THROWAWAY_KIND
    return _ORDINARY


@dataclass(slots=True)
class _Shape:
    signature: int
    structure: tuple[Any, ...]
    words: frozenset[str]
    span: tuple[float, float] | None
    span_text: str = ""  # the range as a message shows it (formatted once per signature)
    range_keys: tuple[Any, ...] = ()  # the argument keys the range comes from (not for ranges inside a value)
    sequence: int = 0  # digest of the structure: the paging sequence a ranged call belongs to
    options: tuple[tuple[str, str], ...] = ()  # a command's named options and their values (see _command_parts)
    hosts: frozenset[str] = frozenset()  # the host names a command names (see _HOST)


#: The shape of arguments with no text, range, throwaway key or volatile value (see _plain).
_PLAIN = _Shape(0, (), frozenset(), None)


# Throwaway values inside a text that splitting into words would cut into pieces: timestamps
# ("--since-time=2024-06-11T09:14:02Z") and UUIDs. (Digit and hex runs stay whole words.)
_UUID_PATTERN = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_EMBEDDED_VOLATILE = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?|" + _UUID_PATTERN)


def _without_embedded_volatile(text: str) -> str:
    """``text`` with its timestamps and UUIDs blanked (a timestamp holds a colon, a UUID four
    dashes: texts with neither are returned as they are, unscanned)."""
    if ":" in text or text.count("-") >= 4:
        return _EMBEDDED_VOLATILE.sub(" ", text)
    return text


def _words(text: str) -> frozenset[str]:
    """The content words of a text argument, throwaway values left out (see ``_VOLATILE_VALUE``)."""
    text = _without_embedded_volatile(text)
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


class _Range(NamedTuple):
    """A range a call reads: ``span`` is (low, high), ``keys`` the argument keys it comes from."""

    span: tuple[float, float]
    keys: tuple[Any, ...]


#: Bounds from here on are epoch times (seconds since 1970 pass 10**9 in 2001), not positions,
#: unless their key says it counts positions (a byte offset in a 3 GiB log, a Kafka offset).
_TIME_LIKE = 1e9
_COUNTING_BOUNDS = frozenset({"offset", "skip"})  # low bounds that always count positions


def _names_position(key: Any, kind: _KeyKind) -> bool:
    """Whether a range key says it counts positions: ``offset`` or ``skip``, or a bound of
    bytes, lines, rows, ... (``start_byte``, ``line_from``)."""
    return not kind.qualifier.isdisjoint(_POSITION_WORDS) or not _COUNTING_BOUNDS.isdisjoint(split_name(str(key)[:NAME_LIMIT]))


def _range_of(arguments: dict[Any, Any]) -> _Range | None:
    """The range a call reads, if its arguments name one with numbers.

    In order: a low bound with its best partner (``_paired``), a page number (page *n* is
    [n, n + 1]), a [low, high] list. Values must be numbers or digit strings, so
    ``{"from": "SFO", "to": "JFK"}`` or a date in ``start`` is not a range.
    """
    lows: list[tuple[Any, _KeyKind, float]] = []
    partners: list[tuple[Any, _KeyKind, float]] = []
    page: _Range | None = None
    bounds_list: _Range | None = None
    for key, value in arguments.items():
        kind = _kind_of(key)
        role = kind.role
        if role == _NONE or role == _THROWAWAY:
            continue
        if role == _BOUNDS_LIST:
            if bounds_list is None and isinstance(value, list) and len(value) == 2:
                low, high = _number(value[0]), _number(value[1])
                if low is not None and high is not None:
                    bounds_list = _Range((low, high), (key,))
            continue
        number = _number(value)
        if number is None or (abs(number) >= _TIME_LIKE and not _names_position(key, kind)):
            continue  # (an epoch time bounds a time window, not a position in the data)
        if role == _LOW:
            lows.append((key, kind, number))
        elif role == _PAGE:
            page = page or _Range((number, number + 1), (key,))
        else:
            partners.append((key, kind, number))
    if lows:
        # Pairing is quadratic: real ranges have a few bounds, so only the first few count.
        return _paired(lows[:_BOUNDS_PAIRED], partners[:_BOUNDS_PAIRED])
    return page or bounds_list


def _paired(lows: list[tuple[Any, _KeyKind, float]], partners: list[tuple[Any, _KeyKind, float]]) -> _Range:
    """The range of the low bound with the best partner: (low, high) or (low, low + length).

    Both lists hold (key, kind, number). A low bound with no fitting partner reads one
    position, [low, low + 1] (``{"offset": 40}`` with a default page size).
    """
    best: _Range | None = None
    best_fit = 0
    for low_key, low_kind, low in lows:
        for key, kind, number in partners:
            fit = _fit(low_kind, kind)
            if kind.role == _HIGH:
                valid, high = number >= low, number  # "end": -1 ("to the end") is no bound
            else:
                valid, high = number > 0, low + number
            if valid and fit > best_fit:
                best, best_fit = _Range((low, high), (low_key, key)), fit
    if best is not None:
        return best
    low_key, _, low = lows[0]
    return _Range((low, low + 1), (low_key,))


def _fit(low: _KeyKind, partner: _KeyKind) -> int:
    """How well a high bound or length belongs with a low bound; 0 when it does not.

    Same qualifier (start_line/end_line, start/rows) fits best, then a shared word
    (startLineNumber/endLine). A length also fits when either side has no qualifier
    (start_index/count, offset/max_results), but a high bound does not: offset/end_time
    name two different things. A high bound beats a length of equal fit.
    """
    high = partner.role == _HIGH
    if low.qualifier == partner.qualifier:
        return 6 if high else 5
    if not low.qualifier.isdisjoint(partner.qualifier):
        return 4 if high else 3
    if not high and not (low.qualifier and partner.qualifier):
        return 1
    return 0


def shape_of(record: CallRecord, given: Callable[[], list[str]] | None = None) -> _Shape:
    """What a call's arguments say, for comparing it with calls alike. ``given`` returns the
    texts the run was given (lowercased, see ``NearDuplicate._given_texts``): a value that
    looks generated (a UUID, a hex id) but that they name is the item asked about."""
    arguments = record.signature.arguments
    if not isinstance(arguments, dict):
        return _Shape(record.signature.key, (record.tool, repr(arguments)[:200]), frozenset(), None)
    found = _range_of(arguments)
    span, range_keys = found if found is not None else (None, ())
    exact: list[tuple[str, str]] = []
    text_keys: list[str] = []
    words: set[str] = set()
    options: list[tuple[str, str]] = []
    hosts: set[str] = set()
    for key in sorted(arguments):
        value = arguments[key]
        if key in range_keys or _kind_of(key).role == _THROWAWAY:
            continue  # the range is compared on its own; throwaway values never
        if isinstance(value, str):
            if _is_volatile(value.strip()) and not (value[:1].isdigit() and _names_time_bound((str(key),))):
                # (A time that bounds a window is what is asked for, not a stamp; so is an id
                # the user or an answer named: five orders' UUIDs checked in turn are a fan-out.)
                if given is None or not _given((value.strip().lower(),), given()):
                    continue
                exact.append((key, value))
                continue
            if span is None and len(value) <= _COMMAND_LIMIT:
                found_range = _command_line_range(value) if "sed" in value or "NR" in value else None
                if found_range is None and "?" in value:
                    found_range = _query_range(value)
                if found_range is None and ("imit" in value or "IMIT" in value or "ffset" in value or "FFSET" in value):
                    page = _sql_range(value)
                    # A query's later page: its range is compared on its own, the rest of the query
                    # as words. A first page (OFFSET 0) is read as any query, by its words:
                    # lookups reworded on their first page are rewordings, not paging.
                    if page is not None and page[0][0] > 0:
                        span, rest = page
                        text_keys.append(key)
                        words |= _words(rest)
                        continue
                if found_range is not None:
                    # A command that prints a line range (sed -n '40,60p' log), a URL that
                    # pages (...?per_page=10&page=4), or a query that pages (LIMIT 50 OFFSET
                    # 100): the range is compared on its own, the rest of the value exactly.
                    span, rest = found_range
                    exact.append((key, rest))
                    continue
            if "://" in value and "?" in value and " " not in value:
                searched = _url_search(value)
                if searched is not None:
                    # A search engine's URL: the words searched for are its text, the rest exact
                    # (?q=Bosch+GSR and ?q=bosch%20gsr ask one question).
                    rest, text = searched
                    exact.append((key, rest))
                    text_keys.append(key)
                    words |= _words(text)
                    continue
            # A placeholder for a cut value is exact, not wording: two different ones share all their words.
            if " " in value.strip() and not is_digest_placeholder(value):
                text_keys.append(key)
                words |= _words(value)
                if key in COMMAND_ARGUMENT_NAMES:
                    if "-" in value:
                        options.extend(_command_parts(value)[0])
                    if "." in value or "@" in value or ":" in value:
                        hosts.update(host.lower() for host in _HOST.findall(value[:_COMMAND_LIMIT]))
                continue
        exact.append((key, value if isinstance(value, (str, int, float, bool, type(None))) else repr(_stable(value, 0))[:500]))
    structure = (record.tool, tuple(exact), tuple(text_keys), span is not None)
    if span is None:
        return _Shape(record.signature.key, structure, frozenset(words), None, options=tuple(options), hosts=frozenset(hosts))
    words_read = frozenset(words)
    # A page number is shown as one ("page 4"), any other range as its bounds ("20–40").
    page = len(range_keys) == 1 and _kind_of(range_keys[0]).role == _PAGE
    span_text = f"page {span[0]:g}" if page else f"range {span[0]:g}–{span[1]:g}"
    return _Shape(record.signature.key, structure, words_read, span, span_text, range_keys, hash((structure, words_read)))


# A command's tokens: runs of anything but spaces and quotes, or quoted texts, joined
# (--filter="a b" is one token).
_COMMAND_TOKEN = re.compile(r"""(?:[^\s'"]+|'[^']*'|"[^"]*")+""")
_OPTIONS_READ = 40  # tokens of a command read for options


def _command_parts(command: str) -> tuple[list[tuple[str, str]], list[str]]:
    """A command's named options with a value, as (name, value): ``--region us-east-2``,
    ``--project=acme``, ``-n payments`` (a single-letter option followed by a value), an
    environment assignment ``AWS_PROFILE=ops``; and its other tokens (program, subcommand,
    paths, flags). Options whose value is quoted text with spaces stay with the other
    tokens (compared as words)."""
    tokens = _COMMAND_TOKEN.findall(command[:_COMMAND_LIMIT])[:_OPTIONS_READ]
    options: list[tuple[str, str]] = []
    rest: list[str] = []
    taken = False
    for index, token in enumerate(tokens):
        if taken:
            taken = False
            continue
        name = value = ""
        if token[:1] == "-" and token not in ("-", "--") and not token[1:2].isdigit():
            if "=" in token:
                name, _, value = token.partition("=")
            elif index + 1 < len(tokens) and tokens[index + 1][:1] != "-" and (token[:2] == "--" or len(token) == 2):
                name, value, taken = token, tokens[index + 1], True
        elif _ASSIGNMENT.match(token) is not None:
            name, _, value = token.partition("=")
        value = value.strip("'\"")
        if name and value and " " not in value:
            options.append((name.lstrip("-").lower(), value))
        else:
            rest.append(token)
            taken = False
    return options, rest


# A host a command names: after "//", "@" or "=" (a URL, user@host, --host=), or as a word of
# its own with two dots at least (edge-01.fra.cdn.example.net, www.example.com), before a port,
# a path, a quote or a space; a short name after user@ or before a port (lb1, edge-01:443).
# A file name (nginx.conf, /etc/tls/www.example.com.pem) is none.
_HOST = re.compile(
    r"(?:(?<=//)|(?<=@)|(?<==))[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+(?=[:/\s'\"]|$)"
    r"|(?<![^\s'\"])[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?){2,}(?=[:/\s'\"]|$)"
    # A short name: after user@ (deploy@lb1), or before a port (edge-01:443).
    r"|(?<=[A-Za-z0-9_]@)[A-Za-z][A-Za-z0-9-]{0,62}(?=[:\s'\"]|$)"
    r"|(?<![^\s'\"/])[A-Za-z][A-Za-z0-9-]{0,62}(?=:\d{2,5}(?![\d:]))"
)

# An environment assignment before a command: AWS_DEFAULT_REGION=eu-west-1.
_ASSIGNMENT = re.compile(r"[A-Z_][A-Z0-9_]*=")


def _option_changed(before: tuple[tuple[str, str], ...], after: tuple[tuple[str, str], ...]) -> bool:
    """Whether an option both commands name has another value in ``after`` that is not
    cosmetic: a setting's number (``--max-items 50``), a timestamp or a request identity may
    change; another region, namespace, project or id is another target."""
    values = dict(before)
    for name, value in after:
        old = values.get(name)
        if old is None or old == value:
            continue
        if _is_identity(name) or _is_volatile(value) or (value.isdigit() and old.isdigit() and _names_setting((name,))):
            continue
        return True
    return False


# The line range a shell command prints: sed -n '40,60p' (or 40,+20p), awk 'NR>=40 && NR<=60'.
_SED_LINES = re.compile(r"\bsed\s+(?:-[A-Za-z]+\s+){0,3}-n\s+(?:-[A-Za-z]+\s+){0,3}['\"]?(\d{1,15}),(\+?)(\d{1,15})p['\"]?")
_AWK_LINES = re.compile(r"\bNR\s*>(=?)\s*(\d{1,15})\s*&&\s*NR\s*<(=?)\s*(\d{1,15})")


_COMMAND_LIMIT = 4096  # characters of a command searched for a line range


def _command_line_range(command: str) -> tuple[tuple[float, float], str] | None:
    """The lines ``command`` prints, as (first, last + 1), and the command with the range
    replaced by ``<lines>``; ``None`` when it names no line range (only the first counts)."""
    found = _SED_LINES.search(command)
    if found is not None:
        first, relative, last = int(found[1]), found[2], int(found[3])
        high = first + last + 1 if relative else last + 1
    else:
        found = _AWK_LINES.search(command)
        if found is None:
            return None
        first = int(found[2]) if found[1] else int(found[2]) + 1  # NR>40 starts at line 41
        high = int(found[4]) + 1 if found[3] else int(found[4])
    if high <= first:
        return None
    return (float(first), float(high)), command[: found.start()] + "<lines>" + command[found.end() :]


# A URL with a query string, alone or inside a command ("gh api 'repos/a/b/pulls?page=4'").
_URL_WITH_QUERY = re.compile(r"""[^\s"'<>]*\?[^\s"'<>]*=[^\s"'<>]*""")


def _query_range(value: str) -> tuple[tuple[float, float], str] | None:
    """The range a URL's query string reads (``page=4``, ``offset=40&limit=20``), read as
    arguments are, and the value with those parameters replaced by ``<range>``; ``None``
    when the first URL with a query in ``value`` names no range."""
    found = _URL_WITH_QUERY.search(value)
    if found is None:
        return None
    url = found.group()
    base, _, query = url.partition("?")
    parameters = [part.partition("=") for part in query.split("&") if part][:64]
    found_range = _range_of({name: number for name, _, number in reversed(parameters)})  # the first of a repeated name
    if found_range is None:
        return None
    span, keys = found_range
    kept = "&".join(f"{name}={number}" for name, _, number in parameters if name not in keys)
    return span, value[: found.start()] + f"{base}?{kept}<range>" + value[found.end() :]


# The rows a SQL query pages through: LIMIT n OFFSET m (PostgreSQL, SQLite, MySQL), OFFSET m
# [ROWS] LIMIT n, OFFSET m ROWS FETCH NEXT n ROWS ONLY (SQL:2008, SQL Server, Oracle), or
# MySQL's LIMIT m, n.
_SQL_RANGE = re.compile(
    r"\blimit\s+(?P<length>\d{1,15})\s+offset\s+(?P<low>\d{1,15})\b"
    r"|\boffset\s+(?P<low2>\d{1,15})(?:\s+rows?)?\s+(?:limit\s+|fetch\s+(?:next|first)\s+)(?P<length2>\d{1,15})\b"
    r"|\blimit\s+(?P<low3>\d{1,15})\s*,\s*(?P<length3>\d{1,15})\b",
    re.IGNORECASE,
)


def _sql_range(value: str) -> tuple[tuple[float, float], str] | None:
    """The rows a SQL query's first LIMIT/OFFSET clause reads, as (offset, offset + limit),
    and the value with the clause replaced by ``<range>``; ``None`` when it names none."""
    found = _SQL_RANGE.search(value[:_COMMAND_LIMIT])
    if found is None:
        return None
    low = found["low"] or found["low2"] or found["low3"]
    length = found["length"] or found["length2"] or found["length3"]
    if int(length) == 0:
        return None
    return (float(low), float(int(low) + int(length))), value[: found.start()] + "<range>" + value[found.end() :]


def _stable(value: Any, depth: int) -> Any:
    """A nested argument without its throwaway parts: throwaway keys dropped and volatile
    strings replaced, so ``{"headers": {"Idempotency-Key": <uuid>}}`` compares equal across
    calls. Bounded: only the first 50 items of each level, 4 levels deep."""
    if depth >= 4:
        return "…"
    if isinstance(value, dict):
        return {
            key: _stable(item, depth + 1)
            for key, item in list(value.items())[:50]
            if _kind_of(key).role != _THROWAWAY
        }
    if isinstance(value, list):
        return [_stable(item, depth + 1) for item in value[:50]]
    if isinstance(value, str) and _is_volatile(value.strip()):
        return "<volatile>"
    return value


#: Key names (as word tuples, after a leading "x" or "client") that hold a request's own
#: identity, made anew for each attempt: an idempotency key, a request id, a nonce, a trace id,
#: a cache buster ("_" has no words). A time, a uuid, a seed or a "leave_request_id" names
#: what is asked for.
_IDENTITY_NAMES = frozenset(
    {
        (), ("idempotency",), ("idempotency", "key"), ("idempotency", "token"), ("idempotencykey",), ("request", "id"),
        ("requestid",), ("request", "uuid"), ("nonce",), ("trace", "id"), ("traceid",), ("span", "id"),
        ("correlation", "id"), ("correlationid",), ("cache", "buster"), ("cachebuster",), ("cache", "bust"), ("cb",),
        ("order", "id"), ("request", "token"), ("request", "nonce"), ("ref",), ("reference",),
    }
)
#: Names that are a request's identity only as the client's own: "client_order_id", "client_ref".
_CLIENT_IDENTITY_NAMES = frozenset({("order", "id"), ("ref",), ("reference",)})


def _is_identity(key: Any) -> bool:
    """A key that holds a request's own identity (``idempotency_key``, ``X-Request-ID``,
    ``client_request_id``, ``client_order_id``, ``client_ref``, ``nonce``, ``_``), not what is
    asked for (``leave_request_id``, ``pullRequestId``, ``client_id``, ``uuid``, ``timestamp``,
    ``client_ts``: a stamp is part of a request's identity only beside one, see _signs_request)."""
    identity = _IDENTITY_KEYS.get(key)
    if identity is None:
        if len(_IDENTITY_KEYS) >= _KEY_KINDS_LIMIT:
            _IDENTITY_KEYS.clear()
        words = tuple(split_name(str(key)[:NAME_LIMIT]))
        client = words[:1] == ("client",)
        if words[:1] in (("x",), ("client",)):
            words = words[1:]
        # (An order id or a reference is an identity only as the client's own: "client_order_id".)
        identity = _IDENTITY_KEYS[key] = words in _IDENTITY_NAMES and (words not in _CLIENT_IDENTITY_NAMES or client) and (words != () or str(key).strip() != "")
    return identity


_IDENTITY_KEYS: dict[Any, bool] = {}


def _same_call(record: CallRecord) -> int | None:
    """The digest of a call without its request identity (``idempotency_key``, a request id
    header, a nonce, a cache buster), when it has one: calls that differ only there are the
    same call made again (no_progress compares their outputs as one call's). ``None`` when
    nothing was left out."""
    arguments = record.signature.arguments
    if type(arguments) is not dict or not _holds_identity(arguments, 0):
        return None
    kept, _ = _without_identity(arguments, 0)
    # The signature key of the call without them: the plain call (no cache buster) is the same
    # call too, and its replies count as the group's.
    return signature_of(record.signature.tool, kept).key


def _holds_identity(value: dict[Any, Any], depth: int) -> bool:
    """Whether a key of ``value`` (or of an object in it, 4 levels deep) holds a request's
    identity, or a URL in it a cache buster (``manifest.json?cb=1719565921``)."""
    for key, item in list(value.items())[:50]:
        if _is_identity(key) or _defeats_cache(key, item) or (type(item) is dict and depth < 3 and _holds_identity(item, depth + 1)):
            return True
        if type(item) is str and "?" in item and _without_cache_buster(item) is not item:
            return True
    return False


#: Query parameters that only defeat caches (a random seed, ``rnd``, may be what is asked for).
_CACHE_BUSTERS = frozenset({"_", "cb", "cachebuster", "cache_buster", "cachebust", "cache_bust", "bust", "nocache", "no_cache", "nc", "_t", "_ts", "_dc", "fresh"})
#: Query parameters that bust caches only with a value made up for the request (see _made_up).
_BUSTERS_BY_VALUE = frozenset({"t", "ts", "v", "r", "rand", "rnd", "random", "cachekey", "x"})
_EPOCH = re.compile(r"1[5-9]\d{8}(?:\d{3})?(?:\.\d+)?")  # seconds or milliseconds since 1970, 2017-2033
_RANDOM_TOKEN = re.compile(r"(?=[a-f0-9]{0,200}\d)(?=[a-f0-9]{0,200}[a-f])[a-f0-9]{8,64}|0?\.\d{8,}")


def _busts_cache(name: str, value: str) -> bool:
    """Whether a query parameter only defeats caches. Only names that say so: in a URL a
    request_id or a trace_id is often what is looked up. A short name busts one only with a
    value made up for the request (?t=<epoch ms>, ?v=8f2c41d9e0: "?v=3" is a version, "?t=7"
    a page)."""
    name = name.lower()
    return name in _CACHE_BUSTERS or (name in _BUSTERS_BY_VALUE and _made_up(value))


def _made_up(value: str) -> bool:
    """Whether a query value is made up for the request: an epoch time (seconds or
    milliseconds) or a random token (8 or more lowercase hex digits with a letter, a random
    fraction). A mixed-case id (YouTube's ``v=dQw4w9WgXcQ``) names what is asked for."""
    return _EPOCH.fullmatch(value) is not None or _RANDOM_TOKEN.fullmatch(value) is not None


#: Request headers that only ask caches to step aside, when their value says so.
_NO_CACHE_HEADERS = frozenset({"cache-control", "cache_control", "cachecontrol", "pragma"})
_NO_CACHE = ("no-cache", "no-store", "max-age=0")


def _defeats_cache(key: Any, item: Any) -> bool:
    """Whether ``key: item`` is a header that only asks caches to step aside
    (``Cache-Control: no-cache``, ``Pragma: no-cache``): a request made anew, not another one
    (``CacheControl: max-age=3600`` given to a write is what it writes)."""
    return type(item) is str and type(key) is str and key.lower() in _NO_CACHE_HEADERS and item.lower().startswith(_NO_CACHE)


#: Query parameters that hold what a search engine's URL searches for (``?q=``, ``?query=``,
#: WordPress's ``?s=``, Amazon's ``?k=``, Baidu's ``?wd=``).
_SEARCH_PARAMETERS = frozenset({"q", "query", "search", "search_query", "searchterm", "search_term", "term", "keywords", "keyword", "text", "s", "k", "wd"})


def _url_search(url: str) -> tuple[str, str] | None:
    """For a URL that searches for words (``?q=bosch+gsr&kl=de-de``), the URL without them and
    without cache busters, and the words searched for, decoded; ``None`` for other URLs."""
    if len(url) > 2000:
        return None
    try:
        parts = urlsplit(url)
        parameters = parse_qsl(parts.query, keep_blank_values=True)[:50] if parts.query else []
    except ValueError:
        return None
    for index, (name, value) in enumerate(parameters):
        if name.lower() in _SEARCH_PARAMETERS and any(character.isalpha() for character in value):
            kept = [(other, kept_value) for other, kept_value in parameters[:index] + parameters[index + 1 :] if not _busts_cache(other, kept_value)]
            return parts._replace(query="&".join(f"{other}={kept_value}" for other, kept_value in kept)).geturl(), value
    return None


def _without_cache_buster(url: str) -> str:
    """``url`` without its cache-busting query parameters (``?cb=1719565921``, ``&_=1719565950318``,
    ``?nocache=8f2c41``); ``url`` itself when it has none or is no URL."""
    if len(url) > 2000 or "://" not in url:
        return url
    try:
        parts = urlsplit(url)
        parameters = parse_qsl(parts.query, keep_blank_values=True)[:50] if parts.query else []
    except ValueError:  # (no URL after all: "https://[your-subdomain].example/?page=1")
        return url
    if not parameters:
        return url
    kept = [(name, value) for name, value in parameters if not _busts_cache(name, value)]
    if len(kept) == len(parameters):
        return url
    return parts._replace(query="&".join(f"{name}={value}" for name, value in kept)).geturl()


def _without_identity(value: Any, depth: int) -> tuple[Any, bool]:
    """``value`` without the keys that hold a request's identity (4 levels deep, 50 items a
    level), and whether any was left out."""
    if type(value) is not dict or depth >= 4:
        return value, False
    kept, dropped = {}, False
    items = sorted(list(value.items())[:50], key=lambda entry: str(entry[0]))
    # A request signed with a nonce stamps and signs it too: its time and signature are made
    # anew with the nonce ({"nonce": ..., "timestamp": 1717424834, "signature": <hex>}).
    signed = any(_is_identity(key) for key, _ in items)
    for key, item in items:
        if _is_identity(key) or (signed and _signs_request(key, item)) or _defeats_cache(key, item):
            dropped = True
            continue
        if type(item) is str and "?" in item:
            url = _without_cache_buster(item)
            if url is not item:
                kept[key], dropped = url, True
                continue
        inside, inner = _without_identity(item, depth + 1)
        dropped = dropped or inner
        if not (inner and inside == {}):  # headers that held only an identity are as none
            kept[key] = inside
    return kept, dropped


#: Names of the fields that stamp or sign a request beside its identity (a nonce, a request
#: id): its time ("timestamp", "client_ts", "request_timestamp", "client_time", "sent_at",
#: "client_timestamp_ms") and its signature.
_SIGNING_NAMES = frozenset({("signature",), ("sig",), ("signed", "at")})
_STAMP_LAST_WORDS = frozenset({"ts", "timestamp"})
# Named only as the client's or the request's: a plain "time" or "at" may be what is asked
# for (a table booked for a time).
_OWNED_STAMP_LAST_WORDS = frozenset({"time", "at"})
_STAMP_OWNER_WORDS = frozenset({"client", "request", "req", "x", "sent"})
_TIME_UNITS = frozenset({"ms", "millis", "msec", "us", "ns", "sec", "secs", "seconds"})


def _without_unit(words: Sequence[str]) -> Sequence[str]:
    """A name's words without a time unit at its end: "client_timestamp_ms" is a client_timestamp."""
    return words[:-1] if len(words) > 1 and words[-1] in _TIME_UNITS else words


def _signs_request(key: Any, value: Any) -> bool:
    """Whether a field beside a request identity is that request's stamp or signature: named
    so, with a volatile value (an epoch time, a long hex digest, an ISO timestamp). Alone (with
    no identity beside it) a "client_ts" is data: a tracked event's time."""
    words = _without_unit(split_name(str(key)[:NAME_LIMIT]))
    # (A stamp is named plainly or as the client's or the request's: "event_ts" is data.)
    owned = len(words) > 1 and words[0] in _STAMP_OWNER_WORDS
    stamp = bool(words) and ((words[-1] in _STAMP_LAST_WORDS and (len(words) == 1 or owned)) or (words[-1] in _OWNED_STAMP_LAST_WORDS and owned))
    if tuple(words) not in _SIGNING_NAMES and not stamp:
        return False
    if type(value) is int:
        return _is_epoch(value)
    return type(value) is str and _is_volatile(value.strip())


# Dashes inside an id ("8f2c3b1e-9a4d-4e0f") are formatting: without them the id is one word.
_INNER_DASH = re.compile(r"(?<=[0-9a-z])-(?=[0-9a-z])")
_NOT_ALPHANUMERIC = re.compile(r"[^0-9a-z]+")
_FORMATTED_NUMBER = re.compile(r"^[\s+()\-./\d]*\d[\s+()\-./\d]*$")
# An id written in groups: "DE89 3704 0044 0532 0130 01", "4111-1111-1111-1111", "AB12 CD34".
_GROUPED_ID = re.compile(r"[A-Za-z0-9]{1,6}(?:[ -][A-Za-z0-9]{1,6}){2,11}")


def _grouped_id(text: str) -> bool:
    """Whether a text with spaces is an id written in groups, all but at most one holding a
    digit ("DE89 3704 0044", "INV 2025 00873", not "Q3 2024 EMEA sales"): its letters and
    digits are the id, however grouped."""
    if _GROUPED_ID.fullmatch(text) is None:
        return False
    groups = text.replace("-", " ").split()
    return sum(not any(character.isdigit() for character in group) for group in groups) <= 1 < len(groups) - 1


_SCALARS = (str, int, float, bool, type(None))
#: Words of keys whose numbers are settings of a request, not what it asks for: a new number
#: there (per_page 5 and 10, a timeout, a retry count) is a cosmetic change, a new number
#: anywhere else (user_id, build, host, date) another target.
_SETTING_WORDS = frozenset(
    "limit per page size count timeout retry retries max min top take skip rows results num attempt attempts wait delay "
    "verbose debug pretty indent depth level width height quality".split()
)
#: Keys under which any change is cosmetic: a request's headers.
_COSMETIC_KEYS = frozenset({"headers", "header"})
_TARGET_DEPTH = 8  # levels of arguments read by same_target
_TARGET_FIELDS = 200  # fields read by same_target


def same_target(before: Any, after: Any) -> bool:
    """Whether two calls' arguments ask about the same thing, changed only cosmetically:
    options added or removed, a header or a flag (a boolean) changed, a number changed under
    a key that names a setting (``per_page``, ``limit``, ``timeout``), a text reworded
    within the same words (one word set holding the other), a list reordered, an id
    reformatted (``8f2c3b1e9a4d`` and ``8F2C3B1E-9A4D``), a phone number punctuated, a URL's
    trailing slash, a timestamp or a request identity. Any other changed value (an id, a
    name, a host, a date, a URL's path or fragment) is another target: fan-out."""
    left, right = _target_fields(before), _target_fields(after)
    if left.keys() != right.keys() and any(
        _names_credentials(path) or left.get(path) is _REAL_FLAG or right.get(path) is _REAL_FLAG for path in left.keys() ^ right.keys()
    ):
        return False  # another identity or a flag that changes what a command does, added or dropped
    for path, value in left.items():
        other = right.get(path, _ABSENT)
        if other is _ABSENT or other == value or _cosmetic_path(path):
            continue
        if type(value) is frozenset and type(other) is frozenset:
            if value <= other or other <= value:
                continue
            return False
        if type(value) is bool and type(other) is bool:
            continue
        if type(value) is str and type(other) is str:
            if value.isdigit() and other.isdigit() and _names_setting(path):
                continue
            if _same_number_other_prefix(value, other):
                continue
        return False
    return True


def _same_number_other_prefix(left: str, right: str) -> bool:
    """Whether two ids (as letters and digits) are one number with a letter prefix of at most
    two letters added or dropped: ``e004127`` and ``004127`` (an employee id written without
    its "E-"), not ``ord1001`` and ``inv1001``."""
    left_digits, right_digits = left.lstrip(_LETTERS), right.lstrip(_LETTERS)
    return (
        left_digits == right_digits
        and len(left_digits) >= 4
        and left_digits.isdigit()
        and (len(left) - len(left_digits) <= 2 and len(right) - len(right_digits) <= 2)
        and (len(left) == len(left_digits) or len(right) == len(right_digits))
    )


_LETTERS = "abcdefghijklmnopqrstuvwxyz"


#: Words of an argument or option that says whose identity a call runs with.
_CREDENTIAL_WORDS = frozenset(
    "context profile role as user username token kubeconfig credential credentials auth authorization key apikey "
    "account identity login password assume impersonate".split()
)


def _names_credentials(path: tuple[str, ...]) -> bool:
    return bool(path) and not _CREDENTIAL_WORDS.isdisjoint(split_name(path[-1].lstrip("-?#")))


#: Epoch times from 2001 to 2100, in seconds and in milliseconds.
_EPOCH_SECONDS, _EPOCH_MILLISECONDS = (1_000_000_000, 4_102_444_800), (1_000_000_000_000, 4_102_444_800_000)
#: Words of argument names that bound a time window (a time there is what is asked for), and
#: those that hold a time at all: a number there in the epoch ranges is a timestamp.
_TIME_BOUND_WORDS = frozenset("start end from to since until after before".split())
_TIME_ARGUMENT_WORDS = _TIME_BOUND_WORDS | {"time", "timestamp", "ts", "at"}


def _is_epoch(value: int) -> bool:
    """Whether an integer reads as an epoch time in seconds or milliseconds (2001 to 2100)."""
    return _EPOCH_SECONDS[0] <= value < _EPOCH_SECONDS[1] or _EPOCH_MILLISECONDS[0] <= value < _EPOCH_MILLISECONDS[1]


def _names_time_bound(path: tuple[str, ...]) -> bool:
    return bool(path) and not _TIME_BOUND_WORDS.isdisjoint(split_name(path[-1].lstrip("?")))


def _iso_instant(value: str) -> str | None:
    """An ISO 8601 date and time as the epoch second it names (``@1722470400``; a time without
    a zone is read as UTC), or ``None`` for anything else (a date alone stays a value)."""
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    try:
        return f"@{int(moment.timestamp())}"
    except (OverflowError, OSError, ValueError):
        return None


def _names_time(path: tuple[str, ...]) -> bool:
    return bool(path) and not _TIME_ARGUMENT_WORDS.isdisjoint(split_name(path[-1].lstrip("?")))


def _names_setting(path: tuple[str, ...]) -> bool:
    """Whether the last key of ``path`` names a setting by all its words (``per_page``,
    ``max_results``, ``timeout``; not ``page_id``, ``shoe_size`` or ``account_num``: those
    name an item)."""
    words = split_name(path[-1].lstrip("?")) if path else []
    return bool(words) and _SETTING_WORDS.issuperset(words)


def _cosmetic_path(path: tuple[str, ...]) -> bool:
    return not _COSMETIC_KEYS.isdisjoint(path)


def _target_fields(arguments: Any) -> dict[tuple[str, ...], Any]:
    """A call's arguments flattened for :func:`same_target`: key path (lowercased keys; a URL
    adds its ``#url`` and ``?parameter`` parts) -> a normalised value: a text with spaces as
    its word set, a list of values as their set, a boolean as it is, any other text or
    number as its lowercase letters and digits. Bounded: ``_TARGET_DEPTH`` levels, 50 items
    a level, ``_TARGET_FIELDS`` fields, 2,000 characters a text."""
    fields: dict[tuple[str, ...], Any] = {}
    _add_fields(arguments, (), 0, fields)
    return fields


def _add_fields(value: Any, path: tuple[str, ...], depth: int, fields: dict[tuple[str, ...], Any]) -> None:
    if len(fields) >= _TARGET_FIELDS or depth > _TARGET_DEPTH:
        return
    kind = type(value)
    if kind is dict:
        for key, item in islice(value.items(), 50):
            if not _is_identity(key):
                _add_fields(item, path + (str(key)[:NAME_LIMIT].lower(),), depth + 1, fields)
    elif kind is list:
        items = value[:50]
        if all(type(item) in _SCALARS for item in items):
            # A list of values is a set: its order is cosmetic, items added or removed are options.
            fields[path] = frozenset(_NOT_ALPHANUMERIC.sub("", str(item)[:200].lower()) for item in items)
            return
        if all(type(item) is dict for item in items):
            # A list of objects is a set too ([{"name": "date"}, {"name": "sessions"}] in either
            # order): each is compared by its place in their sorted order.
            items = sorted(items, key=lambda item: repr(sorted((str(key), repr(field)[:200]) for key, field in islice(item.items(), 20))))
        for index, item in enumerate(items):
            _add_fields(item, path + (str(index),), depth + 1, fields)
    elif kind is str:
        if ":" in value and len(value) <= 40 and value[:1].isdigit() and _names_time_bound(path):
            instant = _iso_instant(value)
            if instant is not None:
                fields[path] = instant  # a window's bound: 10:00Z and 10:00+00:00 are one time, 09:00 another
                return
        text = _without_embedded_volatile(value[:2000])
        stripped = text.strip()
        if "://" in stripped and " " not in stripped:
            try:
                parts = urlsplit(stripped)
                parameters = parse_qsl(parts.query)[:50]
            except ValueError:  # not a URL after all ("http://[::1")
                fields[path] = _NOT_ALPHANUMERIC.sub("", stripped.lower())
                return
            place = f"{parts.netloc}{parts.path.rstrip('/')}#{parts.fragment}".lower()
            fields[path + ("#url",)] = _NOT_ALPHANUMERIC.sub("", place)
            for name, item in parameters:
                if not _is_identity(name):
                    fields[path + ("?" + name[:NAME_LIMIT].lower(),)] = _NOT_ALPHANUMERIC.sub("", item.lower())
        elif " " in stripped and path and path[-1] in COMMAND_ARGUMENT_NAMES:
            _add_command_fields(text, path, fields)
        elif " " in stripped and not _FORMATTED_NUMBER.match(text) and not _grouped_id(stripped):
            fields[path] = frozenset(_WORD.findall(_INNER_DASH.sub("", text.lower())))
        else:  # a word, an id, or a number however it is punctuated ("+1 (555) 0100", "18,40")
            number = "" if _names_version(path) else _decimal_text(stripped)  # ("3.10" is no "3.1")
            fields[path] = number or _NOT_ALPHANUMERIC.sub("", text.lower())
    elif kind is bool:
        fields[path] = value
    elif kind is int and _is_epoch(value) and _names_time(path):
        # An epoch time: a window's bound is compared as the time it is ("start": 1722470400000
        # is 2024-08-01T00:00:00Z); any other stamp is blanked, as timestamps in texts are.
        fields[path] = f"@{value // 1000 if value >= _EPOCH_MILLISECONDS[0] else value}" if _names_time_bound(path) else ""
    elif kind is float:
        fields[path] = _number_text(value)  # 18.4 and "18.40" are one amount
    elif value is not None:
        fields[path] = _NOT_ALPHANUMERIC.sub("", str(value)[:200].lower())


# A decimal fraction as an agent may write it: "18.40", "18,40", "-3.5" (no thousands separators).
_DECIMAL = re.compile(r"-?\d{1,15}(?:\.\d{1,15}|,\d{1,2})")


#: A command flag that changes what the command does (see _add_command_fields).
_REAL_FLAG = "<flag>"
#: Flags that often are the fix after a failure: create parents, force, recurse, assume yes
#: (mkdir -p, rm -f, cp -r, apt-get -y, --force); other flags (ls -la, cat -n, curl -sS,
#: --no-progress) change what is printed or how, not whether the command can work.
_ACTION_FLAG_WORDS = frozenset(
    {"p", "parents", "f", "force", "r", "recursive", "y", "yes", "assume", "symbolic", "overwrite", "amend", "legacy", "insecure", "verify", "unsafe"}
)
_ACTION_FLAG_LETTERS = frozenset("pfrRy")
#: Programs whose -s is the fix, not silence (ln -s makes a symbolic link), and whose -i is
#: (sed -i edits in place); programs whose -f and -p follow or look back (kubectl logs -f).
_SYMBOLIC_S_PROGRAMS = frozenset({"ln"})
_IN_PLACE_PROGRAMS = frozenset({"sed", "perl"})
_FOLLOW_PROGRAMS = frozenset({"kubectl", "tail", "journalctl", "docker", "oc"})
#: Single-letter options whose word is an identity (curl -u user:pw, psql -U admin, ssh -i key),
#: and what a word carrying credentials says ("Authorization: Bearer ...").
_IDENTITY_LETTERS = frozenset("uU")
_CREDENTIAL_VALUE = re.compile(r"(?i)authorization|bearer |api[-_]?key|token|password|\.pem\b|id_rsa|id_ed25519")


def _action_flag(flag: str, program: str) -> bool:
    """Whether a command flag may change whether the command can work (``-p``, ``-rf``,
    ``--force``, ``-s`` for ``ln``, ``-i`` for ``sed``), not only what it prints or how."""
    if flag[:2] != "--" and not _long_single_dash(flag):
        letters = flag[1:]
        if program in _FOLLOW_PROGRAMS:
            letters = letters.replace("f", "").replace("p", "")
        return (
            not _ACTION_FLAG_LETTERS.isdisjoint(letters)
            or ("s" in letters and program in _SYMBOLIC_S_PROGRAMS)
            or ("i" in letters and program in _IN_PLACE_PROGRAMS)
        )
    return not _ACTION_FLAG_WORDS.isdisjoint(split_name(flag.lstrip("-")))


def _long_single_dash(flag: str) -> bool:
    """A long option written with one dash (terraform's ``-no-color``, find's ``-print``), not
    a cluster of letters (``-rf``, ``-lah``)."""
    return "-" in flag[1:] or len(flag) > 4


def _names_version(path: tuple[str, ...]) -> bool:
    return bool(path) and "version" in path[-1]


def _decimal_text(text: str) -> str:
    """A decimal fraction in one spelling (``"18.40"``, ``"18,40"`` and ``18.4`` are ``"18.4"``),
    or ``""`` for a text that is none."""
    if ("." not in text and "," not in text) or _DECIMAL.fullmatch(text) is None:
        return ""
    return _number_text(float(text.replace(",", ".")))


def _number_text(number: float) -> str:
    """A number as its digits, an integral one without a fraction (``18.0`` is ``"18"``, as an
    integer argument's digits are)."""
    return str(int(number)) if number.is_integer() else repr(number)


def _add_command_fields(command: str, path: tuple[str, ...], fields: dict[tuple[str, ...], Any]) -> None:
    """A shell command's fields for :func:`same_target`: each named option with a value
    (``--region eu-west-1``, ``-n prod``, an environment assignment ``AWS_PROFILE=ops``) and
    each flag (``-rn``, ``--no-progress``) as a field of its own, so that adding or dropping
    one, or changing a flag, is cosmetic while changing an option's value is another target;
    the words of the other tokens (program, subcommand, paths) as one word set."""
    options, rest = _command_parts(command)
    program = next((token.rsplit("/", 1)[-1].lower() for token in rest if token[:1] != "-" and "=" not in token), "")
    words = []
    for name, value in options:
        flag = ("-" if len(name) == 1 else "--") + name
        if _action_flag(flag, program):
            # (-p a/b may be -p taking a/b or the flag -p before a path: the flag counts either way)
            fields[path + (flag + "!",)] = _REAL_FLAG
        if len(name) == 1 and not _ASSIGNMENT.match(name):
            # Whether a single letter takes the next word cannot be told (curl -s URL): the
            # letter is a flag and the word stays with the others; a word that carries an
            # identity (-H "Authorization: ...", -u user:pw, -U admin, ssh -i key) is a real change.
            fields.setdefault(path + (flag,), True)
            words.append(value)
            if name in _IDENTITY_LETTERS or _CREDENTIAL_VALUE.search(value) is not None:
                fields[path + (flag + "@",)] = _REAL_FLAG
        elif not _is_identity(name) and not _is_volatile(value):
            fields[path + ("-" + name,)] = _decimal_text(value) or _NOT_ALPHANUMERIC.sub("", value.lower())
    for token in rest:
        if token[:1] == "-" and not token[1:2].isdigit():
            # A flag that may be the fix (mkdir -p, rm -f, --force, ln -s) changes what the
            # command does; another (ls -la, grep -i, curl -sS, --no-progress) is cosmetic. A
            # cluster of letters is read letter by letter (-rn and -rni differ by -i).
            for flag in [token] if token[:2] == "--" or _long_single_dash(token) else ["-" + letter for letter in token[1:]]:
                fields[path + (flag if len(flag) == 2 else flag.lower(),)] = _REAL_FLAG if _action_flag(flag, program) else True
        else:
            words.append(token)
    fields[path] = frozenset(_WORD.findall(_INNER_DASH.sub("", " ".join(words).lower())))


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
    """True for flat arguments with no text, range, throwaway key or volatile value.

    Runs on every new signature: one memoised dict lookup per key (``_KEY_KINDS``).
    """
    if type(arguments) is not dict:
        return False
    kinds = _KEY_KINDS
    for key, value in arguments.items():
        if (kinds.get(key) or _kind_of(key)).marks_shape:
            return False
        value_type = type(value)
        if value_type is str:
            if " " in value or (len(value) >= 10 and _is_volatile(value.strip())) or ("?" in value and "=" in value):
                return False  # text, a throwaway value, or a URL whose query may page
        elif value_type is not int and value_type is not bool and value is not None:
            return False
    return True


def _jaccard(left: frozenset[str], right: frozenset[str]) -> float:
    if not left and not right:
        return 1.0
    return len(left & right) / len(left | right)


#: Words a message needs to be compared for rewording (short status lines share too many).
MESSAGE_WORDS = 5
#: Word-set overlap with an earlier message that, after ``repeats`` messages in a row with no
#: tool call, counts as saying the same thing again.
MONOLOGUE_OVERLAP = 0.25
#: Share of the shorter message's words that, deep in a monologue, makes an announcement of
#: what the agent will do a restatement of an earlier announcement.
ANNOUNCEMENT_OVERLAP = 0.4
#: Share of an announcement's words, at most, that the agent had not written since the last
#: news, for it to restate rather than announce the next step.
ANNOUNCEMENT_NEW_WORDS = 0.4
#: The same share for a plan answered to a repeated nudge (see NearDuplicate.message): the
#: nudge already says the agent has not acted, so a plan restated in new words counts.
NUDGED_NEW_WORDS = 0.6
# A message (lowercased) that opens with a numbered part: "Part 3:", "Step 4 -", "Lesson 2".
_NUMBERED_PART = re.compile(r"(?:part|step|section|chapter|lesson|day|stage|phase|module|unit|question|exercise)\s*#?\d+\b")
_PART_INITIALS = frozenset("pscldmuqe")
# What an agent's message says when it announces its next action (lowercased text). A message
# that opens by saying an action is under way ("Placing the hold now", "Running screen_party
# for ...") or says "now executing" claims it acts, which with no tool call is an announcement.
# Only verbs of doing, in those places: "Looking at", "Meeting with" or "now passing" say no
# such thing ("now running" and "now starting" also say what state a job is in).
_ACTIONS_UNDER_WAY = r"placing|executing|calling|submitting|sending|booking|launching|triggering|initiating|retrying"
_ANNOUNCES = re.compile(
    r"\b(?:i['’]ll|i will|i am going to|i['’]m going to|let me|next,? i|now i|proceeding|i['’]m starting|"
    r"starting with|beginning with|kicking off|i['’]ll now|will now|i['’]m about to|now (?:" + _ACTIONS_UNDER_WAY + r")"
    r"|(?:i['’]m|i am) (?:now )?(?:running|" + _ACTIONS_UNDER_WAY + r")|(?:i['’]m|i am) now \w+ing"
    # Work said to be under way in the first person, the stalling replies of a chat agent
    # ("I'm just looking into whether ...", "I'm still checking for known faults").
    r"|(?:i['’]m|i am) (?:just |still |currently )?(?:checking|looking into|reviewing|investigating|verifying|finali[sz]ing|processing|retrieving|pulling up|generating|preparing))\b"
    r"|^\W*(?:starting|running|" + _ACTIONS_UNDER_WAY + r")\b"
    # Any verb under way said to be under way now: "Checking the logs now.", "Now checking the logs."
    r"|^\W*\w+ing\b[^.!?\n]{0,80}\bnow\b|^\W*now,? \w+ing\b"
)

#: A tool's work announced (in a lowercased message): a verb of it right after the announcing
#: words ("I'll run", "let me fetch", "I'm executing") or opening a sentence ("Running the
#: merge now."), not the same word inside content ("running costs").
_TOOL_WORK = re.compile(
    r"(?:\b(?:i['’]ll|i will|let me|i['’]m|i am|going to|about to|proceeding to)\s+(?:now\s+|go ahead and\s+)?|(?:^|[.!?:]\s+)\W*(?:now,?\s+)?)"
    r"(?:run|running|execut(?:e|ing)|call(?:ing)?|invok(?:e|ing)|fetch(?:ing)?|load(?:ing)?|quer(?:y|ying)|"
    r"download(?:ing)?|upload(?:ing)?|deploy(?:ing)?|install(?:ing)?|merg(?:e|ing)|submit(?:ting)?|retry(?:ing)?)\b"
    # A lookup said to be under way in the first person ("I'm still checking for known faults",
    # "let me quickly check whether ...", "I'm looking into the depot's scans").
    r"|\b(?:let me|i['’]m|i am|i['’]ll|i will)\s+(?:just\s+|still\s+|quickly\s+|now\s+|currently\s+)?"
    r"(?:check(?:ing)?|look(?:ing)? into|review(?:ing)?|investigat(?:e|ing)|verify(?:ing)?|retriev(?:e|ing)|pull(?:ing)? up)\b"
)
#: A plan offered for permission instead of carried out (in a lowercased message).
_ASKS_PERMISSION = re.compile(
    r"\b(?:(?:should|shall|can|may) i (?:go ahead|proceed|start|apply|make|change|edit|fix|update|implement|run|continue)"
    r"|(?:do|would) you (?:want|like) me to|(?:please )?confirm (?:and|that) i (?:should|can|will)|please confirm and"
    r"|await(?:ing)? your (?:go-ahead|approval|confirmation|ok|okay|permission)|once you (?:approve|confirm|give (?:me )?the go-ahead)"
    r"|is it (?:alright|all right|ok|okay) (?:if|to)|let me know if (?:i should|you want me to|it'?s (?:ok|okay|fine))"
    r"|with your (?:permission|approval)|do i have your (?:permission|approval|go-ahead)"
    # A plan put up for confirmation: "Does that sound right?", "Shall we go with that?"
    r"|(?:does|do|would) (?:that|this|it) (?:sound|look|seem) (?:right|good|ok|okay|correct|fine|reasonable)|shall we (?:go|proceed|do)"
    r"|is (?:that|this|it) (?:ok|okay|alright|all right|fine|correct|right|acceptable)\b|is (?:that|this) (?:the \w+ |what )you (?:want|expected|meant|had in mind)"
    r"|(?:does|did) (?:that|this) match what you)\b"
)

_MESSAGE_WORD = re.compile(r"\w+")
# Every ASCII byte that is not a letter, a digit or "_" becomes a space.
_ASCII_SEPARATORS = bytes(code if chr(code).isalnum() or code == ord("_") else ord(" ") for code in range(256))
_STOPWORDS_ASCII = frozenset(word.encode("ascii") for word in _STOPWORDS)


# A name that ends in a number, what a report is about: web-01, s05, inc4711, db_replica_2,
# node3; with a separator before the number, two digits or three letters before one, so that
# v2, s3, k8s and e2e (words of a plan, not items) are none.
_SUBJECT = re.compile(r"\b[a-z][a-z_-]*\d+\b", re.ASCII)
# Names with a number that are units, versions and percentiles, not items.
_NO_SUBJECT_NAMES = re.compile(r"(?:p\d+|sha\d+|md\d+|x86_64|amd64|arm64|ipv\d+|utf\d+|base\d+|int\d+|uint\d+|float\d+|py\d+|python\d+|win\d+|iso\d+|rfc\d+|h\d+|http\d|gpt\d|mp\d|tls\d|oauth\d)$")
_NO_SUBJECTS: frozenset[str] = frozenset()


def _subjects(text: str) -> frozenset[str]:
    """The items a message (lowercased) is about, in its first 600 characters: names that end in
    a number (see :func:`_is_subject`)."""
    head = text[:_ANNOUNCEMENT_READ]  # (what _Said keeps of each message)
    if _DIGIT_SET.isdisjoint(head):
        return _NO_SUBJECTS
    return frozenset([name for name in _SUBJECT.findall(head) if _is_subject(name)])


def _is_subject(name: str) -> bool:
    """Whether a name that ends in a number (see _SUBJECT) names an item: a separator before the
    number, two digits or three letters before one, and no unit, version or percentile."""
    digits = len(name) - len(name.rstrip("0123456789"))
    letters = name[:-digits]
    return (letters[-1] in "-_" or digits >= 2 or len(letters) >= 3) and _NO_SUBJECT_NAMES.match(name) is None


_DIGIT_SET = frozenset("0123456789")


def _message_words(text: str) -> frozenset[str] | frozenset[bytes]:
    """The content words of a message's first 600 characters (enough to tell a rewording), in
    any script (a CJK sentence is one word). ASCII text is split in C, as bytes: a regular
    expression scan costs several times more per character."""
    head = text[:600]
    if head.isascii():
        return frozenset(head.encode("ascii").translate(_ASCII_SEPARATORS).split()) - _STOPWORDS_ASCII
    return frozenset(_MESSAGE_WORD.findall(head)) - _STOPWORDS


class _Said:
    """What one agent wrote since the last news: its latest messages' word sets, how many of
    its messages reworded an earlier one, and how many came in a row with no tool call."""

    __slots__ = ("words", "subjects", "texts", "stems", "rewordings", "in_a_row")

    def __init__(self, window: int) -> None:
        self.words: deque[frozenset[str]] = deque(maxlen=window)
        self.subjects: deque[frozenset[str] | None] = deque(maxlen=window)  # the items each message is about, once read
        self.texts: deque[str] = deque(maxlen=window)  # their heads, read for announcements only when needed
        # Each message's stems (all its words, and those but the announcing words), once needed.
        self.stems: deque[tuple[frozenset[str], frozenset[str]] | None] = deque(maxlen=window)
        self.rewordings = 0
        self.in_a_row = 0

    def subjects_of(self, index: int) -> frozenset[str]:
        """The items message ``index`` is about (see :func:`_subjects`), read once."""
        found = self.subjects[index]
        if found is None:
            found = self.subjects[index] = _subjects(self.texts[index])
        return found

    def stemmed(self, index: int) -> tuple[frozenset[str], frozenset[str]]:
        """The stems of message ``index`` (see :func:`_stems`), computed once."""
        found = self.stems[index]
        if found is None:
            words = self.words[index]
            found = self.stems[index] = (_stems(words), _stems(words - _ANNOUNCEMENT_WORDS))
        return found


class NearDuplicate:
    name = "near_duplicate"

    def __init__(self, config: NearDuplicateDetector, memory: RunMemory | None = None) -> None:
        """``memory``: the session's run memory, read on rare paths that need the latest
        results (see :meth:`_given_texts`)."""
        self.reconfigure(config)
        self._memory = memory if memory is not None else RunMemory()
        # Each tool's latest calls: (shape, whether it re-read a range, the call's record, the
        # number of calls that changed state before it).
        self._recent: BoundedMap[str, deque[tuple[_Shape, bool, CallRecord, int]]] = BoundedMap(_TOOLS_REMEMBERED)
        # Calls that may have changed what reads return: a range read before the latest of them
        # no longer covers a read after it, and an answer got before it may differ after it.
        self._changes = 0
        self._ranges_read = False
        # Shapes by signature key, for calls whose signature has no result yet (their stats
        # are fresh on every call): identical calls in flight are read once.
        self._shapes: BoundedMap[int, _Shape] = BoundedMap(256)
        # The words of each agent's messages since the last news (a result that brought
        # something new, or a user message), and the news count they were written at.
        self._messages: BoundedMap[str, _Said] = BoundedMap(64)
        self._messages_at = 0
        self._last_speaker: tuple[str, int] | None = None  # (message pseudo-tool, actions then) of the latest message
        self._thoughts = 0  # calls to scratchpad tools (kind think) so far
        # What scratchpad calls wrote since the last news (lowercased heads): a plan restated
        # under a nudge may restate a thought (see message).
        self._thought_texts: deque[str] = deque(maxlen=_THOUGHTS_KEPT)
        self._user_message = ""  # the latest user message (items it names are given, see _given)
        # Copies in a row of the user's latest message with no tool call between, and the tool
        # calls (but to a scratchpad) made before the latest copy (see user_message_repeated).
        self._user_copies, self._actions_at_user_message = 0, -1
        # The tool calls (but to a scratchpad) made before the agent's latest message, or -1,
        # the messages since then (text and words), and the stems of those that announced work
        # ("I'm checking the network in your area now"), once a follow-up asked (see follows_up).
        self._said_at = -1
        self._said_since_call: deque[tuple[str, frozenset[Any]]] = deque(maxlen=_ANNOUNCEMENTS_KEPT)
        self._announced_stems: frozenset[str] | None = None
        # Each tool's latest call (its output arrives on the record), to tell a cursor followed,
        # and the digests of the pages that tools reached by cursors returned.
        self._previous: dict[str, CallRecord] = {}
        self._pages: BoundedMap[str, _Pages] = BoundedMap(_TOOLS_REMEMBERED)
        # The digests of the pages each paging sequence (a ranged call's arguments without the
        # range) read, to tell offsets that wrapped around to pages already read.
        self._range_pages: BoundedMap[int, _Pages] = BoundedMap(_TOOLS_REMEMBERED)
        # The calls that got each answer of calls with text arguments (see _same_answer).
        self._answers: BoundedMap[int, _Answer] = BoundedMap(ANSWERS_REMEMBERED)
        # The latest differently worded calls in a row, per structure, that got empty answers
        # (see _empty_answer).
        self._empty_answers: BoundedMap[tuple[Any, ...], _EmptyAnswers] = BoundedMap(EMPTY_QUESTIONS_REMEMBERED)
        # Each tool's latest calls in a row without text arguments, each the one before changed
        # only cosmetically, that got empty answers: [the latest's arguments, their signature
        # keys, the state change count at the first] (see _empty_again).
        self._empty_targets: BoundedMap[str, list[Any]] = BoundedMap(EMPTY_QUESTIONS_REMEMBERED)

    def reconfigure(self, config: NearDuplicateDetector) -> None:
        self.config = config
        # Read on every call: plain attributes (a pydantic attribute costs several times more).
        self._window, self._similarity, self._repeats, self._active = config.window, config.similarity, config.repeats, config.enabled
        self._message_similarity = config.message_similarity
        self._weight, self._pagination_score = config.weight, min(PAGINATION_SCORE, config.weight)

    def pending(self, record: CallRecord, memory: RunMemory) -> Signal | None:
        if record.tool_kind == "think":
            self._thoughts += 1  # (a scratchpad entry between an agent's messages is no action)
            arguments = record.signature.arguments
            if type(arguments) is dict:  # what the agent wrote down is said too, for a nudged plan
                self._thought_texts.append(" ".join(value for value in arguments.values() if type(value) is str)[:_ANNOUNCEMENT_READ].lower())
        paging = self._follows_cursor(record)
        stats = record.stats
        shape = stats.arguments_shape  # read once per signature: arguments never change
        if shape is None:
            shape = stats.arguments_shape = self._read(record)
            if shape is not _PLAIN:
                stats.same_call = _same_call(record)
        if shape is _PLAIN:
            return paging  # exact values only: a near-duplicate would be an identical call, the repeat detector's job
        tool = record.signature.tool
        recent = self._recent.get(tool)
        if recent is None or recent.maxlen != self._window:
            recent = deque(recent or (), maxlen=self._window)
            self._recent.put(tool, recent)
        # Only calls of the same structure compare; it records whether there is a range, so
        # either all of them have one or none has.
        structure, span = shape.structure, shape.span
        if span is not None:
            self._ranges_read = True
            words = shape.words  # (a range with another query is another sequence)
            same = [entry for entry in recent if entry[0].structure == structure and entry[0].words == words]
            return self._ranged(record, shape, span, same, recent) or paging
        similar = 1
        signatures = {shape.signature}
        words, similarity = shape.words, self._similarity
        options = shape.options
        same_call = stats.same_call
        for earlier, _, earlier_record, _ in recent:
            # (Calls alike but for a request's identity or a cache buster are one call made anew.)
            earlier_same_call = earlier_record.stats.same_call
            if (earlier.structure == structure and _jaccard(earlier.words, words) >= similarity) or (
                (same_call is not None and (same_call == earlier_same_call or same_call == earlier_record.signature.key))
                or (earlier_same_call is not None and earlier_same_call == record.signature.key)
            ):
                if options and earlier.options and _option_changed(earlier.options, options):
                    continue  # the same command for another region, namespace or project: fan-out
                if shape.hosts != earlier.hosts and shape.hosts and earlier.hosts:
                    continue  # the same command against another host: fan-out
                similar += 1
                signatures.add(earlier.signature)
        recent.append((shape, False, record, self._changes))
        # (A check that failed and then passed, its latest result moved on from a failure, is
        # run again to verify: no rewording that brings nothing.)
        if self._active and similar >= self._repeats and len(signatures) >= 2 and not (stats.failures == {} and stats.advancing):
            return self._reworded(record, similar, f"{tool} is called {similar} times with arguments that differ only in wording or throwaway values")
        return paging

    def message(self, record: CallRecord, text: str, memory: RunMemory) -> Signal | None:
        """Judge an agent's message (``record`` is its pseudo-call ``message:AGENT``).

        A message of at least :data:`MESSAGE_WORDS` words whose word set overlaps one the agent
        wrote since the last news by at least ``message_similarity`` rewords it; after
        ``repeats`` messages in a row with no tool call and no other agent's message between (a
        monologue: the agent says what it will do and never does it), an overlap of
        :data:`MONOLOGUE_OVERLAP` is enough. Either can only repeat what is known
        (``record.repeats_known``). ``repeats`` messages that are one message and its
        rewordings make a ``reworded_message`` signal.
        """
        if memory.novel_results != self._messages_at:
            self._messages.clear()  # news since: earlier messages no longer count
            self._thought_texts.clear()
            self._messages_at = memory.novel_results
        tool = record.signature.tool
        said = self._messages.get(tool)
        if said is None:
            said = _Said(self._window)
            self._messages.put(tool, said)
        # In a row: no tool call (but to a scratchpad) and no other agent's message since the
        # agent's previous message (record.index counts the run's tool calls).
        speaker = (tool, record.index - self._thoughts)
        said.in_a_row = said.in_a_row + 1 if self._last_speaker == speaker else 1
        self._last_speaker = speaker
        words = _message_words(text)
        # The messages since the latest tool call, read for announcements only if a follow-up
        # comes (see follows_up).
        if self._said_at != speaker[1]:
            self._said_at, self._said_since_call = speaker[1], deque(maxlen=_ANNOUNCEMENTS_KEPT)
        self._said_since_call.append((text, words))
        self._announced_stems = None
        subjects = None  # (read only when a rewording is in question: a scan of the message)
        if len(words) >= MESSAGE_WORDS:
            overlaps = [_jaccard(earlier, words) for earlier in said.words]
            alike: Sequence[int] = range(len(overlaps))
            if overlaps and (max(overlaps) >= MONOLOGUE_OVERLAP or said.in_a_row >= self._repeats):
                # A report about another item ("Checked web-02: ...", "Sample S02: ...") is no
                # rewording of the one before, however alike their words.
                subjects = _subjects(text)
                if subjects:
                    alike = [index for index in alike if not (earlier := said.subjects_of(index)) or not subjects.isdisjoint(earlier)]
            overlap = max((overlaps[index] for index in alike), default=0.0)
            # A message rewords an earlier one, or, deep in a monologue, says much the same thing
            # again (paraphrases of one plan share few words; sections of a write-up share fewer),
            # or announces again what an earlier announcement said it would do (a restated plan
            # shares the plan's nouns; a write-up's sections announce nothing).
            rewords = overlap >= self._message_similarity or (said.in_a_row > self._repeats and overlap >= MONOLOGUE_OVERLAP)
            if not rewords and said.in_a_row >= self._repeats and _announces(text):
                # (Only deep in a row of messages: the scan for an announcement costs.)
                # Restated, not the next step announced: it says little that the agent has not said
                # (a tutor's or a builder's next step brings its own words).
                # Words are compared by their stems: "placing the hold" restates "place the hold".
                plan = _stems(words - _ANNOUNCEMENT_WORDS)  # (two "I'll now ..." share those words whatever they announce)
                earlier = [said.stemmed(index) for index in alike]
                said_before = frozenset().union(*(stems for stems, _ in earlier))
                rewords = bool(earlier) and len(plan - said_before) <= ANNOUNCEMENT_NEW_WORDS * len(plan) and any(
                    _overlap(earlier_plan, plan) >= ANNOUNCEMENT_OVERLAP and _announces(said.texts[index])
                    for (_, earlier_plan), index in zip(earlier, alike)
                )
        elif words and said.in_a_row >= self._repeats and said.words and _announces(text):
            # A short announcement deep in a row of messages ("Let me check the logs now."): it
            # restates when every word it has besides the announcing ones was said since the news.
            plan = _stems(words - _ANNOUNCEMENT_WORDS)
            rewords = bool(plan) and plan <= frozenset().union(*(said.stemmed(index)[0] for index in range(len(said.words))))
        else:
            rewords = False
        if not rewords and self._user_copies >= 2 and speaker[1] == self._actions_at_user_message and said.words and _announces(text):
            # The same nudge again, answered by a plan that says much of what the agent said
            # since the nudge began, with no tool call: the plan restated (a tutor's next part,
            # announced after each "continue", brings its own words).
            plan = _stems(words - _ANNOUNCEMENT_WORDS)
            said_before = frozenset().union(
                *(said.stemmed(index)[0] for index in range(len(said.words))), *(_stems(_message_words(thought)) for thought in self._thought_texts)
            )
            # An agent that has used tools and answers the nudge by announcing a tool's work
            # ("Running the FX merge now", "I'm executing the merge cell") instead of calling one
            # does not act, whatever it names; other announcements (a tutor's or a writer's next
            # part: "Let me give you a proportion one now") restate only what was said.
            # (A message that puts a new question to the user, a tutor's next exercise, asks for
            # an answer the nudge brings: no plan restated. "Does that sound right?" asked again
            # is no new question.)
            rewords = bool(plan) and (
                (speaker[1] > 0 and _TOOL_WORK.search(text, 0, _ANNOUNCEMENT_READ) is not None)
                or (len(plan - said_before) <= NUDGED_NEW_WORDS * len(plan) and not _asks_anew(text, said_before))
            )
        if not rewords and self._user_copies >= 2 and speaker[1] == self._actions_at_user_message and said.words and _ASKS_PERMISSION.search(text, 0, _ANNOUNCEMENT_READ):
            # Permission asked again under the same nudge ("Shall I proceed with ...?", "Do you
            # want me to ...?"), with no tool call: whatever it names, it waits for an answer
            # the nudge ("whatever approach you think is suitable") will not give.
            rewords = True
        if rewords and text[:1] in _PART_INITIALS and (part := _NUMBERED_PART.match(text)) is not None:
            # A numbered part not given before ("Part 3:", "Step 4:") is the next part of a lesson
            # or a recipe, however much it shares with the parts before and whatever it announces.
            rewords = any(part.group() == earlier[: len(part.group())] for earlier in said.texts)
        said.words.append(words)
        said.subjects.append(subjects)  # (None: read from the text when a later message asks)
        said.texts.append(text[:_ANNOUNCEMENT_READ])
        said.stems.append(None)
        record.repeats_known = rewords
        if not rewords:
            return None
        said.rewordings += 1
        similar = said.rewordings + 1  # the rewordings and what they reword
        if not self._active or similar < self._repeats:
            return None
        return Signal(
            self.name,
            "reworded_message",
            self._weight,
            f"{record.agent or 'the agent'} has said the same thing {similar} times since anything new happened, without acting on it",
            {"call": record.index, "similar_messages": similar},
        )

    def result(self, record: CallRecord, changed: bool) -> Signal | None:
        """A call's result is in (the session calls this before no_progress reads it; ``changed``:
        the call may have changed what later reads return, see ``Session.after_call``).

        * A page read through a new range that says what a page of the same paging sequence
          said before, its position fields aside, marks the call ``repeats_known`` (offsets
          that wrapped around). Runs only once a range was read.
        * A call with text arguments (a query, a task) whose answer is the one a differently
          worded call of the tool with the same other arguments got since the latest change,
          the wording echoed and relevance scores aside, marks the call ``repeats_known`` and
          ``same_answer``; ``repeats`` such calls make a ``reworded_call`` signal (a reworded
          search that keeps finding the same articles, a delegation reworded that gets the
          same refusal).
        * A call that changed state ends the coverage of the ranges read before it, and
          forgets the pages of the sequences it may have changed.
        """
        observation = record.observation
        if observation is None:
            return None
        signal = None
        if self._ranges_read and record.sequence is not None and not record.repeats_known and not observation.error and not observation.empty:
            self._read_page(record, observation)
        elif not observation.error and not observation.empty and len(observation.text) >= ANSWER_MIN_LENGTH:
            shape = record.stats.arguments_shape
            if shape is not None and shape.words and shape.span is None:
                signal = self._same_answer(record, shape, observation)
        elif observation.empty and not observation.error:
            shape = record.stats.arguments_shape
            if shape is not None and shape.words and shape.span is None:
                signal = self._empty_answer(record, shape)
            elif shape is not None and shape.span is None and record.sequence is None:
                signal = self._empty_again(record)
        if self._empty_targets and not (observation.empty and not observation.error):
            self._empty_targets.pop(record.signature.tool, None)  # the tool answered something
        if self._empty_answers and not (observation.empty and not observation.error):
            shape = record.stats.arguments_shape
            if shape is not None and shape.words:
                self._empty_answers.pop(_question(shape.structure), None)  # an answer at last: the question was worth rewording
        if changed:
            self._changes += 1  # an edit: what was read may read otherwise now
            if self._range_pages:
                self._forget_pages(resources(record))
        return signal

    def _same_answer(self, record: CallRecord, shape: _Shape, observation: Observation) -> Signal | None:
        """See :meth:`result` (a call with text arguments and a substantial answer)."""
        text_keys = shape.structure[2]
        if not COMMAND_ARGUMENT_NAMES.isdisjoint(text_keys):
            return None  # other commands are other questions (a config read on each host)
        arguments = record.signature.arguments
        echoes = [arguments[key].lower() for key in text_keys if type(arguments.get(key)) is str and len(arguments[key]) >= 8]
        body = _answer_body(observation.text, echoes)
        if observation.end:
            body = f"{body}\x01{_answer_body(observation.end, echoes)}"
        # Answers are found by their skeleton (no digits, hex letters or spaces) and told apart,
        # when skeletons meet, by their text without the fields that stamp a response (request
        # ids, timings): other digits are data (another month's sums, another address's
        # coordinates). The field scan runs only for answers that look alike.
        digest = hash((shape.structure, skeleton_digest(body)))
        answer = self._answers.get(digest)
        key = record.signature.key
        if answer is None or answer.changes != self._changes:
            self._answers.put(digest, _Answer(key, shape.words, self._changes, body))
            return None
        calls = answer.calls
        if key in calls:
            return None  # the same call again: the repeat detector's and no_progress's own case
        # Rewordings of one question share some of its words; unrelated tasks that get the same
        # acknowledgement do not.
        if not any(_overlap(words, shape.words) >= ANSWER_OVERLAP for words in answer.words):
            return None
        if body != answer.body:
            if answer.unstamped is None:
                answer.unstamped = _without_response_stamps(answer.body)
            if _without_response_stamps(body) != answer.unstamped:
                # Another answer that looks alike (other prices, other counts): it is the one
                # later rewordings are compared with.
                self._answers.put(digest, _Answer(key, shape.words, self._changes, body))
                return None
        if len(calls) < ANSWERS_COUNTED:
            calls.add(key)
            answer.words.append(shape.words)
        record.repeats_known = True
        record.same_answer = digest
        if not self._active or len(calls) < self._repeats:
            return None
        return self._reworded(record, len(calls), f"{record.tool} got the same answer to {len(calls)} differently worded calls")

    def _empty_answer(self, record: CallRecord, shape: _Shape) -> Signal | None:
        """A call with text arguments got an empty answer: ``repeats`` + 1 differently worded
        calls of one question in a row (the same tool and other arguments, no state changed
        between) that all got empty answers make a ``reworded_call`` signal: a help-centre
        search reworded again and again that finds nothing. Each text must share a quarter of
        its words with an earlier one, name no number the first did not (an order, a model),
        and be no other item of a template: a text that is an earlier one with one stretch of
        words replaced ("how to export invoices", "how to export contacts"; "crash when
        uploading avatar", "crash when exporting pdf") asks about another item, and a
        search for each that finds none of them is a fan-out, when the item is given (see
        :meth:`_other_item`)."""
        if not COMMAND_ARGUMENT_NAMES.isdisjoint(shape.structure[2]):
            return None  # other commands are other questions
        key = record.signature.key
        texts = _texts(record.signature.arguments, shape.structure[2])
        tokens = tuple(_TOKEN.findall(" ".join(texts)[:_NAMES_READ].lower()))
        names = _named_items(texts)
        question = _question(shape.structure)
        streak = self._empty_answers.get(question)
        if streak is None or streak.changes != self._changes or not names <= streak.names or self._other_item(tokens, texts, streak.tokens):
            self._empty_answers.put(question, _EmptyAnswers(key, shape.words, tokens, names, self._changes))
            return None
        calls = streak.calls
        if key in calls or len(calls) >= ANSWERS_COUNTED or len(streak.words) >= 2 * ANSWERS_COUNTED:
            return None  # the same call again: the repeat detector's and no_progress's own case
        mine = shape.words
        if "select" in mine:
            # A query's keywords are shared by every query: its tables, columns and values say
            # what it asks (five data checks over five tables that find nothing are five checks).
            mine = mine - _SQL_WORDS
            related = any(_overlap(words - _SQL_WORDS, mine) >= ANSWER_OVERLAP for words in streak.words)
        else:
            related = any(_overlap(words, mine) >= ANSWER_OVERLAP for words in streak.words)
        streak.words.append(shape.words)
        streak.tokens.append(tokens)
        if not related:
            # Words no earlier wording shares ("annual leave carry forward" after "PTO carryover
            # policy"): not counted, but kept, so a later wording may share them.
            return None
        return self._nothing_found(record, calls, "differently worded calls of one question in a row")

    def _empty_again(self, record: CallRecord) -> Signal | None:
        """A call without text arguments got an empty answer: ``repeats`` + 1 calls of the tool
        in a row, each the one before sent again with cosmetic changes only (see
        :func:`_resubmitted`), no state changed between, all answered with nothing, make a
        ``reworded_call`` signal (a report resubmitted with its fields reordered and no-op
        options). Another target (an id, a date, a region) starts over: a fan-out that finds
        nothing for several items is healthy."""
        tool, arguments, key = record.signature.tool, record.signature.arguments, record.signature.key
        streak = self._empty_targets.get(tool)
        if streak is None or streak[2] != self._changes or not _resubmitted(streak[0], arguments) or _names_given_uuid(streak[0], arguments, self._given_texts):
            self._empty_targets.put(tool, [arguments, {key}, self._changes])
            return None
        streak[0] = arguments
        calls = streak[1]
        if key in calls or len(calls) >= ANSWERS_COUNTED:
            return None  # the same call again: the repeat detector's and no_progress's own case
        return self._nothing_found(record, calls, "calls in a row that differ only cosmetically")

    def _nothing_found(self, record: CallRecord, calls: set[int], what: str) -> Signal | None:
        """Count the call among ``calls`` (signature keys of calls that all got empty answers);
        ``repeats`` + 1 of them make the ``reworded_call`` signal, ``what`` naming them."""
        calls.add(record.signature.key)
        if not self._active or len(calls) < self._repeats + EMPTY_REWORDINGS_EXTRA:
            return None
        return self._reworded(record, len(calls), f"{record.tool} found nothing for {len(calls)} {what}")

    def _reworded(self, record: CallRecord, similar: int, message: str) -> Signal:
        """The ``reworded_call`` signal for ``record``, one of ``similar`` calls alike."""
        return Signal(self.name, "reworded_call", self._weight, message, {"call": record.index, "similar_calls": similar})

    def _other_item(self, tokens: tuple[str, ...], texts: tuple[str, ...], streak: list[tuple[str, ...]]) -> bool:
        """Whether a text (``tokens``, read from ``texts``) asks about another item than the
        streak's texts: an earlier text with one stretch replaced (see :func:`replaced_stretch`),
        not only words left out or added.
        A stretch in the place of an action, first or after "to" / "I" / "you" / "we" with
        words kept after it ("reset 2FA without phone", "disable 2FA without phone"; "how do
        I cancel / end / terminate my subscription"), is the same question asked with another
        verb, unless it names an item (a number, a name) or the run was given its words (the
        latest user message or a recent answer names them all: "pause or cancel my plan")."""
        given: list[str] | None = None
        for earlier in streak:
            kept = replaced_stretch(tokens, earlier)
            if kept is None:
                # Several stretches replaced: another item when the new words name one and the
                # run was given them all ("contact Jonas Weber at Siemens" after "contact Anna
                # Müller at Bosch", both in the user's list).
                new = tuple(word for word in tokens if word not in earlier)
                if new and _names_item(new, texts):
                    if given is None:
                        given = self._given_texts()
                    if _given(new, given):
                        return True
                continue
            start, end = kept
            stretch = tokens[start : len(tokens) - end]
            if not stretch or start + end == len(earlier):
                continue  # words left out or added ("PTO carryover", "PTO carryover policy"): narrowed or widened
            if not end or (start and tokens[start - 1] not in _ACTION_FRAME) or _names_item(stretch, texts):
                return True
            if given is None:
                given = self._given_texts()
            if _given(stretch, given):
                return True
        return False

    def _given_texts(self) -> list[str]:
        """The latest user message and the latest results with something in them, lowercased."""
        texts = [self._user_message.lower()]
        for record in self._memory.recent:
            observation = record.observation
            if observation is not None and not observation.empty and not observation.error:
                texts.append(observation.text.lower())
        return texts

    def _read_page(self, record: CallRecord, observation: Observation) -> None:
        """Remember the page a ranged call read; mark the call ``repeats_known`` when its paging
        sequence read that page before (since the latest change to what it names, see
        ``_forget_pages``)."""
        shape = record.stats.arguments_shape
        assert shape is not None and record.sequence is not None
        text = observation.text
        pages = self._range_pages.get(record.sequence)
        if pages is None:
            pages = _Pages()
            # What a change must name to make these pages read otherwise (a range inside a
            # command or a URL names nothing that can be told: any change does).
            pages.values = resources(record) if shape.range_keys else None
            # The fields that say where a page is are found on the first page, once: the
            # sequence's later pages are read for the same fields only.
            pages.positions = _position_fields(f"{text}\n{observation.end}" if observation.end else text)
            self._range_pages.put(record.sequence, pages)
        positions = pages.positions
        if positions is None and not observation.end:
            # Without the response's own stamps (a clamped page served again has a new date and
            # request id), which only a printed response or quoted fields can hold.
            page = hash(_page_body(text, ())) if text[:5] in ("HTTP/", "http/") or '"' in text or "'" in text else observation.exact
        else:
            # Without positions and the response's own stamps (request ids); a longer page by its
            # head, its end and its middle (see Observation.middle).
            positions = positions or ()
            head, end = _page_body(_without_fields(positions, text), ()), _page_body(_without_fields(positions, observation.end), ())
            if observation.end:
                # Compared away from their fixed-length cuts: positions and stamps differ by a few
                # characters, near the start (an offset echoed in a header, a rate limit left) or
                # near the end (the next offset); the middle, read both ways, covers either.
                head, end = head[:_RANGE_ALIGNED_HEAD], end[-_RANGE_ALIGNED_END:]
                from_start, from_end = observation.middle
                if pages.known_either(hash((head, end, from_start)), hash((head, end, from_end))):
                    record.repeats_known = True
                return
            page = hash((head, end))
        if pages.known(page):
            record.repeats_known = True  # a new range, a page already read: the offsets wrapped

    def _forget_pages(self, names: frozenset[str]) -> None:
        """A call that names ``names`` changed state: forget the pages of the paging sequences
        it may have changed (those that name one of them, such as a path; all when it names
        nothing)."""
        for sequence, pages in list(self._range_pages.items()):
            if pages.values is None or not names or not names.isdisjoint(pages.values):
                del self._range_pages[sequence]

    def _follows_cursor(self, record: CallRecord) -> Signal | None:
        """The pagination signal when the call follows a cursor from the tool's previous output
        (see the module docstring); a page reached through a wrapped cursor marks the call
        ``repeats_known``. Cost: two dict operations for most calls, one pass over the
        arguments when the previous call of the tool had a non-empty output."""
        # The tool's previous call, or for a shell command the previous of its operation: the
        # next page's listing follows the listing, whatever commands processed the page between.
        stats = record.stats
        tool = stats.operation
        if tool is None:  # (read once per signature)
            tool, arguments = record.signature.tool, record.signature.arguments
            if type(arguments) is dict and not arguments.keys().isdisjoint(COMMAND_ARGUMENT_NAMES):
                tool = operation_of(tool, arguments)
            stats.operation = tool
        previous_calls = self._previous
        previous = previous_calls.pop(tool, None)
        previous_calls[tool] = record  # (popped first, so the oldest entry is the tool called least lately)
        if previous is None:
            if len(previous_calls) > _TOOLS_REMEMBERED:
                del previous_calls[next(iter(previous_calls))]  # bounded: tool names come from the agent
            return None
        observation = previous.observation
        if observation is None or observation.error or record.tool_kind in _NEVER_PAGES:
            return None
        arguments, before = record.signature.arguments, previous.signature.arguments
        if type(arguments) is not dict or type(before) is not dict or not 0 <= len(arguments) - len(before) <= 1:
            return None
        # One value changed, or one key added, and nothing else: a cursor followed, when the new
        # text in it is a token of the previous output.
        changed = _ABSENT
        for key, value in arguments.items():
            if before.get(key, _ABSENT) != value:
                if changed is not _ABSENT:
                    return None
                changed, old = value, before.get(key, _ABSENT)
        if changed is _ABSENT:
            return None
        text, end = observation.text, observation.end
        if type(changed) is str and "?" not in changed and "&" not in changed and "://" not in changed:
            # The usual case, with no call: the value itself, when it occurs in the output at all.
            if changed not in text and (not end or changed not in end):
                return None
            candidates: Any = (changed,) if _could_be_cursor(changed) else ()
        else:
            candidates = _new_text(changed, old, 0)
        cursor = None
        for candidate in candidates:
            if (candidate in text and _holds_token(text, candidate)) or (end and candidate in end and _holds_token(end, candidate)):
                if cursor is not None:
                    return None  # two values from the output: no one cursor
                cursor = candidate
        if cursor is None:
            return None
        if observation.empty and (_says_last_page(text) or (end and _says_last_page(end))):
            # An empty page said it was the last (has_more: false) and still handed out a cursor:
            # the call pages past the end. Alone a context signal; with no_progress (its empty
            # pages) an escalation.
            return self._cursor_signal(record, cursor, "a page that said it was the last")
        if observation.empty:
            return None  # (an event stream polled with since-tokens follows cursors from empty answers too)
        pages = self._pages.get(tool)
        if pages is None:
            pages = _Pages()
            self._pages.put(tool, pages)
        # The page the cursor came from, without the cursors in it (the one it was asked with,
        # which APIs echo, and the next) or the response's own stamps: a wrapped cursor's pages
        # say the same as before around new cursors and request ids.
        cursors = (cursor,) if pages.cursor is None or previous.index != pages.cursor_call else (cursor, pages.cursor)
        if end:
            # A long page is read by its head and its end, cut at fixed lengths: cursors of
            # another length shift the cuts, so each part is compared 64 characters away from
            # its cut (the part between is not compared).
            page = hash((_page_body(text, cursors)[:_ALIGNED_HEAD], _page_body(end, cursors)[-_ALIGNED_END:]))
        else:
            page = hash(_page_body(text, cursors))
        pages.cursor, pages.cursor_call = cursor, record.index
        # A wrap returns to an earlier page after other pages; pages alike in a row ("matched 0
        # of 1000") are pages that look alike, not a wrap.
        wrapped = pages.known(page) and page != pages.latest
        pages.latest = page
        # The tool's pages reached by cursors are one paging sequence for no_progress: pages
        # read again through wrapped cursors keep one streak, whatever is done with each page
        # between (appended to a file), and a new page ends it.
        record.sequence = hash((tool, _CURSOR_SEQUENCE))
        if not wrapped:
            return None
        record.repeats_known = True  # the cursor leads where it led before
        # Only a wrapped cursor is reported: following a value from the previous output is also
        # how agents follow references, and that must not escalate with other calls' no_progress.
        return self._cursor_signal(record, cursor, "a page it had read before")

    def _cursor_signal(self, record: CallRecord, cursor: str, page: str) -> Signal | None:
        """The pagination context signal for a call that follows the cursor of ``page``."""
        if not self._active:
            return None
        return Signal(
            self.name, "pagination", self._pagination_score, f"{record.tool} follows the cursor of {page}", {"call": record.index, "cursor": cursor[:40]}
        )

    def news(self, message: str = "") -> None:
        """A user message (``message``, its text): the agent's earlier messages no longer count
        as said since the last news, and a question reworded after it is asked with what the
        user said."""
        self._messages.clear()
        self._empty_answers.clear()
        self._user_copies = 1
        self._thought_texts.clear()
        self._user_message = message

    def follows_up(self, message: str, actions: int) -> bool:
        """Whether a user message only follows up on work the agent announced and has not done
        since (``actions``: the tool calls so far but to a scratchpad): the agent has used
        tools, a message of its since its latest tool call announced work without asking
        anything, and the message,
        short and with no figure, says nothing but what the announcements said and words of
        asking after it ("ok and?", "hello??", "Did it go through? I don't see any email yet.",
        "You keep saying that. Please actually book it."). A correction or an answer ("3
        please", "no, the other order", "mornings only") is news."""
        if not 0 < actions == self._said_at or len(message) > FOLLOW_UP_LENGTH or HAS_DIGIT.search(message):
            return False
        said = self._announced_stems
        if said is None:
            # (A question put to the user awaits its answer: a message that asks one announces nothing.)
            announced = [words for text, words in self._said_since_call if "?" not in text[-200:] and _announces(text)]
            said = self._announced_stems = _stems(frozenset().union(*announced)) | _FOLLOW_UP_STEMS if announced else frozenset()
        return bool(said) and _stems(_message_words(message.lower())) <= said

    @property
    def thoughts(self) -> int:
        """Calls to scratchpad tools (kind ``think``) so far."""
        return self._thoughts

    def user_message_repeated(self, actions: int) -> None:
        """The user's message again, with no tool call (but to a scratchpad) since its previous
        copy (a harness's "Please continue working on the task" nudge; ``actions``: tool calls
        so far but to a scratchpad): no news (see the session)."""
        self._user_copies += 1
        self._actions_at_user_message = actions

    def _read(self, record: CallRecord) -> _Shape:
        """What the arguments of a call with this signature say (``_PLAIN`` or their shape)."""
        if _plain(record.signature.arguments):
            return _PLAIN
        key = record.signature.key
        shape = self._shapes.get(key)
        if shape is None:
            shape = shape_of(record, self._given_texts)
            self._shapes.put(key, shape)
        return shape

    def _ranged(
        self,
        record: CallRecord,
        shape: _Shape,
        span: tuple[float, float],
        same: list[tuple[_Shape, bool, CallRecord, int]],
        recent: deque[tuple[_Shape, bool, CallRecord, int]],
    ) -> Signal | None:
        """A call with a range, given the recent calls that differ from it only in their range
        (``same``; those since the latest state change are ``earlier``). A poll's range is
        where it waits for news (getUpdates at one offset): no re-read."""
        record.sequence = shape.sequence
        changes = self._changes
        # (Entries are in call order and the count only grows: when the oldest has the current
        # count, all have.)
        earlier = same if not same or same[0][3] == changes else [entry for entry in same if entry[3] == changes]
        reread = _inside(span, [entry[0].span for entry in earlier]) if earlier and record.tool_kind != "poll" else False  # type: ignore[misc]
        if reread:
            record.repeats_known = True  # its result can only repeat what was read (no_progress)
        recent.append((shape, reread, record, self._changes))
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
        if same and same[-1][2].stale and span != same[-1][0].span:  # type: ignore[index]
            # Paging on from a page that brought nothing new (empty, or read before): alone
            # healthy, past the end of the data with no_progress. Paging on from a page with
            # news says nothing, even while other calls' results are stale. On, in either
            # direction: a wrapped sequence's next offset points back.
            # Healthy paging is common: this signal is built positionally from prepared parts.
            return Signal(
                self.name,
                "pagination",
                self._pagination_score,
                f"{record.signature.tool} pages {'forward' if span[0] >= same[-1][0].span[1] else 'on'} ({shape.span_text})",
                {"call": record.index, "range": list(span)},
            )
        return None


_ABSENT = object()
_CURSOR_SEQUENCE = "pages reached by cursors"  # (see _follows_cursor)


class _Answer:
    """The calls of one tool that got one answer (see ``NearDuplicate._same_answer``), the
    words of their texts, and the run's state change count ``changes`` when it was first got."""

    __slots__ = ("calls", "words", "changes", "body", "unstamped")

    def __init__(self, call: int, words: frozenset[str], changes: int, body: str) -> None:
        self.calls = {call}
        self.words = [words]
        self.changes = changes
        self.body = body  # the first answer as _answer_body reads it
        self.unstamped: str | None = None  # the body without response stamps, once another answer looks alike


class _EmptyAnswers:
    """Differently worded calls of one question in a row that got empty answers (see
    ``NearDuplicate._empty_answer``): their signature keys, word sets and token sequences,
    the numbers the first named, and the run's state change count when the first was made."""

    __slots__ = ("calls", "words", "tokens", "names", "changes")

    def __init__(self, call: int, words: frozenset[str], tokens: tuple[str, ...], names: frozenset[str], changes: int) -> None:
        self.calls = {call}
        self.words = [words]
        self.tokens = [tokens]
        self.names = names
        self.changes = changes


# A word with a digit in it ("X-200", "INV-88213"): it names an item when it has two digits
# or more ("2FA" and "2-step" are terms).
_NAMED_ITEM = re.compile(r"[\w-]*\d[\w-]*")
_TOKEN = re.compile(r"\w+")


def _resubmitted(before: Any, after: Any) -> bool:
    """Whether ``after`` is ``before`` sent again with cosmetic changes only: every value both
    give is the same (a list, of objects too, in any order), and they share a value that is no
    flag; options may be added or dropped, and swapped for others only beside at least
    :data:`_RESUBMITTED_SHARED` shared values that are no flags (a report's property, dates,
    dimensions and filter, padded otherwise each time; not one of a checklist's filters for
    another)."""
    left, right = _target_fields(before), _target_fields(after)
    common = left.keys() & right.keys()
    if not all(left[path] == right[path] for path in common):
        return False
    shared = sum(1 for path in common if type(left[path]) is not bool)
    return shared > 0 and (left.keys() <= right.keys() or right.keys() <= left.keys() or shared >= _RESUBMITTED_SHARED)


_RESUBMITTED_SHARED = 3


def _question(structure: tuple[Any, ...]) -> tuple[Any, ...]:
    """A call structure without how many results it asks for (``top_k``, ``limit``,
    ``max_results``, ``num_results``): a search asked for more results is the same question.
    (Other numbers, a ``size`` among them, may name the item: shoe size 8.)"""
    tool, exact, text_keys, ranged = structure
    if not any(_counts_results(key) for key, _ in exact):
        return structure
    kept = tuple((key, value) for key, value in exact if not (_counts_results(key) and _is_number(value)))
    return (tool, kept, text_keys, ranged)


_RESULT_COUNTS = frozenset({("top", "k"), ("topk",), ("k",), ("limit",), ("max", "results"), ("num", "results"), ("n", "results"), ("max", "hits"), ("count",), ("num",), ("n",)})


def _counts_results(key: Any) -> bool:
    """Whether an argument's name says how many results to return."""
    return tuple(split_name(str(key)[:NAME_LIMIT])) in _RESULT_COUNTS


def _is_number(value: Any) -> bool:
    return (type(value) is int or type(value) is float) or (type(value) is str and value.isdigit())


def _texts(arguments: Any, text_keys: tuple[str, ...]) -> tuple[str, ...]:
    """The text values of ``arguments`` under ``text_keys`` as shape_of read their words: a
    search engine's URL by the words it searches for."""
    texts = []
    for key in text_keys:
        value = arguments.get(key) if type(arguments) is dict else None
        if type(value) is str:
            searched = _url_search(value) if "://" in value and "?" in value and " " not in value else None
            texts.append(searched[1] if searched is not None else value)
    return tuple(texts)


def _named_items(texts: tuple[str, ...]) -> frozenset[str]:
    """The numbers the text arguments ``texts`` name, lowercased (see ``_NAMED_ITEM``)."""
    names: set[str] = set()
    for text in texts:
        for name in _NAMED_ITEM.findall(text[:_NAMES_READ]):
            if sum(character.isdigit() for character in name) >= 2:
                names.add(name.lower())
    return frozenset(names)


def replaced_stretch(tokens: tuple[str, ...], earlier: tuple[str, ...]) -> tuple[int, int] | None:
    """How many words of ``tokens`` are kept from ``earlier`` at the start and at the end when
    the rest replaces one stretch of ``earlier`` and the kept words are half of the shorter
    text at least (a template filled in again: "how to export invoices", "how to export
    calendar events" keep ``(3, 0)``); ``None`` for texts that are equal or differ more."""
    shorter = min(len(tokens), len(earlier))
    if not shorter or tokens == earlier:
        return None
    start = 0
    while start < shorter and tokens[start] == earlier[start]:
        start += 1
    end = 0
    while end < shorter - start and tokens[-1 - end] == earlier[-1 - end]:
        end += 1
    return (start, end) if 2 * (start + end) >= shorter else None


#: Words after which a replaced stretch stands in an action's place ("how to X", "how do I X").
_ACTION_FRAME = frozenset({"to", "i", "you", "we"})


def _names_item(stretch: tuple[str, ...], texts: tuple[str, ...]) -> bool:
    """Whether a replaced stretch names an item: it holds a number, or one of its words is
    capitalised as a name is ("find customer Ana Silva", "Anna Müller"; a text's first word
    counts only when the next is capitalised too, as a sentence's first word is capitalised)."""
    if any(not word.isalpha() for word in stretch):
        return True
    words = set(stretch)
    for text in texts:
        found = _TOKEN.findall(text[:_NAMES_READ])
        for index, word in enumerate(found):
            if word[:1].isupper() and word.lower() in words and (index or (len(found) > 1 and found[1][:1].isupper())):
                return True
    return False


#: SQL's own words (as _words reads them), which say nothing of what a query asks.
_SQL_WORDS = frozenset(
    "select from where and or not in is null group by having order limit offset as on join left right inner outer full cross "
    "distinct count sum min max avg string_agg array_agg coalesce case when then else end interval now between like ilike "
    "union all exist with desc asc true false date timestamp text int integer numeric cast current_date".split()
)


def _names_given_uuid(before: Any, after: Any, given: Callable[[], list[str]]) -> bool:
    """Whether ``after`` holds a UUID that ``before`` does not and that the run was given
    (``given`` returns the texts, lowercased): the next item of a list, not a fresh token."""
    new = set(_UUID.findall(repr(after)[:_IDS_READ])) - set(_UUID.findall(repr(before)[:_IDS_READ]))
    if not new:
        return False
    texts = given()
    return any(_given((uuid.lower(),), texts) for uuid in new)


_UUID = re.compile(_UUID_PATTERN)
_IDS_READ = 4_000  # characters of a call's arguments read for UUIDs


def _given(stretch: tuple[str, ...], texts: list[str]) -> bool:
    """Whether one of ``texts`` (lowercased) names every word of a replaced stretch (as words)."""
    for text in texts:
        if all(re.search(rf"\b{re.escape(word)}\b", text) for word in stretch):
            return True
    return False


_NAMES_READ = 500  # characters of a text argument read for names


#: A relevance score in a lowercased answer ("score": 12.41, _score=0.87, "distance": "0.21"):
#: it moves between searches. One pattern per word, each with a literal start (fast to find).
_SCORES = tuple(
    (word, re.compile(word + r"""["']?\s*[:=]\s*["']?-?\d+(?:\.\d+)?(?:e-?\d+)?"""))
    for word in ("score", "relevance", "similarity", "confidence", "distance")
)


# A quoted "key": value field of a lowercased JSON answer (string or number value).
_ANSWER_FIELD = re.compile(r"""(["'])([a-z_][\w.-]{0,60})\1\s*:\s*(?:"[^"\n]{0,200}"|'[^'\n]{0,200}'|-?\d+(?:\.\d+)?)""")


# Generated values in a lowercased answer: UUIDs and hex ids of 12 or more characters with
# letters and digits (a search's own id). (A hex id after a prefix, "ord_5f3a9c...", is
# data: an order's id.) Plain numbers and dates stay: they are data (another
# day's flights). (No nested repetition: the scan stays linear on long hex runs.)
_GENERATED = re.compile(
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|\b(?=[0-9a-f]{0,200}\d)(?=[0-9a-f]{0,200}[a-f])[0-9a-f]{12,}\b"
)
#: Words of a field's name that may say it stamps when the response was made ("created_at",
#: "generated_at", "server_time"), with a word for a time: its time, to the millisecond, is no
#: answer (an item's "created_at" to the second is data).
_STAMP_TIME_WORDS = frozenset({"created", "generated", "server", "requested", "processed"})
_TIME_WORDS = frozenset({"at", "time", "timestamp", "ts"})
#: The same for words that only a response's own time has ("checked_at", "queried_at",
#: "polled_at", "fetched_at"): to whatever precision, no item is checked or fetched then.
_RESPONSE_TIME_WORDS = frozenset({"checked", "queried", "polled", "fetched", "served", "retrieved", "responded"})
_SUBSECOND = re.compile(r"\d\d:\d\d:\d\d[.,]\d")


def _without_response_stamps(body: str) -> str:
    """An answer without what stamps the response rather than answers: fields naming request
    and trace ids (``request_id``, ``requestId``, ``search_id``), times taken (``took``,
    ``elapsed_ms``) or when the response was made (``created_at``, ``served_at``), UUIDs and
    long hex ids."""
    if body[:5] == "http/":
        body = _without_stamping_headers(body)
    body = without_anti_forgery_token(body) or body  # (made anew for every page served)
    body = _without_throttle_status(_without_element_refs(body))
    return _GENERATED.sub("<generated>", _ANSWER_FIELD.sub(_unless_stamp, body))


#: An object that reports a request budget as it stood when the response was served
#: (lowercased): GraphQL APIs put one beside the data, Shopify's ``"throttleStatus":
#: {"maximumAvailable": 1000.0, "currentlyAvailable": 980, "restoreRate": 50.0}``, GitHub's
#: ``"rateLimit": {"cost": 1, "remaining": 4991, "resetAt": "..."}``. Only a flat object of
#: numbers and short texts goes.
_THROTTLE_STATUS = re.compile(
    r"""(?:,[ \t]*)?(["'])(?:throttle_?status|rate_?limit(?:_?status)?)\1\s*:\s*\{[^{}\[\]]{0,400}\}""", re.IGNORECASE
)


def _without_throttle_status(text: str) -> str:
    if "hrottle" in text or "ateLimit" in text or "atelimit" in text or "ate_limit" in text:
        return _THROTTLE_STATUS.sub("", text)
    return text


_ELEMENT_REF = re.compile(r"\[ref=[a-z]{0,3}\d{1,6}\]")


def _without_element_refs(text: str) -> str:
    """``text`` with a browser snapshot's element refs (``[ref=e184]``, renumbered on each load) as ``[ref]``."""
    return _ELEMENT_REF.sub("[ref]", text) if "[ref=" in text else text


#: Headers of an HTTP response (lowercased names) that say how and when it was served, not
#: what it says: the time, the cache and edge that served it, its request and trace ids,
#: the rate limit left. An ETag or a Last-Modified stays: it names the content.
_STAMPING_HEADERS = frozenset(
    "date age via expires server-timing x-cache x-cache-hits x-served-by x-timer x-request-id x-amzn-requestid "
    "x-amz-request-id x-amz-id-2 x-amz-cf-id x-amz-cf-pop cf-ray x-trace-id x-b3-traceid traceparent x-runtime "
    "x-response-time x-envoy-upstream-service-time x-github-request-id x-ratelimit-remaining x-ratelimit-reset "
    "x-rate-limit-remaining x-rate-limit-reset ratelimit-remaining ratelimit-reset x-ratelimit-used "
    "x-shopify-shop-api-call-limit set-cookie request-id x-correlation-id x-kong-upstream-latency x-kong-proxy-latency "
    "x-kong-request-id cf-cache-status x-vercel-id x-vercel-cache".split()
)


#: The stamping headers that say how a response was cached.
_CACHE_HEADERS = frozenset({"age", "via", "x-cache", "x-cache-hits", "x-served-by", "x-timer", "cf-cache-status", "x-vercel-cache"})


def _without_stamping_headers(response: str) -> str:
    """A printed HTTP response without its stamping header lines (see ``_STAMPING_HEADERS``;
    with no body after them, the cache's headers stay)."""
    head, separator, rest = response.partition("\n\n")
    # Only headers (curl -I): how the response was cached is its answer (a cache probe's x-cache, age).
    dropped = _STAMPING_HEADERS if rest.strip() else _STAMPING_HEADERS - _CACHE_HEADERS
    lines = head.split("\n")
    kept = [lines[0]] + [line for line in lines[1:] if line.partition(":")[0].strip().lower() not in dropped]
    return "\n".join(kept) + separator + rest


def _unless_stamp(field: re.Match[str]) -> str:
    key = field[2]
    if _is_stamp(key) or names_duration(key):
        return ""
    words = split_name(key)
    if not _TIME_WORDS.isdisjoint(words) and (
        not _RESPONSE_TIME_WORDS.isdisjoint(words) or (not _STAMP_TIME_WORDS.isdisjoint(words) and _SUBSECOND.search(field[0]))
    ):
        return ""
    if words == ["as", "of"]:
        return ""  # ("as_of": when the answer was read, to whatever precision)
    if _says_limit_used(key, field[0]):
        return ""
    return field[0]


def _says_limit_used(key: str, field: str) -> bool:
    """Whether a field says how much of a request limit was used when the response was served:
    a name ending in ``limit`` and a value ``used/limit`` (``"x-shopify-shop-api-call-limit":
    "32/40"``)."""
    return key[-5:].lower() == "limit" and _USED_OF_LIMIT.search(field) is not None and len(split_name(key)) >= 2


# A count used of a limit, as a rate limit's header says it: "32/40".
_USED_OF_LIMIT = re.compile(r""":\s*["']\d{1,9}/\d{1,9}["']$""")


def _answer_body(text: str, echoes: list[str]) -> str:
    """An answer as two differently worded calls would share it, lowercased: the call's own
    text arguments (lowercased), which replies echo as they are or URL-encoded, and relevance
    scores taken out."""
    text = text.lower()
    for echo in echoes:
        if echo in text:
            text = text.replace(echo, "\x00")
        encoded = quote_plus(echo, errors="surrogatepass")  # (a lone surrogate must not raise)
        if encoded != echo and encoded in text:
            text = text.replace(encoded, "\x00")
    for word, score in _SCORES:
        if word in text:
            text = score.sub(word, text)  # (a constant replacement: no template to expand per match)
    return text


_ANNOUNCEMENT_READ = 600  # characters of a message read for an announcement
#: An agent's messages since its latest tool call that are read for announcements (the latest).
_ANNOUNCEMENTS_KEPT = 16
#: Characters, at most, of a user's follow-up to announced work (see NearDuplicate.follows_up).
FOLLOW_UP_LENGTH = 80
#: Words of asking after announced work, impatiently or not: a follow-up says no more than
#: these and what the announcements said ("next" is none: it asks for the next part).
_FOLLOW_UP_WORDS = frozenset(
    "ok okay k so well hello hi hey still nothing yet any anything update updates news status done go ahead through "
    "wait waiting keep keeps saying said say already actually just now whats happen happening happened going long "
    "been again really seriously unbelievable come person human someone talk speak want see seen receive received "
    "get got arrive arrived there not no yes yeah sure thanks thank fine great hurry quick quickly asap soon sent "
    "email mail message confirmation notification reply response answer don t isn t didn continue proceed execute".split()
)
_THOUGHTS_KEPT = 8  # scratchpad entries kept since the last news
#: The words announcements are made of, as text and as the bytes of ASCII messages' word sets.
_ANNOUNCEMENT_TEXT = frozenset(
    "i ll will now next let me proceeding proceed starting start beginning begin kicking kick off going about am m then first".split()
)
_ANNOUNCEMENT_WORDS: frozenset[Any] = _ANNOUNCEMENT_TEXT | frozenset(word.encode("ascii") for word in _ANNOUNCEMENT_TEXT)


#: Inflections taken off words before announcements are compared (the first that fits).
_INFLECTIONS = ("ing", "ed", "es", "s", "e")


def _stems(words: frozenset[Any]) -> frozenset[str]:
    """A message's words (text, or bytes for ASCII messages) without a common English
    inflection: "placing", "placed" and "place" are one stem. Only words longer than the
    inflection by four letters are cut ("uses" stays, "screening" is "screen")."""
    stems = set()
    for word in words:
        text = word.decode("ascii") if type(word) is bytes else word
        for inflection in _INFLECTIONS:
            if len(text) > len(inflection) + 3 and text.endswith(inflection):
                text = text[: -len(inflection)]
                break
        stems.add(text)
    return frozenset(stems)


_FOLLOW_UP_STEMS = _stems(_FOLLOW_UP_WORDS)


def _asks_anew(text: str, said: frozenset[str]) -> bool:
    """Whether a message (lowercased) ends a sentence with a question at least half of whose
    words (stemmed) were not ``said`` before: "What fraction walks or cycles?" after other
    exercises, not "Does that sound right?" again."""
    end = text.rfind("?", 0, _ANNOUNCEMENT_READ)
    if end < 0:
        return False
    start = max(text.rfind(mark, 0, end) for mark in ".!?:\n") + 1
    asked = _stems(_message_words(text[start:end]) - _ANNOUNCEMENT_WORDS)
    return bool(asked) and 2 * len(asked - said) >= len(asked)


def _announces(text: str) -> bool:
    """Whether an agent's message (lowercased) announces what the agent will do."""
    return _ANNOUNCES.search(text, 0, _ANNOUNCEMENT_READ) is not None


def _overlap(left: frozenset[Any], right: frozenset[Any]) -> float:
    """Shared words over the smaller word set (0 when either is empty)."""
    smaller = min(len(left), len(right))
    return len(left & right) / smaller if smaller else 0.0


class _Pages:
    """Digests of pages read (bounded). For a tool that follows cursors: the pages its cursors
    were taken from, the latest of them, and the latest cursor followed with the index of the
    call that followed it. For a paging sequence: the pages its ranges read, what the sequence
    names (``values``) and the patterns of its pages' position fields (``positions``)."""

    __slots__ = ("order", "seen", "cursor", "cursor_call", "latest", "values", "positions")

    def __init__(self) -> None:
        self.values: frozenset[str] | None = None
        self.positions: tuple[re.Pattern[str], ...] | None = None
        self.order: deque[int] = deque()
        self.seen: set[int] = set()
        self.latest: int | None = None  # the digest of the latest page a cursor was taken from
        self.cursor: str | None = None
        self.cursor_call = -1

    def known_either(self, page: int, alike: int) -> bool:
        """Whether ``page`` or ``alike`` (the same page read another way) was seen before; remember both."""
        seen = page in self.seen or alike in self.seen
        self.known(page)
        self.known(alike)
        return seen

    def known(self, page: int) -> bool:
        """Whether ``page`` was seen before; remember it."""
        if page in self.seen:
            return True
        self.seen.add(page)
        self.order.append(page)
        if len(self.order) > PAGES_REMEMBERED:
            self.seen.discard(self.order.popleft())
        return False


# A quoted "key": "value" field of JSON or of a printed Python dict.
_QUOTED_FIELD = re.compile(r"""(?:,[ \t]*)?(["'])([A-Za-z_][\w-]{0,60})\1\s*:\s*(["'])([^"'\n]{0,200})\3""")
#: A response's own stamps, by the words of their names: RequestId, request_id,
#: x-amzn-requestid, HostId, trace_id, CloudFront's x-amz-cf-id (an item's "host" or "id" stays).
_STAMP_OWNERS = frozenset({"request", "host", "trace", "correlation", "span", "search", "response", "query", "cf", "job", "statement", "execution"})


_RATE_LEFT = frozenset({"remaining", "reset", "left", "used", "available"})


def _is_stamp(key: str) -> bool:
    words = split_name(key)
    return (
        "requestid" in words
        or (len(words) >= 2 and words[-1] == "id" and words[-2] in _STAMP_OWNERS)
        or words[:4] == ["x", "amz", "id", "2"]  # S3's host id beside its request id
        or words[-1:] in (["cache"], ["cached"])  # how it was served ("cache": "HIT", "X-Cache")
        or words[-2:] == ["cache", "status"]
        # The rate limit left or when it resets ("x-ratelimit-remaining-tier3": 46), as the
        # headers say it; the limit itself may be the answer (a key's limit raised to 1200).
        or (("ratelimit" in words or ("rate" in words and "limit" in words)) and not _RATE_LEFT.isdisjoint(words))
    )


def unstamped_digest(observation: Observation) -> int:
    """Digest of an output without its response stamps (see ``_without_response_stamps``):
    two answers of one call that differ only in a request id of any form (``fx_2fDzKGvrvDYP``),
    when they were served or whether from a cache share it. Computed once per output."""
    digest = observation.unstamped
    if digest is None:
        digest = observation.unstamped = hash(_without_response_stamps(observation.text.lower()))
    return digest


# A field whose name says where a page is ("offset", "start", "page", "next_offset",
# "startIndex", "nextPageToken", "prev_cursor") and its value: quoted, as JSON and printed
# Python dicts write it, or as name=value in plain text. (Each form starts at a quote or
# ends at "=", so the scan stays linear.)
_POSITION_NAME = r"[\w-]{0,30}?(?:offset|start|page|next|prev|cursor|skip|after|before|token|continuation)[\w-]{0,30}"
_FIELD_VALUE = r"""(?:"[^"\n]{0,200}"|'[^'\n]{0,200}'|-?\d+(?:\.\d+)?|null|None)"""
_QUOTED_POSITION_FIELD = re.compile(rf"""(["'])({_POSITION_NAME})\1\s*:\s*{_FIELD_VALUE}""", re.IGNORECASE)
_PLAIN_POSITION_FIELD = re.compile(rf"""(?<![\w-])()({_POSITION_NAME})={_FIELD_VALUE}""", re.IGNORECASE)
_POSITION_NAMES = 8  # position fields of a page set aside at most (an envelope has a few)
_POSITION_WORDS_IN_PAGES = frozenset({"offset", "start", "page", "next", "prev", "previous", "cursor", "skip", "after", "before", "token", "continuation"})
_PAGE_FIELD_WORDS = _POSITION_WORDS_IN_PAGES | {"index", "number", "num", "no", "size", "limit", "per", "key", "id", "link", "url", "at"}


def _position_fields(page: str) -> tuple[re.Pattern[str], ...] | None:
    """Patterns for the fields of ``page`` that say where it is (``"offset": 150``,
    ``"pagination": {"start": 150, "next_offset": 200}``, ``start=150``,
    ``"nextPageToken": "..."``), with their values, or ``None`` when it has none: pages of a
    sequence that wrapped around say the same around other positions. Item fields stay (an
    item's ``id``, ``number`` or ``from`` tells pages apart)."""
    patterns = []
    if ":" in page and ('"' in page or "'" in page):
        names = _envelope_names(_QUOTED_POSITION_FIELD.finditer(page))
        if names:
            patterns.append(_quoted_fields(names))
    if "=" in page:
        names = _envelope_names(_PLAIN_POSITION_FIELD.finditer(page))
        if names:
            patterns.append(_plain_fields(names))
    return tuple(patterns) or None


def _envelope_names(fields: Any) -> tuple[str, ...]:
    """The names of the position fields found that belong to the page, not to its items: a
    name that comes once or twice ("offset", and "offset" again in a "pagination" object),
    not one that every item has (a message's "offset", a search hit's "page"). At most
    ``_POSITION_NAMES`` of them, sorted."""
    counts: dict[str, int] = {}
    for field in fields:
        name = field[2]
        counts[name] = counts.get(name, 0) + 1
    names = sorted(name for name, count in counts.items() if count <= 2 and _names_page_position(name))
    return tuple(names[:_POSITION_NAMES])


def _without_fields(patterns: tuple[re.Pattern[str], ...], text: str) -> str:
    for pattern in patterns:
        text = pattern.sub("", text)
    return text


# (A pattern that opens with a quote is scanned quickly; one that opens with a look-behind
# is tried at every position, so it runs only where name=value fields were found.)
@lru_cache(maxsize=256)
def _quoted_fields(names: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(name) for name in names)
    return re.compile(rf"""["'](?:{alternatives})["']\s*:\s*{_FIELD_VALUE}""")


@lru_cache(maxsize=256)
def _plain_fields(names: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(name) for name in names)
    return re.compile(rf"""(?<![\w-])(?:{alternatives})={_FIELD_VALUE}""")


def _names_page_position(key: str) -> bool:
    words = split_name(key)
    return bool(words) and _PAGE_FIELD_WORDS.issuperset(words) and not _POSITION_WORDS_IN_PAGES.isdisjoint(words)


def _page_body(text: str, cursors: tuple[str, ...]) -> str:
    """A page as a wrapped cursor would repeat it: the cursors (with their fields) and the
    response's own stamps (fields named like request ids and host ids, times taken, a printed
    response's stamping headers) taken out. Item
    fields (ids, uuids, timestamps) stay: they are what tells pages apart."""
    for cursor in cursors:
        text = text.replace(cursor, "\x00")
    if text[:5] in ("HTTP/", "http/"):
        text = _without_stamping_headers(text)  # (a printed response's Date, X-Request-Id, ...)
    text = _QUOTED_FIELD.sub(_without_stamp, text)  # (a field goes with the comma before it)
    if "took" in text or "elapsed" in text or "time" in text or "atency" in text:
        text = _NUMBER_FIELD.sub(_without_time_taken, text)
    if "imit-" in text or "imit_" in text:
        text = _RATE_LIMIT_FIELD.sub("", text)  # (the rate limit left when the page was served)
    return _without_throttle_status(_without_element_refs(text))


# A field with a number for its value ("took_ms": 52), and the comma before it.
_NUMBER_FIELD = re.compile(r"""(?:,[ \t]*)?(["'])([A-Za-z_][\w-]{0,60})\1\s*:\s*-?\d+(?:\.\d+)?(?![\w.])""")


# A rate limit's header or field: x-rate-limit-remaining: 563, "X-RateLimit-Reset": "1719923017".
_RATE_LIMIT_FIELD = re.compile(r"""["']?(?:x-)?rate-?limit[-_](?:remaining|reset|limit|used)["']?\s*[:=]\s*["']?\d+["']?""", re.IGNORECASE)


def _without_time_taken(field: re.Match[str]) -> str:
    return "" if _TIME_TAKEN.match(field[2]) is not None else field[0]


# The name of a response's time taken (took, took_ms, elapsed_ms, query_time_ms, latencyMs); an
# item's own times (time, startTime, duration_ms) are data.
_TIME_TAKEN = re.compile(r"(?:took|elapsed|latency|(?:query|response|processing|server|execution)[_-]?time)(?:[_-]?(?:ms|millis|us|ns|s|sec|secs|seconds))?$", re.IGNORECASE)


def _without_stamp(field: re.Match[str]) -> str:
    if field[4] == "\x00" or _is_stamp(field[2]) or _TIME_TAKEN.match(field[2]) is not None or _says_limit_used(field[2], field[0]):
        return ""  # a field that is a cursor goes whole: the first page has no echoed cursor
    return field[0]


# What separates the parts of a URL or a query string.
_URL_PARTS = re.compile(r"[?&=/#;]")


def _new_text(value: Any, old: Any, depth: int) -> list[str]:
    """The texts in ``value`` that ``old`` (the same argument in the previous call, or
    ``_ABSENT``) did not hold and that could be a cursor: the value itself, the new parts of a
    URL (``...&cursor=X``), or the one value that changed inside an object (``{"params":
    {"cursor": X}}``), each as :func:`_could_be_cursor` allows."""
    if type(value) is str:
        if type(old) is str and ("?" in value or "&" in value or "://" in value):
            parts = set(_URL_PARTS.split(value)).difference(_URL_PARTS.split(old))
        else:
            parts = {value}
        return [part for part in parts if _could_be_cursor(part)]
    if type(value) is dict and type(old) is dict and depth < 2:
        changed = [(key, item) for key, item in value.items() if old.get(key, _ABSENT) != item]
        if len(changed) == 1 and len(old) >= len(value) - 1:
            key, item = changed[0]
            return _new_text(item, old.get(key, _ABSENT), depth + 1)
    return []


#: A page that says no page follows it (has_more: false, "hasNextPage": false, "is_last_page":
#: true, Jira's "isLast": true, Salesforce's "done": true), in lowercased text.
_LAST_PAGE = re.compile(
    r"""(?:has_?more|has_?next(?:_?page)?|more_?(?:results|pages|available)|more|next_?page_?exists)["']?\s*[:=]\s*(?:false|0)\b"""
    r"""|(?:is_?last(?:_?page)?|last_?page|done)["']?\s*[:=]\s*true\b"""
)


def _says_last_page(text: str) -> bool:
    """Whether an empty page says that no page follows it (read only for an empty page whose
    cursor was followed)."""
    lowered = text.lower()
    return ("false" in lowered or "true" in lowered or ": 0" in lowered) and _LAST_PAGE.search(lowered) is not None


#: Words of an argument's name that say it holds a page's cursor (pageToken, ContinuationToken,
#: next_cursor, marker).
_CURSOR_WORDS = frozenset({"token", "cursor", "continuation", "marker"})


def sends_cursor(arguments: Any) -> bool:
    """Whether a call sends a page's cursor: a top-level argument named for one (``pageToken``,
    ``ContinuationToken``, ``cursor``, ``marker``; not an auth token, ``access_token``) whose value
    could be one (at least 8 printable characters, no spaces: a page number is no cursor)."""
    if type(arguments) is not dict:
        return False
    for key, value in list(arguments.items())[:50]:
        if type(key) is str and type(value) is str and len(value) >= _SENT_CURSOR_LENGTH and _could_be_cursor(value):
            words = split_name(key[:NAME_LIMIT])
            if not _CURSOR_WORDS.isdisjoint(words) and _AUTH_WORDS.isdisjoint(words):
                return True
        elif key in COMMAND_ARGUMENT_NAMES and type(value) is str and "--" in value:
            # A command line's option named for one (``aws s3api list-objects-v2
            # --continuation-token 'aYkb...'``, ``--starting-token``, ``--page-token``).
            for option in _COMMAND_CURSOR.findall(value[:2000]):
                words = split_name(option)
                # (A bare --token is a credential on most command lines; Stripe's CLI pages
                # with --starting-after and --ending-before.)
                if (words != ["token"] and not _CURSOR_WORDS.isdisjoint(words) and _AUTH_WORDS.isdisjoint(words)) or words in _CURSOR_OPTIONS:
                    return True
    return False


#: Command-line options (as words) that send a cursor though they name none.
_CURSOR_OPTIONS = (["starting", "after"], ["ending", "before"])
# A command line's long option and a value that could be a cursor (8 or more characters).
_COMMAND_CURSOR = re.compile(r"""--([a-z][\w-]{0,40})[= ]+['"]?[^\s'"]{8,}""")


_AUTH_WORDS = frozenset({"access", "auth", "bearer", "api", "refresh", "id", "session", "csrf", "oauth"})
_SENT_CURSOR_LENGTH = 8


def _could_be_cursor(text: str) -> bool:
    """A cursor has at least CURSOR_MIN_LENGTH characters, all printable, and no spaces (a
    reworded query is none)."""
    return len(text) >= CURSOR_MIN_LENGTH and " " not in text and text.isprintable()


def _holds_token(text: str, token: str) -> bool:
    """Whether ``token`` occurs in ``text`` as a whole token: not inside a longer word ("c2"
    is not found in "abc2")."""
    start = text.find(token)
    while start >= 0:
        end = start + len(token)
        if (start == 0 or not _word_character(text[start - 1])) and (end == len(text) or not _word_character(text[end])):
            return True
        start = text.find(token, start + 1)
    return False


def _word_character(character: str) -> bool:
    return character.isalnum() or character == "_"


#: Share of a range that ranges already read must cover for it to be a re-read: a view shifted
#: by a few lines (140-190 after 138-188 and 142-192) reads almost nothing new.
REREAD_COVERAGE = 0.9


def _inside(span: tuple[float, float], covered: list[tuple[float, float]]) -> bool:
    """True when the union of ``covered`` ranges covers at least REREAD_COVERAGE of ``span``
    (all of it for a span of one position: a page number read again)."""
    if not covered:
        return False
    low, high = span
    length = high - low
    if length <= 0:
        return False
    allowed = length * (1 - REREAD_COVERAGE) + 1e-9 if length > 1 else 0.0  # the part that may be new (exactly 90 % counts)
    new = 0.0
    for start, end in sorted(covered):
        if start > low:
            new += min(start, high) - low
            if new > allowed:
                return False
            low = start
        if end > low:
            low = end
        if low >= high:
            return True
    return new + (high - low) <= allowed
