"""The two expression languages of a policy, compiled once at load time.

* ``match``: JMESPath (https://jmespath.org) over the pending call
  ``{"tool": ..., "arguments": {...}, "id": ..., "agent": ...}``; the rule applies
  when the result is truthy (JMESPath truthiness: not null, false, "", [] or {}).
* ``when``: a simpleeval expression (https://github.com/danthedeckie/simpleeval)
  over named run counters (``run.tool_calls``, ``turn.user_message``, ``tool.calls``,
  ...); the rule applies when the result is true.

A syntax error is an :class:`ExpressionError` carrying the 0-based character offset
into the expression, so the loader can report file, line and column. Evaluation is
sandboxed by simpleeval (no dunder attributes, no imports) with tighter bounds on
exponentiation and string sizes than simpleeval's defaults.
"""

from __future__ import annotations

import ast
import re
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Mapping

import jmespath
import jmespath.visitor
import jmespath.exceptions
import jmespath.functions
import simpleeval

from .errors import did_you_mean

#: Largest exponent ``**`` may use in a condition.
MAX_POWER = 1000
#: Longest string (characters) a condition may build.
MAX_STRING_LENGTH = 10_000


class ExpressionError(ValueError):
    """A policy expression that does not compile.

    Attributes:
        message: what is wrong.
        offset: 0-based character offset of the problem in the expression, if known.
        hint: a likely fix (``did you mean 'length'?``), if one is known.
    """

    def __init__(self, message: str, offset: int | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.hint = hint


@dataclass(frozen=True)
class CompiledMatch:
    """A compiled JMESPath expression; :meth:`test` returns its truthiness."""

    text: str
    _compiled: Any = field(repr=False, compare=False)

    @property
    def tree(self) -> dict[str, Any]:
        """The expression's parse tree, as JMESPath gives it (``{"type", "value", "children"}``)."""
        return self._compiled.parsed

    def search(self, document: Mapping[str, Any]) -> Any:
        # ParsedResult.search builds a new interpreter (and its function table) on every
        # call; the interpreter keeps no state between searches, so one is shared.
        return _INTERPRETER.visit(self._compiled.parsed, document)

    def test(self, document: Mapping[str, Any]) -> bool:
        """True when the expression's value is truthy (raises on evaluation errors)."""
        value = _INTERPRETER.visit(self._compiled.parsed, document)
        return value not in (None, False, "", [], {})


_INTERPRETER = jmespath.visitor.TreeInterpreter()


_JMESPATH_FUNCTIONS = jmespath.functions.Functions().FUNCTION_TABLE


def _check_functions(tree: Any) -> None:
    """Unknown functions and wrong argument counts are load errors, not run-time surprises."""
    if not isinstance(tree, dict):
        return
    if tree.get("type") == "function_expression":
        name = tree.get("value")
        spec = _JMESPATH_FUNCTIONS.get(name)
        if spec is None:
            raise ExpressionError(
                f"invalid JMESPath: unknown function {name}() (known: {', '.join(sorted(_JMESPATH_FUNCTIONS))})",
                hint=did_you_mean(str(name), _JMESPATH_FUNCTIONS),
            )
        signature = spec["signature"]
        given = len(tree.get("children", ()))
        variadic = bool(signature) and signature[-1].get("variadic")
        if (given < len(signature) - (1 if variadic else 0)) if variadic else given != len(signature):
            raise ExpressionError(f"invalid JMESPath: {name}() takes {len(signature)}{' or more' if variadic else ''} argument(s), got {given}")
    for child in tree.get("children", ()):
        _check_functions(child)


@lru_cache(maxsize=4096)
def compile_match(text: str) -> CompiledMatch:
    """Compile a JMESPath expression. Raises :class:`ExpressionError` with the offset.

    Memoised: every profile's effective policy compiles the same rules again (a compiled
    expression is immutable, so policies may share it)."""
    try:
        compiled = jmespath.compile(text)
        _check_functions(compiled.parsed)
        return CompiledMatch(text, compiled)
    except jmespath.exceptions.ParseError as error:
        offset = getattr(error, "lex_position", None)
        token = getattr(error, "token_value", None)
        detail = f"unexpected {token!r}" if token not in (None, "") else "unexpected end of expression"
        if getattr(error, "token_type", None) == "eof":
            detail = "unexpected end of expression"
        return _raise(f"invalid JMESPath: {detail}", offset, _jmespath_hint(text, token, getattr(error, "token_type", None), offset))
    except jmespath.exceptions.JMESPathError as error:
        return _raise(f"invalid JMESPath: {error}", None)


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")


def _jmespath_hint(text: str, token: Any, token_type: str | None, offset: int | None = None) -> str | None:
    """How to write in JMESPath what the expression wrote in another language's syntax."""
    if token in ("or", "and") or text.lstrip().startswith("not "):
        return "JMESPath writes || for or, && for and, ! for not"
    if re.search(r"\[\s*['\"]", text):
        field = token if isinstance(token, str) and token.isidentifier() else "currency"
        return f"JMESPath reads a field with a dot: arguments.{field} (a name with other characters in double quotes: arguments.\"my-field\")"
    if (token_type or "").lower() == "number":
        written = _NUMBER.match(text, offset) if offset is not None else None  # (the lexer's token drops ".5" and "e3")
        return f"a number in JMESPath is a literal in backticks: `{written.group() if written else token}`"
    if token == "=":
        follows = text[offset + 1 : offset + 2] if offset is not None else ""
        return "write >= and <=" if follows in (">", "<") else "compare with =="
    return None


def _condition_hint(text: str) -> str | None:
    """How to write as a Python expression (simpleeval) what the condition wrote otherwise
    (read outside its string literals and its calls' parentheses: 'a&&b' is text and
    ``get('x', default=1)`` a keyword)."""
    code = _STRING_LITERAL.sub("''", text)
    for _ in range(code.count("(")):  # innermost first; bounded: each pass removes a pair
        code, found = _INNERMOST_CALL.subn("_", code)
        if not found:
            break
    if "=>" in code or "=<" in code:
        return "write >= and <="
    if "===" in code or "!==" in code:
        return "compare with == and !="
    if "&&" in code or "||" in code or re.search(r"!(?!=)", code):
        return "a condition is a Python expression: write and, or, not"
    if re.search(r"(?<![=!<>])=(?!=)", code):
        return "compare with =="
    return None


_STRING_LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'" + r'|"(?:[^"\\]|\\.)*"')
_INNERMOST_CALL = re.compile(r"\([^()]*\)")


