"""loopguard.yml → validated, compiled policy, with every value's source position.

Pipeline (each step collects problems instead of stopping at the first):

1. **Read** the YAML safely (``yaml.compose`` with the safe resolver): nodes keep their
   file, line and column; object tags (``!!python/object``...) are rejected, never built.
2. **Extends**: ``builtin:NAME`` (a file in the shipped ``policies/`` directory) or a path
   relative to the extending file; chains allowed, cycles and missing files are errors.
   The base is merged under the child deeply: mappings merge key by key, ``rules`` merge
   by ``id`` (same id replaces in place, a new id appends), other lists replace.
3. **Profiles**: a profile is an overlay merged the same way onto the extends-resolved
   policy. Profiles of a base and of a child with the same name merge too. Every profile's
   keys and expressions are checked even when it is not selected, so a typo never hides.
4. **Validate** the effective policy with the pydantic :class:`~.schema.Policy` model and
   map each error back to the position of the key or value it concerns.
5. **Compile** (:func:`~.compile.compile_policy`); globs and expressions are also checked
   here with positions, down to the character inside the expression where possible.

The profile defaults to the ``LOOPGUARD_PROFILE`` environment variable when not given
(:func:`load_policy`, :func:`load_policy_text`, :func:`explain_policy`).
"""

from __future__ import annotations

import ast
import json
import os
import re
import stat
import types
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from . import errors as codes
from .compile import CompiledPolicy, compile_glob, compile_policy
from .errors import Problem, PolicyError, PolicyFileWarning, PolicyIOError, did_you_mean
from .expressions import ExpressionError, character_column, compile_condition, compile_match
from .schema import VERDICT_FIELDS, Policy, _PolicyBody, missing_verdict_field

#: Environment variable naming the profile to apply when none is passed.
PROFILE_ENV = "LOOPGUARD_PROFILE"
BUILTIN_PREFIX = "builtin:"
#: The shipped policies, resolvable as ``builtin:NAME``.
def _policies_dir() -> Path:
    """Where the shipped policies are: ``policies/`` of a source checkout (or an editable
    install), else the copy a wheel installs as the package ``loopguard._builtin_policies``."""
    checkout = Path(__file__).resolve().parents[2] / "policies"
    if (checkout / "default.yml").is_file():
        return checkout
    return Path(__file__).resolve().parents[1] / "_builtin_policies"


POLICIES_DIR = _policies_dir()
#: The policy file ``replay`` and friends use when none is named.
DEFAULT_POLICY_FILE = "loopguard.yml"
#: The names a policy is looked for under when none is named, in order.
DEFAULT_POLICY_FILES = (DEFAULT_POLICY_FILE, "loopguard.yaml")

PathKey = tuple[Any, ...]


# --------------------------------------------------------------------------- positions


@dataclass(frozen=True)
class Origin:
    """Where a value was written: file (as displayed), 1-based line and column."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass
class Node:
    """A YAML value with its origin; mappings hold ``dict[key, Node]``, sequences ``list[Node]``."""

    value: Any
    origin: Origin
    key_origin: Origin | None = None
    scalar: yaml.ScalarNode | None = None
    lines: list[str] | None = None


def _display(path: Path) -> str:
    """A path as shown in messages: relative to the working directory when inside it; a
    shipped policy outside it as ``builtin:NAME`` (not the install's absolute path)."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        relative = ".."
    if not relative.startswith(".."):
        return relative
    try:
        if path.suffix == ".yml" and path.resolve().parent == POLICIES_DIR.resolve():
            return f"{BUILTIN_PREFIX}{path.stem}"
    except (OSError, RuntimeError):
        pass
    return str(path)


class _Problems:
    """Problems in the order found, without repeating one at the same position and code."""

    def __init__(self) -> None:
        self.items: list[Problem] = []
        self._seen: set[tuple[str, int, int, str]] = set()

    def add(self, origin: Origin, code: str, message: str, hint: str | None = None, severity: str = "error") -> None:
        key = (origin.file, origin.line, origin.column, code)
        if key not in self._seen:
            self._seen.add(key)
            self.items.append(Problem(origin.file, origin.line, origin.column, code, message, hint, severity))  # type: ignore[arg-type]

    @property
    def errors(self) -> list[Problem]:
        return [problem for problem in self.items if problem.severity == "error"]

    def sorted(self) -> tuple[Problem, ...]:
        """By file (in the order files were first reported), then line and column."""
        rank: dict[str, int] = {}
        for problem in self.items:
            rank.setdefault(problem.file, len(rank))
        return tuple(sorted(self.items, key=lambda problem: (rank[problem.file], problem.line, problem.column)))


_INDENTATION_HINT = "check this line's indentation: keys of one mapping line up, and a nested value is indented under its key"
_ALIAS_HINT = "a value that starts with '*' is a YAML alias: quote a glob (tool: \"*_table\")"
# Hints for PyYAML's usual syntax errors, by the words of its message.
_NESTED_QUOTES_HINT = (
    "a quoted value ends at its next matching quote: put a value that holds double quotes in single quotes "
    "(message: 'say \"please\" first'), or double a single quote inside single quotes ('it''s')"
)
_YAML_HINTS = {
    "expected <block end>": _INDENTATION_HINT,
    "did not find expected key": _INDENTATION_HINT,
    "could not find expected ':'": _INDENTATION_HINT,
    "mapping values are not allowed here": "quote a value that holds ': ' (message: \"error: retry later\"), or check this line's indentation",
    # "tool: *_table": a value that starts with '*' is an alias to an anchor.
    "undefined alias": _ALIAS_HINT,
    "while scanning an alias": _ALIAS_HINT,
}


def _dotted(path: PathKey) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


# --------------------------------------------------------------------------- YAML reading

_YAML_TAG_PREFIX = "tag:yaml.org,2002:"
_ALLOWED_TAGS = frozenset(_YAML_TAG_PREFIX + name for name in ("str", "int", "float", "bool", "null", "map", "seq", "timestamp"))


#: Most values a policy may expand to; aliases of aliases could otherwise fill memory.
_MAX_NODES = 100_000


class _Reader:
    """One YAML text → a :class:`Node` tree, recording problems."""

    def __init__(self, file: str, text: str, problems: _Problems) -> None:
        self.file = file
        self.text = text
        self.lines = text.splitlines()
        self.problems = problems
        self.fatal = False
        self._constructor = yaml.SafeLoader("")
        self._nodes = 0  # values built so far: aliases can multiply them ("billion laughs")

    def origin(self, mark: yaml.Mark) -> Origin:
        return Origin(self.file, mark.line + 1, mark.column + 1)

    def read(self) -> Node | None:
        try:
            root = yaml.compose(self.text, Loader=yaml.SafeLoader)
        except yaml.MarkedYAMLError as error:
            self._syntax_error(error)
            return None
        except yaml.YAMLError as error:
            self.problems.add(Origin(self.file, 1, 1), codes.YAML_SYNTAX, f"invalid YAML: {error}")
            return None
        if root is None:
            self.problems.add(
                Origin(self.file, 1, 1), codes.NOT_A_MAPPING, "the policy is empty; expected a mapping", hint="start with 'version: 1'"
            )
            return None
        tree = self._node(root, None)
        return None if self.fatal else tree

    def _syntax_error(self, error: yaml.MarkedYAMLError) -> None:
        mark = error.problem_mark or error.context_mark
        line = mark.line if mark is not None else len(self.lines)
        tab = self._indentation_tab(line)
        if tab is not None:
            self.problems.add(
                Origin(self.file, tab[0] + 1, tab[1] + 1),
                codes.YAML_TAB,
                "tab character in indentation; YAML indents with spaces only",
                hint="replace the tab with spaces",
            )
            return
        message = f"invalid YAML: {error.problem or error.context}"
        context = error.context_mark
        if error.problem and error.context and context is not None and mark is not None and context.line != mark.line:
            message += f" ({error.context} at line {context.line + 1})"
        origin = self.origin(mark) if mark is not None else Origin(self.file, 1, 1)
        said = f"{message} {error.context or ''}"
        hint = next((hint for phrase, hint in _YAML_HINTS.items() if phrase in said), None)
        text = self.lines[line] if 0 <= line < len(self.lines) else ""
        column = mark.column if mark is not None else 0
        if column > 0 and text[column - 1 : column] in ('"', "'") and text.count(text[column - 1]) >= 3:
            # The error comes right after a quote that closed the value early: quotes inside it.
            hint = _NESTED_QUOTES_HINT
        self.problems.add(origin, codes.YAML_SYNTAX, message, hint)

    def _indentation_tab(self, error_line: int) -> tuple[int, int] | None:
        """(line, column) of a tab in leading whitespace: on the error line, else the first before it."""
        candidates = [error_line] + list(range(0, min(error_line, len(self.lines))))
        for index in candidates:
            if 0 <= index < len(self.lines):
                line = self.lines[index]
                indent = line[: len(line) - len(line.lstrip(" \t"))]
                if "\t" in indent:
                    return index, indent.index("\t")
        return None

    def _node(self, node: yaml.Node, key_origin: Origin | None) -> Node:
        origin = self.origin(node.start_mark)
        self._nodes += 1
        if self._nodes > _MAX_NODES:
            if not self.fatal:
                self.problems.add(origin, codes.YAML_SYNTAX, f"the policy expands to more than {_MAX_NODES:,} values (aliases repeating aliases?)", hint="a policy is small; do not nest aliases")
            self.fatal = True
            return Node(None, origin, key_origin)
        line = self.lines[node.start_mark.line] if node.start_mark.line < len(self.lines) else ""
        # "! arguments.force": YAML reads a lone '!' as a tag and drops it, so the value silently
        # loses its "not"; it is reported as a tag too.
        bare_bang = isinstance(node, yaml.ScalarNode) and line[node.start_mark.column : node.start_mark.column + 2] in ("! ", "!\t")
        if node.tag not in _ALLOWED_TAGS or bare_bang:
            tag = "!" if bare_bang else "!!" + node.tag[len(_YAML_TAG_PREFIX) :] if node.tag.startswith(_YAML_TAG_PREFIX) else node.tag
            hint = "remove the tag"
            if not tag.startswith("!!") and isinstance(node, yaml.ScalarNode):
                # "match: !arguments.force": the '!' was meant as the expression's own "not".
                hint = "remove the tag, or quote the value if the '!' belongs to it" + _quoted_example(f"{tag}{' ' if node.value else ''}{node.value}")
            self.problems.add(origin, codes.YAML_TAG, f"YAML tag '{tag}' is not allowed; a policy is plain data", hint=hint)
            self.fatal = True
            return Node(None, origin, key_origin)
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, origin, key_origin)
        if isinstance(node, yaml.SequenceNode):
            return Node([self._node(item, None) for item in node.value], origin, key_origin)
        try:
            value = self._constructor.construct_object(node)
        except (yaml.YAMLError, ValueError) as error:
            self.problems.add(origin, codes.WRONG_TYPE, f"cannot read value {node.value!r}: {error}")
            value = node.value
        return Node(value, origin, key_origin, scalar=node, lines=self.lines)  # type: ignore[arg-type]

    def _mapping(self, node: yaml.MappingNode, origin: Origin, key_origin: Origin | None) -> Node:
        try:
            self._constructor.flatten_mapping(node)  # resolves '<<' merge keys
        except yaml.YAMLError as error:
            self.problems.add(origin, codes.YAML_SYNTAX, f"invalid YAML merge: {getattr(error, 'problem', error)}")
            self.fatal = True
            return Node({}, origin, key_origin)
        items: dict[Any, Node] = {}
        for key_node, value_node in node.value:
            key_at = self.origin(key_node.start_mark)
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag not in _ALLOWED_TAGS:
                self.problems.add(key_at, codes.WRONG_TYPE, "a mapping key must be a plain scalar")
                self.fatal = True
                continue
            key = self._constructor.construct_object(key_node)
            if key in items:
                first = items[key].key_origin
                self.problems.add(
                    key_at,
                    codes.DUPLICATE_KEY,
                    f"duplicate key '{key}' (first at line {first.line if first else '?'}); the later one would silently win",
                )
            items[key] = self._node(value_node, key_at)
        return Node(items, origin, key_origin)


