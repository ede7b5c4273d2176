"""Policy problems: what is wrong, where, and a stable code for it.

Every problem the loader finds is a :class:`Problem` with a file, a 1-based line
and column, a stable code and a message; loading collects all of them and raises
one :class:`PolicyError`. The codes are part of the public contract (CI scripts
match on them), so they never change meaning; new ones get new numbers.

=======  ======================  ==============================================
code     name                    meaning
=======  ======================  ==============================================
LG100    io-error                the policy file cannot be read
LG101    yaml-syntax             the file is not valid YAML
LG102    yaml-tab                a tab character in indentation
LG103    yaml-tag                an object tag (``!!python/...``, custom tags)
LG104    not-a-mapping           the document (or a profile) is not a mapping
LG105    duplicate-key           the same key twice in one YAML mapping
LG201    unknown-key             a key the policy language does not have
LG202    unknown-detector        a detector name that does not exist
LG203    wrong-type              a value of the wrong type
LG204    out-of-range            a number outside its allowed range
LG205    missing-field           a required field is missing
LG206    invalid-value           a value that is not one of the allowed ones
LG207    unknown-verdict         a rule verdict that does not exist
LG208    thresholds-order        thresholds that do not ascend
LG301    duplicate-rule-id       two rules with the same id in one file
LG302    bad-glob                a tool-name glob that does not compile
LG303    bad-jmespath            a rule ``match`` that is not valid JMESPath
LG304    bad-condition           a rule ``when`` that is not a valid condition
LG401    extends-missing         ``extends`` names a file that does not exist
LG402    extends-cycle           ``extends`` chains back to a file already in the chain
LG403    unknown-profile         the selected profile is not defined
LG901    writable-policy         (warning) the file is writable by group or others
LG902    quoted-identifier       (warning) a ``match`` compares with a "double-quoted" name, or
                                 gives one to starts_with/ends_with/contains: JMESPath reads
                                 it as a field, not a string
LG903    control-character       (warning) an expression holds a control character, usually
                                 a ``\b`` meant as a regex word boundary that became a backspace
LG904    unused-field            (warning) a rule sets a field its verdict does not use
                                 (a ``limit`` on a ``cancel`` rule)
LG905    missing-argument        (warning) an expression fails for a call without an argument it
                                 reads, and the rule then follows on_error (deny: it applies)
=======  ======================  ==============================================
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Iterable, Literal

#: Stable code → short name. See the module docstring for meanings.
CODES: dict[str, str] = {
    "LG100": "io-error",
    "LG101": "yaml-syntax",
    "LG102": "yaml-tab",
    "LG103": "yaml-tag",
    "LG104": "not-a-mapping",
    "LG105": "duplicate-key",
    "LG201": "unknown-key",
    "LG202": "unknown-detector",
    "LG203": "wrong-type",
    "LG204": "out-of-range",
    "LG205": "missing-field",
    "LG206": "invalid-value",
    "LG207": "unknown-verdict",
    "LG208": "thresholds-order",
    "LG301": "duplicate-rule-id",
    "LG302": "bad-glob",
    "LG303": "bad-jmespath",
    "LG304": "bad-condition",
    "LG401": "extends-missing",
    "LG402": "extends-cycle",
    "LG403": "unknown-profile",
    "LG901": "writable-policy",
    "LG902": "quoted-identifier",
    "LG903": "control-character",
    "LG904": "unused-field",
    "LG905": "missing-argument",
}

IO_ERROR = "LG100"
YAML_SYNTAX = "LG101"
YAML_TAB = "LG102"
YAML_TAG = "LG103"
NOT_A_MAPPING = "LG104"
DUPLICATE_KEY = "LG105"
UNKNOWN_KEY = "LG201"
UNKNOWN_DETECTOR = "LG202"
WRONG_TYPE = "LG203"
OUT_OF_RANGE = "LG204"
MISSING_FIELD = "LG205"
INVALID_VALUE = "LG206"
UNKNOWN_VERDICT = "LG207"
THRESHOLDS_ORDER = "LG208"
DUPLICATE_RULE_ID = "LG301"
BAD_GLOB = "LG302"
BAD_JMESPATH = "LG303"
BAD_CONDITION = "LG304"
EXTENDS_MISSING = "LG401"
EXTENDS_CYCLE = "LG402"
UNKNOWN_PROFILE = "LG403"
WRITABLE_POLICY = "LG901"
QUOTED_IDENTIFIER = "LG902"
CONTROL_CHARACTER = "LG903"
UNUSED_FIELD = "LG904"
MISSING_ARGUMENT = "LG905"

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a policy, at a position.

    Attributes:
        file: the policy file as displayed (relative to the working directory when inside it).
        line: 1-based line.
        column: 1-based column.
        code: stable code (``LG201``); :attr:`name` is its short name (``unknown-key``).
        message: what is wrong, in one sentence.
        hint: how to fix it, or ``None``.
        severity: ``error`` (the policy does not load) or ``warning`` (it loads).
    """

    file: str
    line: int
    column: int
    code: str
    message: str
    hint: str | None = None
    severity: Severity = "error"

    @property
    def name(self) -> str:
        return CODES.get(self.code, "unknown")

    def format(self) -> str:
        """``path:line:col: code: message (hint: ...)``; warnings say ``warning:`` after the code."""
        text = f"{self.file}:{self.line}:{self.column}: {self.code}: "
        if self.severity == "warning":
            text += "warning: "
        text += self.message
        if self.hint:
            text += f" (hint: {self.hint})"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "code": self.code,
            "name": self.name,
            "severity": self.severity,
            "message": self.message,
            "hint": self.hint,
        }


class PolicyError(Exception):
    """A policy that does not load; carries every problem found, not only the first.

    Attributes:
        problems: the problems, in file order per file (errors only).
    """

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = list(problems)
        super().__init__(self._text())

    def _text(self) -> str:
        count = len(self.problems)
        lines = [f"{count} problem{'s' if count != 1 else ''} in policy:"]
        lines.extend(f"  {problem.format()}" for problem in self.problems)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self._text()


class PolicyIOError(PolicyError):
    """The policy file itself (not a file it extends) cannot be read; the CLI exits 2 for it."""


class PolicyFileWarning(UserWarning):
    """A policy that loads but deserves attention: any warning code, LG901 (the file is
    writable by group or others) to LG905 (an expression fails for a call without an argument)."""


def did_you_mean(word: Any, choices: Iterable[str]) -> str | None:
    """A hint naming the choice closest to ``word`` (``"did you mean 'length'?"``), or ``None``
    when none is close (difflib's ratio below 0.6)."""
    close = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else None
