"""Good policies: extends chains, profile merging, revisions, provenance, environment, warnings."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest

from loopguard import Guard
from loopguard.policy import (
    PolicyError,
    PolicyFileWarning,
    PolicyIOError,
    default_policy_path,
    explain_policy,
    list_profiles,
    load_policy,
    load_policy_text,
    resolve_source,
)

BASE = """\
version: 1
detectors:
  repeat: {weight: 0.6, threshold: 3, window: 12}
  failure: {attempts: 2}
thresholds: {warn: 0.5, replan: 0.7, pause: 0.85, stop: 0.9}
budgets:
  tool_calls: {limit: 50}
rules:
  - id: shell
    tool: shell
    verdict: block
    message: no shell
  - id: deletes
    tool: "delete_*"
    verdict: cancel
    reason: ask the user first
profiles:
  prod:
    thresholds: {stop: 0.88}
"""

CHILD = """\
version: 1
extends: base.yml
detectors:
  repeat: {threshold: 4}
rules:
  - id: deletes
    tool: "delete_*"
    verdict: block
    message: deletes are off
  - id: tokyo
    tool: get_weather
    match: "arguments.city == 'Tokyo'"
    verdict: answer
    result: {forecast: sunny}
profiles:
  prod:
    mode: observe
    detectors: {repeat: {window: 20}}
    rules:
      - id: shell
        tool: shell
        verdict: allow
      - id: cost
        when: "run.cost_usd >= 0.05"
        verdict: cancel
        reason: cost ceiling
  dev:
    budgets: {tool_calls: {scope: turn}}
