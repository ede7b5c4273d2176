"""PolicyStore reload while running: real files, real watcher threads."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

from loopguard.calls import ToolCall, ToolResult
from loopguard.policy import PolicyError
from loopguard.policy.store import PolicyStore, ReloadEvent
from loopguard.policy.watch import policy_files
from loopguard.session import Session

DEADLINE = 3.0  # generous for slow CI; the in-effect assertions below are tighter


def policy_text(warn: float = 0.5, extends: str | None = None, extra: str = "") -> str:
    head = f"extends: {extends}\n" if extends else ""
    return f"version: 1\n{head}thresholds: {{warn: {warn}, replan: 0.7, pause: 0.85, stop: 0.9}}\n{extra}"


def write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    os.chmod(path, 0o644)


def wait_for(predicate: Callable[[], bool], timeout: float = DEADLINE) -> float:
    """Seconds until ``predicate`` holds; fails the test after ``timeout``."""
    started = time.perf_counter()
    while not predicate():
        if time.perf_counter() - started > timeout:
            pytest.fail(f"condition not met within {timeout}s")
        time.sleep(0.002)
    return time.perf_counter() - started


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    path = tmp_path / "loopguard.yml"
    write(path, policy_text(0.5))
    return path


@pytest.fixture
def events() -> list[ReloadEvent]:
    return []


@pytest.fixture
def store(policy_file: Path, events: list[ReloadEvent]):
    with PolicyStore(policy_file, watch=True, on_change=events.append, debounce_ms=30) as store:
        assert store.watching
        yield store
    assert not store.watching


def test_an_edit_takes_effect_well_under_a_second(store: PolicyStore, policy_file: Path, events: list[ReloadEvent]) -> None:
    before = store.current.revision
    time.sleep(0.1)  # let the watcher settle; an edit during start-up is covered by polling anyway
    write(policy_file, policy_text(0.4))
    took = wait_for(lambda: store.current.revision != before)
    assert took < 1.0
    assert store.current.thresholds.warn == 0.4
    status = store.status()
    assert status.revision == store.current.revision and status.last_error is None
    assert status.loaded_at <= time.time()
    assert events and events[-1].changed and events[-1].previous_revision == before


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param("version: 1\nthresholds: {warn: 0.4, replan: 0.7\n", id="yaml-syntax"),
        pytest.param(policy_text(0.4, extra="rules:\n  - id: r\n    when: 'run.steps >>> 3'\n    verdict: cancel\n    reason: no\n"), id="bad-expression"),
        pytest.param(policy_text(0.95), id="thresholds-out-of-order"),
        pytest.param("", id="empty-file"),
    ],
)
def test_an_invalid_edit_never_takes_effect(store: PolicyStore, policy_file: Path, events: list[ReloadEvent], bad: str) -> None:
    good = store.current
    session = Session(store)
    write(policy_file, bad)
    wait_for(lambda: any(not event.ok for event in events))  # the callback runs after the error is recorded
    assert store.current is good
    assert session.before_call(ToolCall("search", {"q": "x"})).revision == good.revision
    status = store.status()
    assert status.revision == good.revision
    assert status.problems and status.problems[0].line >= 1 and status.problems[0].column >= 1
    assert str(policy_file.name) in status.last_error  # the error names the file and position
    failed = [event for event in events if not event.ok]
    assert failed and failed[-1].revision == good.revision and failed[-1].problems
    # Fixing the file clears the error and the fix takes effect.
    write(policy_file, policy_text(0.3))
    wait_for(lambda: store.current.thresholds.warn == 0.3)
    assert store.status().last_error is None


def test_rename_save_is_seen(store: PolicyStore, policy_file: Path) -> None:
    time.sleep(0.1)
    temp = policy_file.with_name(".loopguard.yml.tmp")
    write(temp, policy_text(0.35))
    os.replace(temp, policy_file)  # what vim, JetBrains and sed -i do: a new inode under the old name
    wait_for(lambda: store.current.thresholds.warn == 0.35, timeout=1.0)
    # and again: the watcher must follow the new inode, not the replaced one
    write(temp, policy_text(0.45))
    os.replace(temp, policy_file)
    wait_for(lambda: store.current.thresholds.warn == 0.45, timeout=1.0)


def test_truncate_then_write_and_several_writes(store: PolicyStore, policy_file: Path, events: list[ReloadEvent]) -> None:
    time.sleep(0.1)
    text = policy_text(0.25)
    with open(policy_file, "r+", encoding="utf-8") as handle:
        handle.truncate(0)
        handle.flush()
        time.sleep(0.06)  # longer than the debounce: the empty file is seen on its own
        for start in range(0, len(text), 16):  # several writes in a row
            handle.write(text[start : start + 16])
            handle.flush()
            time.sleep(0.005)
    wait_for(lambda: store.current.thresholds.warn == 0.25)
    assert store.status().last_error is None
    # The empty file was given a settle period, so it was never reported as an error.
    assert all(event.ok for event in events)


def test_editing_an_extends_base_reloads_the_child(tmp_path: Path, events: list[ReloadEvent]) -> None:
    base_dir = tmp_path / "shared"
    base_dir.mkdir()
    base = base_dir / "base.yml"
    write(base, "version: 1\nmode: enforce\n")
    child = tmp_path / "loopguard.yml"
    write(child, policy_text(0.5, extends="shared/base.yml"))
    assert [path.name for path in policy_files(child)] == ["loopguard.yml", "base.yml"]
    with PolicyStore(child, watch=True, on_change=events.append, debounce_ms=30) as store:
        assert set(store.status().files) == {str(child), str(base)}
        time.sleep(0.1)
        write(base, "version: 1\nmode: observe\n")
        wait_for(lambda: store.current.mode == "observe", timeout=1.0)
        assert store.current.thresholds.warn == 0.5  # the child's own settings still apply
        # A base that stops validating keeps the last good revision.
        write(base, "version: 1\nmode: sometimes\n")
        wait_for(lambda: store.last_error is not None)
        assert store.current.mode == "observe"
        assert "base.yml" in (store.last_error or "")


def test_a_new_extends_target_is_watched(tmp_path: Path) -> None:
    child = tmp_path / "loopguard.yml"
    write(child, policy_text(0.5))
    other = tmp_path / "other"
    other.mkdir()
    base = other / "base.yml"
    write(base, "version: 1\nmode: enforce\n")
    with PolicyStore(child, watch=True, debounce_ms=30) as store:
        time.sleep(0.1)
        write(child, policy_text(0.5, extends="other/base.yml"))
        wait_for(lambda: str(base) in store.status().files)
        time.sleep(0.1)
        write(base, "version: 1\nmode: observe\n")
        wait_for(lambda: store.current.mode == "observe", timeout=1.5)


def test_sessions_keep_their_state_across_swaps(store: PolicyStore, policy_file: Path) -> None:
    session = Session(store)
    call = ToolCall("search", {"q": "same"})
    for warn in (0.45, 0.4, 0.35):
        decision = session.before_call(call)
        session.after_call(call, ToolResult(output=[]))
        revision = store.current.revision
        write(policy_file, policy_text(warn))
        wait_for(lambda: store.current.revision != revision)
    assert session.run.tool_calls == 3
    assert session.tool_calls == 3
    # The repeat and no-progress detectors kept their windows: the fourth identical empty
    # call is judged as the fourth, not the first.
    decision = session.before_call(call)
    assert decision.revision == store.current.revision
    assert decision.action.value != "continue"
    assert any(signal.detector == "repeat" for signal in decision.signals)


def test_edit_storm_while_deciding(store: PolicyStore, policy_file: Path, events: list[ReloadEvent]) -> None:
    valid: set[str] = {store.current.revision}
    lock = threading.Lock()
    original = store.on_change

    def remember(event: ReloadEvent) -> None:
        if event.changed:
            with lock:
                valid.add(event.revision)
        if original is not None:
            original(event)

    store.on_change = remember
    errors: list[BaseException] = []
    seen: list[set[str]] = [set() for _ in range(4)]
    stop_editing = threading.Event()

    def decide(index: int) -> None:
        try:
            session = Session(store, run_id=f"run-{index}")
            for step in range(12_500):
                call = ToolCall("search", {"q": step % 7})
                seen[index].add(session.before_call(call).revision)
                if step % 5 == 0:
                    seen[index].add(session.after_call(call, ToolResult(output=step)).revision)
        except BaseException as error:  # noqa: BLE001 - collected and asserted below
            errors.append(error)

    def edit() -> None:
        for number in range(100):
            if number % 10 == 3:
                write(policy_file, "version: 1\nthresholds: {warn: 0.9, replan: 0.1}\n")  # invalid
            elif number % 10 == 7:
                write(policy_file, "version: 1\nthresholds: {warn: 0.4")  # half written
            else:
                write(policy_file, policy_text(round(0.3 + (number % 20) * 0.01, 2)))
            time.sleep(0.004)
        write(policy_file, policy_text(0.42))
        stop_editing.set()

    threads = [threading.Thread(target=decide, args=(index,)) for index in range(4)] + [threading.Thread(target=edit)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    assert stop_editing.is_set()
    wait_for(lambda: store.current.thresholds.warn == 0.42)
    with lock:
        valid.add(store.current.revision)
        recorded = set().union(*seen)
        assert recorded <= valid, recorded - valid


def test_manual_reload_and_status(policy_file: Path, events: list[ReloadEvent]) -> None:
    store = PolicyStore(policy_file, on_change=events.append)
    assert not store.watching and store.status().watching is False
    assert store.reload() is False  # unchanged
    write(policy_file, policy_text(0.2))
    assert store.reload() is True
    write(policy_file, "version: 1\nbogus: 1\n")
    assert store.reload() is False
    status = store.status()
    assert status.revision == store.current.revision and status.failures == 1 and status.reloads == 3
    assert "bogus" in (status.last_error or "")
    assert [event.ok for event in events] == [True, False]
    store.close()


def test_initial_load_failure_raises(tmp_path: Path) -> None:
    path = tmp_path / "bad.yml"
    write(path, "version: 1\nthresholds: {warn: 2}\n")
    with pytest.raises(PolicyError):
        PolicyStore(path, watch=True)


def test_compiled_policy_store_cannot_watch(policy_file: Path) -> None:
    store = PolicyStore.of(PolicyStore(policy_file).current)
    assert store.reload() is False
    with pytest.raises(RuntimeError):
        store.start_watching()


def test_a_failing_callback_does_not_stop_the_watcher(policy_file: Path) -> None:
    def explode(event: ReloadEvent) -> None:
        raise ValueError("callback bug")

    with PolicyStore(policy_file, watch=True, on_change=explode, debounce_ms=30) as store:
        time.sleep(0.1)
        write(policy_file, policy_text(0.41))
        wait_for(lambda: store.current.thresholds.warn == 0.41)
        write(policy_file, policy_text(0.43))
        wait_for(lambda: store.current.thresholds.warn == 0.43)
        assert store.watching


def test_status_names_the_profile_applied_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "loopguard.yml"
    write(path, policy_text(0.5, extra="profiles:\n  prod:\n    thresholds: {warn: 0.3}\n"))
    monkeypatch.setenv("LOOPGUARD_PROFILE", "prod")
    store = PolicyStore(path, watch=False)
    assert (store.status().profile, store.current.thresholds.warn) == ("prod", 0.3)
    monkeypatch.delenv("LOOPGUARD_PROFILE")
    assert (PolicyStore(path, watch=False).status().profile) is None
