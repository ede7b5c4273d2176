"""Canonical arguments and call signatures: computed once per call, used by every detector.

A signature is the tool name plus the canonical JSON of the call's arguments, so two
calls that differ only in key order, whitespace or number form (``1`` / ``1.0`` /
``"1e0"`` is *not* a number and stays a string) have the same signature.

Values and mapping keys take the form JSON gives them: a ``str``, ``int`` or ``float``
subclass (a ``(str, Enum)`` or ``IntEnum`` member, ``numpy.str_``, ``numpy.float64``) is its
plain value, read through the base type so that the subclass's own methods never run; numpy
scalars and arrays of up to :data:`MAX_ITEMS` items are their Python values; a key ``True`` /
``None`` / ``1.0`` is ``"true"`` / ``"null"`` / ``"1"``, and a non-string key whose text
another key of the mapping has is tagged with its type (``{True: 1, "true": 2}`` keeps both,
as ``"true <bool>"`` and ``"true"``). No arguments are ``{}`` however they come: ``None``, a
blank string, ``"null"`` and ``"{}"`` are one call.

Canonicalisation never raises: non-JSON values are rendered by type and ``repr``,
reference cycles become ``"<cycle>"``, NaN and infinities become the strings
``"NaN"`` / ``"Infinity"`` / ``"-Infinity"``, nesting deeper than
:data:`MAX_DEPTH` is cut, and strings longer than :data:`MAX_STRING` characters (ints
longer than :data:`MAX_INT_BITS` bits) are replaced by their length and a digest so that
memory per call stays bounded. Cost is bounded too: one call reads at most
:data:`MAX_NODES` containers and odd values (a list holding one sub-list twice, forty levels
deep, is 2**40 values when expanded) and digests at most as many of what the limits cut
off; past that only sizes count, so two calls that differ only there share a signature.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from typing import Any

#: Nesting depth after which values are replaced by ``"<deep>"``.
MAX_DEPTH = 32
#: Strings longer than this (in characters) are replaced by length and digest.
MAX_STRING = 2048
#: Containers with more items than this keep the first items and a count.
MAX_ITEMS = 1000
#: Ints longer than this (in bits) are replaced by their length and a digest.
MAX_INT_BITS = 1024
#: Containers and other non-scalar values one canonicalisation reads before it cuts the
#: rest to a digest (shared sub-lists would otherwise expand exponentially).
MAX_NODES = 10_000


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def canonical_value(value: Any, _depth: int = 0, _seen: frozenset[int] = frozenset(), _budget: list[Any] | None = None) -> Any:
    """Return a JSON-safe, canonical copy of ``value`` (never raises).

    Integral floats become ints, mappings get string keys, sets become sorted lists,
    tuples become lists, numpy scalars and small arrays become their Python values. See the
    module docstring for the limits applied. A value whose own methods raise
    (``__getattribute__``, ``items``, ``__iter__``) becomes ``"<TYPE unreadable>"``.
    """
    if _budget is None:
        _budget = [MAX_NODES, MAX_NODES, {}]  # values left to read, values left to digest, long strings' digests
    try:
        return _canonical(value, _depth, _seen, _budget)
    except Exception:
        try:
            name = type(value).__name__
        except Exception:
            name = "object"
        return f"<{name} unreadable>"


def _canonical(value: Any, depth: int, seen: frozenset[int], budget: list[Any]) -> Any:
    if value is None or value is True or value is False:
        return value
    kind = type(value)
    if kind is str:
        return value if len(value) <= MAX_STRING else _long_string(value, budget[2])
    if kind is int:
        # A huge int would make str()/JSON refuse it (Python's 4300-digit limit) and costs memory.
        return value if value.bit_length() <= MAX_INT_BITS else _huge_int(value)
    if kind is float:
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        if value.is_integer():
            return int(value)  # exact: 1e16 and 10**16 are one number, as JSON reads them
        return value
    budget[0] -= 1  # containers and odd values count: shared sub-lists must not expand forever
    if depth >= MAX_DEPTH:
        return f"<deep {_rest_digest(value, budget)}>"
    ident = id(value)
    if isinstance(value, dict) or _is_mapping(value):
        if ident in seen:
            return "<cycle>"
        try:
            # At most what can be read (MAX_ITEMS) and digested (MAX_NODES): a huge mapping is not copied.
            items = list(itertools.islice(value.items(), MAX_ITEMS + MAX_NODES))
            total = len(value) if len(items) == MAX_ITEMS + MAX_NODES else len(items)
        except Exception:  # a broken mapping must not crash a decision
            return f"<{type(value).__name__}>"
        return _canonical_mapping(items, total, depth, seen | {ident}, budget)
    if isinstance(value, (list, tuple)):
        if ident in seen:
            return "<cycle>"
        inner = seen | {ident}
        out = []
        for index, item in enumerate(value):
            if index >= MAX_ITEMS or budget[0] <= 0:
                # (only the part a digest can still read is sliced; the count says how much is left)
                out.append(f"<{len(value) - index} more {_rest_digest(value[index : index + max(budget[1], 0)], budget)}>")
                break
            out.append(canonical_value(item, depth + 1, inner, budget))
        return out
    if isinstance(value, (set, frozenset)):
        if len(value) > MAX_ITEMS or len(value) > budget[0]:
            # Sorting needs every item canonical: an oversized set is its size and an
            # order-independent digest (the hash of its items, computed in C).
            return f"<set len={len(value)} digest={_set_digest(value)}>"
        inner = seen | {ident}
        return sorted((canonical_value(item, depth + 1, inner, budget) for item in value), key=_sort_key)
    # Subclasses of the JSON types are their plain value, read by the base type's own method
    # (a subclass may override __str__/__int__/__float__, but not these).
    if isinstance(value, str):  # a (str, Enum) member, numpy.str_
        return _canonical(str.__str__(value), depth, seen, budget)
    if isinstance(value, int):  # an IntEnum member (bool cannot be subclassed)
        return _canonical(int.__int__(value), depth, seen, budget)
    if isinstance(value, float):  # numpy.float64
        return _canonical(float.__float__(value), depth, seen, budget)
    if isinstance(value, (bytes, bytearray)):
        return f"<bytes len={len(value)} digest={hashlib.blake2b(bytes(value), digest_size=8).hexdigest()}>"
    if hasattr(value, "dtype") and callable(getattr(value, "tolist", None)):
        # numpy scalars (np.int64, np.bool_, ...) and arrays: their Python values.
        size = getattr(value, "size", None)
        if type(size) is int and size <= MAX_ITEMS and size <= budget[0]:
            budget[0] -= size
            return canonical_value(value.tolist(), depth, seen | {ident}, budget)
        return f"<{type(value).__name__} size={size} digest={hashlib.blake2b(value.tobytes(), digest_size=8).hexdigest()}>"
    try:
        model_dump = getattr(value, "model_dump", None)  # pydantic models, as tools often take them
    except Exception:
        model_dump = None
    if callable(model_dump):
        try:
            return canonical_value(model_dump(), depth + 1, seen | {ident}, budget)
        except Exception:
            pass
    try:
        text = repr(value)
    except Exception:
        text = "?"
    return _canonical(f"<{type(value).__name__} {text}>", depth + 1, seen, budget)


def _canonical_mapping(items: list[tuple[Any, Any]], total: int, depth: int, seen: frozenset[int], budget: list[Any]) -> dict[str, Any]:
    """A mapping's items with string keys. Keys that JSON would write alike (``True`` and
    ``"true"``, ``1`` and ``"1"``) must not merge two values into one: a non-string key whose
    text another key already has is tagged with its type (``"true <bool>"``). ``total`` is the
    mapping's size (``items`` may be its first part only)."""
    out: dict[str, Any] = {}
    texts: set[str] | None = None  # the string keys, built only when a key is not a string
    for index, (key, item) in enumerate(items):
        if index >= MAX_ITEMS or budget[0] <= 0:
            out["<more>"] = f"{total - index} {_rest_digest(items[index : index + max(budget[1], 0)], budget)}"
            break
        if type(key) is str and len(key) <= MAX_STRING:
            text = key
        else:
            if texts is None:
                texts = {_key_text(other, budget) for other, _ in items if isinstance(other, str)}
            text = _key_text(key, budget)
            if not isinstance(key, str) and (text in texts or text in out):
                text = f"{text} <{type(key).__name__}>"
                if text in out:
                    text = f"{text} #{index}"
        out[text] = canonical_value(item, depth + 1, seen, budget)
    return out


