"""The documentation's examples are executed, so the docs cannot drift from the code.

* Every ```yaml block in ``docs/*.md`` that is a policy (its first key is ``version:`` or
  ``extends:``, or it follows ``<!-- policy -->``) must load with
  :func:`loopguard.policy.load_policy_text` (``base_dir`` = the repository root). A block
  that follows ``<!-- policy-error: LGxxx -->`` must fail with that code.
* Every ```console block whose first line starts with ``$ loopguard`` is run from the
  repository root (as ``python -m loopguard ...``). Its exit code must be 0, or N when the
  block follows ``<!-- exit: N -->``. Every output line the block shows must appear in the
  command's output (stdout or stderr); a line ``...`` elides lines, and ``...`` inside a
  line matches anything (timings).
* Every ```python block that follows ``<!-- run -->`` is executed.
* Every ```json block that follows ``<!-- trace -->`` must parse as a trace without errors.

Markers are HTML comments on the lines right before the opening fence.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from loopguard.policy import CODES, PolicyError, check_policy_text, load_policy_text
from loopguard.policy import schema

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
MY_DOCS = ("index.md", "policy.md", "detectors.md", "decisions.md", "cli.md", "adapters.md")

_FENCE = re.compile(r"^( *)```(\w*)\s*$")
_MARKER = re.compile(r"^<!--\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    file: str
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    markers: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}"


def _blocks(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if match is None:
            index += 1
            continue
        markers: list[str] = []
        back = index - 1
        while back >= 0 and (marker := _MARKER.match(lines[back].strip())) is not None:
            markers.insert(0, marker.group(1))
            back -= 1
        indent = match.group(1)
        end = index + 1
        while end < len(lines) and lines[end].rstrip() != indent + "```":
            end += 1
        body = [line[len(indent) :] if line.startswith(indent) else line.lstrip() for line in lines[index + 1 : end]]
        found.append(Block(path.name, index + 1, match.group(2), "\n".join(body) + "\n", tuple(markers)))
        index = end + 1
    return found


def _all_blocks() -> list[Block]:
    return [block for path in sorted(DOCS.glob("*.md")) for block in _blocks(path)]


def _marker(block: Block, name: str) -> str | None:
    for marker in block.markers:
        if marker == name:
            return ""
        if marker.startswith(name + ":"):
            return marker[len(name) + 1 :].strip()
    return None


def _first_key(text: str) -> str | None:
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        return stripped.split(":", 1)[0]
    return None


def _is_policy(block: Block) -> bool:
    if block.lang not in ("yaml", "yml"):
        return False
    if _marker(block, "policy") is not None or _marker(block, "policy-error") is not None:
        return True
    return _first_key(block.text) in ("version", "extends")


POLICY_BLOCKS = [block for block in _all_blocks() if _is_policy(block)]
CONSOLE_BLOCKS = [block for block in _all_blocks() if block.lang == "console" and block.text.startswith("$ loopguard")]
PYTHON_BLOCKS = [block for block in _all_blocks() if block.lang == "python" and _marker(block, "run") is not None]
TRACE_BLOCKS = [block for block in _all_blocks() if block.lang == "json" and _marker(block, "trace") is not None]


@pytest.fixture(autouse=True)
def _no_profile_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOOPGUARD_PROFILE", raising=False)


def test_my_docs_exist() -> None:
    for name in MY_DOCS:
        assert (DOCS / name).is_file(), name


def test_there_are_examples() -> None:
    assert len(POLICY_BLOCKS) >= 10
    assert len(CONSOLE_BLOCKS) >= 8
    assert PYTHON_BLOCKS
    assert TRACE_BLOCKS


@pytest.mark.parametrize("block", TRACE_BLOCKS, ids=lambda block: block.id)
def test_trace_block(block: Block) -> None:
    from loopguard.traces import parse_trace

    runs = parse_trace(json.loads(block.text), source=block.id)
    assert runs and all(run.error is None for run in runs), [str(run.error) for run in runs]


@pytest.mark.parametrize("block", POLICY_BLOCKS, ids=lambda block: block.id)
def test_policy_block(block: Block) -> None:
    expected = _marker(block, "policy-error")
    profile = _marker(block, "profile") or None
    if expected:
        with pytest.raises(PolicyError) as raised:
            load_policy_text(block.text, block.id, profile=profile, base_dir=ROOT)
        codes = [problem.code for problem in raised.value.problems]
        assert expected in codes, f"{block.id}: expected {expected}, got {codes}"
    else:
        try:
            load_policy_text(block.text, block.id, profile=profile, base_dir=ROOT)
        except PolicyError as error:
            pytest.fail(f"{block.id}: the policy does not load:\n{error}")
        # Nor may an example carry a warning (a regex's \b turned into a backspace, LG903).
        warned = [problem.format() for problem in check_policy_text(block.text, block.id, profile=profile, base_dir=ROOT).warnings]
        assert warned == [], f"{block.id}: the example warns"


def _expected_lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines()[1:] if line.strip()]


def _matches(expected: str, actual: str) -> bool:
    if "..." in expected:
        pattern = ".*".join(re.escape(part) for part in expected.split("..."))
        return re.fullmatch(pattern, actual) is not None
    return expected == actual


def _console_params() -> list[object]:
    """Blocks whose command reads ../shared/data carry the shared_data marker (see conftest)."""
    return [
        pytest.param(block, id=block.id, marks=[pytest.mark.shared_data] if "shared/data" in block.text else [])
        for block in CONSOLE_BLOCKS
    ]


@pytest.mark.parametrize("block", _console_params())
def test_console_block(block: Block) -> None:
    command = block.text.splitlines()[0][2:]
    assert not any(line.startswith("$ ") for line in block.text.splitlines()[1:]), "one command per console block"
    argv = shlex.split(command)
    assert argv[0] == "loopguard"
    env = {key: value for key, value in os.environ.items() if key != "LOOPGUARD_PROFILE"}
    result = subprocess.run([sys.executable, "-m", "loopguard", *argv[1:]], cwd=ROOT, capture_output=True, text=True, env=env, timeout=120)
    want = int(_marker(block, "exit") or 0)
    output = result.stdout.splitlines() + result.stderr.splitlines()
    assert result.returncode == want, f"{block.id}: exit {result.returncode}, expected {want}\n{result.stdout}\n{result.stderr}"
    actual = [line.rstrip() for line in output]
    for line in _expected_lines(block.text):
        if line.strip() == "...":
            continue
        assert any(_matches(line, candidate) for candidate in actual), (
            f"{block.id}: line not in the output of `{command}`:\n  {line}\n--- output:\n" + "\n".join(actual)
        )


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=lambda block: block.id)
def test_python_block(block: Block, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    exec(compile(block.text, block.id, "exec"), namespace)


def test_every_error_code_is_documented() -> None:
    text = (DOCS / "policy.md").read_text(encoding="utf-8")
    for code, name in CODES.items():
        assert f"`{code}`" in text and name in text, code


def test_every_policy_key_is_documented() -> None:
    text = (DOCS / "policy.md").read_text(encoding="utf-8")
    models = [
        schema.Policy, schema.ToolTraits, schema.RepeatDetector, schema.CycleDetector, schema.NoProgressDetector,
        schema.FailureDetector, schema.HandoffDetector, schema.NearDuplicateDetector, schema.Detectors,
        schema.Escalation, schema.Scoring, schema.Thresholds, schema.Budget, schema.Budgets, schema.Rule,
        schema.Pricing, schema.LogSettings,
    ]
    for model in models:
        for field in model.model_fields:
            assert f"`{field}`" in text, f"{model.__name__}.{field} is not documented in docs/policy.md"


def test_detector_defaults_are_documented() -> None:
    text = (DOCS / "detectors.md").read_text(encoding="utf-8")
    for model in (schema.RepeatDetector, schema.CycleDetector, schema.NoProgressDetector, schema.FailureDetector,
                  schema.HandoffDetector, schema.NearDuplicateDetector):
        for name, field in model.model_fields.items():
            if name == "enabled":
                continue
            assert re.search(rf"`{name}`\s*\|\s*`?{re.escape(str(field.default))}`?", text), f"{model.__name__}.{name} default {field.default}"


def test_local_links_resolve() -> None:
    for path in sorted(DOCS.glob("*.md")):
        if path.name not in MY_DOCS:
            continue
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            assert (path.parent / target).exists(), f"{path.name}: broken link {target}"


def test_the_documented_deploy_rule_lets_an_asked_for_deploy_through() -> None:
    """The regex in policy.md's no-deploy-unless-asked rule reaches the matcher as \\b."""
    from loopguard import Guard, ToolCall

    [block] = [block for block in POLICY_BLOCKS if "no-deploy-unless-asked" in block.text]
    guard = Guard.from_policy(load_policy_text(block.text, block.id, base_dir=ROOT))
    verdicts = []
    for message in ("please deploy the app", "what is the deployment status?"):
        session = guard.session()
        session.observe_user_message(message)
        verdicts.append(session.before_call(ToolCall("deploy", {})).verdict.kind.value)
    assert verdicts == ["allow", "cancel"]
