"""``loopguard test``: pass, fail, errors, exit codes, JSON, and the shipped policies' own tests."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loopguard.cli import main
from loopguard.testing import TestFileError, load_test_file, run_tests

ROOT = Path(__file__).resolve().parents[1]

LOOP = """\
      - {tool: search, args: {q: flights}, output: []}
      - {tool: search, args: {q: flights}, output: []}
      - {tool: search, args: {q: flights}, output: []}
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    os.chmod(path, 0o644)
    return path


def run_cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    saved = sys.stdout
    sys.stdout = out
    try:
        code = main(["test", *args])
    finally:
        sys.stdout = saved
    return code, out.getvalue()


@pytest.fixture
def passing(tmp_path: Path) -> Path:
    return write(
        tmp_path / "tests" / "ok.yml",
        f"""\
policy: builtin:default
cases:
  - name: identical-empty-search
    steps:
{LOOP}    expect:
      - {{step: 0, action: continue, verdict: allow}}
      - {{step: 2, action: stop}}
    expect_verdict: stop
  - name: healthy
    steps:
      - {{tool: list, args: {{page: 1}}, output: [1]}}
      - {{tool: list, args: {{page: 2}}, output: [2]}}
    expect_no: warn
""",
    )


def test_all_pass_exit_0(passing: Path) -> None:
    code, out = run_cli(str(passing))
    assert code == 0
    assert f"{passing}::identical-empty-search PASSED" in out
    assert f"{passing}::healthy PASSED" in out
    assert out.strip().splitlines()[-1].startswith("2 passed in ")


def test_failures_exit_1_with_reasons(tmp_path: Path, passing: Path) -> None:
    failing = write(
        tmp_path / "tests" / "bad.yml",
        f"""\
policy: builtin:default
cases:
  - name: wrong-step
    steps:
{LOOP}    expect: [{{step: 1, action: stop}}]
  - name: wrong-verdict
    steps:
{LOOP}    expect_verdict: continue
  - name: reached
    steps:
{LOOP}    expect_no: replan
  - name: out-of-range
    steps:
{LOOP}    expect: [{{step: 7, action: stop}}]
""",
    )
    code, out = run_cli(str(tmp_path / "tests"))
    assert code == 1
    assert f"{failing}::wrong-step FAILED" in out
    assert "step 1: got action warn (expected stop)" in out
    assert "run verdict: got stop first at step 2 (expected continue)" in out
    assert "expect_no replan: step 2 reached stop" in out
    assert "the run has only 3 steps" in out
    assert out.strip().splitlines()[-1].startswith("2 passed, 4 failed in ")


def test_rules_and_profiles(tmp_path: Path) -> None:
    write(
        tmp_path / "loopguard.yml",
        """\
version: 1
extends: builtin:default
rules:
  - id: shell-disabled
    tool: shell
    verdict: block
    message: shell is disabled here
profiles:
  dev:
    rules:
      - id: shell-disabled
        tool: shell
        verdict: allow
""",
    )
    tests = write(
        tmp_path / "tests" / "rules.yml",
        """\
policy: ../loopguard.yml
cases:
  - name: shell-is-blocked
    steps:
      - {tool: shell, args: {cmd: ls}, output: ""}
    expect: [{step: 0, verdict: block, rule: shell-disabled, phase: before_call}]
  - name: dev-allows-shell
    profile: dev
    steps:
      - {tool: shell, args: {cmd: ls}, output: ""}
    expect: [{step: 0, verdict: allow}]
""",
    )
    os.environ["LOOPGUARD_PROFILE"] = "dev"  # must not leak into cases that name no profile
    try:
        report = run_tests([tests])
    finally:
        del os.environ["LOOPGUARD_PROFILE"]
    assert [result.outcome for result in report.results] == ["passed", "passed"], [r.messages for r in report.results]
    assert report.exit_code == 0


