"""Bad policies: every problem is reported with its exact file, line, column, code and message."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopguard.policy import CODES, PolicyError, PolicyIOError, Problem, check_policy, check_policy_text, load_policy, load_policy_text

FIXTURES = Path(__file__).parent / "fixtures" / "policies"

# fixture -> (profile, all_profiles, expected formatted problems). Paths are relative to FIXTURES.
CASES: dict[str, tuple[str | None, bool, list[str]]] = {
    "yaml_syntax.yml": (None, False, [
        "bad/yaml_syntax.yml:4:5: LG101: invalid YAML: expected ',' or '}', but got ':' (while parsing a flow mapping at line 3)",
    ]),
    "misindented.yml": (None, False, [
        "bad/misindented.yml:5:4: LG101: invalid YAML: expected <block end>, but found '<block mapping start>' (while parsing a block mapping at line 3) "
        "(hint: check this line's indentation: keys of one mapping line up, and a nested value is indented under its key)",
    ]),
    "cancel_with_message.yml": (None, False, [
        "bad/cancel_with_message.yml:5:14: LG205: a rule with verdict 'cancel' needs 'reason' ('message' is for verdict 'block') (rules[0])",
    ]),
    "misspelt_functions.yml": (None, False, [
        "bad/misspelt_functions.yml:5:12: LG303: invalid JMESPath: unknown function lenght() (known: abs, avg, ceil, contains, ends_with, floor, join, "
        "keys, length, map, max, max_by, merge, min, min_by, not_null, reverse, sort, sort_by, starts_with, sum, to_array, to_number, to_string, "
        "type, values) (hint: did you mean 'length'?)",
        "bad/misspelt_functions.yml:10:12: LG304: unknown function 'lenght' in condition (known: abs, contains, len, lower, matches, max, min, round) "
        "(hint: did you mean 'len'?)",
    ]),
    "unknown_attribute.yml": (None, False, [
        "bad/unknown_attribute.yml:5:16: LG304: unknown attribute run.toolcalls in condition (known: cost_usd, failures, per_tool, steps, "
        "tokens, tool_calls, turns) (hint: did you mean 'tool_calls'?)",
    ]),
    "nested_quotes.yml": (None, False, [
        "bad/nested_quotes.yml:5:31: LG101: invalid YAML: expected <block end>, but found '<scalar>' (while parsing a block mapping at line 3) "
        "(hint: a quoted value ends at its next matching quote: put a value that holds double quotes in single quotes "
        "(message: 'say \"please\" first'), or double a single quote inside single quotes ('it''s'))",
    ]),
    "tab_indent.yml": (None, False, [
        "bad/tab_indent.yml:4:1: LG102: tab character in indentation; YAML indents with spaces only (hint: replace the tab with spaces)",
    ]),
    "python_tag.yml": (None, False, [
        "bad/python_tag.yml:2:7: LG103: YAML tag '!!python/object/apply:os.system' is not allowed; a policy is plain data (hint: remove the tag)",
    ]),
    "not_mapping.yml": (None, False, [
        "bad/not_mapping.yml:1:1: LG104: the policy must be a mapping of keys (version, detectors, rules, ...), not a list",
    ]),
    "empty.yml": (None, False, [
        "bad/empty.yml:1:1: LG104: the policy is empty; expected a mapping (hint: start with 'version: 1')",
    ]),
    "duplicate_key.yml": (None, False, [
        "bad/duplicate_key.yml:3:1: LG105: duplicate key 'mode' (first at line 2); the later one would silently win",
    ]),
    "top_level_typo.yml": (None, False, [
        "bad/top_level_typo.yml:2:1: LG201: unknown key 'detector' at the top level (hint: did you mean 'detectors'?)",
    ]),
    "nested_typo.yml": (None, False, [
        "bad/nested_typo.yml:3:12: LG201: unknown key 'treshold' in detectors.repeat (hint: did you mean 'threshold'?)",
    ]),
    "unknown_detector.yml": (None, False, [
        "bad/unknown_detector.yml:3:3: LG202: unknown detector 'loops' (known: repeat, cycle, no_progress, failure, handoff, near_duplicate)",
    ]),
    "escalate_unknown.yml": (None, False, [
        "bad/escalate_unknown.yml:4:22: LG202: unknown detector 'no_progres' in scoring.escalate[0].when "
        "(known: 'repeat', 'cycle', 'no_progress', 'failure', 'handoff' or 'near_duplicate') (hint: did you mean 'no_progress'?)",
    ]),
    "wrong_type.yml": (None, False, [
        "bad/wrong_type.yml:4:16: LG203: detectors.repeat.threshold must be an integer, got string 'three'",
    ]),
    "version_boolean.yml": (None, False, [
        "bad/version_boolean.yml:1:10: LG206: version must be 1, got boolean true",
    ]),
    "budget_limit_text.yml": (None, False, [
        "bad/budget_limit_text.yml:3:23: LG203: budgets.tool_calls.limit must be an integer, got string 'ten'",
    ]),
    "profile_not_mapping.yml": (None, False, [
        "bad/profile_not_mapping.yml:3:8: LG203: profiles.dev must be a mapping, got string 'observe'",
    ]),
    "out_of_range.yml": (None, False, [
        "bad/out_of_range.yml:3:19: LG204: detectors.cycle.weight must be <= 1, got 1.5",
    ]),
    "negative_budget.yml": (None, False, [
        "bad/negative_budget.yml:3:23: LG204: budgets.tool_calls.limit must be > 0, got -5",
    ]),
    "answer_without_result.yml": (None, False, [
        "bad/answer_without_result.yml:5:14: LG205: a rule with verdict 'answer' needs 'result' (rules[0])",
    ]),
    "cancel_without_reason.yml": (None, False, [
        "bad/cancel_without_reason.yml:5:14: LG205: a rule with verdict 'cancel' needs 'reason' (rules[0])",
    ]),
    "block_without_message.yml": (None, False, [
        "bad/block_without_message.yml:5:14: LG205: a rule with verdict 'block' needs 'message' (rules[0])",
    ]),
    "wrong_mode.yml": (None, False, [
        "bad/wrong_mode.yml:2:7: LG206: mode must be 'enforce' or 'observe', got string 'enforcing' (hint: did you mean 'enforce'?)",
    ]),
    "unknown_verdict.yml": (None, False, [
        "bad/unknown_verdict.yml:5:14: LG207: unknown verdict 'deny' in rules[0] "
        "(expected 'allow', 'answer', 'cancel', 'block', 'unavailable' or 'budget') (hint: to refuse the call with an error, write verdict: block)",
    ]),
    "thresholds_order.yml": (None, False, [
        "bad/thresholds_order.yml:4:11: LG208: thresholds must ascend: replan (0.9) is above pause (0.8) (hint: warn <= replan <= pause <= stop)",
    ]),
    "profile_breaks_order.yml": (None, True, [
        "bad/profile_breaks_order.yml:4:26: LG208: thresholds must ascend: warn (0.5) is above replan (0.4) (in profile 'prod') "
        "(hint: warn <= replan <= pause <= stop)",
    ]),
    # A rule with a bad id still has its other problems reported, and a YAML boolean where
    # text is expected says how to quote it.
    "rule_id_and_boolean_text.yml": (None, False, [
        "bad/rule_id_and_boolean_text.yml:3:9: LG206: rules[0].id must match ^[A-Za-z0-9_.:-]+$, got string 'shell disabled' "
        "(hint: an id holds only letters, digits, '_', '.', ':' and '-': did you mean 'shell_disabled'?)",
        "bad/rule_id_and_boolean_text.yml:5:14: LG205: a rule with verdict 'block' needs 'message' (rules[0])",
        "bad/rule_id_and_boolean_text.yml:9:14: LG203: rules[1].message must be a string, got boolean false "
        '(hint: YAML reads an unquoted yes, no, on, off, true or false as a boolean: quote it (message: "no"))',
    ]),
    "escalate_not_text.yml": (None, False, [
        "bad/escalate_not_text.yml:4:23: LG202: scoring.escalate[0].when[1] must be a detector ('repeat', 'cycle', 'no_progress', "
        "'failure', 'handoff' or 'near_duplicate'), got boolean true",
    ]),
    "verdict_not_text.yml": (None, False, [
        "bad/verdict_not_text.yml:5:14: LG207: rules[0].verdict must be 'allow', 'answer', 'cancel', 'block', 'unavailable' or 'budget', got a list",
        "bad/verdict_not_text.yml:6:9: LG206: rules[1].id must match ^[A-Za-z0-9_.:-]+$, got string 'two words' "
        "(hint: an id holds only letters, digits, '_', '.', ':' and '-': did you mean 'two_words'?)",
        "bad/verdict_not_text.yml:8:14: LG205: a rule with verdict 'answer' needs 'result' (rules[1])",
    ]),
    # Counts are whole numbers; only cost_usd is a fraction.
    "fractional_budget.yml": (None, False, [
        "bad/fractional_budget.yml:5:21: LG203: budgets.per_tool.search.limit must be an integer, got number 2.5",
    ]),
    "glob_alias.yml": (None, False, [
        "bad/glob_alias.yml:4:11: LG101: invalid YAML: found undefined alias '_table' "
        "(hint: a value that starts with '*' is a YAML alias: quote a glob (tool: \"*_table\"))",
    ]),
    "bang_tag.yml": (None, False, [
        "bad/bang_tag.yml:5:12: LG103: YAML tag '!arguments.force' is not allowed; a policy is plain data "
        "(hint: remove the tag, or quote the value if the '!' belongs to it: \"!arguments.force\")",
    ]),
    # What users write in the syntax of another language gets the way to write it here.
    "other_languages.yml": (None, False, [
        "bad/other_languages.yml:5:30: LG303: invalid JMESPath: unexpected 100 (hint: a number in JMESPath is a literal in backticks: `100`)",
        "bad/other_languages.yml:10:35: LG303: invalid JMESPath: unexpected 'or' (hint: JMESPath writes || for or, && for and, ! for not)",
        "bad/other_languages.yml:15:32: LG304: invalid condition: invalid syntax (hint: a condition is a Python expression: write and, or, not)",
        "bad/other_languages.yml:20:27: LG304: invalid condition: invalid syntax (hint: compare with ==)",
        "bad/other_languages.yml:25:14: LG207: rules[4].verdict must be 'allow', 'answer', 'cancel', 'block', 'unavailable' or 'budget', "
        "got a mapping (hint: write the verdict's name and put its fields beside it in the rule: verdict: cancel, reason: \"ask first\")",
        "bad/other_languages.yml:28:23: LG303: invalid JMESPath: unexpected 'currency' "
        "(hint: JMESPath reads a field with a dot: arguments.currency (a name with other characters in double quotes: arguments.\"my-field\"))",
        "bad/other_languages.yml:33:32: LG304: invalid condition: invalid syntax (hint: compare with == and !=)",
        "bad/other_languages.yml:38:12: LG304: unknown name 'arguments' in condition (known: call, run, tool, turn) "
        "(hint: write call.arguments: the pending call is call (call.tool, call.arguments, call.id, call.agent))",
    ]),
    "budget_per_tool_level.yml": (None, False, [
        "bad/budget_per_tool_level.yml:3:3: LG201: unknown key 'search_orders' in budgets "
        "(hint: a tool's budget goes under per_tool (budgets: {per_tool: {search_orders: {limit: 5}}}); the others are steps, tool_calls, tokens, cost_usd)",
    ]),
    "duplicate_rule_id.yml": (None, False, [
        "bad/duplicate_rule_id.yml:7:9: LG301: duplicate rule id 'shell' (first at line 3) (hint: rule ids are unique; profiles replace rules by id)",
    ]),
    "bad_glob.yml": (None, False, [
        "bad/bad_glob.yml:4:11: LG302: invalid tool glob 'shell[': unbalanced brackets in glob 'shell['",
    ]),
    "bad_jmespath.yml": (None, False, [
        "bad/bad_jmespath.yml:5:40: LG303: invalid JMESPath: unexpected end of expression",
    ]),
    "bad_condition.yml": (None, False, [
        "bad/bad_condition.yml:4:28: LG304: invalid condition: invalid syntax",
    ]),
    "unknown_name_condition.yml": (None, False, [
        "bad/unknown_name_condition.yml:4:27: LG304: unknown name 'budget' in condition (known: call, run, tool, turn)",
    ]),
    "extends_missing.yml": (None, False, [
        "bad/extends_missing.yml:2:10: LG401: extended policy bad/base/missing.yml does not exist",
    ]),
    "extends_unknown_builtin.yml": (None, False, [
        "bad/extends_unknown_builtin.yml:2:10: LG401: no builtin policy 'stict' (known: default, observe, strict) (hint: did you mean 'strict'?)",
    ]),
    "cycle_a.yml": (None, False, [
        "bad/cycle_b.yml:2:10: LG402: extends cycle: bad/cycle_a.yml -> bad/cycle_b.yml -> bad/cycle_a.yml (hint: remove one of the extends)",
    ]),
    "unknown_profile.yml": ("staging", False, [
        "bad/unknown_profile.yml:2:1: LG403: unknown profile 'staging' (known: dev, prod)",
    ]),
    "profile_typo.yml": (None, False, [
        "bad/profile_typo.yml:7:17: LG201: unknown key 'atempts' in detectors.failure of profile 'prod' (hint: did you mean 'attempts'?)",
    ]),
    "multiple.yml": (None, False, [
        "bad/multiple.yml:2:7: LG206: mode must be 'enforce' or 'observe', got string 'enforse' (hint: did you mean 'enforce'?)",
        "bad/multiple.yml:4:23: LG204: detectors.repeat.threshold must be >= 2, got 1",
        "bad/multiple.yml:7:14: LG205: a rule with verdict 'answer' needs 'result' (rules[0])",
    ]),
}


@pytest.fixture(autouse=True)
def _in_fixtures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FIXTURES)
    monkeypatch.delenv("LOOPGUARD_PROFILE", raising=False)


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_policy_reports_exact_problems(name: str) -> None:
    profile, all_profiles, expected = CASES[name]
    result = check_policy(f"bad/{name}", profile=profile, all_profiles=all_profiles)
    assert [problem.format() for problem in result.errors] == expected
    assert result.policy is None


def test_every_bad_fixture_is_covered() -> None:
    on_disk = {path.name for path in (FIXTURES / "bad").glob("*.yml")}
    assert on_disk - set(CASES) == {"cycle_b.yml"}  # the other half of the cycle


def test_load_policy_raises_one_error_with_all_problems() -> None:
    with pytest.raises(PolicyError) as caught:
        load_policy("bad/multiple.yml")
    assert [problem.code for problem in caught.value.problems] == ["LG206", "LG204", "LG205"]
    text = str(caught.value)
    assert text.splitlines()[0] == "3 problems in policy:"
    assert "  bad/multiple.yml:4:23: LG204: detectors.repeat.threshold must be >= 2, got 1" in text.splitlines()


def test_unknown_profile_in_load_policy() -> None:
    with pytest.raises(PolicyError) as caught:
        load_policy("bad/unknown_profile.yml", profile="prd")
    assert [problem.format() for problem in caught.value.problems] == [
        "bad/unknown_profile.yml:2:1: LG403: unknown profile 'prd' (known: dev, prod) (hint: did you mean 'prod'?)"
    ]


def test_unknown_profile_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPGUARD_PROFILE", "qa")
    with pytest.raises(PolicyError) as caught:
        load_policy("bad/unknown_profile.yml")
    # The message says where the name may have come from: a stale exported variable.
    assert [problem.format() for problem in caught.value.problems] == [
        "bad/unknown_profile.yml:2:1: LG403: unknown profile 'qa' (known: dev, prod; $LOOPGUARD_PROFILE is set to it)"
    ]


def test_cycle_reported_from_either_end() -> None:
    result = check_policy("bad/cycle_b.yml")
    assert [problem.format() for problem in result.errors] == [
        "bad/cycle_a.yml:2:10: LG402: extends cycle: bad/cycle_b.yml -> bad/cycle_a.yml -> bad/cycle_b.yml (hint: remove one of the extends)"
    ]


def test_python_tag_is_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    text = f"version: 1\nmode: !!python/object/apply:os.system ['touch {marker}']\n"
    with pytest.raises(PolicyError):
        load_policy_text(text, "inline.yml")
    assert not marker.exists()


def test_missing_file_is_an_io_error() -> None:
    with pytest.raises(PolicyIOError) as caught:
        load_policy("bad/no_such_file.yml")
    assert caught.value.problems[0].format() == "bad/no_such_file.yml:1:1: LG100: cannot read policy file: No such file or directory"


def test_unknown_builtin_source() -> None:
    with pytest.raises(PolicyIOError) as caught:
        load_policy("builtin:nope")
    assert caught.value.problems[0].message == "no builtin policy 'nope' (known: default, observe, strict)"


def test_jmespath_position_in_single_quoted_scalar() -> None:
    text = "version: 1\nrules:\n  - id: x\n    match: 'a == ''b'' &&'\n    verdict: allow\n"
    result = check_policy_text_errors(text)
    # the end of the expression (the closing quote), counting each doubled quote as one character
    assert result == ["t.yml:4:26: LG303: invalid JMESPath: unexpected end of expression"]


def test_condition_position_in_literal_block() -> None:
    text = "version: 1\nrules:\n  - id: x\n    when: |\n      run.tool_calls > > 3\n    verdict: allow\n"
    assert check_policy_text_errors(text) == ["t.yml:5:24: LG304: invalid condition: invalid syntax"]


def test_a_condition_that_ends_too_early_points_at_its_end() -> None:
    text = 'version: 1\nrules:\n  - id: x\n    when: "tool.calls > "\n    verdict: allow\n'
    assert check_policy_text_errors(text) == ["t.yml:4:24: LG304: invalid condition: invalid syntax (the expression ends too early)"]


def check_policy_text_errors(text: str) -> list[str]:
    from loopguard.policy import check_policy_text

    return [problem.format() for problem in check_policy_text(text, "t.yml").errors]


def test_problem_format_and_codes() -> None:
    problem = Problem("p.yml", 3, 5, "LG201", "unknown key 'x'", "did you mean 'y'?")
    assert problem.format() == "p.yml:3:5: LG201: unknown key 'x' (hint: did you mean 'y'?)"
    assert problem.name == "unknown-key"
    warning = Problem("p.yml", 1, 1, "LG901", "writable", severity="warning")
    assert warning.format() == "p.yml:1:1: LG901: warning: writable"
    assert len(set(CODES.values())) == len(CODES)


def test_short_values_and_lists() -> None:
    text = "version: 1\nrules:\n  - {id: a, tool: \"\", verdict: allow}\nscoring:\n  escalate:\n    - {when: [repeat], risk: 0.9}\n"
    assert check_policy_text_errors(text) == [
        "t.yml:3:19: LG206: rules[0].tool must not be empty",
        "t.yml:6:14: LG206: scoring.escalate[0].when needs at least 2 items, got 1",
    ]


def test_unselected_profile_expressions_are_checked() -> None:
    text = "version: 1\nprofiles:\n  prod:\n    rules:\n      - id: x\n        when: run.calls >> >\n        verdict: allow\n"
    assert check_policy_text_errors(text) == ["t.yml:6:28: LG304: invalid condition: invalid syntax"]


def test_a_double_quoted_name_in_match_is_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "quoted.yml"
    path.write_text("version: 1\nrules:\n  - id: ping\n    tool: search\n    match: 'arguments.q == \"ping\"'\n    verdict: answer\n    result: pong\n")
    path.chmod(0o644)
    result = check_policy(path)
    assert [problem.format() for problem in result.problems] == [
        f'{path}:5:28: LG902: warning: "ping" is a field name in JMESPath, so this compares with the field ping, '
        "not the string (hint: write 'ping' for a string (or `\"ping\"` as a JSON literal))"
    ]
    assert result.ok


def test_a_double_quoted_name_as_a_string_functions_argument_is_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "quoted.yml"
    path.write_text("version: 1\nrules:\n  - id: https-only\n    tool: http_get\n    match: 'starts_with(arguments.url, \"http\")'\n    verdict: block\n    message: plain HTTP is not allowed\n")
    path.chmod(0o644)
    result = check_policy(path)
    # (No LG905 beside it: the call fails for every call, not only for one without url.)
    assert [problem.format() for problem in result.problems] == [
        f'{path}:5:40: LG902: warning: "http" is a field name in JMESPath, so starts_with() gets the field http, not the string, '
        "and fails for every call (hint: write 'http' for a string (or `\"http\"` as a JSON literal))"
    ]
    assert result.ok


@pytest.mark.parametrize(
    ("written", "column"),
    [
        ('    match: "arguments.env == \\"prod\\""\n', "5:30"),  # escaped quotes: the literal's backslash
        ("    match: \"arguments.x == '\\u00e9' && arguments.env == \\\"prod\\\"\"\n", "5:57"),  # a \u escape before it
        ("    match: >-\n      arguments.mode == 'a' &&\n      arguments.env == \"prod\"\n", "7:24"),  # folded: its own line
        ('    match: !!str "arguments.env == \\"prod\\""\n', "5:36"),  # a tag before the quote
        ('    match: &m1 arguments.env == "prod"\n', "5:33"),  # an anchor before a plain value
        # Folded with a blank line (it becomes a line break) or a more-indented line: the
        # expression's own position, never a wrong one.
        ("    match: >\n      arguments.mode == 'a'\n\n      && arguments.env == \"prod\"\n", "5:12"),
        ("    match: >\n      arguments.mode == 'a'\n        && arguments.x == 'z'\n      && arguments.env == \"prod\"\n", "5:12"),
    ],
)
def test_the_quoted_name_warning_points_at_the_literal(tmp_path: Path, written: str, column: str) -> None:
    path = tmp_path / "quoted.yml"
    path.write_text(f"version: 1\nrules:\n  - id: prod\n    tool: deploy\n{written}    verdict: cancel\n    reason: ask first\n")
    result = check_policy(path)
    assert [problem.format().split(": LG902")[0] for problem in result.problems] == [f"{path}:{column}"]


_BACKSPACE = "a string here holds a backspace (\\b), not a regex word boundary: the pattern cannot match as meant"
_RAW_HINT = "write the pattern as a raw string inside single-quoted YAML: when: 'matches(turn.user_message, r\"\\bdeploy\\b\")'"


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        # YAML's double quotes turn \\b into \b, which Python's string then reads as a backspace.
        ("    when: \"not matches(turn.user_message, '\\\\bdeploy\\\\b')\"\n", f"5:43: LG903: warning: {_BACKSPACE} (hint: {_RAW_HINT})"),
        # YAML's double quotes read \b as a backspace themselves.
        ("    when: \"not matches(turn.user_message, '\\bdeploy')\"\n", f"5:44: LG903: warning: {_BACKSPACE} (hint: {_RAW_HINT})"),
        ("    match: \"contains(arguments.env || '', '\\bprod')\"\n", f"5:44: LG903: warning: {_BACKSPACE} (hint: put the expression in single quotes in YAML, where a backslash stays a backslash)"),
        ("    when: 'not matches(turn.user_message, r\"\\bdeploy\\b\")'\n", None),  # a raw string in single quotes: right
        ("    when: 'not matches(turn.user_message, \"\\\\bdeploy\\\\b\")'\n", None),  # an escaped backslash: right
    ],
)
def test_a_regex_word_boundary_turned_backspace_is_a_warning(tmp_path: Path, written: str, expected: str | None) -> None:
    path = tmp_path / "deploy.yml"
    path.write_text(f"version: 1\nrules:\n  - id: deploy\n    tool: deploy\n{written}    verdict: cancel\n    reason: ask first\n")
    result = check_policy(path)
    assert [problem.format().removeprefix(f"{path}:") for problem in result.problems] == ([expected] if expected else [])
    assert result.ok


def test_a_field_the_verdict_does_not_use_is_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "unused.yml"
    path.write_text(
        "version: 1\nrules:\n  - id: refunds\n    tool: refund_order\n    verdict: cancel\n    reason: ask first\n    limit: 3\n"
        "  - id: shell\n    tool: shell\n    verdict: block\n    message: no shell\n    result: {ok: true}\n    scope: turn\n"
        "  - id: quota\n    tool: search\n    verdict: budget\n    limit: 3\n    scope: turn\n    message: enough searching\n"
    )
    result = check_policy(path)
    assert [problem.format().removeprefix(f"{path}:") for problem in result.problems] == [
        "7:5: LG904: warning: verdict 'cancel' does not use 'limit': the rule ignores it (hint: 'limit' is for verdict 'budget')",
        "12:5: LG904: warning: verdict 'block' does not use 'result': the rule ignores it (hint: 'result' is for verdict 'answer')",
        "13:5: LG904: warning: verdict 'block' does not use 'scope': the rule ignores it (hint: 'scope' is for verdict 'budget')",
    ]
    assert result.ok


def test_policies_the_loader_cannot_walk_are_problems_not_tracebacks(tmp_path: Path) -> None:
    deep = tmp_path / "deep.yml"
    deep.write_text("version: 1\ntools:\n  x: " + "[" * 3000 + "]" * 3000 + "\n")
    alias = tmp_path / "alias.yml"
    alias.write_text("version: 1\ntools: &a\n  x: *a\n")
    for path in (deep, alias):
        path.chmod(0o644)
        [problem] = check_policy(path).problems
        assert problem.format() == (
            f"{path}:1:1: LG101: the policy nests too deeply to read (or an alias refers to itself) "
            "(hint: flatten the structure; a policy is a few levels deep)"
        )
    loop = tmp_path / "loop.yml"
    loop.symlink_to(loop)
    with pytest.raises(PolicyIOError) as caught:
        check_policy(loop)
    assert caught.value.problems[0].code == "LG100"


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        ("matches(turn.user_message, '(a+)+$')", "regular expression with a quantified group inside a quantifier can take exponential time; simplify it"),
        ("'a'.ljust(1000000000) == 'a'", "method 'ljust' is not allowed in a condition"),
        ("run.per_tool.clear() != None", "method 'clear' is not allowed in a condition"),
        ("(lambda: 1)() == 1", "Lambda is not allowed in a condition"),
    ],
)
def test_conditions_that_could_hang_or_change_state_are_load_errors(condition: str, message: str) -> None:
    with pytest.raises(PolicyError) as caught:
        load_policy_text(f'version: 1\nrules:\n  - id: r\n    when: "{condition}"\n    verdict: block\n    message: m\n')
    [problem] = caught.value.problems
    assert problem.code == "LG304" and problem.message.startswith(message)


def test_a_condition_sees_copies_of_the_counters() -> None:
    from loopguard import Guard, ToolCall, ToolResult

    policy = load_policy_text(
        "version: 1\nbudgets:\n  per_tool:\n    search: {limit: 2}\n"
        "rules:\n  - id: r\n    when: \"run.per_tool.get('search', 0) > 100 and call.arguments.get('q') == 'never'\"\n    verdict: block\n    message: m\n"
    )
    session = Guard.from_policy(policy).session()
    kinds = []
    for i in range(3):
        call = ToolCall("search", {"q": str(i)})
        decision = session.before_call(call)
        kinds.append(decision.verdict.kind.value)
        session.after_call(call, ToolResult(f"result {i}"))
    assert kinds == ["allow", "allow", "budget_spent"]


def test_unknown_jmespath_functions_and_wrong_arity_are_load_errors() -> None:
    for match, message in (
        ("nosuchfn(arguments)", "invalid JMESPath: unknown function nosuchfn() (known: abs, avg, ceil"),
        ("length(arguments, arguments)", "invalid JMESPath: length() takes 1 argument(s), got 2"),
    ):
        with pytest.raises(PolicyError) as caught:
            load_policy_text(f"version: 1\nrules:\n  - id: r\n    match: '{match}'\n    verdict: block\n    message: m\n")
        [problem] = caught.value.problems
        assert (problem.code, problem.line) == ("LG303", 4) and problem.message.startswith(message)


def test_an_unquoted_colon_in_a_value_gets_a_quoting_hint() -> None:
    result = check_policy_text_errors("version: 1\nrules:\n  - id: a\n    tool: x\n    verdict: block\n    message: error: retry\n")
    assert result == [
        "t.yml:6:19: LG101: invalid YAML: mapping values are not allowed here "
        "(hint: quote a value that holds ': ' (message: \"error: retry later\"), or check this line's indentation)"
    ]


def test_an_unterminated_string_in_a_condition_names_no_line_of_its_own() -> None:
    # Python says "(detected at line 1)", the expression's line, which is not the file's.
    result = check_policy_text("version: 1\nrules:\n  - id: c\n    tool: x\n    when: \"turn.user_message == 'confirm\"\n    verdict: cancel\n    reason: ask first\n", "p.yml")
    assert [problem.format() for problem in result.problems] == ["p.yml:5:33: LG304: invalid condition: unterminated string literal"]


@pytest.mark.parametrize(
    ("condition", "hint"),
    [
        ("matches(turn.user_message, 'oops!') and and", None),  # a '!' inside a string says nothing
        ("turn.user_message == 'a&&b' or", None),
        ("turn.user_message == 'a=b' and", None),
        ("call.arguments.get('x', default=1) >", None),  # a keyword argument is no comparison
        ("run.tool_calls => 3", "write >= and <="),
        ("!(run.tool_calls > 3) (", "a condition is a Python expression: write and, or, not"),
        ("((((((((((((((((((((", None),  # unbalanced: read once, never looped on
    ],
)
def test_condition_hints_read_the_code_not_its_strings(condition: str, hint: str | None) -> None:
    from loopguard.policy.expressions import ExpressionError, compile_condition

    with pytest.raises(ExpressionError) as raised:
        compile_condition(condition)
    assert raised.value.hint == hint


@pytest.mark.parametrize(("match", "hint"), [("arguments.size > 1.5", "`1.5`"), ("arguments.x == 1e3", "`1e3`"), ("arguments.x => `3`", None)])
def test_jmespath_number_hints_keep_the_number_as_written(match: str, hint: str | None) -> None:
    from loopguard.policy.expressions import ExpressionError, compile_match

    with pytest.raises(ExpressionError) as raised:
        compile_match(match)
    assert raised.value.hint == (f"a number in JMESPath is a literal in backticks: {hint}" if hint else "write >= and <=")


@pytest.mark.parametrize(
    ("verdict", "hint"),
    [
        ('{cancel: {reason: "C:\\\\tmp"}}', 'verdict: cancel, reason: "C:\\\\tmp"'),
        ("{cancel: {reason: x, verdict: block}}", 'verdict: cancel, reason: "x"'),
        ('{cancel: "ask first"}', 'verdict: cancel, reason: "ask first"'),
    ],
)
def test_the_verdict_mapping_hint_is_valid_yaml(verdict: str, hint: str) -> None:
    result = check_policy_text(f"version: 1\nrules:\n  - id: r\n    tool: t\n    verdict: {verdict}\n", "p.yml")
    assert [problem.hint for problem in result.errors] == [f"write the verdict's name and put its fields beside it in the rule: {hint}"]


def test_a_misspelt_required_key_is_one_problem_not_two() -> None:
    assert check_policy_text_errors("version: 1\nrules:\n  - id: r\n    tool: x\n    verdcit: block\n    message: m\n") == [
        "t.yml:5:5: LG201: unknown key 'verdcit' in rules[0] (hint: did you mean 'verdict'?)",
    ]
    # A key that is no misspelling of it leaves the missing field reported.
    assert check_policy_text_errors("version: 1\nrules:\n  - id: r\n    tool: x\n    action: block\n") == [
        "t.yml:3:5: LG205: 'verdict' is required in rules[0]",
        "t.yml:5:5: LG201: unknown key 'action' in rules[0]",
    ]


@pytest.mark.parametrize(
    ("verdict", "hint"),
    [
        ("deny", "to refuse the call with an error, write verdict: block"),
        ("warn", "warn is an action, which detectors and thresholds decide; a rule decides a verdict. To record what a rule would do without applying it, give it mode: observe"),
        ("cache", "to answer the call without running it, write verdict: answer (with a result)"),
        ("Confirm", "to stop the call for a human, write verdict: cancel (with a reason)"),
        ("blok", "did you mean 'block'?"),
    ],
)
def test_other_tools_verdict_words_get_the_verdict_that_does_it(verdict: str, hint: str) -> None:
    [line] = check_policy_text_errors(f"version: 1\nrules:\n  - id: r\n    tool: x\n    verdict: {verdict}\n")
    assert line == (
        f"t.yml:5:14: LG207: unknown verdict '{verdict}' in rules[0] "
        f"(expected 'allow', 'answer', 'cancel', 'block', 'unavailable' or 'budget') (hint: {hint})"
    )


@pytest.mark.parametrize(
    ("condition", "method", "column", "hint"),
    [
        ("call.tool.startsWith('x')", "startsWith", 22, "write s.startswith('x')"),
        ("call.tool.indexOf('x') > 0", "indexOf", 22, "write s.find('x') (-1 when absent)"),
        ("turn.user_message.lowr() == 'y'", "lowr", 30, "did you mean 'lower'?"),
        ("call.tool.ljust(3) == 'x'", "ljust", 22, None),
    ],
)
def test_a_method_from_another_language_gets_its_python_spelling(condition: str, method: str, column: int, hint: str | None) -> None:
    [line] = check_policy_text_errors(f'version: 1\nrules:\n  - id: r\n    tool: x\n    when: "{condition}"\n    verdict: block\n    message: m\n')
    assert line == (
        f"t.yml:5:{column}: LG304: method '{method}' is not allowed in a condition (allowed: casefold, count, endswith, find, get, "
        "isalnum, isalpha, isdigit, items, keys, lower, lstrip, rstrip, startswith, strip, upper, values)" + (f" (hint: {hint})" if hint else "")
    )


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (
            "    when: \"call.arguments['amount'] > 100\"\n",
            "5:12: LG905: warning: call.arguments['amount'] fails for a call without 'amount', and the rule then follows on_error (deny: it applies) "
            "(hint: write call.arguments.get('amount', DEFAULT) (0, '' or None), or set on_error: allow)",
        ),
        (
            "    match: \"!starts_with(arguments.url, 'https://intranet.')\"\n",
            "5:12: LG905: warning: starts_with() fails for a call without arguments.url, and the rule then follows on_error (deny: it applies) "
            "(hint: read a missing field as empty: starts_with(arguments.url || '', ...))",
        ),
        ("    match: \"!starts_with(arguments.url || '', 'https://intranet.')\"\n", None),
        ("    when: \"call.arguments.get('amount', 0) > 100\"\n", None),
        ("    when: \"call.arguments['amount'] > 100\"\n    on_error: allow\n", None),
        ("    match: \"starts_with(tool, 'update_') && length(arguments) > `2`\"\n", None),
        # Guarded: the field or the key is tested before it is read.
        ("    match: \"arguments.url && starts_with(arguments.url, 'http://')\"\n", None),
        ("    when: \"'amount' in call.arguments and call.arguments['amount'] > 100\"\n", None),
        ("    when: \"call.arguments['amount'] > 100 if 'amount' in call.arguments else False\"\n", None),
    ],
)
def test_an_expression_that_fails_for_a_call_without_an_argument_is_a_warning(tmp_path: Path, expression: str, expected: str | None) -> None:
    path = tmp_path / "p.yml"
    path.write_text(f"version: 1\nrules:\n  - id: r\n    tool: '*'\n{expression}    verdict: cancel\n    reason: ask\n")
    path.chmod(0o644)
    result = check_policy(path)
    assert [problem.format().removeprefix(f"{path}:") for problem in result.problems] == ([expected] if expected else [])
