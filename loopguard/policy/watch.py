"""Watch a policy file and the files it extends; reload the store when their content changes.

How editors save, and what the watcher does about it:

* **Rename-save** (vim, JetBrains, ``sed -i``, Kubernetes ConfigMap symlink swaps): a new
  file replaces the old one. The watcher watches each file's *directory* (not the file's
  inode), so the new file is seen under the old name.
* **Truncate then write**, or **several writes in a row**: a burst of events. The watcher
  waits for ``debounce_ms`` of quiet before it reads the files, and a file that is empty
  is given a further settle period before it is judged (an empty policy never validates,
  so this only delays reporting a genuinely emptied file).
* **A half-written file**: the content is hashed before and after the load; when it
  changed during the load, the load is repeated. A file that does not validate never takes
  effect (the store keeps the last good revision).

Events are a hint, not the truth: after any event (and every ``poll_ms`` without one) the
watcher compares the files' content hashes with those last loaded, and reloads only when
they differ. That also catches changes missed by the OS (file systems without
notifications, an edit made while the watcher was starting).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from .store import PolicyStore

logger = logging.getLogger("loopguard.policy")

BUILTIN_PREFIX = "builtin:"
#: Longest ``extends`` chain followed when listing files (the loader rejects cycles itself).
_MAX_CHAIN = 32

Fingerprint = tuple[tuple[str, str | None], ...]
"""Per watched file: (absolute path, sha256 of its bytes or ``None`` when unreadable)."""


def policy_files(source: str | Path) -> list[Path]:
    """The policy file of ``source`` and every file it ``extends``, most derived first.

    Paths are absolute but not symlink-resolved, so the directory watched is the one the
    user named (a ConfigMap's symlink swap happens there). The chain stops quietly at a
    file that cannot be read or parsed, or at a cycle: listing files must work while a
    file is half-edited; the loader reports such problems.

    Raises:
        loopguard.policy.PolicyIOError: ``source`` is ``builtin:NAME`` naming no shipped policy.
    """
    from .load import resolve_source

    files: list[Path] = []
    seen: set[Path] = set()
    path: Path | None = Path(os.path.abspath(resolve_source(source)))
    while path is not None and len(files) < _MAX_CHAIN:
        real = path.resolve()
        if real in seen:
            break
        seen.add(real)
        files.append(path)
        path = _extends_of(path)
    return files


#: Larger files are not policies; reading them (or a device such as /dev/zero) would never end.
_MAX_POLICY_BYTES = 1 << 20


def _readable(path: Path) -> bool:
    try:
        return path.is_file() and path.stat().st_size <= _MAX_POLICY_BYTES
    except OSError:
        return False


def _extends_of(path: Path) -> Path | None:
    if not _readable(path):
        return None
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return None
    target = data.get("extends") if isinstance(data, dict) else None
    if not isinstance(target, str) or not target:
        return None
    if target.startswith(BUILTIN_PREFIX):
        from .errors import PolicyError
        from .load import resolve_source

        try:
            return Path(os.path.abspath(resolve_source(target)))
        except PolicyError:
            return None
    candidate = Path(target)
    return Path(os.path.abspath(candidate if candidate.is_absolute() else path.parent / candidate))


def fingerprint(files: tuple[str, ...]) -> Fingerprint:
    """Content hash of each file (``None`` for a file that cannot be read)."""
    result: list[tuple[str, str | None]] = []
    for name in files:
        digest: str | None = None
        if _readable(Path(name)):
            try:
                digest = hashlib.sha256(Path(name).read_bytes()).hexdigest()
            except OSError:
                digest = None
        result.append((name, digest))
    return tuple(result)


class PolicyWatcher:
    """The background thread behind :meth:`PolicyStore.start_watching`.

    Args:
        store: the store to reload.
        debounce_ms: quiet period (milliseconds) that ends a burst of events.
        poll_ms: how often (milliseconds) content is compared without any event.
        force_polling: passed to watchfiles (``None``: it decides).
    """

    def __init__(self, store: "PolicyStore", debounce_ms: int = 50, poll_ms: int = 500, force_polling: bool | None = None) -> None:
        self.store = store
        self.debounce_ms = max(1, int(debounce_ms))
        self.poll_ms = max(self.debounce_ms, int(poll_ms))
        self.force_polling = force_polling
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.files: tuple[str, ...] = tuple(str(path) for path in policy_files(store.source))
        self._names = self._names_by_directory(self.files)
        # The content the current revision was loaded from is unknown (the store loaded it
        # before we existed), so the first check always reloads: cheap, and a no-op when the
        # files are unchanged (same revision).
        self._loaded: Fingerprint | None = None

    @staticmethod
    def _names_by_directory(files: tuple[str, ...]) -> dict[str, frozenset[str]]:
        names: dict[str, set[str]] = {}
        for name in files:
            names.setdefault(os.path.dirname(name), set()).add(os.path.basename(name))
        return {directory: frozenset(found) for directory, found in names.items()}

    @property
    def alive(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive() and not self._stop.is_set()

    def start(self) -> None:
        """Start the thread (daemon: it never keeps the interpreter alive)."""
        self._thread = threading.Thread(target=self._run, name=f"loopguard-watch:{os.path.basename(self.files[0])}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = 5.0) -> None:
        """Ask the thread to end and wait up to ``timeout`` seconds for it."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    # -- the thread -------------------------------------------------------------------

    def _filter(self, change: Any, path: str) -> bool:
        """Keep events on a watched file's name, or on a ``..*`` entry (Kubernetes swaps a
        ``..data`` symlink); editors' temp and backup files are noise."""
        directory, name = os.path.split(path)
        names = self._names.get(directory)
        return names is not None and (name in names or name.startswith(".."))

    def _run(self) -> None:
        import watchfiles

        self._check()
        while not self._stop.is_set():
            directories = sorted(self._names)
            existing = [directory for directory in directories if os.path.isdir(directory)]
            try:
                if not existing:
                    raise FileNotFoundError(f"no watched directory exists: {', '.join(directories)}")
                for _changes in watchfiles.watch(
                    *existing,
                    watch_filter=self._filter,
                    debounce=max(10 * self.debounce_ms, 1000),  # longest a burst is grouped
                    step=self.debounce_ms,  # the quiet period that ends a burst
                    stop_event=self._stop,
                    rust_timeout=self.poll_ms,
                    yield_on_timeout=True,  # an empty batch every poll_ms: compare content anyway
                    raise_interrupt=False,
                    recursive=False,
                    force_polling=self.force_polling,
                    ignore_permission_denied=True,
                ):
                    if self._stop.is_set():
                        return
                    self._check()
                    if sorted(self._names) != directories:
                        break  # an extends edit added or removed a directory: watch the new set
            except Exception:  # the watcher must outlive odd file systems; fall back to polling
                logger.exception("policy %s: file watcher failed; polling every %d ms", self.store.source, self.poll_ms)
                if self._stop.wait(self.poll_ms / 1000):
                    return
                self._check()

    def _check(self) -> None:
        """Reload when the watched files' content differs from what was last loaded."""
        try:
            current = fingerprint(self.files)
            if current == self._loaded:
                return
            if any(digest == _EMPTY for _, digest in current):
                # Truncate-then-write: give the writer a moment before judging an empty file.
                settle = max(4 * self.debounce_ms, 200) / 1000
                if self._stop.wait(settle):
                    return
                current = fingerprint(self.files)
            for _attempt in range(5):
                self.store._reload()
                after = fingerprint(self.files)
                if after == current:
                    break
                current = after  # written while loading: what was loaded may be half a file
            self._loaded = current
            self._refresh_files()
        except Exception:  # never let one bad check end the watcher
            logger.exception("policy %s: reload check failed", self.store.source)

    def _refresh_files(self) -> None:
        """Follow ``extends`` again: an edit may have added, changed or removed a base file."""
        try:
            found = tuple(str(path) for path in policy_files(self.store.source))
        except Exception:
            return
        if found != self.files:
            # Keep watching files that dropped out while the policy is invalid: the next valid
            # edit may well restore them.
            if self.store.last_error is not None:
                found = found + tuple(name for name in self.files if name not in found)
            self.files = found
            self._names = self._names_by_directory(found)
            self._loaded = fingerprint(found) if self._loaded is not None else None


_EMPTY = hashlib.sha256(b"").hexdigest()