def _to_data(node: Node) -> Any:
    if isinstance(node.value, dict):
        return {key: _to_data(child) for key, child in node.value.items()}
    if isinstance(node.value, list):
        return [_to_data(child) for child in node.value]
    return node.value


def _index(node: Node, path: PathKey = (), out: dict[PathKey, Node] | None = None) -> dict[PathKey, Node]:
    """Every node of a tree by its path."""
    out = {} if out is None else out
    out[path] = node
    if isinstance(node.value, dict):
        for key, child in node.value.items():
            _index(child, path + (key,), out)
    elif isinstance(node.value, list):
        for position, child in enumerate(node.value):
            _index(child, path + (position,), out)
    return out


# --------------------------------------------------------------------------- merging


def _is_rules_path(path: PathKey) -> bool:
    return path == ("rules",) or (len(path) == 3 and path[0] == "profiles" and path[2] == "rules")


def _rule_id(node: Node) -> str | None:
    if isinstance(node.value, dict):
        rule_id = node.value.get("id")
        if rule_id is not None and isinstance(rule_id.value, str):
            return rule_id.value
    return None


def _merge(base: Node, overlay: Node, path: PathKey = ()) -> Node:
    """Deep merge ``overlay`` onto ``base``; returns a new tree and never mutates either."""
    if isinstance(base.value, dict) and isinstance(overlay.value, dict):
        merged = dict(base.value)
        for key, child in overlay.value.items():
            merged[key] = _merge(base.value[key], child, path + (key,)) if key in base.value else child
        return Node(merged, overlay.origin, overlay.key_origin or base.key_origin)
    if _is_rules_path(path) and isinstance(base.value, list) and isinstance(overlay.value, list):
        rules = list(base.value)
        by_id = {rule_id: index for index, node in enumerate(rules) if (rule_id := _rule_id(node)) is not None}
        for node in overlay.value:
            rule_id = _rule_id(node)
            if rule_id is not None and rule_id in by_id:
                rules[by_id[rule_id]] = node
            else:
                if rule_id is not None:
                    by_id[rule_id] = len(rules)
                rules.append(node)
        return Node(rules, overlay.origin, overlay.key_origin or base.key_origin)
    return overlay


# --------------------------------------------------------------------------- sources and extends


def resolve_source(source: str | Path) -> Path:
    """The file a policy source names: ``builtin:NAME`` → ``policies/NAME.yml``, else the path itself.

    Raises:
        PolicyIOError: ``builtin:NAME`` names no shipped policy.
    """
    text = str(source)
    if text.startswith(BUILTIN_PREFIX):
        name = text[len(BUILTIN_PREFIX) :]
        path = POLICIES_DIR / f"{name}.yml"
        if not re.fullmatch(r"[A-Za-z0-9_-]+", name) or not path.is_file():
            known = ", ".join(builtin_policies())
            hint = did_you_mean(name, builtin_policies())
            raise PolicyIOError([Problem(text, 1, 1, codes.IO_ERROR, f"no builtin policy '{name}' (known: {known})", hint=hint)])
        return path
    return Path(source)