"""


@pytest.fixture(autouse=True)
def _no_env_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOOPGUARD_PROFILE", raising=False)


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(0o644)
    return path


@pytest.fixture
def child(tmp_path: Path) -> Path:
    write(tmp_path, "base.yml", BASE)
    return write(tmp_path, "child.yml", CHILD)


def test_builtin_policies_load() -> None:
    for name in ("default", "strict", "observe"):
        policy = load_policy(f"builtin:{name}")
        assert policy.source == f"builtin:{name}"
        assert len(policy.revision) == 12
    assert load_policy().source == "builtin:default"
    assert load_policy("builtin:observe").mode == "observe"
    strict = load_policy("builtin:strict")
    assert strict.detectors.repeat.threshold == 2
    assert strict.budgets.tool_calls is not None and strict.budgets.tool_calls.limit == 100
    assert strict.detectors.handoff.weight == load_policy().detectors.handoff.weight  # inherited


def test_resolve_source() -> None:
    assert resolve_source("builtin:default").name == "default.yml"
    assert resolve_source("some/file.yml") == Path("some/file.yml")


def test_extends_merges_deeply_and_rules_by_id(child: Path) -> None:
    policy = load_policy(child)
    repeat = policy.detectors.repeat
    assert (repeat.threshold, repeat.weight, repeat.window) == (4, 0.6, 12)
    assert [(rule.id, rule.verdict) for rule in policy.rules] == [("shell", "block"), ("deletes", "block"), ("tokyo", "answer")]
    assert policy.budgets.tool_calls is not None and policy.budgets.tool_calls.limit == 50
    assert policy.profile is None and policy.mode == "enforce"


def test_profile_overlays_merged_policy(child: Path) -> None:
    policy = load_policy(child, profile="prod")
    assert policy.profile == "prod" and policy.mode == "observe"
    assert policy.thresholds.stop == 0.88  # the base's prod profile merges with the child's
    assert (policy.detectors.repeat.threshold, policy.detectors.repeat.window) == (4, 20)
    assert [(rule.id, rule.verdict) for rule in policy.rules] == [
        ("shell", "allow"),  # replaced in place
        ("deletes", "block"),
        ("tokyo", "answer"),
        ("cost", "cancel"),  # appended
    ]
    dev = load_policy(child, profile="dev")
    assert dev.budgets.tool_calls is not None
    assert (dev.budgets.tool_calls.limit, dev.budgets.tool_calls.scope) == (50, "turn")


def test_profile_from_environment(child: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPGUARD_PROFILE", "prod")
    assert load_policy(child).profile == "prod"
    assert load_policy(child, profile="dev").profile == "dev"


def test_list_profiles(child: Path) -> None:
    assert list_profiles(child) == ["prod", "dev"]
    assert list_profiles("builtin:default") == []


def test_extends_chain_of_three(tmp_path: Path) -> None:
    write(tmp_path, "a/root.yml", "version: 1\nextends: builtin:strict\nthresholds: {stop: 0.95}\n")
    write(tmp_path, "b/middle.yml", "version: 1\nextends: ../a/root.yml\nmode: observe\n")
    leaf = write(tmp_path, "leaf.yml", "version: 1\nextends: b/middle.yml\ndetectors: {cycle: {repeats: 3}}\n")
    policy = load_policy(leaf)
    assert policy.thresholds.stop == 0.95 and policy.thresholds.warn == 0.40  # root, then strict
    assert policy.mode == "observe" and policy.detectors.cycle.repeats == 3
    assert policy.detectors.repeat.threshold == 2


def test_revision_is_stable_and_follows_content(tmp_path: Path) -> None:
    path = write(tmp_path, "p.yml", "version: 1\nmode: enforce\n")
    first = load_policy(path).revision
    assert load_policy(path).revision == first
    write(tmp_path, "p.yml", "# a comment does not change the policy\nversion: 1\nmode: enforce\n")
    assert load_policy(path).revision == first
    write(tmp_path, "p.yml", "version: 1\nmode: observe\n")
    assert load_policy(path).revision != first
    assert load_policy_text("version: 1\nmode: enforce\n").revision == first


def test_profile_revision_differs(child: Path) -> None:
    assert load_policy(child, profile="prod").revision != load_policy(child).revision


def test_explain_gives_provenance(child: Path, tmp_path: Path) -> None:
    explanation = explain_policy(child, profile="prod")
    base, leaf = str(tmp_path / "base.yml"), str(child)
    assert str(explanation.origin_of(("detectors", "repeat", "weight"))) == f"{base}:3"
    assert str(explanation.origin_of(("detectors", "repeat", "threshold"))) == f"{leaf}:4"
    assert str(explanation.origin_of(("detectors", "repeat", "window"))) == f"{leaf}:18"
    assert str(explanation.origin_of(("rules", 0, "verdict"))) == f"{leaf}:22"
    assert str(explanation.origin_of(("rules", 3, "id"))) == f"{leaf}:23"
    assert explanation.origin_of(("detectors", "cycle", "weight")) is None  # a default
    assert explanation.data["mode"] == "observe"


def test_load_policy_text_extends_from_base_dir(tmp_path: Path) -> None:
    write(tmp_path, "base.yml", BASE)
    policy = load_policy_text("version: 1\nextends: base.yml\n", "inline", base_dir=tmp_path)
    assert [rule.id for rule in policy.rules] == ["shell", "deletes"]
    with pytest.raises(PolicyError):
        load_policy_text("version: 1\nextends: base.yml\n", "inline", base_dir=tmp_path / "elsewhere")


def test_writable_policy_warns(tmp_path: Path) -> None:
    path = write(tmp_path, "p.yml", "version: 1\n")
    path.chmod(0o666)
    with pytest.warns(PolicyFileWarning, match="LG901: warning: policy file is writable by group or others"):
        load_policy(path)
    path.chmod(0o644)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_policy(path)


def test_default_policy_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert default_policy_path() == "builtin:default"
    with pytest.raises(PolicyIOError) as missing:
        Guard.from_file()
    assert str(missing.value) == "1 problem in policy:\n  loopguard.yml:1:1: LG100: cannot read policy file: No such file or directory"
    write(tmp_path, "loopguard.yaml", "version: 1\nmode: observe\n")
    assert default_policy_path() == "loopguard.yaml"  # the other spelling of the extension
    assert Guard.from_file().policy.source == "loopguard.yaml"
    write(tmp_path, "loopguard.yml", "version: 1\n")
    assert default_policy_path() == "loopguard.yml"  # first when both are there
    assert os.path.exists(default_policy_path())


def test_yaml_merge_keys_are_supported(tmp_path: Path) -> None:
    text = "version: 1\nx: &w {weight: 0.7}\n"
    with pytest.raises(PolicyError) as caught:  # anchors are fine; unknown keys are not
        load_policy_text(text)
    assert caught.value.problems[0].message == "unknown key 'x' at the top level"
    text = "version: 1\ndetectors:\n  repeat: &w {weight: 0.7}\n  cycle: {<<: *w, repeats: 3}\n"
    policy = load_policy_text(text)
    assert policy.detectors.cycle.weight == 0.7 and policy.detectors.cycle.repeats == 3


def test_every_shipped_policy_is_packaged_for_wheels() -> None:
    """A wheel carries policies/ as loopguard._builtin_policies; its globs must cover every file."""
    import fnmatch
    import tomllib

    root = Path(__file__).resolve().parents[1]
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert config["package-dir"]["loopguard._builtin_policies"] == "policies"
    globs = config["package-data"]["loopguard._builtin_policies"]
    shipped = [path.relative_to(root / "policies").as_posix() for path in (root / "policies").rglob("*.yml")]
    assert shipped and [name for name in shipped if not any(fnmatch.fnmatch(name, glob) for glob in globs)] == []