# JavaScript's and Java's string methods, and what a condition (Python syntax) writes instead.
_OTHER_LANGUAGES_METHODS = {
    "indexOf": "write s.find('x') (-1 when absent)",
    "includes": "write 'x' in s",
    "contains": "write 'x' in s",
    "toLowerCase": "write s.lower()",
    "toUpperCase": "write s.upper()",
    "startsWith": "write s.startswith('x')",
    "endsWith": "write s.endswith('x')",
    "trim": "write s.strip()",
    "length": "write len(s)",
    "size": "write len(s)",
    "equals": "write a == b",
    "test": "write matches(s, 'pattern')",
    "match": "write matches(s, 'pattern')",
}


def _raise(message: str, offset: int | None, hint: str | None = None) -> Any:
    raise ExpressionError(message, offset, hint)


#: matches() looks at most at this many characters of its text (user text feeds the hot path).
MAX_MATCH_TEXT = 4096


def _matches(text: Any, pattern: str) -> bool:
    """matches(text, regex): case-insensitive regex search over the first
    :data:`MAX_MATCH_TEXT` characters; False for non-text."""
    if not isinstance(text, str):
        return False
    return _regex(pattern).search(text[:MAX_MATCH_TEXT]) is not None


@lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def _contains(container: Any, item: Any) -> bool:
    try:
        return item in container
    except TypeError:
        return False


#: Functions a ``when`` condition may call.
CONDITION_FUNCTIONS: dict[str, Any] = {
    "matches": _matches,
    "contains": _contains,
    "len": len,
    "min": min,
    "max": max,
    "abs": abs,
    "round": round,
    "lower": lambda text: text.lower() if isinstance(text, str) else text,
}

#: Names every condition sees besides the run counters.
CONDITION_CONSTANTS: dict[str, Any] = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}


@dataclass(frozen=True)
class CompiledCondition:
    """A parsed simpleeval expression; :meth:`test` evaluates it against named values."""

    text: str
    names: frozenset[str]
    _tree: Any = field(repr=False, compare=False)
    #: For each root name, the attributes the condition reads (``run.cost_usd`` → ``{"run": {"cost_usd"}}``),
    #: or ``None`` for a root it uses whole; lets the session build only what is read.
    attributes: dict[str, frozenset[str] | None] = field(default_factory=dict, compare=False)

    @property
    def tree(self) -> ast.AST:
        """The condition's Python syntax tree (offsets count from its first non-blank character)."""
        return self._tree

    def evaluate(self, names: Mapping[str, Any]) -> Any:
        evaluator = _evaluator()
        evaluator.names = {**CONDITION_CONSTANTS, **names}
        try:
            return evaluator.eval(self.text, previously_parsed=self._tree)
        finally:
            evaluator.names = CONDITION_CONSTANTS

    def test(self, names: Mapping[str, Any]) -> bool:
        """True when the condition holds (raises on evaluation errors)."""
        return bool(self.evaluate(names))