def _is_mapping(value: Any) -> bool:
    return hasattr(value, "items") and hasattr(value, "keys") and hasattr(value, "__getitem__")


def _rest_digest(rest: Any, budget: list[Any]) -> str:
    """A digest of what a limit cut off, so that two values differing only there still differ.

    Bounded: the walks of one call's cuts read at most :data:`MAX_NODES` values in all
    (after that only the sizes already read count), each object once however often it is
    shared, and each long string once. Deterministic across processes (no ``hash()``), so
    replaying a trace always prints the same text.
    """
    hasher = hashlib.blake2b(digest_size=8)
    visited: dict[int, int] = {}
    stack = [rest]
    while stack and budget[1] > 0:
        node = stack.pop()
        budget[1] -= 1
        kind = type(node)
        if node is None or kind in (bool, int, float):
            hasher.update(f"{kind.__name__}:{_canonical(node, 0, frozenset(), budget)};".encode())
            continue
        if kind is str:
            hasher.update(f"str:{_canonical(node, 0, frozenset(), budget)};".encode("utf-8", "surrogatepass"))
            continue
        ident = id(node)
        if ident in visited:
            hasher.update(f"ref:{visited[ident]};".encode())  # shared or cyclic: read once
            continue
        visited[ident] = len(visited)
        try:
            if isinstance(node, (list, tuple)):
                hasher.update(f"{kind.__name__}:{len(node)};".encode())
                stack.extend(reversed(node[: max(budget[1], 0)]))
            elif isinstance(node, dict):
                hasher.update(f"dict:{len(node)};".encode())
                for key, value in itertools.islice(node.items(), max(budget[1], 0) // 2):
                    stack.append(value)
                    stack.append(key)
            elif isinstance(node, (set, frozenset)):
                hasher.update(f"set:{len(node)}:{_set_digest(node)};".encode())
            else:
                hasher.update(f"{kind.__name__}:".encode() + repr(node)[:MAX_STRING].encode("utf-8", "surrogatepass"))
        except Exception:  # unreadable: only its type counts
            hasher.update(f"{kind.__name__}:?;".encode())
    return "digest=" + hasher.hexdigest()


def is_digest_placeholder(value: str) -> bool:
    """True for a value this module cut to its size and a digest (``<str len=5000 digest=…>``,
    ``<int 1700 bits digest=…>``, ``<12 more digest=…>``, ...)."""
    return value[:1] == "<" and value[-1:] == ">" and " digest=" in value


def _set_digest(items: Any) -> str:
    """An order-independent digest of a set, computed in C from its items' hashes. Python's
    hash differs between processes, but a set never comes from a trace file (JSON has none),
    so replayed output stays the same from run to run."""
    return f"{hash(frozenset(items)) & 0xFFFFFFFFFFFFFFFF:016x}"


def _long_string(value: str, digests: dict[int, str]) -> str:
    """A string past :data:`MAX_STRING` as its length and a digest (computed once per string
    object within one call: a list may hold the same long string many times)."""
    text = digests.get(id(value))
    if text is None:
        text = digests[id(value)] = f"<str len={len(value)} digest={_digest(value)}>"
    return text


def _huge_int(value: int) -> str:
    """An int past :data:`MAX_INT_BITS` as its length and a digest of its bytes."""
    size = value.bit_length() // 8 + 1
    return f"<int {value.bit_length()} bits digest={hashlib.blake2b(value.to_bytes(size, 'little', signed=True), digest_size=8).hexdigest()}>"


def _key_text(key: Any, budget: list[Any]) -> str:
    """A mapping key as the plain string JSON writes for it: a ``str`` subclass such as a
    ``(str, Enum)`` member is its string value (not its ``str()``), ``True`` is ``"true"``,
    ``None`` is ``"null"``, ``1.0`` is ``"1"``, NaN is ``"NaN"``; text past
    :data:`MAX_STRING` characters is its length and a digest. Never raises."""
    try:
        if key is None or isinstance(key, (str, int, float)) or hasattr(key, "dtype"):
            value = canonical_value(key, 0, frozenset(), budget)  # the value's own rules, length limit included
            return value if isinstance(value, str) else _ENCODER.encode(value)
        text = str(key)
    except Exception:
        return "?"
    return text if len(text) <= MAX_STRING else _long_string(text, budget[2])


def _sort_key(item: Any) -> str:
    return json.dumps(item, sort_keys=True, ensure_ascii=False, default=str)


def parse_arguments(arguments: Any) -> Any:
    """Return the arguments as data: a JSON string (as OpenAI chat messages carry them)
    is parsed, ``None``, a blank string and the JSON text ``null`` are no arguments
    (``{}``); anything else is returned unchanged. Never raises."""
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        text = str.__str__(arguments).strip()  # a str subclass's own methods are not called
        if not text or text == "null":  # JSON text for no arguments, as some models write it
            return {}
        if text.startswith(("{", "[")):
            try:
                return json.loads(text)
            except (ValueError, RecursionError):
                return arguments
    return arguments


def canonical_json(arguments: Any) -> str:
    """Canonical JSON text of ``arguments``: sorted keys, no whitespace, normalised numbers."""
    return _ENCODER.encode(canonical_value(parse_arguments(arguments)))


class Signature:
    """The canonical, hashable form of one tool call.

    Attributes:
        tool: the tool name.
        arguments: the canonical arguments (JSON-safe data).
        key: an integer digest of the canonical call, cheap to store in detector windows
            (Python's hash: stable within a process, which is all a session needs).
        text: ``tool(canonical JSON of the arguments)``, the readable identity of the
            call; built on first use, since only messages need it.
    """

    __slots__ = ("tool", "arguments", "key", "_text")

    def __init__(self, tool: str, arguments: Any, key: int, text: str | None = None) -> None:
        self.tool = tool
        self.arguments = arguments
        self.key = key
        self._text = text

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = f"{self.tool}({_ENCODER.encode(self.arguments)})"
        return self._text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Signature) and other.key == self.key and other.text == self.text

    def __hash__(self) -> int:
        return self.key

    def __repr__(self) -> str:
        return f"Signature({self.text!r})"

    def __str__(self) -> str:
        return self.text