def builtin_policies() -> list[str]:
    """Names of the shipped policies (``builtin:NAME``)."""
    return sorted(path.stem for path in POLICIES_DIR.glob("*.yml"))


def default_policy_file(directory: Path | None = None) -> str | None:
    """The policy file found in ``directory`` (default: the working directory):
    ``loopguard.yml``, else ``loopguard.yaml`` (the other spelling of YAML's extension),
    as a path relative to the working directory when ``directory`` is ``None``; ``None``
    when there is neither."""
    for name in DEFAULT_POLICY_FILES:
        candidate = Path(name) if directory is None else directory / name
        if candidate.is_file():
            return str(candidate)
    return None


def default_policy_path(directory: Path | None = None) -> str:
    """The policy used when none is named: :func:`default_policy_file` in ``directory``
    (default: the working directory), else ``builtin:default``."""
    return default_policy_file(directory) or f"{BUILTIN_PREFIX}default"


def _check_permissions(path: Path, display: str, problems: _Problems) -> None:
    try:
        mode = path.stat().st_mode
    except OSError:
        return
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        problems.add(
            Origin(display, 1, 1),
            codes.WRITABLE_POLICY,
            f"policy file is writable by group or others (mode {stat.S_IMODE(mode):o}); anyone who can write it can turn the guard off",
            hint=f"chmod go-w {display}",
            severity="warning",
        )


class _Chain:
    """The files of one extends chain, most derived first, for cycle detection and reporting."""

    def __init__(self) -> None:
        self.resolved: list[Path] = []
        self.displays: list[str] = []


def _read_file(path: Path, display: str, chain: _Chain, problems: _Problems, extended_from: Node | None) -> Node | None:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        if extended_from is None:
            raise PolicyIOError([Problem(display, 1, 1, codes.IO_ERROR, f"cannot read policy file: {reason}")]) from error
        problems.add(extended_from.origin, codes.EXTENDS_MISSING, f"cannot read extended policy {display}: {reason}")
        return None
    if path.resolve().parent != POLICIES_DIR:  # shipped policies are code, not configuration
        _check_permissions(path, display, problems)
    return _read_text(text, display, path.parent, chain, problems)


def _read_text(text: str, display: str, base_dir: Path, chain: _Chain, problems: _Problems) -> Node | None:
    """Read one policy text and, recursively, what it extends; returns the merged tree."""
    root = _Reader(display, text, problems).read()
    if root is None:
        return None
    if not isinstance(root.value, dict):
        kind = "a list" if isinstance(root.value, list) else f"a {type(root.value).__name__} value"
        problems.add(root.origin, codes.NOT_A_MAPPING, f"the policy must be a mapping of keys (version, detectors, rules, ...), not {kind}")
        return None
    _check_rule_ids(root, problems)
    extends = root.value.get("extends")
    if extends is None or extends.value is None:
        return root
    if not isinstance(extends.value, str):
        problems.add(extends.origin, codes.WRONG_TYPE, "extends must be a string: builtin:NAME or a path relative to this file")
        return root
    target = _extends_target(extends, base_dir, problems)
    if target is None:
        return root
    resolved = target.resolve()
    target_display = _display(target)
    if resolved in chain.resolved:
        cycle = chain.displays[chain.resolved.index(resolved) :] + [target_display]
        problems.add(extends.origin, codes.EXTENDS_CYCLE, f"extends cycle: {' -> '.join(cycle)}", hint="remove one of the extends")
        return root
    chain.resolved.append(resolved)
    chain.displays.append(target_display)
    base = _read_file(target, target_display, chain, problems, extends)
    if base is None:
        return root
    merged = _merge(base, root)
    merged.value.pop("extends", None)
    return merged


def _extends_target(extends: Node, base_dir: Path, problems: _Problems) -> Path | None:
    text: str = extends.value
    if text.startswith(BUILTIN_PREFIX):
        try:
            return resolve_source(text)
        except PolicyIOError:
            name = text[len(BUILTIN_PREFIX) :]
            problems.add(
                extends.origin,
                codes.EXTENDS_MISSING,
                f"no builtin policy '{name}' (known: {', '.join(builtin_policies())})",
                hint=did_you_mean(name, builtin_policies()),
            )
            return None
    target = Path(text) if Path(text).is_absolute() else base_dir / text
    if not target.is_file():
        problems.add(extends.origin, codes.EXTENDS_MISSING, f"extended policy {_display(target)} does not exist")
        return None
    return target


def _check_rule_ids(root: Node, problems: _Problems) -> None:
    """Duplicate rule ids within one file (the base policy and each profile separately)."""
    lists = [root.value.get("rules")]
    profiles = root.value.get("profiles")
    if profiles is not None and isinstance(profiles.value, dict):
        lists.extend(overlay.value.get("rules") for overlay in profiles.value.values() if isinstance(overlay.value, dict))
    for rules in lists:
        if rules is None or not isinstance(rules.value, list):
            continue
        seen: dict[str, Origin] = {}
        for rule in rules.value:
            rule_id = _rule_id(rule)
            if rule_id is None:
                continue
            at = rule.value["id"].origin
            if rule_id in seen:
                problems.add(
                    at,
                    codes.DUPLICATE_RULE_ID,
                    f"duplicate rule id '{rule_id}' (first at line {seen[rule_id].line})",
                    hint="rule ids are unique; profiles replace rules by id",
                )
            else:
                seen[rule_id] = at


# --------------------------------------------------------------------------- the model, by path


def _options(annotation: Any) -> list[Any]:
    if get_origin(annotation) in (Union, types.UnionType):
        return [arg for arg in get_args(annotation) if arg is not type(None)]
    return [annotation]


def _annotation_at(path: PathKey) -> Any:
    """The type the language expects at ``path`` (``profiles.NAME`` is a partial policy), or ``None``."""
    annotation: Any = Policy
    position = 0
    while position < len(path):
        key = path[position]
        if annotation is Policy and key == "profiles" and position + 1 < len(path):
            annotation, position = _PolicyBody, position + 2
            continue
        step = None
        for option in _options(annotation):
            if isinstance(option, type) and issubclass(option, BaseModel):
                field = option.model_fields.get(key) if isinstance(key, str) else None
                if field is not None:
                    step = field.annotation
            elif get_origin(option) is dict:
                step = get_args(option)[1]
            elif get_origin(option) is list and isinstance(key, int):
                step = get_args(option)[0]
            if step is not None:
                break
        if step is None:
            return None
        annotation, position = step, position + 1
    return annotation


def _model_at(path: PathKey) -> type[BaseModel] | None:
    for option in _options(_annotation_at(path)):
        if isinstance(option, type) and issubclass(option, BaseModel):
            return option
    return None


def _relative(path: PathKey) -> PathKey:
    return path[2:] if len(path) >= 2 and path[0] == "profiles" else path


def _add_unknown_key(problems: _Problems, key: Any, origin: Origin, path: PathKey, model: type[BaseModel] | None, profile: str | None) -> None:
    fields = list(model.model_fields) if model is not None else []
    relative = _relative(path) if profile is not None else path
    if relative == ("detectors",):
        problems.add(origin, codes.UNKNOWN_DETECTOR, f"unknown detector '{key}' (known: {', '.join(fields)})", did_you_mean(key, fields))
        return
    if relative:
        where = f"in {_dotted(relative)}" + (f" of profile '{profile}'" if profile is not None else "")
    elif profile is not None:
        where = f"in profile '{profile}'"
    else:
        where = "at the top level"
    hint = did_you_mean(key, fields) or (f"a profile can set: {', '.join(fields)}" if profile is not None and not relative else None)
    if hint is None and relative == ("budgets",):
        # "budgets: {search: {limit: 5}}": a tool's budget one level too high.
        hint = f"a tool's budget goes under per_tool (budgets: {{per_tool: {{{key}: {{limit: 5}}}}}}); the others are {', '.join(name for name in fields if name != 'per_tool')}"
    problems.add(origin, codes.UNKNOWN_KEY, f"unknown key '{key}' {where}", hint)