def test_trace_files(tmp_path: Path) -> None:
    write(
        tmp_path / "traces" / "runs.jsonl",
        json.dumps({"run_id": "loop", "steps": [{"tool": "search", "args": {"q": "x"}, "output": []}] * 3})
        + "\n"
        + json.dumps({"run_id": "fine", "steps": [{"tool": "search", "args": {"q": "x"}, "output": [1]}]})
        + "\n",
    )
    tests = write(
        tmp_path / "t.yml",
        """\
policy: builtin:default
cases:
  - {name: loop, trace: traces/runs.jsonl, run: loop, expect_verdict: stop}
  - {name: fine, trace: traces/runs.jsonl, run: fine, expect_verdict: continue}
  - {name: ambiguous, trace: traces/runs.jsonl, expect_verdict: continue}
  - {name: missing-run, trace: traces/runs.jsonl, run: nope, expect_verdict: continue}
""",
    )
    report = run_tests([tests])
    assert [result.outcome for result in report.results] == ["passed", "passed", "error", "error"]
    assert "name one with 'run'" in report.results[2].messages[0]
    assert report.exit_code == 2


def test_json_format(passing: Path, tmp_path: Path) -> None:
    code, out = run_cli(str(passing), "--format", "json")
    data = json.loads(out)
    assert code == 0
    assert data["summary"]["passed"] == 2 and data["summary"]["failed"] == 0 and data["summary"]["exit_code"] == 0
    first = data["tests"][0]
    assert first["id"] == f"{passing}::identical-empty-search"
    assert first["outcome"] == "passed" and first["verdict"] == "stop" and len(first["revision"]) == 12


def test_keyword_filter(passing: Path) -> None:
    code, out = run_cli(str(passing), "-k", "healthy")
    assert code == 0 and "identical-empty-search" not in out and "1 passed" in out


@pytest.mark.parametrize(
    "text, message",
    [
        ("cases: [{name: a, policy: builtin:default, steps: [], expect_verdict: stop, expcet: []}]", "did you mean 'expect'"),
        ("cases: [{name: a, steps: [], expect_verdict: stop}]", "needs a 'policy'"),
        ("cases: [{name: a, policy: builtin:default, expect_verdict: stop}]", "either 'steps' or 'trace'"),
        ("cases: [{name: a, policy: builtin:default, steps: [], expect_verdict: maybe}]", "expect_verdict must be one of"),
        ("cases: [{name: a, policy: builtin:default, steps: []}]", "expects nothing"),
        ("cases: [{name: a, policy: builtin:default, steps: [], expect: [{step: 1}]}]", "give 'action', 'verdict' or 'rule'"),
        ("cases: [{name: a, policy: builtin:default, steps: [], expect_no: stop}, {name: a, policy: builtin:default, steps: [], expect_no: stop}]", "used by an earlier case"),
        ("cases: {a: 1", "invalid YAML"),
    ],
)
def test_malformed_files(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path / "t.yml", text)
    with pytest.raises(TestFileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_test_file(path)
    code, out = run_cli(str(path))
    assert code == 2 and f"{path} ERROR" in out


def test_a_policy_that_does_not_load_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / "broken.yml", "version: 1\nthresholds: {warn: 2}\n")
    tests = write(tmp_path / "t.yml", "policy: broken.yml\ncases:\n  - {name: a, steps: [], expect_verdict: continue}\n")
    code, out = run_cli(str(tests))
    assert code == 2
    assert "ERROR" in out and "does not load" in out and "broken.yml:2" in out
    assert "1 error in" in out


def test_missing_path_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = run_cli(str(tmp_path / "nope"))
    assert code == 2
    assert capsys.readouterr().err == f"loopguard test: {tmp_path / 'nope'}: no such file or directory\n"
    monkeypatch.chdir(tmp_path)  # a project without policies/tests/
    code, _ = run_cli()
    assert code == 2
    assert capsys.readouterr().err == (
        "loopguard test: policies/tests: no such file or directory "
        "(the default; name your policy test files or folders: loopguard test PATH...)\n"
    )


def test_the_shipped_policies_pass_their_own_tests() -> None:
    """``loopguard test`` from the repository root with the default path."""
    completed = subprocess.run(
        [sys.executable, "-m", "loopguard", "test"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "policies/tests/default.yml::identical-empty-search PASSED" in completed.stdout
    for policy in ("default", "strict", "observe"):
        assert f"policies/tests/{policy}.yml::" in completed.stdout