# One encoder, built once: json.dumps with options builds a new encoder on every call.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _flat_items(arguments: Any) -> list[tuple[str, Any, type]] | None:
    """The items of a flat mapping of strings, ints and nulls (already canonical), each with
    its value's type, or ``None`` when ``arguments`` is no such mapping or its items could
    not be hashed into a key without collisions.

    The key is a hash of the item set, so two different calls must never give equal item
    hashes: the type keeps apart values whose hashes are equal (``hash("") == hash(0)``),
    booleans are left to the general path (``True == 1``), and so are ints whose hash another
    int shares (in CPython ``hash(-1) == hash(-2)``, and ints are hashed modulo ``2**61 - 1``).
    A text of up to 15 ASCII digits (trailing spaces aside, no leading zero) is hashed as its
    number, and a one-line text of up to 200 characters without its trailing spaces and tabs:
    ``{"id": "48213"}`` and ``{"id": 48213}`` are one call, and so are
    ``{"selector": "#summary "}`` and ``{"selector": "#summary"}`` (the arguments themselves
    stay as given). What remains is the chance of a 64-bit hash accident. (A plain loop: for the few
    arguments of a tool call it beats set and map tricks.)
    """
    if type(arguments) is not dict or len(arguments) > MAX_ITEMS:
        return None
    items = []
    for key, value in arguments.items():
        if type(key) is not str or len(key) > MAX_STRING:
            return None
        kind = type(value)
        if kind is str:
            if len(value) > MAX_STRING:
                return None
            # (A word's case may matter, "open" and "OPEN" to an enum, and so may leading spaces, an
            # edit's indentation: neither is folded.)
            stripped = value.rstrip(" \t")
            if stripped.isdigit() and stripped.isascii() and len(stripped) <= 15 and (stripped[0] != "0" or stripped == "0"):
                # An id written as text ("48213", "48213 ") asks for what the number asks for.
                items.append((key, int(stripped), int))
                continue
            if stripped is not value and len(stripped) <= 200 and "\n" not in stripped:
                # Spaces after a one-line value ask for nothing else ("#order-summary "); a line
                # break may (a file's last line).
                items.append((key, stripped, str))
                continue
        elif kind is int:
            if value == -1 or value.bit_length() > 60:
                return None
        elif value is not None:
            return None
        items.append((key, value, kind))
    return items


def signature_of(tool: str, arguments: Any) -> Signature:
    """Compute the signature of a call to ``tool`` with ``arguments`` (never raises)."""
    if type(tool) is not str:
        try:
            tool = str(tool)
        except Exception:
            tool = "<tool>"
    parsed = arguments if type(arguments) is dict else parse_arguments(arguments)
    items = _flat_items(parsed)  # the common case skips the recursive walk and the JSON text
    if items is None:
        canonical = canonical_value(parsed)
        items = _flat_items(canonical)
        if items is None:
            text = f"{tool}({_ENCODER.encode(canonical)})"
            return Signature(tool, canonical, hash(text), text)
    else:
        canonical = dict(parsed)  # a copy: the caller may change its arguments later
    # Equal flat mappings give equal item sets, whichever path produced them (a frozenset
    # needs no sort).
    return Signature(tool, canonical, hash((tool, frozenset(items))))