# ``== "ping"``: JMESPath reads "ping" as a quoted identifier (a field), a classic mistake.
_QUOTED_COMPARISON = re.compile(r'(?:==|!=)\s*"([^"]*)"')
# ``starts_with(arguments.url, "http")``: the same mistake as a string function's argument.
_QUOTED_ARGUMENT = re.compile(r'\b(starts_with|ends_with|contains)\s*\([^()]*?,\s*"([^"]*)"\s*\)')


def _check_overlay_keys(node: Node, path: PathKey, problems: _Problems, profile: str) -> None:
    """Unknown keys anywhere in a profile overlay, reported even when the profile is not selected."""
    if isinstance(node.value, dict):
        model = _model_at(path)
        for key, child in node.value.items():
            if model is not None and key not in model.model_fields:
                _add_unknown_key(problems, key, child.key_origin or child.origin, path, model, profile)
            else:
                _check_overlay_keys(child, path + (key,), problems, profile)
    elif isinstance(node.value, list):
        for position, child in enumerate(node.value):
            _check_overlay_keys(child, path + (position,), problems, profile)


# --------------------------------------------------------------------------- pydantic errors → problems

_BOUNDS = {"greater_than": ("gt", ">"), "greater_than_equal": ("ge", ">="), "less_than": ("lt", "<"), "less_than_equal": ("le", "<=")}
_EXPECTED = {
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "string_type": "a string",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "list_type": "a list",
}


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"number {value}"
    if isinstance(value, str):
        return f"string '{value}'"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


class _Locator:
    """Positions of the nodes of one effective tree, for pydantic error locations."""

    def __init__(self, tree: Node, overlay: Node | None) -> None:
        self.nodes = _index(tree)
        self.overlay_nodes = {id(node) for node in _index(overlay).values()} if overlay is not None else set()
        self.root = tree

    def value(self, path: PathKey) -> Origin:
        node = self.nodes.get(path)
        if node is not None:
            return node.origin
        return self.container(path[:-1])

    def key(self, path: PathKey) -> Origin:
        node = self.nodes.get(path)
        if node is not None:
            return node.key_origin or node.origin
        return self.container(path[:-1])

    def container(self, path: PathKey) -> Origin:
        """For something missing inside ``path``: the key that introduces it, else its first position."""
        while path not in self.nodes and path:
            path = path[:-1]
        node = self.nodes.get(path, self.root)
        return node.key_origin or node.origin

    def in_overlay(self, path: PathKey) -> bool:
        node = self.nodes.get(path)
        return node is not None and id(node) in self.overlay_nodes


# Other tools' words for a rule's verdict (OPA's deny, an action name), and the verdict that does it.
_VERDICT_WORDS = {
    **dict.fromkeys(("deny", "reject", "refuse", "forbid", "disallow", "stop", "error"), "to refuse the call with an error, write verdict: block"),
    **dict.fromkeys(("skip", "ask", "confirm", "approve", "escalate", "pause", "human"), "to stop the call for a human, write verdict: cancel (with a reason)"),
    **dict.fromkeys(("cache", "mock", "respond", "reply", "return", "stub"), "to answer the call without running it, write verdict: answer (with a result)"),
    **dict.fromkeys(("limit", "quota", "rate_limit", "throttle"), "for a number of calls, write verdict: budget (with a limit)"),
    **dict.fromkeys(("warn", "log", "audit", "alert", "notify", "monitor"), "warn is an action, which detectors and thresholds decide; a rule decides a verdict. To record what a rule would do without applying it, give it mode: observe"),
}


# pydantic names the member of a union that failed ("int", "float") after the field's path.
_UNION_MEMBER_TAGS = frozenset({"int", "float", "str", "bool", "none"})


def _add_validation_error(problems: _Problems, error: Any, locator: _Locator, suffix: str) -> None:
    loc: PathKey = tuple(error["loc"])
    if len(loc) > 1 and loc[-1] in _UNION_MEMBER_TAGS and loc not in locator.nodes and loc[:-1] in locator.nodes:
        if loc[-1] in ("int", "float") and error["type"] in ("int_type", "float_type"):
            error = {**error, "type": "float_type"}  # an int | float field wants a number
        loc = loc[:-1]  # budgets.steps.limit.int -> budgets.steps.limit
    kind: str = error["type"]
    value = error.get("input")
    context = error.get("ctx") or {}
    if loc and loc[-1] == "[key]":
        path = loc[:-1]
        problems.add(locator.key(path), codes.WRONG_TYPE, f"keys of {_dotted(path[:-1])} must be strings, got {_describe(path[-1])}{suffix}")
        return
    dotted = _dotted(loc) or "the policy"
    field = loc[-1] if loc else None
    if kind == "extra_forbidden":
        origin = locator.key(loc)
        before = len(problems.items)
        _add_unknown_key(problems, field, origin, loc[:-1], _model_at(loc[:-1]), None)
        if suffix and len(problems.items) > before:
            last = problems.items[-1]
            problems.items[-1] = Problem(last.file, last.line, last.column, last.code, last.message + suffix, last.hint)
        return
    if kind == "missing":
        parent, model = locator.nodes.get(loc[:-1]), _model_at(loc[:-1])
        if parent is not None and model is not None and isinstance(parent.value, dict):
            fields, wanted = list(model.model_fields), did_you_mean(field, [field])
            if any(key not in model.model_fields and did_you_mean(key, fields) == wanted for key in parent.value):
                return  # the misspelt key ("verdcit") is reported as unknown, with this field as its hint
        problems.add(locator.value(loc), codes.MISSING_FIELD, f"'{field}' is required in {_dotted(loc[:-1]) or 'the policy'}{suffix}")
        return
    if kind == "literal_error":
        choices = re.findall(r"'([^']*)'", context.get("expected", ""))
        expected = context.get("expected", "")
        hint = did_you_mean(value, choices) if isinstance(value, (str, int, float)) else None
        if field == "verdict" and loc[0] == "rules":
            if isinstance(value, str):
                hint = _VERDICT_WORDS.get(value.strip().lower()) or hint  # ("cache" is closest to "cancel")
                problems.add(locator.value(loc), codes.UNKNOWN_VERDICT, f"unknown verdict '{value}' in {_dotted(loc[:-1])} (expected {expected}){suffix}", hint)
            else:  # a list or a mapping: a shape problem, said as such
                problems.add(locator.value(loc), codes.UNKNOWN_VERDICT, f"{dotted} must be {expected}, got {_describe(value)}{suffix}", _nested_verdict_hint(value, choices))
        elif "escalate" in loc and "when" in loc:
            if isinstance(value, str):
                problems.add(locator.value(loc), codes.UNKNOWN_DETECTOR, f"unknown detector '{value}' in {_dotted(loc[:-1])} (known: {expected}){suffix}", hint)
            else:
                problems.add(locator.value(loc), codes.UNKNOWN_DETECTOR, f"{dotted} must be a detector ({expected}), got {_describe(value)}{suffix}")
        else:
            problems.add(locator.value(loc), codes.INVALID_VALUE, f"{dotted} must be {expected}, got {_describe(value)}{suffix}", hint)
        return
    if kind in _BOUNDS:
        name, symbol = _BOUNDS[kind]
        hint = None
        if "thresholds" in loc and isinstance(value, (int, float)) and 1 < value <= 100:
            hint = f"thresholds are risks from 0 to 1: {_number(value / 100)}, not {_number(value)}"
        problems.add(locator.value(loc), codes.OUT_OF_RANGE, f"{dotted} must be {symbol} {_number(context.get(name))}, got {_number(value)}{suffix}", hint)
        return
    if kind == "value_error":
        message = str(context.get("error", error["msg"]))
        ordered = re.match(r"thresholds must ascend: (\w+) .* is above (\w+) ", message)
        if ordered:
            low, high = loc + (ordered.group(1),), loc + (ordered.group(2),)
            target = high if locator.in_overlay(high) and not locator.in_overlay(low) else low
            if target not in locator.nodes:
                target = high if high in locator.nodes else loc
            problems.add(locator.value(target), codes.THRESHOLDS_ORDER, message + suffix, "warn <= replan <= pause <= stop")
        elif "needs '" in message:
            problems.add(locator.value(loc + ("verdict",)), codes.MISSING_FIELD, f"{message} ({dotted}){suffix}")
        else:
            problems.add(locator.value(loc), codes.INVALID_VALUE, f"{dotted}: {message}{suffix}")
        return
    if kind in _EXPECTED or kind.endswith("_type") or kind.endswith("_parsing"):
        expected = _EXPECTED.get(kind, error["msg"].lower().replace("input should be ", ""))
        hint = None
        if kind == "string_type" and isinstance(value, bool):
            node = locator.nodes.get(loc)
            written = node.scalar.value if node is not None and node.scalar is not None else str(value).lower()
            hint = f"YAML reads an unquoted yes, no, on, off, true or false as a boolean: quote it ({field}: \"{written}\")"
        elif field == "tool" and loc[0] == "rules" and isinstance(value, list):
            names = ", ".join(f"'{name}'" for name in value if isinstance(name, str))
            hint = f"a rule names one tool or a glob; for several, write one rule each, or tool: \"*\" with match: \"contains([{names}], tool)\""
        problems.add(locator.value(loc), codes.WRONG_TYPE, f"{dotted} must be {expected}, got {_describe(value)}{suffix}", hint)
        return
    if kind == "string_too_short" and context.get("min_length") == 1:
        problems.add(locator.value(loc), codes.INVALID_VALUE, f"{dotted} must not be empty{suffix}")
        return
    if kind == "too_short":
        problems.add(
            locator.value(loc),
            codes.INVALID_VALUE,
            f"{dotted} needs at least {context.get('min_length')} items, got {context.get('actual_length')}{suffix}",
        )
        return
    if kind == "string_pattern_mismatch":
        hint = None
        if field == "id" and isinstance(value, str):
            suggestion = re.sub(r"[^A-Za-z0-9_.:-]+", "_", value).strip("_")
            hint = "an id holds only letters, digits, '_', '.', ':' and '-'" + (f": did you mean '{suggestion}'?" if suggestion else "")
        problems.add(locator.value(loc), codes.INVALID_VALUE, f"{dotted} must match {context.get('pattern')}, got {_describe(value)}{suffix}", hint)
        return
    problems.add(locator.value(loc), codes.INVALID_VALUE, f"{dotted}: {error['msg']}{suffix}")