_LOCAL = threading.local()


def _evaluator() -> "_Evaluator":
    """This thread's evaluator: building one costs far more than evaluating a condition,
    and an evaluator holds the names of the evaluation in progress, so threads don't share."""
    evaluator = getattr(_LOCAL, "evaluator", None)
    if evaluator is None:
        evaluator = _LOCAL.evaluator = _Evaluator()
    return evaluator


class _Evaluator(simpleeval.SimpleEval):
    def __init__(self) -> None:
        super().__init__(functions=CONDITION_FUNCTIONS, names=CONDITION_CONSTANTS)
        self.operators = dict(self.operators)
        self.operators[ast.Pow] = _bounded_power
        self.operators[ast.Add] = _bounded_add
        self.operators[ast.Mult] = _bounded_mult
        self.operators[ast.Mod] = _no_string_formatting


def _bounded_power(base: Any, exponent: Any) -> Any:
    if isinstance(exponent, (int, float)) and abs(exponent) > MAX_POWER:
        raise simpleeval.NumberTooHigh(f"exponent {exponent} is larger than {MAX_POWER}")
    return base**exponent


def _check_size(value: Any) -> Any:
    if isinstance(value, (str, list, tuple)) and len(value) > MAX_STRING_LENGTH:
        raise simpleeval.IterableTooLong(f"value longer than {MAX_STRING_LENGTH}")
    return value


def _bounded_add(left: Any, right: Any) -> Any:
    return _check_size(left + right)


def _no_string_formatting(left: Any, right: Any) -> Any:
    if isinstance(left, (str, bytes)):
        raise simpleeval.FeatureNotAvailable("string formatting with % is not allowed in a condition")
    return left % right


def _bounded_mult(left: Any, right: Any) -> Any:
    if isinstance(left, (str, list, tuple)) and isinstance(right, int) or isinstance(right, (str, list, tuple)) and isinstance(left, int):
        size = len(left) * right if isinstance(left, (str, list, tuple)) else len(right) * left
        if size > MAX_STRING_LENGTH:
            raise simpleeval.IterableTooLong(f"value longer than {MAX_STRING_LENGTH}")
    return left * right


#: Methods a condition may call on values: reading only, nothing that builds large strings
#: (ljust, center, zfill, ...) or changes run state (pop, clear, ...).
ALLOWED_METHODS = frozenset(
    {"lower", "upper", "casefold", "strip", "lstrip", "rstrip", "startswith", "endswith", "get", "count", "find",
     "isdigit", "isalpha", "isalnum", "keys", "values", "items"}
)
# A group with a quantifier, itself quantified: "(a+)+", "(x*)*", "(a|aa)+" ... can take
# exponential time on a crafted input (catastrophic backtracking).
_NESTED_QUANTIFIER = re.compile(r"\((?:[^()\\]|\\.)*[+*}](?:[^()\\]|\\.)*\)[+*{]")

_COUNTERS = frozenset({"steps", "tool_calls", "tokens", "cost_usd", "failures", "per_tool"})
#: The attributes each root name of a ``when`` condition has (what the session builds for it).
CONDITION_ATTRIBUTES: dict[str, frozenset[str]] = {
    "run": _COUNTERS | {"turns"},
    "turn": _COUNTERS | {"index", "user_message"},
    "tool": frozenset({"name", "kind", "calls", "turn_calls"}),
    "call": frozenset({"tool", "arguments", "id", "agent"}),
}
_ALLOWED_ROOTS = frozenset(CONDITION_ATTRIBUTES) | frozenset(CONDITION_CONSTANTS)


