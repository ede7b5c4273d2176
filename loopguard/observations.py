"""Reading tool outputs: volatile-part normalisation, emptiness, pending states, failures.

Everything here is a pure function of one output, computed once per result and
shared by the detectors. The word lists are deliberately small and documented in
``docs/detectors.md``; they are matched as whole words, never as substrings
("author" is not "auth", "page 1401" is not a 401).
"""

from __future__ import annotations

import ast
import json
import re
from functools import lru_cache
from typing import Any

from .signature import _ENCODER, canonical_value
from .tool_names import split_name


def _ascii_twin(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """``pattern`` compiled with ``re.ASCII``, for text that is all ASCII.

    On ASCII text ``\\b``, ``\\w``, ``\\W`` and ``\\d`` match exactly as in Unicode mode,
    but sre tests them without the Unicode database: about twice as fast. (``\\s`` differs
    on the separators ``\\x1c``-``\\x1f``; the one pattern here that uses it reads text
    whose whitespace is folded to spaces.)
    """
    return re.compile(pattern.pattern, re.ASCII)


#: Outputs are compared on at most this many characters (plus a digest of the rest).
MAX_COMPARED = 2048
#: Characters kept from the end of an output longer than MAX_COMPARED (see Observation.end).
END_KEPT = 256

# All volatile parts contain a digit, so text without digits skips every pattern below;
# patterns run on lowercased text (case-sensitive matching is much faster in ``re``).
#: Any digit (of any script): ``HAS_DIGIT.search(text)`` tells whether a text holds one.
HAS_DIGIT = re.compile(r"\d")
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_TIMESTAMP = re.compile(
    r"\b\d{4}-\d\d-\d\d[t ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:z|[+-]\d\d:?\d\d)?\b|\b\d{1,2}:\d\d:\d\d(?:\.\d+)?\b"
)
# A token that mixes letters and digits and is at least 4 long reads as a generated id
# ("7f02", "req_9ac1"); long digit runs read as counters, epochs or request numbers;
# a number after a counter word ("attempt 3") or after "#" is a counter. They are judged
# token by token, and only tokens holding a digit are looked at. On this hot path, str
# methods and set tests are used where a regular expression would be several times slower.
_SUBTOKEN = re.compile(r"\b(?=[a-z_]*\d)(?=\d*[a-z])[a-z0-9_]{4,}\b|\b\d{6,}\b")
_UUID_ASCII, _TIMESTAMP_ASCII = _ascii_twin(_UUID), _ascii_twin(_TIMESTAMP)
_COUNTER_WORDS = frozenset({"attempt", "try", "retry", "iteration", "request", "req", "seq", "sequence", "run", "trace", "pid"})
_PUNCTUATION = "\"',;:()[]{}.!?<>="
#: The token before a notebook's bracketed execution count: "In [5]:", or none ("[5]" first).
_EXECUTION_COUNT_BEFORE = frozenset({"", "in"})
# A time taken, in one token ("0.21s", "38ms", "1.5sec"), or a number after a word saying so.
_DURATION = re.compile(r"\d+(?:\.\d+)?(?:ns|us|µs|ms|s|sec|secs|m|min|mins|h)")
_DURATION_WORDS = frozenset({"took", "elapsed", "duration", "latency", "time", "runtime"})
_ASCII_DIGITS = frozenset("0123456789")


#: Words of a field's name that say it holds a time taken ("elapsed_ms", "total_time_taken",
#: "queryTime"); "time" alone counts unless the name says what is left ("time_remaining").
_TIME_TAKEN_WORDS = frozenset({"took", "elapsed", "duration", "latency", "runtime", "taken", "slot"})
_TIME_LEFT_WORDS = frozenset({"remaining", "left", "eta", "until", "estimated", "to"})
_STATISTIC_WORDS = frozenset({"avg", "average", "mean", "median", "p50", "p75", "p90", "p95", "p99", "percentile"})


@lru_cache(maxsize=512)
def names_duration(word: str) -> bool:
    """Whether the word before a number ("took", a field name such as "elapsed_ms") says the
    number is a time taken: timing jitter, not news."""
    if word in _DURATION_WORDS:
        return True
    if not word or not word.isascii() or not word.replace("_", "").replace("-", "").isalpha():
        return False
    words = set(split_name(word))
    if not _STATISTIC_WORDS.isdisjoint(words):
        return False  # a metric's value ("avg_latency_ms"): what a metrics tool answers
    return not _TIME_TAKEN_WORDS.isdisjoint(words) or ("time" in words and _TIME_LEFT_WORDS.isdisjoint(words))


def _volatile_token(token: str, previous: str) -> str:
    """``token`` (lowercased, after ``previous``) with its volatile part replaced, or
    ``token`` itself when nothing in it is volatile."""
    core = token.strip(_PUNCTUATION)
    if not core:
        return token
    if core[0] == "#" and core[1:].isdigit():
        return token.replace(core, "<counter>")
    if core.isdigit():
        if previous.strip(_PUNCTUATION) in _COUNTER_WORDS or (token[:1] == "[" and token.rstrip(":") == f"[{core}]" and previous in _EXECUTION_COUNT_BEFORE):
            return token.replace(core, "<counter>")  # ("[5] executed", "In [5]:": a notebook's execution count)
        if names_duration(previous.strip(_PUNCTUATION)):
            return token.replace(core, "<duration>")  # "took 38", "elapsed_ms": 38
        return token.replace(core, "<n>") if len(core) >= 6 else token
    if core[0].isdigit() and core.count(".") == 1 and core.replace(".", "").isdigit() and names_duration(previous.strip(_PUNCTUATION)):
        return token.replace(core, "<duration>")  # "total_time_taken": 0.31
    if _DURATION.fullmatch(core) is not None:
        return token.replace(core, "<duration>")  # "in 0.21s", "38ms": timing jitter, not news
    if core[:4] == "out[" and core[4:].isdigit():
        return token.replace(core, "out[<counter>")  # a notebook cell's "Out[5]:"
    if core[:4] == "ref=":
        return token.replace(core, "ref=<ref>")  # a browser snapshot's element ref ([ref=e12]): renumbered on each load
    letters_and_digits = core.replace("-", "").replace("_", "")
    if core.isascii() and letters_and_digits.isalnum():  # an identifier: [a-z0-9_-]+
        if len(core) >= 4 and not letters_and_digits.isdigit():  # it holds a letter
            return token.replace(core, "<id>")
        return token
    replaced = _SUBTOKEN.sub(lambda match: "<n>" if match.group().isdigit() else "<id>", token)
    return token if replaced == token else replaced


_TIME_HINT = re.compile(r":\d\d")  # every time has it; a literal first character makes the scan fast
_DIGITS = re.compile(r"\d+(?:\.\d+)?")


def output_text(output: Any) -> str:
    """The output as text: strings unchanged, anything else as canonical JSON (never raises)."""
    if isinstance(output, str):
        return output
    if output is None:
        return ""
    try:
        return _ENCODER.encode(canonical_value(output))
    except (TypeError, ValueError):
        return str(output)


def normalize(text: str) -> str:
    """Lowercase, replace volatile parts (UUIDs, timestamps, generated ids, long numbers,
    counters) and fold whitespace. Texts longer than :data:`MAX_COMPARED` characters are
    compared on their head plus a digest of the rest."""
    if len(text) > MAX_COMPARED:
        # The tail is compared exactly: a volatile part there can only make two outputs
        # look different (a missed loop), never the same (a false alarm).
        return _normalize(text[:MAX_COMPARED]) + f" <tail {hash(text[MAX_COMPARED:])}>"
    return _normalize(text)


def is_context_summary(text: str) -> bool:
    """Whether a message is a harness's note that the agent's context was condensed: earlier
    turns summarised, compacted, trimmed or dropped ("[Context summary #2]", "CONDENSATION:
    events 1-8 were removed", "This session is being continued from a previous conversation
    that ran out of context"). Harnesses say so first: only the first 120 characters are read
    (an agent's report that mentions it later is no condensation). Only nouns and past forms
    count: "Please summarize the conversation" is a request, not a summary."""
    head = text[:120].lower()
    # (Most messages hold none of these words: the pattern's search is skipped for them.)
    return _CONTEXT_SUMMARY_HINT.search(head) is not None and _CONTEXT_SUMMARY.search(head) is not None


def message_body(text: str) -> str:
    """An agent message as it is compared: its first 2,048 characters lowercased, spacing
    folded, and only what changes between two writings of one message replaced: counters
    ("attempt 3:"), UUIDs and timestamps. Ids and names stay ("report_q1.csv" and
    "report_q3.csv" are two messages)."""
    text = " ".join(text[:2048].lower().split())
    ascii_text = text.isascii()
    if _ASCII_DIGITS.isdisjoint(text) if ascii_text else HAS_DIGIT.search(text) is None:
        return text
    if text.count("-") >= 4:
        text = (_UUID_ASCII if ascii_text else _UUID).sub("<uuid>", text)
    if ":" in text and _TIME_HINT.search(text) is not None:
        text = (_TIMESTAMP_ASCII if ascii_text else _TIMESTAMP).sub("<time>", text)
    if not any(word in text for word in _COUNTER_WORDS):
        return text  # (most messages: no counter word, no scan)
    return _COUNTED.sub(r"\1<counter>", text)


# A number right after a counter word ("attempt 3", "retry #2"), in one pass.
_COUNTED = re.compile(r"\b((?:" + "|".join(sorted(_COUNTER_WORDS)) + r")[\"',;:()\[\]{}.!?<>=]*\s#?)\d+\b")


@lru_cache(maxsize=1024)
def _failure_shape(head: str, has_tail: bool) -> int:
    """Digest of a failure's normalised text with every number replaced: the same error
    with other numbers in it has the same shape. Identical failures (the stuck case)
    repeat, so shapes are cached."""
    shape = _DIGITS.sub("#", _normalize(head))
    return hash(f"{shape} <tail #>" if has_tail else shape)


#: Shortest last line that can say what a failure is ("denied: permission_denied: ...").
_FAILURE_LINE_LENGTH, _FAILURE_LINE_LIMIT = 24, 400


def failure_line(text: str) -> str | None:
    """A failure's own last line, lowercased, numbers replaced, a shell's ``[exit code N]``
    left out: what the failure says after whatever a command printed first (``docker push``'s
    layer progress, which ``--quiet`` leaves out). ``None`` for a last line too short to say
    anything, or too long to be one message."""
    text = text.rstrip()
    if text.endswith("]") and "[exit code" in text[-24:]:
        text = text[: text.rfind("[exit code")].rstrip()
    line = text[text.rfind("\n") + 1 :].strip()
    if not _FAILURE_LINE_LENGTH <= len(line) <= _FAILURE_LINE_LIMIT:
        return None
    return _DIGITS.sub("#", line.lower())


# A JSON field with a number: its name and the number.
_JSON_NUMBER_FIELD = re.compile(r'"([a-z_]{2,40})":\s?(-?\d+(?:\.\d+)?)(?=[,}\s])')


def _duration_field(field: re.Match[str]) -> str:
    return f'"{field[1]}":<duration>' if names_duration(field[1]) else field[0]


#: An anti-forgery token and its value in a lowercased page ("csrf: kx9v...", a hidden
#: "csrfmiddlewaretoken" input, Rails' "authenticity_token", "x-xsrf-token").
_ANTI_FORGERY_TOKEN = re.compile(r"""((?:[cx]srf|authenticity_token)[\w-]{0,30}["']?\s*(?:[:=]|value=)\s*["']?)[\w+/=-]{8,200}""")


def _may_hold_token(text: str) -> bool:
    """Whether a text may hold an anti-forgery token (see :func:`without_anti_forgery_token`)."""
    return "srf" in text or "SRF" in text or "uthenticity_token" in text


def without_anti_forgery_token(page: str) -> str | None:
    """A lowercased page with its anti-forgery tokens' values replaced (they are made anew for
    every page served), or ``None`` when it has none."""
    if "srf" not in page and "authenticity_token" not in page:
        return None
    replaced, count = _ANTI_FORGERY_TOKEN.subn(r"\1<token>", page)
    return replaced if count else None


TOKEN_LENGTH_SLACK = 16  # characters by which two pages alike but for an anti-forgery token may differ


def _normalize(text: str) -> str:
    text = text.lower()
    ascii_text = text.isascii()
    if _ASCII_DIGITS.isdisjoint(text) if ascii_text else HAS_DIGIT.search(text) is None:
        return " ".join(text.split())
    if text.count("-") >= 4:
        text = (_UUID_ASCII if ascii_text else _UUID).sub("<uuid>", text)
    if ":" in text and _TIME_HINT.search(text) is not None:  # JSON has colons; times are rarer
        text = (_TIMESTAMP_ASCII if ascii_text else _TIMESTAMP).sub("<time>", text)
    if '":' in text:
        # A time taken in compact JSON ('"latency_ms":46,'), where no space makes it a token of its own.
        text = _JSON_NUMBER_FIELD.sub(_duration_field, text)
    tokens = text.split()
    previous = ""
    for index, token in enumerate(tokens):
        if (not _ASCII_DIGITS.isdisjoint(token)) if ascii_text else HAS_DIGIT.search(token) is not None:
            tokens[index] = _volatile_token(token, previous)
        previous = token
    return " ".join(tokens)


# Words of the scalar fields that only describe a request or its paging, in an API's reply
# around the data ("total", "next_cursor", "has_more", "startAt", "maxResults", "request_id").
_ENVELOPE_WORDS = frozenset(
    "total count offset limit page pages per size next prev previous cursor more has ok status success took time "
    "timestamp elapsed ms duration query q latest oldest start end from to skip take after before token continuation "
    "metadata meta response links link request trace correlation id at max results items hits records entries rows "
    "matches found returned remaining expand fields sort filter filters include select format timed out truncated "
    "row item record entry hit match result estimate estimated object type url shards successful skipped failed value "
    "relation score scanned is last done index collection namespace kind "
    "schema".split()
)
# Lists under these keys may hold something and still leave the answer empty (advice, links).
_ENVELOPE_LISTS = frozenset({"warning", "warnings", "note", "notes", "link", "links", "hint", "hints", "suggestion", "suggestions"})
# A count of what was found that says 0, in a lowercased JSON object ("rowcount": 0): only
# then is an object with no empty list parsed for an empty answer.
_ZERO_FOUND = re.compile(r'(?:row|result|hit|record|match|item)s?_?(?:count|total)?": 0\b|(?:count|total)_?(?:rows|results|hits|records|matches|items)": 0\b')
# Empty lists under keys with these words say that nothing went wrong, not that nothing was
# found ("errors", "validation_errors").
_NOT_ANSWERS = frozenset({"error", "errors", "warning", "warnings", "failure", "failures", "note", "notes"})
# A count of what was found, by the words of its name ("rowCount", "totalResults", "hit_count").
_ROW_WORDS = frozenset({"row", "rows", "result", "results", "hit", "hits", "record", "records", "match", "matches", "item", "items"})
_COUNT_WORDS = frozenset({"count", "total", "num", "number"})
_DATA, _ENVELOPE_ONLY, _EMPTY_ANSWER = 0, 1, 2
#: Words of keys whose object describes the response, whatever it holds (boto3's ResponseMetadata,
#: HTTP headers).
_RESPONSE_DESCRIPTIONS = frozenset({"metadata", "headers", "quota", "stats", "statistics"})  # (a quota: what the request cost, "propertyQuota"; a query's execution stats)


def _says_empty(stripped: str, ascii_text: bool) -> bool:
    """Whether a text (lowercased, stripped) says nothing was found: a literal (``[]``,
    ``none``) or, within 120 characters, a phrase ("no results", "No customer found").

    No literal holds a space, so stripping is as good as folding whitespace for them. Cheap
    necessary tests run before the whitespace is folded and the regular expression runs:
    ASCII text must start with an empty phrase's first word after its non-word characters;
    other text must hold one ("nothing" and "none" hold "no")."""
    if stripped in _EMPTY_LITERALS or (stripped[:1] == "n" and _nulls_only(stripped)):
        return True
    if ascii_text:
        lead = stripped.lstrip(_ASCII_NON_WORD)
        if lead[:1] not in _EMPTY_INITIALS or not lead.startswith(_EMPTY_STARTS):
            return False
        phrase = _EMPTY_PHRASE_ASCII
    elif "no" in stripped or "0" in stripped or "zero" in stripped or "empty" in stripped:
        phrase = _EMPTY_PHRASE
    else:
        return False
    folded = " ".join(stripped.split())
    return len(folded) <= 120 and phrase.match(folded) is not None


# A SQL client's timing line: psql's "Time: 12.1 ms", sqlcmd's "Completion time: ...".
_TIMING_LINE = re.compile(r"(?:completion )?time: [^\n]*$")


def _no_rows(stripped: str) -> bool:
    """Whether a lowercased, stripped printout's only row count is zero rows (psql, sqlcmd,
    sqlplus), or one row whose values are all null (an aggregate over no rows: ``SUM(...)``
    answers ``NULL``; a count of 0 is an answer), a timing line after it aside."""
    last = stripped.rfind("\n")
    if last >= 0 and _TIMING_LINE.match(stripped, last + 1) is not None:
        stripped = stripped[:last].rstrip()
    if stripped.count(" row") != 1:
        return False
    if stripped.endswith(_ZERO_ROWS):
        return True
    for count in _ONE_ROW:
        if stripped.endswith(count):
            return _nulls_row(stripped[: -len(count)])
    return False


def _nulls_row(table: str) -> bool:
    """Whether a printed table's last row (separator lines aside) holds only nulls or blank
    cells, under a header line: psql prints a null as nothing, others as ``NULL``."""
    if table.endswith("\n"):
        table = table[:-1]  # (the line break before the row count; a blank row stays)
    lines = [line for line in table.split("\n")[-6:] if not _SEPARATOR_LINE.fullmatch(line)]
    if len(lines) < 2 or not any(character.isalpha() for character in lines[-2]):
        return False
    return _NULL_CELLS.issuperset(_CELL_SPLIT.split(lines[-1].strip()))


#: How SQL clients end a query's printout that has no row: psql, SQL Server's sqlcmd, Oracle's
#: SQL*Plus (MySQL's "Empty set (0.00 sec)" starts as an empty phrase does), and one that has
#: one row. Only a printout with one row count: several statements may have printed rows before.
_ZERO_ROWS = ("(0 rows)", "(0 rows affected)", "no rows selected")
_ONE_ROW = ("(1 row)", "(1 row affected)")
_ROW_COUNTS = _ZERO_ROWS + _ONE_ROW
_SEPARATOR_LINE = re.compile(r"[ |:]*[-=+][-+|=: ]*")  # a table's rule ("---------", "+-----+")
_CELL_SPLIT = re.compile(r"\s*\|\s*|\s+")
_NULL_CELLS = frozenset({"", "null", "none", "<null>"})


#: Empty data as programs print it: JSON's empty containers, redis-cli's nil and empty list.
_EMPTY_DATA = frozenset({"[]", "{}", "[[]]", "(nil)", "(empty list or set)", "(empty array)"})


def _nulls_only(stripped: str) -> bool:
    """Whether a stripped text is a row of nulls only: what the AWS CLI prints for a
    ``--query`` of fields that are not there, with ``--output text`` (``None\tNone``)."""
    return stripped[:4] in _NULL_WORDS and len(stripped) <= _NULL_ROW_LIMIT and _NULL_WORDS.issuperset(stripped.lower().split())


_NULL_WORDS = frozenset({"none", "null", "None", "NULL"})
_NULL_ROW_LIMIT = 60  # characters of a row of nulls at most


def is_empty_data(text: str) -> bool:
    """True when an output that reads as empty is structured data with nothing in it (``[]``,
    ``{"items": []}``, redis-cli's ``(nil)``, an HTTP response whose body is one of those, with
    or without a shell's closing ``[exit code 0]``), as opposed to silence or a sentence: a
    command (``curl``, ``gh api``, ``redis-cli``) that prints it asked for data and got none."""
    stripped = _content(text)
    if stripped in _EMPTY_DATA or _nulls_only(stripped):
        return True
    return stripped[:1] == "{" and "[]" in stripped and is_empty_envelope(stripped)


#: What a shell tool appends to the output of a command that succeeded.
_SHELL_SUCCESS = "[exit code 0]"


def _content(text: str) -> str:
    """An output's content, stripped: for an HTTP response printed with its status line and
    headers (``curl -i``, ``gh api -i``), its body (the headers end at the first blank line,
    so a response of headers alone has none), and without a shell's closing
    ``[exit code 0]`` (a report of success is no content)."""
    content = _http_body(text).strip() if text.lstrip()[:5].lower() == "http/" else text.strip()
    if content[-1:] == "]" and content.lower().endswith(_SHELL_SUCCESS):
        content = content[: -len(_SHELL_SUCCESS)].rstrip()
    return content


def _http_body(response: str) -> str:
    """The body of an HTTP response printed with its status line and headers, or the whole
    text when no blank line ends the headers."""
    for separator in ("\r\n\r\n", "\n\n"):
        index = response.find(separator)
        if index >= 0:
            return response[index + len(separator) :].strip()
    return response


def is_empty_envelope(text: str, request: Any = None) -> bool:
    """True for a JSON object whose collections are all empty and whose other fields only
    describe the request or its paging: an empty answer in an API's envelope, such as
    ``{"users": [], "total": 68, "offset": 75}``, ``{"matches": [], "request_id": "r-1"}`` or
    ``{"took": 38, "hits": {"total": 0, "events": []}}`` or ``{"Items": [], "Count": 0,
    "ResponseMetadata": {...}}`` (an object under a key naming metadata or headers only
    describes the response). ``{"id": "u1", "name": "Bob",
    "roles": []}`` is a record, and ``{"errors": []}`` no answer.

    ``request`` is the call's arguments (a dict), if known: a scalar field that echoes one of
    them, with the same key and value, describes the request too (``{"product": "B0C7",
    "page": 4, "reviews": []}`` for ``fetch_reviews(product="B0C7", page=4)``)."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        if text.lstrip()[1:].lstrip()[:1] != "'":
            return False  # only a dict whose first key is quoted the Python way
        try:  # a Python dict printed as text ({'messages': [], ...}), as many tool wrappers do
            data = ast.literal_eval(text)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return False
    return type(data) is dict and _envelope(data, 0, request if type(request) is dict else _NO_REQUEST) == _EMPTY_ANSWER


_NO_REQUEST: dict[Any, Any] = {}


def _envelope(data: dict[str, Any], depth: int, request: dict[Any, Any]) -> int:
    """``_EMPTY_ANSWER`` for an empty answer in an envelope, ``_ENVELOPE_ONLY`` for fields that
    only describe the request, ``_DATA`` as soon as a field carries data."""
    found = False
    for key, value in data.items():
        kind = type(value)
        if kind is list or kind is dict:
            if not value:
                found = found or _NOT_ANSWERS.isdisjoint(split_name(key))
            elif kind is dict and not _RESPONSE_DESCRIPTIONS.isdisjoint(split_name(key)):
                continue  # {"ResponseMetadata": {"RequestId": ..., "HTTPHeaders": {...}}} describes the response
            elif kind is dict and depth < 3:
                inner = _envelope(value, depth + 1, request)  # {"hits": {"total": 0, "events": []}}
                if inner == _DATA:
                    return _DATA
                found = found or inner == _EMPTY_ANSWER
            elif key.lower() not in _ENVELOPE_LISTS and split_name(key)[-1:] != ["headers"]:
                return _DATA  # (a report's "dimensionHeaders" and "metricHeaders" name its columns)
            continue
        if value is None:
            continue  # {"hits": [], "note": null}: a null carries nothing
        if kind is str and _says_empty(lowered := value.lower().strip(), lowered.isascii()):
            found = True  # {"series": [], "message": "no datapoints found"}
            continue
        if key in request and request[key] == value:
            continue  # an argument echoed back: {"product": "B0C7", ...} for product="B0C7"
        words = split_name(key)
        if value == 0 and kind is int and not _ROW_WORDS.isdisjoint(words) and not _COUNT_WORDS.isdisjoint(words):
            found = True  # {"rowCount": 0}: a report that found no rows, whether or not it lists them
            continue
        if not words or words == ["id"] or not all(word in _ENVELOPE_WORDS for word in words):
            return _DATA  # a field that carries data
        if kind is str and reports_failure(value):
            return _DATA  # {"data": [], "status": "error"} is a failure, not an empty answer
    return _EMPTY_ANSWER if found else _ENVELOPE_ONLY


_EMPTY_LITERALS = frozenset(
    {"", "[]", "{}", "null", "none", "nil", "(nil)", "(empty list or set)", "(empty array)", "n/a", '""', "''", "[[]]", "no", "nothing", "empty"}
)
_EMPTY_PHRASE = re.compile(
    # (clickhouse-client prints "Ok." before "0 rows in set. Elapsed: 0.003 sec.")
    r"^\W*(?:ok\.\s+(?=0\s+rows\s+in\s+set\b))?(?:(?:no|zero|0)\s+(?!(?:errors?|issues?|problems?|warnings?|vulnerabilities|failures?)\b)(?:\w+\s+){0,2}?(?:results?|rows?|items?|records?|matches|entries|hits|data|output|documents?|files?|pages?|"
    r"annotations?|messages?|events?|objects?|values?|lines?|\w+s)\b|nothing\b|empty\b|(?:no|none)\s+(?:found|returned|available)"
    # "No customer found", "no matching user found" (not "No errors found": that is a success).
    r"|no\s+(?!(?:errors?|issues?|problems?|warnings?|vulnerabilities|failures?)\b)(?:\w+\s+){0,2}?(?:found|returned|available|exists?)\b)"
)
_EMPTY_PHRASE_ASCII = _ascii_twin(_EMPTY_PHRASE)  # it reads folded text: \s sees only spaces
_EMPTY_STARTS = ("no", "zero", "0", "empty", "ok.")  # after leading non-word characters ("nothing", "none" start with "no")
_EMPTY_INITIALS = frozenset(start[0] for start in _EMPTY_STARTS)
_PENDING = re.compile(
    r"\b(queued|pending|running|in[ _-]?progress|processing|waiting|not[ _-]?started|scheduled|starting|"
    r"initiali[sz]ing|building|deploying|provisioning|started|accepted|submitted|creating|updating|deleting|terminating|"
    r"syncing|scaling|migrating|restoring|rebooting|booting|containercreating)\b"
)
_TERMINAL = re.compile(r"\b(succeeded|success|completed?|done|finished|failed|failure|error|cancell?ed|aborted|ready)\b")
# A failed *state*, which waiting cannot change: a status field or word that says so, a JSON
# value, a whole answer, or a pod's crash state. Not a count ("0 failed") nor a transient
# error ("Failed to connect"), and not a column header ("READY").
_FAILED_STATE = re.compile(
    r"(?:\b(?:status|state|phase|result|conclusion|outcome)\b[\"']?\s*[:=]?\s*[\"']?|[:=]\s*[\"']|^\W*)"
    r"(?:failed|failure|errored|error|cancell?ed|aborted|crashed|timed[ _-]?out)\b"
    r"|\b(?:crashloopbackoff|imagepullbackoff|errimagepull|backofflimitexceeded)\b"
)
_PENDING_ASCII, _TERMINAL_ASCII, _FAILED_STATE_ASCII = _ascii_twin(_PENDING), _ascii_twin(_TERMINAL), _ascii_twin(_FAILED_STATE)
# A pending resource that says what it waits for is blocked on someone, not progressing:
# polling it again does not move it ("blocking": {"action": "operator refill required"}).
_BLOCKED = re.compile(r"\b(?:blocked|blocking|on[ _-]hold|action[ _-]required|requires?[ _-]action|manual[ _-]intervention|intervention[ _-]required)\b", re.ASCII)
# A state field and its value, in JSON, YAML or key=value: "status": "processing", state: RUNNING.
_STATE_FIELD = re.compile(r"""\b(?:status|state|phase|job_?state|lifecycle_?state|provisioning_?state)["']?\s*[:=]\s*["']?([a-z][a-z_ -]*)""", re.ASCII)


# Words of a reply that did not do what was asked ("old string not found", "Permission denied").
_FAILURE_WORDS = re.compile(
    r"\b(?:not found|denied|errors?|fail(?:ed|s|ure)?|invalid|unable|cannot|can't|could not|couldn't|refused|rejected|"
    r"forbidden|unauthori[sz]ed|missing|conflict|no such|does not exist|not allowed|not permitted|did not|didn't|"
    r"not performed|no replacement)\b"
)


def reports_failure(text: str) -> bool:
    """True when a short reply says that something went wrong (by its words), though nothing
    flagged it as a failure."""
    return _FAILURE_WORDS.search(text[:400].lower()) is not None


def reports_no_change(text: str, request: Any = None) -> bool:
    """True when a write's reply (its first 400 characters) says it changed nothing: counts of
    changes that are all 0 ("0 inserted, 0 updated", "UPDATE 0", "0 rows affected",
    "changed=0"), or, with no count above 0, a no-op phrase ("nothing to commit", "already up
    to date", "Everything up-to-date", "No changes.", "Copy executed with 0 files
    processed"), or kubectl lines that all say "unchanged" ("deployment.apps/api
    unchanged"). A reply that counts one change or more changed something, and so does a
    statement that changes a schema or grants (``request``, the call's arguments: MySQL
    answers ``CREATE TABLE`` with "0 rows affected")."""
    head = text[:400].lower()
    if "0" not in head and "nothing" not in head and "no change" not in head and "unchanged" not in head and "up to date" not in head and "up-to-date" not in head:
        return False  # (the cheap test: every no-op reply says 0 or one of these words)
    counts = [count or other for count, other in _CHANGE_COUNT.findall(head)]
    if any(count.strip("0,") for count in counts):
        return False  # something was counted as changed
    if _changes_schema(request):
        return False
    if counts or _NO_OP_PHRASE.search(head) is not None:
        return True
    objects = _KUBECTL_OBJECT_LINE.findall(head)
    return bool(objects) and all(verb == "unchanged" for verb in objects)


def _changes_schema(request: Any) -> bool:
    """Whether the call's text arguments hold a statement that changes a schema or grants."""
    if type(request) is not dict:
        return False
    return any(type(value) is str and _SCHEMA_CHANGE.search(value, 0, 2_000) is not None for value in request.values())


#: What a write that changed nothing says (lowercased).
_NO_OP_PHRASE = re.compile(
    r"\b(?:nothing to (?:commit|update|change|do|apply|migrate|deploy)|(?:already|everything) up[ -]to[ -]date|no changes?\b(?: (?:were )?(?:made|detected|applied|needed|to apply))?"
    r"|no rows? (?:were )?(?:affected|updated|inserted|deleted|changed)|0 files processed)"
)
#: A line of kubectl's reply naming an object and what happened to it ("service/api unchanged").
_KUBECTL_OBJECT_LINE = re.compile(r"^[\w.-]+/[\w.:-]+ (\w+)(?: \(server dry run\))?$", re.MULTILINE)
#: A statement that changes a schema or grants: its reply counts no rows ("Query OK, 0 rows affected").
_SCHEMA_CHANGE = re.compile(
    r"\b(?:create|alter|drop|truncate|rename)\s+(?:or\s+replace\s+)?(?:temporary\s+|temp\s+|unique\s+)?"
    r"(?:table|index|view|schema|database|sequence|function|procedure|trigger|user|role|type|extension|column)\b|\b(?:grant|revoke)\s",
    re.IGNORECASE,
)
#: A count of changes: "0 inserted", "3 rows updated", "rows affected: 0", "changed=0",
#: "UPDATE 0" (the count before or after its verb).
_CHANGE_COUNT = re.compile(
    r"(?<![=:] )(?<![=:])\b(\d[\d,]*) (?:(?:rows?|records?|files?|documents?|items?|objects?|entries|lines|keys|resources?)(?: were)? )?"
    r"(?:inserted|updated|deleted|changed|modified|affected|processed|loaded|copied|written|merged|upserted|created|added|removed|destroyed)\b"
    r"""|\b(?:inserted|updated|deleted|changed|modified|affected|merged|upserted|created|added|removed|destroyed|update|delete|insert \d+)["']?[:=]? ?(\d[\d,]*)\b"""
)


def is_final(text: str) -> bool:
    """True when a short output (≤ 400 characters) reports a failed state ("FAILED",
    "cancelled", "CrashLoopBackOff"): waiting cannot change it, so a poll that keeps getting it
    is no healthy poll."""
    if len(text) > 400:
        return False
    text = text.lower()
    return (_FAILED_STATE_ASCII if text.isascii() else _FAILED_STATE).search(text) is not None


def is_pending(text: str) -> bool:
    """True when the output reports a valid non-terminal state (a healthy poll), e.g. "state: RUNNING".

    A short output (up to 400 characters) by its words; a longer one, such as a whole job or
    payment resource, only by its one state field (``"status": "processing"``), and not when
    it says it is blocked or needs an action: a longer text's state words may be its data
    (a list of orders, each pending), and a resource that waits for someone does not move
    by itself."""
    if len(text) > 400:
        text = text.lower()
        fields = _STATE_FIELD.findall(text)
        return (
            len(fields) == 1
            and _PENDING_ASCII.match(fields[0]) is not None
            and _TERMINAL_ASCII.match(fields[0]) is None
            and _BLOCKED.search(text) is None
        )
    text = text.lower()
    if text.isascii():
        return _PENDING_ASCII.search(text) is not None and _TERMINAL_ASCII.search(text) is None
    return _PENDING.search(text) is not None and _TERMINAL.search(text) is None


_ACKNOWLEDGEMENT_LIMIT = 64  # characters
# Words with an apostrophe stay whole, so "wasn't" is one word that is not on the lists.
_ACKNOWLEDGEMENT_TOKENS = re.compile(r"[a-z]+(?:['\u2019][a-z]+)*")
_ACKNOWLEDGING = frozenset(
    "ok okay done success successful successfully succeeded sent saved created updated deleted removed added stored "
    "accepted acknowledged completed complete applied recorded scheduled posted published submitted confirmed true yes".split()
)
# The only other words an acknowledgement may hold: what was acknowledged, and grammar.
_ACKNOWLEDGEMENT_CONTEXT = frozenset(
    "the a an it this that was were is are has have been be and to of status result message email mail record file "
    "item entry event task job order request operation action change changes note comment post booking reservation".split()
)
# First words of a question ("Was the email sent") or of something still to happen ("To be sent").
_NOT_DONE_STARTS = frozenset("was were is are has have be to".split())
_POSITIVE_SCALAR = re.compile(r"[1-9]\d*(?:\.\d+)?|true", re.ASCII)


def is_acknowledgement(text: str) -> bool:
    """True when a short output only acknowledges its call ("ok", "Email sent.",
    ``{"success": true}``) or answers it with a positive number or ``true``.

    The same such output from two different calls is not "nothing new": each confirms its own
    call (a fan-out of writes that each return "sent" is healthy). Deliberately narrow: at
    most :data:`_ACKNOWLEDGEMENT_LIMIT` characters, no digits (so no "0 rows updated"), no
    empty container or string, only ASCII, at least one acknowledging word, every other word
    from a short list of nouns and grammar words, and neither a question nor a promise ("Was
    the email sent", "Change to be applied"); anything else ("Message wasn't sent", "OK -
    skipped", ``null``, ``0``, ``-1``, ``false``, text in another language) is no acknowledgement.
    """
    if len(text) > _ACKNOWLEDGEMENT_LIMIT:
        return False
    text = text.strip().strip("\"'").lower()
    if _POSITIVE_SCALAR.fullmatch(text) is not None:
        return True
    if not text.isascii() or not _ASCII_DIGITS.isdisjoint(text):
        return False
    packed = "".join(text.split())
    if "[]" in packed or "{}" in packed or '""' in packed or "''" in packed:
        return False  # an empty container or string: nothing came back
    words = _ACKNOWLEDGEMENT_TOKENS.findall(text)
    phrase = " ".join(words)
    if not words or words[0] in _NOT_DONE_STARTS or "to be" in phrase or "has to" in phrase:
        return False  # "Was the email sent", "Change to be applied": not done (yet)
    return not _ACKNOWLEDGING.isdisjoint(words) and all(word in _ACKNOWLEDGING or word in _ACKNOWLEDGEMENT_CONTEXT for word in words)


# --- failures -----------------------------------------------------------------------

PERMANENT = "permanent"
RETRYABLE = "retryable"
DETERMINISTIC = "deterministic"
#: The call never ran: the model read a guard's payload (block, cancel, budget_spent, ...).
REFUSED = "refused"

# The payloads of decisions.Verdict: recognised by content, so a live adapter (which
# records the payload as the call's result) and replay of the recorded trace agree.
_PAYLOAD_STARTS = ('{"error": true, "type": "', '{"cancelled": true, "reason": ')


def is_refusal(text: str, output: Any = None) -> bool:
    """True when the output is a guard's payload for a call that did not run: a
    ``{"cancelled": true, "reason"}`` or a ``{"error": true, "type", "message"}`` object with
    exactly those keys (a rule's block may name its own ``type``)."""
    if isinstance(output, dict):
        return _payload_keys(output)
    if not text.startswith(_PAYLOAD_STARTS) or len(text) > 4096:
        return False
    try:
        return _payload_keys(json.loads(text))
    except ValueError:
        return False


# What loopguard's plain adapter answers for a tool that raised or does not exist: the same
# shape as a refusal, but the call was made.
TOOL_ERROR, UNKNOWN_TOOL = "tool_error", "unknown_tool"
_ADAPTER_FAILURES = frozenset({TOOL_ERROR, UNKNOWN_TOOL})


def _payload_keys(data: Any) -> bool:
    if not isinstance(data, dict):
        return False
    if data.get("cancelled") is True:
        return data.keys() == {"cancelled", "reason"}
    kind = data.get("type")
    return data.get("error") is True and data.keys() == {"error", "type", "message"} and not (type(kind) is str and kind in _ADAPTER_FAILURES)

_PERMANENT_CODES = frozenset({400, 401, 402, 403, 404, 405, 410, 422})
_RETRYABLE_CODES = frozenset({408, 425, 429, 500, 502, 503, 504})
# A status code counts only at the start of the output (with its reason phrase, below) or
# right after a status word, so "page 1401" and "401 rows" in a sentence are not failures.
_THREE_DIGITS = re.compile(r"\b[1-5]\d\d\b")
# Up to three non-word characters between word and number, and a line break after them.
_STATUS_AFTER_WORD = re.compile(r"\b(?:http(?:/\d(?:\.\d)?)?|status(?:[ _]code)?|error(?:[ _]code)?|code|response)\W{0,3}\n?\b([1-5]\d\d)\b")
_STATUS_AFTER_WORD_ASCII = _ascii_twin(_STATUS_AFTER_WORD)
_STATUS_WORDS = ("http", "status", "error", "code", "response")
# What _STATUS_AFTER_WORD allows between the end of its word and the code: "/1.1" or " code",
# three non-word characters and a line break, so the code starts within 10 characters.
_STATUS_REACH = 10
# At the very start of an output a number is a status code only with its reason phrase
# ("403 Forbidden", "503 Service Unavailable"), so "401 rows exported" is not a failure.
_REASON_PHRASE = re.compile(
    r"\W*(?:ok|created|accepted|no content|bad|unauthori[sz]ed|payment|forbidden|not|method|conflict|gone|precondition|"
    r"unprocessable|too|internal|service|gateway|request|error|unavailable|timeout|upgrade|locked|failed)\b"
)
# Error words as messages and error codes spell them: "access denied", "access_denied",
# "AccessDenied", "AccessDeniedException", "invalid_request_error" (outputs are lowercased
# first). An underscore joins words of a code, but a code starts a word (or follows Chromium's
# "ERR_": net::ERR_CONNECTION_RESET): the error words inside a test's name
# ("test_get_user_not_found") are no error code.
_BEFORE_WORD, _AFTER_WORD = r"(?<![a-z0-9_])(?:err_)?(", r")(?:[ _-]?(?:exception|error|fault))?(?![a-z0-9])"
_RETRYABLE_WORDS = re.compile(
    _BEFORE_WORD
    + r"rate[ _-]?limit(?:ed)?|too[ _-]?many[ _-]?requests|time[ _-]?out|timed[ _-]?out|temporarily[ _-]?unavailable|service[ _-]?unavailable|"
    r"try again|retry[ _-]after|retry in \d|connection[ _-]?(?:reset|refused|aborted)|overloaded|server[ _-]?busy|throttl(?:ed|ing)|bad[ _-]?gateway|gateway[ _-]?timeout"
    + _AFTER_WORD
)
_PERMANENT_WORDS = re.compile(
    _BEFORE_WORD
    + r"unauthori[sz]ed|unauthenticated|not[ _-]?(?:authenticated|authori[sz]ed)|authentication[ _-]?failed|auth(?:entication)?[ _-]?error|"
    r"invalid[ _-]?(?:api[ _-]?)?(?:key|token|credentials?|grant)|forbidden|permission[ _-]?denied|access[ _-]?denied|not[ _-]?permitted|"
    r"invalid[ _-]?request|bad[ _-]?request|not[ _-]?found|no such \w+|does not exist|"
    r"unknown[ _-]?(?:tool|function|command|parameter|argument)|schema|validation[ _-]?(?:error|failed)|validation(?=[ _-]?exception)|"
    r"(?:invalid|malformed)[ _-]?(?:argument|parameter|input|value|integer|number|format|type|field)s?|parameter[ _-]?invalid|"
    r"missing[ _-]?required|unprocessable|not[ _-]?supported|unsupported|already[ _-]?(?:exists?|taken)"
    + _AFTER_WORD
)
_RETRYABLE_WORDS_ASCII, _PERMANENT_WORDS_ASCII = _ascii_twin(_RETRYABLE_WORDS), _ascii_twin(_PERMANENT_WORDS)
# Contention: a lock or a resource another holder has now (Terraform's state lock, SQLite's
# "database is locked", EBUSY, an operation already in progress, a deadlock victim).
_CONTENTION = re.compile(
    r"\b(?:acquiring (?:the )?(?:state )?lock|lock (?:is )?(?:already )?(?:held|taken|acquired by)|"
    r"(?:database|table|file|resource|state) is locked|locked by (?:another|a different)|could not (?:obtain|acquire) (?:a |the )?lock|"
    r"lock (?:wait )?timeout|deadlock (?:detected|found)|(?:device or )?resource (?:is )?busy|"
    r"another (?:operation|process|instance|update|deployment|run) is (?:already )?(?:in progress|running)|operation (?:is )?already in progress|"
    r"(?:object|resource|namespace) is being deleted|is (?:still )?terminating|pending deletion)\b"
)
_CONTENTION_ASCII = _ascii_twin(_CONTENTION)
#: Status codes under which contention words still mean contention (None: no code).
_CONTENTION_CODES = frozenset({None, 400, 409, 423, 500, 503})
# What a harness says when it condensed the agent's context (see is_context_summary): a word
# for the context near a word for what was done to it, either way round, or a condenser's own
# names (OpenHands' "CondensationAction", "forgotten_events"). A "conversation summary" or a
# "summary of the conversation with the customer" is a report of a conversation, not of the
# context: a conversation must be said condensed, or its summary be of it so far or of its
# earlier turns.
_CONDENSED_WORDS = r"(?:summari[sz]ed|condensed|condensing|compacted|compressed|trimmed|truncated)"
_CONTEXT_SUMMARY = re.compile(
    # ("messages were removed" is a condensation; "removed the messages" is an agent's work)
    rf"\b(?:context|history|memory|events?|messages|turns)\b[^.\n]{{0,60}}?\b(?:summary|{_CONDENSED_WORDS}|removed|replaced|forgotten|dropped)\b"
    rf"|\b(?:conversation|chat)\b[^.\n]{{0,60}}?\b(?:{_CONDENSED_WORDS}|removed|replaced|dropped)\b"
    rf"|\b(?:summary|{_CONDENSED_WORDS})\b[^.\n]{{0,60}}?\b(?:(?:earlier|previous|prior|older) (?:conversation|turns|messages|events|exchanges|context)|(?:conversation|context) (?:so far|to date)|context|history)\b"
    r"|\bcondensation|condensed_history|forgotten_event|ran out of context|\bcontext (?:limit|window) (?:reached|exceeded|at \d)"
)
# Words one of which every context summary _CONTEXT_SUMMARY finds holds.
_CONTEXT_SUMMARY_HINT = re.compile(r"summar|condens|compact|compress|trimmed|truncat|removed|replaced|forgotten|dropped|ran out of context|context (?:limit|window)")
# Context overflow is a failure of the step wherever it is said (the condensation-loop kind).
_CONTEXT_OVERFLOW = re.compile(r"\b(?:context (?:window|length) (?:exceeded|overflow)|maximum context length|prompt is too long|token limit exceeded)\b")
_LEADING = " \t\n\"'[({:-"
_ASCII_NON_WORD = "".join(chr(code) for code in range(128) if not (chr(code).isalnum() or chr(code) == "_"))
_ERROR_WORDS = ("error", "exception", "traceback", "fatal", "failed", "failure", "panic")
_ERROR_INITIALS = frozenset(word[0] for word in _ERROR_WORDS)
_ERROR_START = re.compile(r"^\W*(" + "|".join(_ERROR_WORDS) + r")\b")
_ERROR_START_ASCII = _ascii_twin(_ERROR_START)
# JSON that opens with an empty error field reports no error: {"error": null, "results": [...]}.
_NO_ERROR_FIELD = re.compile(r'\s*\{\s*"(?:error|errors|exception|failed|failure|failures)"\s*:\s*(?:null|false|""|\[\s*\]|\{\s*\}|0)\s*[,}]')
_EXIT_CODE = re.compile(r"\[?exit(?:ed)?(?: with)? (?:code|status)[:= ]*([1-9]\d*)\]?")


def exit_status_only(text: str) -> int | None:
    """The exit status of a command whose output is nothing but its exit status
    (``"[exit code 1]"``, ``"Exit code: 1"``), else ``None``."""
    if len(text) > 80 or ("xit" not in text and "XIT" not in text):
        return None
    lowered = text.lower()
    found = _EXIT_CODE.search(lowered)
    if found is None or (lowered[: found.start()] + lowered[found.end() :]).strip(" \t\n\r.()[]:") != "":
        return None
    return int(found.group(1))


def status_code(text: str) -> int | None:
    """The HTTP-like status code the output reports, if any (only in a status context)."""
    return _status_code_of(text[:300].lower())


def _status_code_of(head: str) -> int | None:
    """:func:`status_code` of an output's lowercased first 300 characters."""
    lead = head.lstrip(_LEADING)
    if lead[:1].isdigit():
        match = _THREE_DIGITS.match(lead)
        if match is not None and _REASON_PHRASE.match(lead, match.end()) is not None:
            return int(match.group())
    # Most outputs hold no word that opens a status context: cheap tests skip the scan.
    if "http" not in head and "status" not in head and "error" not in head and "code" not in head and "response" not in head:
        return None
    if head.isascii():
        # A regular expression without a literal start tries every position, so it runs only
        # when a digit follows one of its words closely enough (JSON with a "status" field
        # usually has none there).
        if not _digit_after_status_word(head):
            return None
        match = _STATUS_AFTER_WORD_ASCII.search(head)
    else:
        match = _STATUS_AFTER_WORD.search(head)
    return int(match.group(1)) if match is not None else None


def _digit_after_status_word(head: str) -> bool:
    """Whether an ASCII digit follows a status word within its reach (necessary for a match)."""
    for word in _STATUS_WORDS:
        index = head.find(word)
        while index >= 0:
            index += len(word)
            if not _ASCII_DIGITS.isdisjoint(head[index : index + _STATUS_REACH]):
                return True
            index = head.find(word, index)
    return False


def looks_like_error(text: str, output: Any = None) -> bool:
    """Infer a failure when the result carries no error flag."""
    return _inferred_failure(text[:300].lower(), text[-200:].lower(), output)


def _inferred_failure(head: str, tail: str, output: Any) -> bool:
    """:func:`looks_like_error` of an output's lowercased first 300 and last 200 characters."""
    if isinstance(output, dict):
        flag = output.get("error")
        if flag not in (None, False, "", 0):
            return True
    # For ASCII text a cheap exact test runs first: after its leading non-word characters, an
    # output that starts like an error starts with one of _ERROR_START's words.
    if head.isascii():
        lead = head.lstrip(_ASCII_NON_WORD)
        if (
            lead[:1] in _ERROR_INITIALS
            and lead.startswith(_ERROR_WORDS)
            and _ERROR_START_ASCII.match(head) is not None
            and _NO_ERROR_FIELD.match(head) is None
        ):
            return True
    elif _ERROR_START.match(head) is not None and _NO_ERROR_FIELD.match(head) is None:
        return True
    if ("context" in head or "token" in head or "prompt" in head) and _CONTEXT_OVERFLOW.search(head):
        return True
    if '"status"' in head and _FAILED_STATUS.search(head) is not None:
        return True  # {"status": "not_found", "message": "No company matched"}
    code = _status_code_of(head)
    if code is not None and code >= 400:
        return True
    return "xit" in tail and _EXIT_CODE.search(tail) is not None


# A plan's allowance spent, not a rate: OpenAI's 429 insufficient_quota ("You exceeded your
# current quota, please check your plan and billing details"), minutes or credits exhausted
# for the billing cycle. Retrying does not help until someone pays or the period ends.
_ALLOWANCE_SPENT = re.compile(
    r"insufficient[ _-]?quota|exceeded your current quota|check your plan and billing"
    r"|(?:minutes|credits|quota|balance|allowance)[ _-]?(?:are |is |have been |has been )?exhausted|upgrade (?:the|your) plan"
)


# What says a spent quota is a rate that comes back ("retry in 21s", "per minute", "req/min").
_RATE_HINT = re.compile(
    r"(?:retry|try again|wait)(?: in| after| for)? \d|per (?:second|minute|hour)\b|/ ?(?:s|sec|min|minute)\b|try again later|retry later"
)


# A JSON reply whose own status says the call failed (not a job's state: "state": "failed").
_FAILED_STATUS = re.compile(r'"status"\s*:\s*"(?:not[ _-]?found|error)"')


# What a failure says when what was asked for is not there: its text names what was asked.
_NOT_FOUND_CODES = frozenset({404, 410})
_NOT_FOUND_WORDS = re.compile(r"\b(?:not[ _]found|no such|does not exist|doesn't exist|could not find|couldn't find|unknown)\b")


def is_not_found(text: str) -> bool:
    """True for a failure that says what was asked for does not exist (404, 410, "not found",
    "no such", "does not exist", "could not find", "unknown"): such a failure depends on the
    arguments, and a call with other arguments may well succeed. A 401 or 403 is about the
    credentials, whatever it says ("The API key provided has been revoked or does not exist"):
    they are the same in calls with other arguments."""
    head = text[:300].lower()
    code = _status_code_of(head)
    if code in _AUTHENTICATION_CODES:
        return False
    return code in _NOT_FOUND_CODES or _NOT_FOUND_WORDS.search(head) is not None


_AUTHENTICATION_CODES = frozenset({401, 403, 407})


# What a test runner prints when tests fail (lowercased): pytest's "=== FAILURES ===" and
# "short test summary info" banners and its "E   " assertion lines, unittest's "FAIL: test_x",
# go test's "--- FAIL: TestX", jest's "FAIL src/x.test.ts" and "●", cargo's "test result: FAILED".
_TEST_REPORT = re.compile(
    r"=+ (?:failures|errors) =+|short test summary info|^e {3}|^fail: test"  # pytest, unittest
    r"|^--- fail: |^fail\s+\S+\.(?:[cm]?[jt]sx?)\b|^\s*● |test result: failed|^failures:$",  # go test, jest, cargo test
    re.MULTILINE,
)


def classify_failure(text: str) -> str:
    """``permanent`` (401/403, invalid request, not found, schema), ``retryable`` (429, 503, timeouts)
    or ``deterministic`` (anything else: the same input will fail the same way)."""
    return _classify_head(text[:600])


@lru_cache(maxsize=256)
def _classify_head(head: str) -> str:
    """:func:`classify_failure` of an output's first 600 characters. Identical failures (the
    stuck case) repeat, so classes are cached."""
    head = head.lower()
    if ("context" in head or "token" in head or "prompt" in head) and _CONTEXT_OVERFLOW.search(head):
        return DETERMINISTIC  # a 400 invalid_request_error that condensing the context can cure
    if ("quota" in head or "exhausted" in head or "plan" in head) and _ALLOWANCE_SPENT.search(head):
        # A spent allowance waits for the billing period: no retry helps. Unless the text says
        # it is a rate that comes back (Gemini's free tier "per minute ... retry in 21s").
        return RETRYABLE if _RATE_HINT.search(head) else PERMANENT
    code = status_code(head)
    if ("lock" in head or "busy" in head or "in progress" in head or "delet" in head or "terminating" in head) and code in _CONTENTION_CODES:
        if (_CONTENTION_ASCII if head.isascii() else _CONTENTION).search(head):
            # Waiting for another holder to finish: retrying later is correct, whatever the
            # failed attempt's code says of the request (Terraform's lock is a DynamoDB 400).
            # Not a 401 or a 403: an account locked out stays locked.
            return RETRYABLE
    if code in _RETRYABLE_CODES:
        return RETRYABLE
    if code is None and _TEST_REPORT.search(head) is not None:
        # A test runner's report: the failing test's source and assertion are printed with it,
        # and their words ("02:30 does not exist") say nothing of the call; an edit can fix it.
        return DETERMINISTIC
    if code in _PERMANENT_CODES:
        return PERMANENT
    ascii_text = head.isascii()
    if (_RETRYABLE_WORDS_ASCII if ascii_text else _RETRYABLE_WORDS).search(head):
        return RETRYABLE
    if (_PERMANENT_WORDS_ASCII if ascii_text else _PERMANENT_WORDS).search(head):
        return PERMANENT
    return DETERMINISTIC


# Lowercased text without digits, the letters a-f and whitespace: outputs that differ only
# in volatile parts (numbers, hex ids, UUIDs, timestamps) or spacing share it, so the
# costly normalisation runs only when two outputs already share a skeleton. Deleting bytes
# is several times faster than str.translate. The whitespace deleted is every ASCII
# character str.split() splits on (the file and group separators \x1c-\x1f included).
_SKELETON_DELETE = b"0123456789abcdef" + bytes(code for code in range(128) if chr(code).isspace())


def skeleton_digest(lowered: str) -> int:
    """Digest of a lowercased text's skeleton (see ``_SKELETON_DELETE``): texts that differ only
    in digits, hex letters or ASCII spacing share it."""
    return hash(lowered.encode("utf-8", "surrogatepass").translate(None, _SKELETON_DELETE))


_MIDDLE_BLOCK, _MIDDLE_MARGIN = 64, 48
_NO_MIDDLE = (0, 0)


class Observation:
    """One tool output, read once; the normalised fingerprint is computed on demand.

    Attributes:
        text: the output as text (its first :data:`MAX_COMPARED` characters).
        end: for a longer output, its last :data:`END_KEPT` characters (where APIs put the next
            page's cursor), else ``""``.
        exact: digest of the whole text.
        skeleton: digest of the text without digits and hex letters (equal for outputs
            that differ only in volatile parts; a cheap first test).
        empty: the output carries no information.
        error: the call failed (flagged by the tool or inferred from the output).
        failure_class: ``permanent``, ``retryable`` or ``deterministic`` for failures, else ``None``.
        shape: for failures, the digest of the normalised text with all numbers removed.
        middle: for a longer output, two digests of the part between its head and its end,
            in whole blocks of 64 characters: blocks from the head's end that stop before the
            last 208 characters (outputs alike but for a few characters near their end share
            it), and blocks counted back from 192 characters before the end (outputs alike but
            for a few characters near their start share it); else ``(0, 0)``.
    """

    __slots__ = ("text", "end", "exact", "skeleton", "empty", "error", "failure_class", "shape", "middle", "unstamped", "_tail", "_fingerprint")

    def __init__(self, text: str, error: bool, failure_class: str | None, lowered: str | None = None, request: Any = None) -> None:
        """``lowered`` is ``text[:MAX_COMPARED].lower()`` when the caller has it already;
        ``request`` is the call's arguments (see :func:`is_empty_envelope`)."""
        self.exact = hash(text)
        if len(text) > MAX_COMPARED:
            self._tail = hash(text[MAX_COMPARED:])
            self.end = text[-END_KEPT:]
            self.text = text[:MAX_COMPARED]
            # The part between head and end in whole blocks, short of the last 208 characters: two pages
            # alike but for a few characters near their end (an offset, a cursor) share it.
            blocks = (len(text) - MAX_COMPARED - END_KEPT + _MIDDLE_MARGIN) // _MIDDLE_BLOCK
            from_start = hash(text[MAX_COMPARED : MAX_COMPARED + blocks * _MIDDLE_BLOCK]) if blocks > 0 else 0
            # The same counted back from the end: two pages alike but for a few characters near
            # their start (an offset echoed in a header) share this one.
            stop = len(text) - END_KEPT + _MIDDLE_BLOCK
            blocks = (stop - MAX_COMPARED) // _MIDDLE_BLOCK
            self.middle = (from_start, hash(text[stop - blocks * _MIDDLE_BLOCK : stop]) if blocks > 0 else 0)
        else:
            self._tail, self.end, self.text, self.middle = None, "", text, _NO_MIDDLE
        if lowered is None:
            lowered = self.text.lower()
        ascii_text = lowered.isascii()
        if ascii_text:
            self.skeleton = hash(lowered.encode("ascii").translate(None, _SKELETON_DELETE))
        else:  # whitespace beyond ASCII (no-break spaces, ...) is dropped as normalisation folds it
            self.skeleton = hash("".join(lowered.split()).encode("utf-8", "surrogatepass").translate(None, _SKELETON_DELETE))
        self.error = error
        self.failure_class = failure_class
        if error:
            self.empty = False
        else:
            # Empty: blank, an empty container, "no results"-like, or an empty answer in an
            # API's envelope (parsed only when it holds "[]").
            stripped = lowered.strip()
            body = self.text
            if (stripped[-1:] == "]" and stripped.endswith(_SHELL_SUCCESS)) or stripped[:5] == "http/":
                body = _content(body)  # without a shell's "[exit code 0]" or an HTTP response's headers
                stripped = body.lower()
            self.empty = _says_empty(stripped, ascii_text) or ((stripped.endswith(_ROW_COUNTS) or "time: " in stripped[-80:]) and _no_rows(stripped))
            if not self.empty and self._tail is None and stripped[:1] == "{" and ("[]" in stripped or ('": 0' in stripped and _ZERO_FOUND.search(stripped))):
                self.empty = is_empty_envelope(body, request)  # (a cut text is no whole object: not parsed)
        self._fingerprint: int | None = None
        self.unstamped: int | None = None  # (see near_duplicate.unstamped_digest)
        self.shape = _failure_shape(self.text, self._tail is not None) if error else 0

    @property
    def rest(self) -> int | None:
        """Digest of the text after its first :data:`MAX_COMPARED` characters (``None`` for a
        shorter text)."""
        return self._tail

    def normalized(self) -> str:
        """The text with volatile parts replaced (see :func:`normalize`)."""
        head = _normalize(self.text)  # the text is already cut to MAX_COMPARED characters
        return head if self._tail is None else f"{head} <tail {self._tail}>"

    @property
    def fingerprint(self) -> int:
        """Digest of the normalised text (computed on first use; an identical text is
        recognised by ``exact`` before this is needed, so there is nothing to cache across
        observations)."""
        if self._fingerprint is None:
            self._fingerprint = hash(self.normalized())
        return self._fingerprint

    def same_as(self, other: "Observation | None") -> bool:
        """True when both outputs are equal once volatile parts are normalised."""
        if other is None:
            return False
        if other.exact == self.exact:
            return True
        if other.skeleton == self.skeleton:
            return other.fingerprint == self.fingerprint
        if not self.token_apart(other):
            return False
        mine, theirs = without_anti_forgery_token(self.text.lower()), without_anti_forgery_token(other.text.lower())
        return mine is not None and theirs is not None and normalize(mine) == normalize(theirs)

    def token_apart(self, other: "Observation") -> bool:
        """Whether two outputs whose skeletons differ may still be one page served twice:
        skeletons keep letters beyond hex, so a page's anti-forgery token (made anew for every
        page served) tells them apart, and only ``same_as`` can tell (cheap tests: both may
        hold one and their lengths are nearly one). Other tokens with such letters, a parcel's
        tracking number, are data."""
        return abs(len(other.text) - len(self.text)) <= TOKEN_LENGTH_SLACK and _may_hold_token(self.text) and _may_hold_token(other.text)


#: What a search command that matched nothing answered (its output was only exit status 1).
NO_MATCH = Observation("[no match: exit status 1]", False, None)
NO_MATCH.empty = True


def observe(output: Any, error: bool | None = None, request: Any = None) -> Observation:
    """Read one output (never raises: an output that cannot even be read as text is
    ``"<unreadable output>"``). ``request``, the call's arguments when known, tells the fields
    of a JSON reply that only echo them (see :func:`is_empty_envelope`)."""
    try:
        text = output if type(output) is str else output_text(output)
        # (A one-character slice is a cached string: comparing it is cheaper than startswith.)
        if ((text[:1] == "{" and text.startswith(_PAYLOAD_STARTS)) or isinstance(output, dict)) and is_refusal(text, output):
            return Observation(text, True, REFUSED)
        if text.isascii() and len(text) <= MAX_COMPARED:
            # Lowercased once for both readings (for ASCII, slicing and lowercasing commute).
            lowered = text.lower()
            failed = _inferred_failure(lowered[:300], lowered[-200:], output) if error is None else bool(error)
            return Observation(text, failed, classify_failure(text) if failed else None, lowered, request)
        failed = looks_like_error(text, output) if error is None else bool(error)
        return Observation(text, failed, classify_failure(text) if failed else None, None, request)
    except Exception:
        return Observation("<unreadable output>", bool(error), DETERMINISTIC if error else None)