# --------------------------------------------------------------------------- expressions and globs


def _inside(node: Node, offset: int | None) -> Origin:
    """Origin of character ``offset`` of a scalar's value, when the scalar's style allows mapping
    it exactly; else the scalar's own origin (never a wrong line or column)."""
    scalar, lines = node.scalar, node.lines
    text = node.value
    if offset is None or scalar is None or lines is None or not isinstance(text, str):
        return node.origin
    start, end = scalar.start_mark, scalar.end_mark
    if scalar.style in (None, "", "'", '"') and start.line == end.line and start.line < len(lines):
        raw = lines[start.line][start.column : end.column]
        # The marks include a tag or an anchor written before the value ("!!str", "&m1").
        if not scalar.style:
            begin = len(raw) - len(text) if raw.endswith(text) else 0
            return Origin(node.origin.file, start.line + 1, start.column + 1 + begin + offset)
        index, consumed = raw.find(scalar.style) + 1, 0
        while consumed < offset and index < len(raw):
            if scalar.style == "'":
                index += 2 if raw[index : index + 2] == "''" else 1
            elif scalar.style == '"' and raw[index] == "\\":
                # One character of the value from an escape: \" \\ \n, \xHH, \uHHHH, \UHHHHHHHH.
                index += _ESCAPE_LENGTHS.get(raw[index + 1 : index + 2], 2)
            else:
                index += 1
            consumed += 1
        return Origin(node.origin.file, start.line + 1, start.column + 1 + index)
    if scalar.style not in ("|", ">"):
        return node.origin
    # A block scalar's lines: those after its header, up to the line its end mark is on when
    # the next key starts there.
    ends_before = end.line >= len(lines) or lines[end.line][: end.column].strip() == ""
    last = end.line if ends_before else end.line + 1
    numbers = range(start.line + 1, min(last, len(lines)))
    content = [number for number in numbers if lines[number].strip()]
    if not content:
        return node.origin
    indent = len(lines[content[0]]) - len(lines[content[0]].lstrip(" "))
    if scalar.style == "|":
        before = text[:offset]
        line = start.line + 1 + before.count("\n")
        if line in numbers:
            return Origin(node.origin.file, line + 1, indent + offset - (before.rfind("\n") + 1) + 1)
        return node.origin
    # Folded: mapped only when the value is its lines joined by single spaces (one indentation,
    # no blank or more-indented line, no trailing spaces); anything else folds otherwise.
    written = [lines[number] for number in content]
    if content != list(range(content[0], content[-1] + 1)) or any(
        line[:indent].strip() or line[indent : indent + 1] in (" ", "\t") or line != line.rstrip() for line in written
    ):
        return node.origin
    if text.rstrip("\n") != " ".join(line.strip() for line in written):
        return node.origin
    for number in content:
        length = len(lines[number].strip())
        if offset <= length:
            return Origin(node.origin.file, number + 1, indent + offset + 1)
        offset -= length + 1
    return node.origin


# Characters of a double-quoted YAML escape, by the letter after the backslash (others: 2).
_ESCAPE_LENGTHS = {"x": 4, "u": 6, "U": 10}


def _quoted_example(value: str) -> str:
    """``: "VALUE"`` (or single-quoted when it holds double quotes) for a hint; nothing for a
    value on several lines."""
    if "\n" in value or len(value) > 80:
        return ""
    if '"' not in value:
        return f': "{value}"'
    return ": '" + value.replace("'", "''") + "'"


def _nested_verdict_hint(value: Any, verdicts: list[str]) -> str | None:
    """For ``verdict: {cancel: {reason: ...}}``: the verdict's fields go beside it in the rule."""
    if not isinstance(value, dict) or len(value) != 1:
        return None
    (name, fields), = value.items()
    if name not in verdicts:
        return None
    if not isinstance(fields, dict):
        # "{cancel: ask first}": the value is the field the verdict needs.
        needed = VERDICT_FIELDS.get(name)
        fields = {needed: fields} if needed is not None and fields is not None else {}
    # Strings as JSON, which YAML reads back as the same text; the rest elided.
    beside = [f"{key}: {json.dumps(field, ensure_ascii=False) if isinstance(field, str) else '...'}" for key, field in fields.items() if key != "verdict"]
    return f"write the verdict's name and put its fields beside it in the rule: {', '.join([f'verdict: {name}', *beside])}"


