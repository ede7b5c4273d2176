"""Canonical arguments and call signatures: computed once per call, used by every detector.

A signature is the tool name plus the canonical JSON of the call's arguments, so two
calls that differ only in key order, whitespace or number form (``1`` / ``1.0`` /
``"1e0"`` is *not* a number and stays a string) have the same signature.

Values and mapping keys take the form JSON gives them: a ``str`` or ``int`` subclass
(a ``(str, Enum)`` or ``IntEnum`` member, ``numpy.str_``) is its plain value, and a key
``True`` / ``None`` / ``1.0`` is ``"true"`` / ``"null"`` / ``"1"``. No arguments are ``{}``
however they come: ``None``, a blank string, ``"null"`` and ``"{}"`` are one call.

Canonicalisation never raises: non-JSON values are rendered by type and ``repr``,
reference cycles become ``"<cycle>"``, NaN and infinities become the strings
``"NaN"`` / ``"Infinity"`` / ``"-Infinity"``, nesting deeper than
:data:`MAX_DEPTH` is cut, and strings longer than :data:`MAX_STRING` characters (ints
longer than :data:`MAX_INT_BITS` bits) are replaced by their length and a digest so that
memory per call stays bounded.
"""

from __future__ import annotations

import hashlib
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


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def canonical_value(value: Any, _depth: int = 0, _seen: frozenset[int] = frozenset()) -> Any:
    """Return a JSON-safe, canonical copy of ``value`` (never raises).

    Integral floats become ints, mappings get string keys, sets become sorted lists,
    tuples become lists. See the module docstring for the limits applied. A value whose
    own methods raise (``__getattribute__``, ``items``, ``__iter__``) becomes
    ``"<TYPE unreadable>"``.
    """
    try:
        return _canonical(value, _depth, _seen)
    except Exception:
        try:
            name = type(value).__name__
        except Exception:
            name = "object"
        return f"<{name} unreadable>"


def _canonical(value: Any, _depth: int = 0, _seen: frozenset[int] = frozenset()) -> Any:
    if value is None or value is True or value is False:
        return value
    kind = type(value)
    if kind is str:
        if len(value) > MAX_STRING:
            return f"<str len={len(value)} digest={_digest(value)}>"
        return value
    if kind is int:
        # A huge int would make str()/JSON refuse it (Python's 4300-digit limit) and costs memory.
        return value if value.bit_length() <= MAX_INT_BITS else _huge_int(value)
    if kind is float:
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        if value.is_integer() and abs(value) < 2**53:
            return int(value)
        return value
    if _depth >= MAX_DEPTH:
        return f"<deep {_rest_digest(value)}>"
    ident = id(value)
    if isinstance(value, dict) or _is_mapping(value):
        if ident in _seen:
            return "<cycle>"
        seen = _seen | {ident}
        out: dict[str, Any] = {}
        try:
            items = list(value.items())
        except Exception:  # a broken mapping must not crash a decision
            return f"<{type(value).__name__}>"
        for index, (key, item) in enumerate(items):
            if index >= MAX_ITEMS:
                out["<more>"] = f"{len(items) - MAX_ITEMS} {_rest_digest(items[MAX_ITEMS:])}"
                break
            out[key if type(key) is str else _key_text(key)] = canonical_value(item, _depth + 1, seen)
        return out
    if isinstance(value, (list, tuple)):
        if ident in _seen:
            return "<cycle>"
        seen = _seen | {ident}
        items = [canonical_value(item, _depth + 1, seen) for item in value[:MAX_ITEMS]]
        if len(value) > MAX_ITEMS:
            items.append(f"<{len(value) - MAX_ITEMS} more {_rest_digest(value[MAX_ITEMS:])}>")
        return items
    if isinstance(value, (set, frozenset)):
        if ident in _seen:
            return "<cycle>"
        seen = _seen | {ident}
        items = sorted((canonical_value(item, _depth + 1, seen) for item in value), key=_sort_key)
        if len(items) > MAX_ITEMS:
            return items[:MAX_ITEMS] + [f"<{len(items) - MAX_ITEMS} more {_rest_digest(items[MAX_ITEMS:])}>"]
        return items
    if isinstance(value, str):  # a (str, Enum) member, numpy.str_: its plain value, as JSON writes it
        return _canonical(str.__str__(value), _depth, _seen)
    if isinstance(value, bool):  # bool subclasses such as numpy.bool_
        return bool(value)
    if isinstance(value, int):
        return canonical_value(int(value), _depth)
    if isinstance(value, float):
        return canonical_value(float(value), _depth)
    if isinstance(value, (bytes, bytearray)):
        return f"<bytes len={len(value)} digest={hashlib.blake2b(bytes(value), digest_size=8).hexdigest()}>"
    try:
        model_dump = getattr(value, "model_dump", None)  # pydantic models, as tools often take them
    except Exception:
        model_dump = None
    if callable(model_dump):
        try:
            return canonical_value(model_dump(), _depth + 1, _seen | {ident})
        except Exception:
            pass
    try:
        text = repr(value)
    except Exception:
        text = "?"
    return canonical_value(f"<{type(value).__name__} {text}>", _depth + 1, _seen)


def _is_mapping(value: Any) -> bool:
    return hasattr(value, "items") and hasattr(value, "keys") and hasattr(value, "__getitem__")


def _rest_digest(rest: Any) -> str:
    """A digest of what a limit cut off, so that two values differing only there still differ."""
    try:
        return "digest=" + _digest(repr(rest))
    except Exception:  # too deep to repr, or unprintable: the cut part cannot be told apart
        return "digest=?"


def _huge_int(value: int) -> str:
    """An int past :data:`MAX_INT_BITS` as its length and a digest of its bytes."""
    size = value.bit_length() // 8 + 1
    return f"<int {value.bit_length()} bits digest={hashlib.blake2b(value.to_bytes(size, 'little', signed=True), digest_size=8).hexdigest()}>"


def _key_text(key: Any) -> str:
    """A mapping key as the plain string JSON writes for it: a ``str`` subclass such as a
    ``(str, Enum)`` member is its string value (not its ``str()``), ``True`` is ``"true"``,
    ``None`` is ``"null"``, ``1.0`` is ``"1"`` and NaN is ``"NaN"``."""
    if isinstance(key, str):
        return str.__str__(key)  # an exact str copy; the subclass cannot override this
    if key is None or isinstance(key, (bool, int, float)):
        value = _canonical(key)  # the value's canonical form: bool/int subclasses, NaN, huge ints
        return value if isinstance(value, str) else _ENCODER.encode(value)
    try:
        return str(key)
    except Exception:
        return "?"


def _sort_key(item: Any) -> str:
    return json.dumps(item, sort_keys=True, ensure_ascii=False, default=str)


def parse_arguments(arguments: Any) -> Any:
    """Return the arguments as data: a JSON string (as OpenAI chat messages carry them)
    is parsed, ``None``, a blank string and the JSON text ``null`` are no arguments
    (``{}``); anything else is returned unchanged. Never raises."""
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        text = arguments.strip()
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
    What remains is the chance of a 64-bit hash accident. (A plain loop: for the few
    arguments of a tool call it beats set and map tricks.)
    """
    if type(arguments) is not dict:
        return None
    items = []
    for key, value in arguments.items():
        kind = type(value)
        if kind is str:
            if len(value) > MAX_STRING:
                return None
        elif kind is int:
            if value == -1 or value.bit_length() > 60:
                return None
        elif value is not None:
            return None
        if type(key) is not str:
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
