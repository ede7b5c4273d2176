"""``loopguard check`` / ``explain`` / ``schema``: output formats and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from loopguard.cli import main
from loopguard.policy import load_policy

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures" / "policies"


@pytest.fixture(autouse=True)
def _no_env_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOOPGUARD_PROFILE", raising=False)


def test_shipped_policies_check_with_all_profiles(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(REPO)
    policies = sorted(str(path.relative_to(REPO)) for path in (REPO / "policies").glob("*.yml"))
    assert main(["check", *policies, "--all-profiles"]) == 0
    lines = capsys.readouterr().out.splitlines()
    revision = load_policy("builtin:default").revision
    assert f"policies/default.yml: ok (revision {revision})" in lines
    assert lines[-1] == f"{len(policies)} policies ok"


def test_ok_line_lists_profiles(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "p.yml"
    path.write_text("version: 1\nprofiles:\n  dev: {mode: observe}\n  prod: {thresholds: {stop: 0.88}}\n")
    path.chmod(0o644)
    assert main(["check", str(path), "--all-profiles"]) == 0
    revision = load_policy(path).revision
    assert capsys.readouterr().out.splitlines() == [f"{path}: ok (revision {revision}, profiles: dev, prod)", "1 policy ok"]
    assert main(["check", str(path), "--profile", "prod"]) == 0
    revision = load_policy(path, profile="prod").revision
    assert capsys.readouterr().out.splitlines()[0] == f"{path}: ok (profile prod, revision {revision}, profiles: dev, prod)"


def test_bad_policy_exits_1(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(FIXTURES)
    assert main(["check", "bad/multiple.yml", "bad/nested_typo.yml", "../../../policies/default.yml"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "bad/multiple.yml:2:7: LG206: mode must be 'enforce' or 'observe', got string 'enforse' (hint: did you mean 'enforce'?)",
        "bad/multiple.yml:4:23: LG204: detectors.repeat.threshold must be >= 2, got 1",
        "bad/multiple.yml:7:14: LG205: a rule with verdict 'answer' needs 'result' (rules[0])",
        "bad/nested_typo.yml:3:12: LG201: unknown key 'treshold' in detectors.repeat (hint: did you mean 'threshold'?)",
        f"../../../policies/default.yml: ok (revision {load_policy('builtin:default').revision})",
        "4 problems in 2 of 3 policies",
    ]


def test_unknown_profile_exits_1(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(FIXTURES)
    assert main(["check", "bad/unknown_profile.yml", "--profile", "qa"]) == 1
    assert capsys.readouterr().out.splitlines()[0] == "bad/unknown_profile.yml:2:1: LG403: unknown profile 'qa' (known: dev, prod)"


def test_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.yml"
    assert main(["check", str(missing)]) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [f"{missing}:1:1: LG100: cannot read policy file: No such file or directory"]


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check"]) == 2
    assert main(["check", "x.yml", "--profile", "a", "--all-profiles"]) == 2
    assert main([]) == 2
    assert main(["frobnicate"]) == 2


def test_github_format(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(FIXTURES)
    assert main(["check", "--format", "github", "bad/nested_typo.yml", "bad/bad_glob.yml"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "::error file=bad/nested_typo.yml,line=3,col=12,title=LG201 unknown-key::"
        "unknown key 'treshold' in detectors.repeat (hint: did you mean 'threshold'?)",
        "::error file=bad/bad_glob.yml,line=4,col=11,title=LG302 bad-glob::invalid tool glob 'shell[': unbalanced brackets in glob 'shell['",
    ]


def test_json_format(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(FIXTURES)
    assert main(["check", "--format", "json", "bad/wrong_type.yml", "builtin:observe"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["ok"] is False and document["errors"] == 1 and document["warnings"] == 0
    bad, good = document["policies"]
    assert bad["problems"] == [
        {
            "file": "bad/wrong_type.yml",
            "line": 4,
            "column": 16,
            "code": "LG203",
            "name": "wrong-type",
            "severity": "error",
            "message": "detectors.repeat.threshold must be an integer, got string 'three'",
            "hint": None,
        }
    ]
    assert good["ok"] is True and good["revision"] == load_policy("builtin:observe").revision


def test_writable_policy_is_a_warning_not_a_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "p.yml"
    path.write_text("version: 1\n")
    path.chmod(0o664)
    assert main(["check", str(path)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == (
        f"{path}:1:1: LG901: warning: policy file is writable by group or others (mode 664); "
        f"anyone who can write it can turn the guard off (hint: chmod go-w {path})"
    )
    # The summary counts warnings too, with or without problems beside them.
    assert main(["check", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "1 policy ok, 1 warning"
    path.write_text("version: 1\nmode: enforcing\n")
    assert main(["check", str(path)]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "1 problem in 1 of 1 policy, 1 warning"


def test_a_misspelt_builtin_policy_gets_a_hint(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "builtin:stict"]) == 2
    assert capsys.readouterr().err == "builtin:stict:1:1: LG100: no builtin policy 'stict' (known: default, observe, strict) (hint: did you mean 'strict'?)\n"


def test_explain_yaml_comments_origins(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(REPO)
    assert main(["explain", "builtin:strict"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "# effective policy of builtin:strict"
    assert out[1] == f"# revision: {load_policy('builtin:strict').revision}"
    assert "    threshold: 2  # from policies/strict.yml:13" in out
    assert "    weight: 0.95  # from policies/default.yml:15" in out  # handoff, inherited
    assert "    memory: 64  # default" in out
    assert "    - when: [repeat, no_progress]  # from policies/default.yml:21" in out


def test_explain_outside_the_repository_names_shipped_files_as_builtins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)  # (an installed loopguard: its policies lie outside the working directory)
    assert main(["explain", "builtin:strict"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "    threshold: 2  # from builtin:strict:13" in out
    assert "    weight: 0.95  # from builtin:default:15" in out


def test_explain_json_and_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "p.yml"
    path.write_text("version: 1\nextends: builtin:default\nprofiles:\n  dev:\n    mode: observe\n")
    path.chmod(0o644)
    assert main(["explain", str(path), "--profile", "dev", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["profile"] == "dev" and document["policy"]["mode"] == "observe"
    assert document["origins"]["mode"] == f"{path}:5"
    assert document["revision"] == load_policy(path, profile="dev").revision
    assert main(["explain", str(path), "--profile", "nope"]) == 1


def test_schema_command_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["title"] == "loopguard policy (loopguard.yml)"


def test_python_dash_m_entry_point() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "loopguard", "check", "builtin:default"], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines()[-1] == "1 policy ok"


def test_explain_yaml_is_valid_yaml(capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    from loopguard.policy import explain_policy

    assert main(["explain", "builtin:strict"]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == explain_policy("builtin:strict").data


def test_version_is_printed() -> None:
    import subprocess
    import sys

    from loopguard import __version__

    done = subprocess.run([sys.executable, "-m", "loopguard", "--version"], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, f"loopguard {__version__}\n")


def test_check_without_a_policy_checks_the_one_replay_would_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["check"]) == 2
    captured = capsys.readouterr()
    assert (captured.err, captured.out) == (
        f"loopguard check: no policy named, and no loopguard.yml or loopguard.yaml in {tmp_path} (the default; name a policy file, or builtin:default)\n",
        "",
    )
    (tmp_path / "loopguard.yaml").write_text("version: 1\nmode: observe\n")
    (tmp_path / "loopguard.yaml").chmod(0o644)
    assert main(["check"]) == 0
    assert capsys.readouterr().out.splitlines() == [f"loopguard.yaml: ok (revision {load_policy(tmp_path / 'loopguard.yaml').revision})", "1 policy ok"]
    (tmp_path / "loopguard.yml").write_text("version: 1\n")
    (tmp_path / "loopguard.yml").chmod(0o644)
    assert main(["check"]) == 0
    assert capsys.readouterr().out.splitlines() == [f"loopguard.yml: ok (revision {load_policy(tmp_path / 'loopguard.yml').revision})", "1 policy ok"]