# The fields each verdict reads; the rule's other fields (id, tool, match, when, mode,
# on_error) serve every verdict.
_VERDICT_READS = {
    "allow": (),
    "answer": ("result",),
    "cancel": ("reason",),
    "block": ("type", "message"),
    "unavailable": ("message",),
    "budget": ("limit", "scope", "message"),
}
_VERDICT_ONLY_FIELDS = frozenset(field for fields in _VERDICT_READS.values() for field in fields)


def _check_unused_verdict_fields(rule: Node, problems: _Problems) -> None:
    """LG904: a field the rule's verdict does not read (a ``limit`` on a ``cancel`` rule looks
    like a quota and is none). Not when the verdict lacks its own field: LG205 says that."""
    verdict = rule.value.get("verdict")
    reads = _VERDICT_READS.get(verdict.value) if verdict is not None and isinstance(verdict.value, str) else None
    if reads is None or missing_verdict_field(verdict.value, {key: child.value for key, child in rule.value.items()}) is not None:
        return
    for key, child in rule.value.items():
        if key in _VERDICT_ONLY_FIELDS and key not in reads:
            users = " or ".join(f"'{name}'" for name, fields in _VERDICT_READS.items() if key in fields)
            problems.add(
                child.key_origin or child.origin,
                codes.UNUSED_FIELD,
                f"verdict '{verdict.value}' does not use '{key}': the rule ignores it",
                f"'{key}' is for verdict {users}",
                severity="warning",
            )


def _check_glob(problems: _Problems, pattern: Any, origin: Origin, what: str) -> None:
    if not isinstance(pattern, str):
        return
    try:
        compile_glob(pattern)
    except re.error as error:
        problems.add(origin, codes.BAD_GLOB, f"invalid {what} glob '{pattern}': {error.msg if hasattr(error, 'msg') else error}")


def _check_expressions(root: Node, problems: _Problems) -> None:
    """Compile every glob, ``match`` and ``when`` of a (partial) policy tree, with positions."""
    if not isinstance(root.value, dict):
        return
    for section, what in (("tools", "tool"), ("pricing", "model")):
        table = root.value.get(section)
        if table is not None and isinstance(table.value, dict):
            for key, child in table.value.items():
                _check_glob(problems, key, child.key_origin or child.origin, what)
    budgets = root.value.get("budgets")
    per_tool = budgets.value.get("per_tool") if budgets is not None and isinstance(budgets.value, dict) else None
    if per_tool is not None and isinstance(per_tool.value, dict):
        for key, child in per_tool.value.items():
            _check_glob(problems, key, child.key_origin or child.origin, "tool")
    rules = root.value.get("rules")
    if rules is None or not isinstance(rules.value, list):
        return
    for rule in rules.value:
        if not isinstance(rule.value, dict):
            continue
        _check_unused_verdict_fields(rule, problems)
        tool = rule.value.get("tool")
        if tool is not None:
            _check_glob(problems, tool.value, tool.origin, "tool")
        match = rule.value.get("match")
        if match is not None and isinstance(match.value, str):
            try:
                compiled_match = compile_match(match.value)
            except ExpressionError as error:
                problems.add(_inside(match, error.offset), codes.BAD_JMESPATH, error.message, error.hint)
            else:
                argument = _QUOTED_ARGUMENT.search(match.value)
                if argument is not None:
                    _quoted_identifier(problems, match, argument, 2, f"so {argument.group(1)}() gets the field {{name}}, not the string, and fails for every call")
                elif not _allows_on_error(rule):
                    _check_missing_field(problems, match, compiled_match.tree)
                quoted = _QUOTED_COMPARISON.search(match.value)
                if quoted is not None:
                    _quoted_identifier(problems, match, quoted, 1, "so this compares with the field {name}, not the string")
            _check_control_characters(problems, match, python_strings=False)
        when = rule.value.get("when")
        if when is not None and isinstance(when.value, str):
            try:
                compiled_condition = compile_condition(when.value)
            except ExpressionError as error:
                text = when.value
                offset = error.offset
                if offset is not None:
                    offset = None if "\n" in text.strip() else offset + len(text) - len(text.lstrip())
                problems.add(_inside(when, offset), codes.BAD_CONDITION, error.message, error.hint)
            else:
                _check_control_characters(problems, when, python_strings=True)
                if not _allows_on_error(rule):
                    _check_missing_argument(problems, when, compiled_condition.tree)


def _allows_on_error(rule: Node) -> bool:
    on_error = rule.value.get("on_error")
    return on_error is not None and on_error.value == "allow"


#: JMESPath functions that fail for a null subject (a field the call does not have).
_NULL_FAILING_FUNCTIONS = frozenset({"starts_with", "ends_with", "contains", "length"})


def _quoted_identifier(problems: _Problems, node: Node, found: re.Match[str], group: int, consequence: str) -> None:
    """LG902 for the double-quoted name ``found`` matched (as ``group``) in a ``match``;
    ``consequence`` says what JMESPath makes of it (``{name}`` stands for the name)."""
    name = found.group(group)
    problems.add(
        _inside(node, found.start(group) - 1),
        codes.QUOTED_IDENTIFIER,
        f'"{name}" is a field name in JMESPath, ' + consequence.format(name=name),
        f"write '{name}' for a string (or `\"{name}\"` as a JSON literal)",
        severity="warning",
    )


def _check_missing_field(problems: _Problems, node: Node, tree: dict[str, Any]) -> None:
    """LG905 in a ``match`` (``tree``, its compiled parse tree): a string function of a field
    the call may not have (``starts_with(arguments.url, ...)`` fails for a call without ``url``)."""
    pending = [tree]
    while pending:
        current = pending.pop()
        children = current.get("children") or []
        if current.get("type") == "function_expression" and current.get("value") in _NULL_FAILING_FUNCTIONS and children:
            subject = _field_path(children[0])
            # (the call always has tool and arguments; a field named twice is tested first:
            # "arguments.url && starts_with(arguments.url, ...)")
            if subject is not None and subject not in ("tool", "arguments") and node.value.count(subject) == 1:
                function = current["value"]
                subject = subject if len(subject) <= 60 else f"{subject[:57]}..."
                problems.add(
                    _inside(node, None),
                    codes.MISSING_ARGUMENT,
                    f"{function}() fails for a call without {subject}, and the rule then follows on_error (deny: it applies)",
                    f"read a missing field as empty: {function}({subject} || '', ...)" if function != "length" else f"read a missing field as empty: length({subject} || '')",
                    severity="warning",
                )
                return
        pending.extend(child for child in children if isinstance(child, dict))


def _field_path(node: dict[str, Any]) -> str | None:
    """``arguments.url`` for a JMESPath field or a path of fields, else ``None``."""
    if node.get("type") == "field":
        return str(node.get("value"))
    if node.get("type") == "subexpression":
        parts = [_field_path(child) for child in node.get("children") or []]
        return ".".join(parts) if parts and all(part is not None for part in parts) else None  # type: ignore[arg-type]
    return None


def _check_missing_argument(problems: _Problems, node: Node, tree: ast.AST) -> None:
    """LG905 in a ``when`` (``tree``, its compiled syntax tree): ``call.arguments['amount']``
    fails for a call without ``amount``."""
    text = node.value.strip()
    for found in ast.walk(tree):
        if (
            isinstance(found, ast.Subscript)
            and isinstance(found.slice, ast.Constant)
            and isinstance(found.slice.value, str)
            and isinstance(found.value, ast.Attribute)
            and found.value.attr == "arguments"
            and isinstance(found.value.value, ast.Name)
            and found.value.value.id == "call"
        ):
            key = found.slice.value
            if text.count(repr(key)) + text.count(f'"{key}"') > 1:
                continue  # the key is tested too ("'amount' in call.arguments and ..."): guarded
            key = key if len(key) <= 60 else f"{key[:57]}..."
            offset = None if "\n" in text else character_column(text, found.col_offset) + len(node.value) - len(node.value.lstrip())
            problems.add(
                _inside(node, offset),
                codes.MISSING_ARGUMENT,
                f"call.arguments[{key!r}] fails for a call without {key!r}, and the rule then follows on_error (deny: it applies)",
                f"write call.arguments.get({key!r}, DEFAULT) (0, '' or None), or set on_error: allow",
                severity="warning",
            )
            return