@lru_cache(maxsize=4096)
def compile_condition(text: str, allowed_names: frozenset[str] = _ALLOWED_ROOTS) -> CompiledCondition:
    """Parse a simpleeval condition. Raises :class:`ExpressionError` with the offset.
    Memoised, as :func:`compile_match`.

    Unknown root names (not ``run``, ``turn``, ``tool`` or ``call``) and unknown functions
    are load errors too, so a typo never silently turns a rule off.
    """
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as error:
        if not error.offset:  # CPython reports the end of the input as offset 0
            return _raise(f"invalid condition: {error.msg} (the expression ends too early)", len(text.strip()), _condition_hint(text))
        message = re.sub(r" \(detected at line \d+\)$", "", error.msg)  # (the expression's line, not the file's)
        return _raise(f"invalid condition: {message}", error.offset - 1, _condition_hint(text))
    names: set[str] = set()
    # Methods called on a root (run.get('tool_calls', 0)) are methods, not attributes.
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
            if node.id not in allowed_names and node.id not in CONDITION_FUNCTIONS:
                known = ", ".join(sorted(n for n in allowed_names if n[0].islower() and n not in CONDITION_CONSTANTS))
                hint = did_you_mean(node.id, [*allowed_names, *CONDITION_FUNCTIONS])
                if hint is None and node.id in CONDITION_ATTRIBUTES["call"] and "call" in allowed_names:
                    hint = f"write call.{node.id}: the pending call is call (call.tool, call.arguments, call.id, call.agent)"
                return _raise(f"unknown name {node.id!r} in condition (known: {known})", node.col_offset, hint)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id not in CONDITION_FUNCTIONS:
            return _raise(
                f"unknown function {node.func.id!r} in condition (known: {', '.join(sorted(CONDITION_FUNCTIONS))})",
                node.func.col_offset,
                did_you_mean(node.func.id, CONDITION_FUNCTIONS),
            )
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            return _raise(f"attribute {node.attr!r} is not allowed in a condition", node.col_offset)
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in CONDITION_ATTRIBUTES
            and not (id(node) in called and node.attr in ALLOWED_METHODS)
        ):
            # The roots' attributes are fixed: a misspelt one would fail on every call.
            root, known = node.value.id, CONDITION_ATTRIBUTES[node.value.id]
            if node.attr not in known:
                return _raise(
                    f"unknown attribute {root}.{node.attr} in condition (known: {', '.join(sorted(known))})",
                    character_column(text, node.end_col_offset or 0) - len(node.attr),
                    did_you_mean(node.attr, known),
                )
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr not in ALLOWED_METHODS:
            return _raise(
                f"method {node.func.attr!r} is not allowed in a condition (allowed: {', '.join(sorted(ALLOWED_METHODS))})",
                character_column(text, node.func.end_col_offset or 0) - len(node.func.attr),
                _OTHER_LANGUAGES_METHODS.get(node.func.attr) or did_you_mean(node.func.attr, ALLOWED_METHODS),
            )
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.NamedExpr)):
            return _raise(f"{type(node).__name__} is not allowed in a condition", node.col_offset)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "matches" and len(node.args) == 2:
            pattern = node.args[1]
            if isinstance(pattern, ast.Constant) and isinstance(pattern.value, str):
                try:
                    re.compile(pattern.value)
                except re.error as error:
                    return _raise(f"invalid regular expression in matches(): {error}", pattern.col_offset)
                if _NESTED_QUANTIFIER.search(pattern.value):
                    return _raise("regular expression with a quantified group inside a quantifier can take exponential time; simplify it", pattern.col_offset)
    parsed = simpleeval.SimpleEval().parse(text.strip())
    return CompiledCondition(text, frozenset(names), parsed, _attributes_read(tree, called))


def character_column(text: str, byte_offset: int) -> int:
    """A column of the stripped condition's first line as characters (ast counts UTF-8 bytes)."""
    return len(text.strip().encode("utf-8")[:byte_offset].decode("utf-8", "ignore"))


def _attributes_read(tree: ast.AST, called: set[int]) -> dict[str, frozenset[str] | None]:
    """root name → the attributes a condition reads of it, or ``None`` when it needs the root
    whole; ``called`` holds the ids of the attribute nodes that are called as methods."""
    read: dict[str, set[str] | None] = {}
    under_attribute: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and id(node) in called:
            under_attribute.add(id(node.value))
            read[node.value.id] = None  # a method of the root (run.get(...)) needs it whole
            continue
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            under_attribute.add(id(node.value))
            current = read.setdefault(node.value.id, set())
            if current is not None:
                current.add(node.attr)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and id(node) not in under_attribute:
            read[node.id] = None  # used whole (subscript, argument of a function, ...)
    return {name: (frozenset(attrs) if attrs is not None else None) for name, attrs in read.items()}
