"""PolicyStore: the current compiled revision of one policy file, swapped atomically.

A session reads :attr:`PolicyStore.current` once per decision; :meth:`PolicyStore.reload`
builds a new :class:`CompiledPolicy` and swaps it in with one reference assignment, so a
decision is evaluated wholly against one revision. An edit that does not validate never
takes effect: the last good revision keeps deciding, and the error (with file, line and
column) is kept in :attr:`PolicyStore.last_error`, logged on the ``loopguard.policy``
logger and passed to the ``on_change`` callback.

With ``watch=True`` (or :meth:`PolicyStore.start_watching`) a background thread watches
the policy file and every file it ``extends`` (see :mod:`loopguard.policy.watch`) and
reloads after each burst of changes.

Example::

    with PolicyStore("loopguard.yml", watch=True, on_change=print) as store:
        guard = Guard(store)
        ...
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Callable

from .compile import CompiledPolicy
from .errors import PolicyError, Problem

if TYPE_CHECKING:
    from .watch import PolicyWatcher

logger = logging.getLogger("loopguard.policy")

#: Default quiet period (milliseconds) a burst of file events must end with before a reload.
DEFAULT_DEBOUNCE_MS = 50


@dataclass(frozen=True)
class ReloadEvent:
    """What one reload attempt did; passed to the store's ``on_change`` callback.

    Attributes:
        ok: True when the files validated (whether or not the revision changed).
        changed: True when a new revision took effect.
        revision: the revision deciding after the attempt (the old one when ``ok`` is False).
        previous_revision: the revision deciding before the attempt.
        error: the error text (every problem, ``file:line:col: code: message``) when not ``ok``.
        problems: the problems of a failed attempt (empty when ``ok``).
        at: when the attempt finished (seconds since the epoch).
    """

    ok: bool
    changed: bool
    revision: str
    previous_revision: str
    error: str | None = None
    problems: tuple[Problem, ...] = ()
    at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class StoreStatus:
    """What :meth:`PolicyStore.status` reports.

    Attributes:
        source: the policy file (or ``builtin:NAME``).
        profile: the profile applied (the one named, else ``$LOOPGUARD_PROFILE`` at the last
            load), or ``None``.
        revision: the revision now deciding.
        loaded_at: when that revision took effect (seconds since the epoch).
        last_error: the last failed reload's error text (with positions), or ``None`` once a
            later reload validates.
        last_error_at: when that failure happened (seconds since the epoch), or ``None``.
        problems: the problems of the last failed reload (empty when ``last_error`` is ``None``).
        watching: True while a background watcher is running.
        files: the files watched: the policy file and every file it extends, most derived first.
        reloads: reload attempts so far (manual and from the watcher).
        failures: reload attempts that did not validate.
    """

    source: str
    profile: str | None
    revision: str
    loaded_at: float
    last_error: str | None
    last_error_at: float | None = None
    problems: tuple[Problem, ...] = ()
    watching: bool = False
    files: tuple[str, ...] = ()
    reloads: int = 0
    failures: int = 0


ChangeCallback = Callable[[ReloadEvent], object]
"""``on_change(event)``: called after every reload attempt that changed the revision, failed,
or validated again after a failure (a save that changes nothing is not reported). Runs on the thread that reloaded (the watcher thread when watching); exceptions it
raises are logged and swallowed so a faulty callback cannot stop the watcher."""


class PolicyStore:
    """Holds the current revision of a policy and, optionally, reloads it when its files change.

    Args:
        source: a path or ``builtin:NAME``.
        profile: the profile to apply (``None``: ``$LOOPGUARD_PROFILE`` if set, read at every load).
        watch: start watching the policy file and the files it extends now.
        on_change: called with a :class:`ReloadEvent` after each reload that changed the
            revision or failed (see :data:`ChangeCallback`).
        debounce_ms: quiet period, in milliseconds, that ends a burst of file events before a
            reload; editors that save with several writes, or truncate then write, produce a
            burst, and only its end is loaded.
        force_polling: poll the files instead of using OS notifications (``None``: watchfiles
            decides; set True on file systems without notifications, e.g. some network mounts).

    Raises:
        PolicyError: the initial load fails (there is no last good revision to keep).
            ``PolicyIOError`` (a subclass) when the file cannot be read.

    The store is safe to share between threads: :attr:`current` is one reference read
    atomically; reloads are serialised by a lock.
    """

    def __init__(
        self,
        source: str | Path,
        profile: str | None = None,
        watch: bool = False,
        on_change: ChangeCallback | None = None,
        debounce_ms: int = DEFAULT_DEBOUNCE_MS,
        force_polling: bool | None = None,
    ) -> None:
        from .load import load_policy  # local import: load imports compile, which must not import the store

        self._load: Callable[..., CompiledPolicy] | None = load_policy
        self.source = str(source)
        self.profile = profile
        self.on_change = on_change
        self.debounce_ms = int(debounce_ms)
        self.force_polling = force_polling
        self._lock = threading.Lock()
        self._watcher: PolicyWatcher | None = None
        self.current: CompiledPolicy = load_policy(self.source, profile=profile)
        self.loaded_at = time.time()
        self.last_error: str | None = None
        self.last_error_at: float | None = None
        self.problems: tuple[Problem, ...] = ()
        self.reloads = 0
        self.failures = 0
        if watch:
            self.start_watching()

    @classmethod
    def of(cls, policy: CompiledPolicy) -> "PolicyStore":
        """A store holding an already compiled policy (it cannot reload or watch a file)."""
        store = cls.__new__(cls)
        store._load = None
        store.source = policy.source
        store.profile = policy.profile
        store.on_change = None
        store.debounce_ms = DEFAULT_DEBOUNCE_MS
        store.force_polling = None
        store._lock = threading.Lock()
        store._watcher = None
        store.current = policy
        store.loaded_at = time.time()
        store.last_error = None
        store.last_error_at = None
        store.problems = ()
        store.reloads = 0
        store.failures = 0
        return store

    # -- reloading --------------------------------------------------------------------

    def reload(self) -> bool:
        """Load, validate and compile the file (and what it extends) again; swap it in if valid.

        Returns:
            True when a new revision took effect; False when the files do not validate or
            the revision is unchanged (or the store was built with :meth:`of`).

        Never raises for an invalid or unreadable policy: the error is kept in
        :attr:`last_error`, logged, and passed to ``on_change``.
        """
        return self._reload().changed

    def _reload(self) -> ReloadEvent:
        previous = self.current.revision
        if self._load is None:
            return ReloadEvent(True, False, previous, previous)
        with self._lock:
            self.reloads += 1
            try:
                policy = self._load(self.source, profile=self.profile)
            except PolicyError as error:
                event = ReloadEvent(False, False, previous, previous, str(error), tuple(error.problems))
            except OSError as error:  # load_policy wraps I/O errors; this is belt and braces
                event = ReloadEvent(False, False, previous, previous, f"{self.source}: cannot read policy: {error}")
            else:
                changed = policy.revision != previous
                if changed:
                    self.current = policy  # one reference assignment: readers see the old or the new, never a mix
                    self.loaded_at = time.time()
                event = ReloadEvent(True, changed, policy.revision, previous)
            recovered = event.ok and self.last_error is not None
            if event.ok:
                self.last_error = None
                self.last_error_at = None
                self.problems = ()
            else:
                self.failures += 1
                self.last_error = event.error
                self.last_error_at = event.at
                self.problems = event.problems
        self._report(event, recovered)
        return event

    def _report(self, event: ReloadEvent, recovered: bool) -> None:
        if event.changed:
            logger.info("policy %s: revision %s took effect (was %s)", self.source, event.revision, event.previous_revision)
        elif recovered:
            logger.info("policy %s: valid again; revision %s keeps deciding", self.source, event.revision)
        elif not event.ok:
            logger.error("policy %s: reload failed; revision %s keeps deciding\n%s", self.source, event.revision, event.error)
        else:
            return  # a save that did not change the effective policy is not news
        callback = self.on_change
        if callback is not None:
            try:
                callback(event)
            except Exception:  # a faulty callback must not stop the watcher or the caller's reload
                logger.exception("policy %s: on_change callback failed", self.source)

    # -- watching ---------------------------------------------------------------------

    @property
    def watching(self) -> bool:
        """True while the background watcher runs."""
        watcher = self._watcher
        return watcher is not None and watcher.alive

    def start_watching(self) -> None:
        """Watch the policy file and every file it extends; reload after each burst of changes.

        Idempotent. The watcher is a daemon thread using watchfiles on the files' directories
        (not their inodes, so editors that save by writing a new file and renaming it over the
        old one are seen). Returns once the watcher is running.

        Raises:
            RuntimeError: the store was built with :meth:`of` and has no file to watch.
        """
        if self._load is None:
            raise RuntimeError("this policy store holds a compiled policy and has no file to watch")
        with self._lock:
            if self._watcher is not None and self._watcher.alive:
                return
            from .watch import PolicyWatcher

            self._watcher = PolicyWatcher(self, debounce_ms=self.debounce_ms, force_polling=self.force_polling)
        self._watcher.start()

    def stop(self, timeout: float | None = 5.0) -> None:
        """Stop watching (the current revision keeps deciding). Idempotent.

        Args:
            timeout: seconds to wait for the watcher thread to end (``None``: no limit).
        """
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.stop(timeout)

    def close(self) -> None:
        """Release the store's resources (stops the watcher)."""
        self.stop()

    def __enter__(self) -> "PolicyStore":
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # -- reporting --------------------------------------------------------------------

    def files(self) -> tuple[str, ...]:
        """The policy file and the files it extends, most derived first (absolute paths)."""
        watcher = self._watcher
        if watcher is not None:
            return watcher.files
        if self._load is None:
            return ()
        from .watch import policy_files

        return tuple(str(path) for path in policy_files(self.source))

    def status(self) -> StoreStatus:
        """Revision, load time, the last reload error and the watcher's state."""
        return StoreStatus(
            source=self.source,
            profile=self.current.profile,  # the one applied: $LOOPGUARD_PROFILE when none was named
            revision=self.current.revision,
            loaded_at=self.loaded_at,
            last_error=self.last_error,
            last_error_at=self.last_error_at,
            problems=self.problems,
            watching=self.watching,
            files=self.files(),
            reloads=self.reloads,
            failures=self.failures,
        )