# Control characters an expression may hold on purpose: none but spacing.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_CONTROL_NAMES = {"\b": "a backspace (\\b)", "\f": "a form feed (\\f)", "\a": "a bell (\\a)", "\v": "a vertical tab (\\v)", "\x00": "a NUL (\\0)"}


def _check_control_characters(problems: _Problems, node: Node, python_strings: bool) -> None:
    """LG903: a control character in an expression, as YAML decoded it (``"\\b"`` in double
    quotes) or, in a condition, as Python reads a string in it (``'\\b'``). It is almost always
    a regex's ``\\b`` (word boundary) that became a backspace, so the rule never matches."""
    text = node.value
    found = _CONTROL.search(text)
    offset = found.start() if found is not None else None
    character = found.group() if found is not None else ""
    if found is None and python_strings and "\\" in text and "\n" not in text.strip():
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except SyntaxError:
            return
        for literal in ast.walk(tree):
            if isinstance(literal, ast.Constant) and isinstance(literal.value, str) and (inner := _CONTROL.search(literal.value)) is not None:
                character = inner.group()
                offset = character_column(text, literal.col_offset) + len(text) - len(text.lstrip())
                break
    if offset is None:
        return
    name = _CONTROL_NAMES.get(character, f"the control character \\x{ord(character):02x}")
    if character == "\b":
        message = f"a string here holds {name}, not a regex word boundary: the pattern cannot match as meant"
    else:
        message = f"a string here holds {name}: an escape read as a control character"
    if python_strings:
        hint = "write the pattern as a raw string inside single-quoted YAML: when: 'matches(turn.user_message, r\"\\bdeploy\\b\")'"
    else:
        hint = "put the expression in single quotes in YAML, where a backslash stays a backslash"
    problems.add(_inside(node, offset), codes.CONTROL_CHARACTER, message, hint, severity="warning")


# --------------------------------------------------------------------------- validation


def _validate(tree: Node, problems: _Problems, overlay: Node | None = None, profile: str | None = None) -> Policy | None:
    """Validate one effective tree; problems new to this profile get ``(in profile 'NAME')``."""
    before = len(problems.errors)
    suffix = f" (in profile '{profile}')" if profile is not None else ""
    locator = _Locator(tree, overlay)
    model: Policy | None = None
    data = _to_data(tree)
    try:
        model = Policy.model_validate(data, strict=True)
    except ValidationError as error:
        errors = error.errors(include_url=False)
        for item in errors:
            _add_validation_error(problems, item, locator, suffix)
        _check_verdict_fields(data, errors, problems, locator, suffix)
    _check_expressions(tree, problems)
    return model if len(problems.errors) == before else None


def _check_verdict_fields(data: Any, errors: list[Any], problems: _Problems, locator: _Locator, suffix: str) -> None:
    """A rule with an invalid field skips the model validator that says which field its verdict
    needs: say it here, unless that field has a problem of its own."""
    rules = data.get("rules") if isinstance(data, dict) else None
    if not isinstance(rules, list):
        return
    failed = {tuple(item["loc"][:3]) for item in errors if tuple(item["loc"][:1]) == ("rules",)}
    failed_rules = {loc[1] for loc in failed if len(loc) > 1}
    for index, rule in enumerate(rules):
        if not isinstance(rule, dict) or index not in failed_rules:
            continue
        verdict = rule.get("verdict")
        if not isinstance(verdict, str) or ("rules", index) in failed or ("rules", index, VERDICT_FIELDS.get(verdict)) in failed:
            continue  # no verdict to judge by, or the rule itself or the needed field is reported already
        problem = missing_verdict_field(verdict, rule)
        if problem is not None:
            loc = ("rules", index)
            problems.add(locator.value(loc + ("verdict",)), codes.MISSING_FIELD, f"{problem} ({_dotted(loc)}){suffix}")


@dataclass(frozen=True)
class CheckResult:
    """What :func:`check_policy` found; it raises only when the file itself cannot be read.

    Attributes:
        source: the source as given (a path or ``builtin:NAME``).
        problems: errors and warnings, in the order found.
        policy: the compiled policy (the selected profile's, else the base's), or ``None`` on errors.
        profiles: the profile names the policy defines, in file order.
        revisions: revision per validated profile (``None`` for the base policy).
        tree: the effective merged tree behind ``policy`` (for :func:`explain_policy`).
    """

    source: str
    problems: tuple[Problem, ...]
    policy: CompiledPolicy | None
    profiles: tuple[str, ...]
    revisions: dict[str | None, str]
    tree: Node | None = None

    @property
    def errors(self) -> list[Problem]:
        return [problem for problem in self.problems if problem.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [problem for problem in self.problems if problem.severity == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors


def _check_tree(root: Node | None, problems: _Problems, source: str, profile: str | None, all_profiles: bool) -> CheckResult:
    if root is None:
        return CheckResult(source, problems.sorted(), None, (), {})
    profiles_node = root.value.get("profiles")
    overlays: dict[str, Node] = {}
    if profiles_node is not None and isinstance(profiles_node.value, dict):
        overlays = {str(name): node for name, node in profiles_node.value.items() if isinstance(node.value, dict)}
    names = tuple(str(name) for name in profiles_node.value) if profiles_node is not None and isinstance(profiles_node.value, dict) else ()

    models: dict[str | None, Policy | None] = {None: _validate(root, problems)}
    trees: dict[str | None, Node] = {None: root}
    for name, overlay in overlays.items():
        _check_overlay_keys(overlay, ("profiles", name), problems, name)
        _check_expressions(overlay, problems)

    if profile is not None and profile not in names:
        where = profiles_node.key_origin if profiles_node is not None and profiles_node.key_origin else root.origin
        known = f"known: {', '.join(names)}" if names else "this policy defines no profiles"
        # (A stale exported variable is hard to spot: say where the name may have come from.)
        from_environment = f"; ${PROFILE_ENV} is set to it" if os.environ.get(PROFILE_ENV) == profile else ""
        problems.add(where, codes.UNKNOWN_PROFILE, f"unknown profile '{profile}' ({known}{from_environment})", did_you_mean(profile, names))
    selected = list(overlays) if all_profiles else [profile] if profile in overlays else []
    for name in selected:
        trees[name] = _merge(root, overlays[name])
        models[name] = _validate(trees[name], problems, overlays[name], name)

    errors = problems.errors
    revisions: dict[str | None, str] = {}
    compiled: CompiledPolicy | None = None
    if not errors:
        for name, model in models.items():
            if model is None:
                continue
            try:
                policy = compile_policy(model, source, name)
            except (re.error, ExpressionError) as error:  # the checks above should have caught it
                problems.add(root.origin, codes.INVALID_VALUE, f"policy does not compile: {error}")
                continue
            revisions[name] = policy.revision
            if name == profile:
                compiled = policy
    if problems.errors:
        compiled = None
    return CheckResult(source, problems.sorted(), compiled, names, revisions, trees.get(profile) if compiled else None)


def check_policy(source: str | Path, *, profile: str | None = None, all_profiles: bool = False) -> CheckResult:
    """Validate a policy file and report every problem; does not apply ``LOOPGUARD_PROFILE``.

    Args:
        source: a path or ``builtin:NAME``.
        profile: the profile to validate and compile (``None``: the base policy).
        all_profiles: also validate every profile's effective policy.

    Raises:
        PolicyIOError: the file (or builtin name) cannot be read.
    """
    path = resolve_source(source)
    display = _display(path)
    problems = _Problems()
    try:
        chain = _Chain()
        chain.resolved.append(path.resolve())
        chain.displays.append(display)
        root = _read_file(path, display, chain, problems, None)
        return _check_tree(root, problems, str(source), profile, all_profiles)
    except (RecursionError, ValueError) as error:
        return _unreadable(error, display, str(source), profile, all_profiles)
    except (OSError, RuntimeError) as error:  # symlink loops, names too long: not a policy to read
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise PolicyIOError([Problem(display, 1, 1, codes.IO_ERROR, f"cannot read policy file: {reason}")]) from error


def check_policy_text(
    text: str, source_name: str = "<string>", *, profile: str | None = None, all_profiles: bool = False, base_dir: str | Path | None = None
) -> CheckResult:
    """Like :func:`check_policy` for a policy given as text; ``extends`` paths resolve from ``base_dir`` (default: cwd)."""
    problems = _Problems()
    try:
        root = _read_text(text, source_name, Path(base_dir) if base_dir is not None else Path.cwd(), _Chain(), problems)
        return _check_tree(root, problems, source_name, profile, all_profiles)
    except (RecursionError, ValueError) as error:
        return _unreadable(error, source_name, source_name, profile, all_profiles)


def _unreadable(error: Exception, display: str, source: str, profile: str | None, all_profiles: bool) -> CheckResult:
    """A policy the loader cannot even walk (nesting past Python's recursion limit, an alias
    that contains itself, a number too long to convert): one problem, never a traceback."""
    problems = _Problems()
    if isinstance(error, RecursionError):
        message = "the policy nests too deeply to read (or an alias refers to itself)"
        problems.add(Origin(display, 1, 1), codes.YAML_SYNTAX, message, "flatten the structure; a policy is a few levels deep")
    else:
        problems.add(Origin(display, 1, 1), codes.YAML_SYNTAX, f"the policy cannot be read: {error}")
    return _check_tree(None, problems, source, profile, all_profiles)


def _profile_or_env(profile: str | None) -> str | None:
    return profile if profile is not None else (os.environ.get(PROFILE_ENV) or None)


def _finish(result: CheckResult) -> CompiledPolicy:
    for problem in result.warnings:
        warnings.warn(PolicyFileWarning(problem.format()), stacklevel=3)
    if result.policy is None:
        raise PolicyError(result.errors)
    return result.policy


def load_policy(source: str | Path = "builtin:default", profile: str | None = None) -> CompiledPolicy:
    """Load, validate and compile a policy file.

    Args:
        source: a path or ``builtin:NAME``.
        profile: the profile to apply; ``None`` uses ``$LOOPGUARD_PROFILE`` when set, else the base policy.

    Returns:
        The compiled effective policy.

    Raises:
        PolicyIOError: the file cannot be read.
        PolicyError: the policy (or a file it extends) has problems; ``.problems`` lists them all.
    Warns:
        PolicyFileWarning: for each warning (LG901 to LG905: a file writable by group or
        others, a quoted identifier, ...); the policy still loads.
    """
    return _finish(check_policy(source, profile=_profile_or_env(profile)))


def load_policy_text(
    text: str, source_name: str = "<string>", profile: str | None = None, base_dir: str | Path | None = None
) -> CompiledPolicy:
    """Load a policy given as YAML text; ``source_name`` labels problems, ``base_dir`` anchors ``extends``.

    Raises:
        PolicyError: the policy has problems.
    """
    return _finish(check_policy_text(text, source_name, profile=_profile_or_env(profile), base_dir=base_dir))


def list_profiles(source: str | Path) -> list[str]:
    """The profile names a policy defines (its own and those of what it extends), in file order.

    Raises:
        PolicyIOError: the file cannot be read.
        PolicyError: the policy does not parse.
    """
    result = check_policy(source)
    if not result.profiles and result.errors:
        raise PolicyError(result.errors)
    return list(result.profiles)


# --------------------------------------------------------------------------- explain


@dataclass(frozen=True)
class Explanation:
    """The effective policy with the origin of each value (what ``loopguard explain`` prints).

    Attributes:
        policy: the compiled effective policy.
        data: the effective policy as plain data, defaults included.
        origins: path (``("detectors", "repeat", "weight")``, ``("rules", 0, "id")``) → where
            the value was written; paths absent here are defaults of the language.
    """

    policy: CompiledPolicy
    data: dict[str, Any]
    origins: dict[PathKey, Origin]

    def origin_of(self, path: PathKey) -> Origin | None:
        return self.origins.get(tuple(path))


def explain_policy(source: str | Path = "builtin:default", profile: str | None = None) -> Explanation:
    """The effective policy of ``source`` (with ``profile`` or ``$LOOPGUARD_PROFILE``) and its provenance.

    Raises:
        PolicyIOError, PolicyError: as :func:`load_policy`.
    """
    result = check_policy(source, profile=_profile_or_env(profile))
    policy = _finish(result)
    assert result.tree is not None
    origins = {path: node.origin for path, node in _index(result.tree).items() if path}
    return Explanation(policy, policy.effective(), origins)


# --------------------------------------------------------------------------- JSON Schema

SCHEMA_ID = "https://github.com/loopguard/loopguard/blob/main/schema/loopguard.schema.json"


def policy_json_schema() -> dict[str, Any]:
    """The JSON Schema of loopguard.yml, generated from :class:`~.schema.Policy`.

    Profiles are described by a ``ProfileOverlay``: the policy's body with every field
    optional down through mappings (which merge deeply), while list items (rules,
    escalations) stay complete because lists replace (rules by id) rather than merge.
    """
    schema = Policy.model_json_schema()
    defs: dict[str, Any] = schema.setdefault("$defs", {})

    def partial(node: Any) -> Any:
        if isinstance(node, list):
            return [partial(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = dict(node)
        ref = out.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.rsplit("/", 1)[1]
            if not name.endswith("Partial"):
                partial_name = f"{name}Partial"
                if partial_name not in defs:
                    defs[partial_name] = {}  # reserve first: definitions may refer to themselves
                    definition = {key: value for key, value in defs[name].items() if key != "required"}
                    if "properties" in definition:
                        definition["properties"] = {key: partial(value) for key, value in definition["properties"].items()}
                    defs[partial_name] = definition
                out["$ref"] = f"#/$defs/{partial_name}"
        for key in ("anyOf", "oneOf", "allOf"):
            if key in out:
                out[key] = partial(out[key])
        if isinstance(out.get("additionalProperties"), dict):
            out["additionalProperties"] = partial(out["additionalProperties"])
        return out

    body = {key: value for key, value in schema["properties"].items() if key not in ("version", "extends", "profiles")}
    defs["ProfileOverlay"] = {
        "type": "object",
        "title": "ProfileOverlay",
        "description": "A named overlay of the policy, merged deeply onto it; rules merge by id.",
        "additionalProperties": False,
        "properties": {key: partial(value) for key, value in body.items()},
    }
    schema["properties"]["profiles"]["additionalProperties"] = {"$ref": "#/$defs/ProfileOverlay"}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **{key: value for key, value in schema.items() if key != "title"},
        "title": "loopguard policy (loopguard.yml)",
    }
