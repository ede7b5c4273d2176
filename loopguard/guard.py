"""Guard: the one object a user holds.

A guard owns a policy store (the current compiled revision) and hands out one
:class:`~loopguard.session.Session` per run. Sessions never share mutable state, so
many runs may be guarded at once from many threads or tasks.

Example::

    guard = Guard.from_file("loopguard.yml", profile="prod")
    session = guard.session(run_id="run-1")
    decision = session.before_call(ToolCall("search", {"q": "x"}))
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any, Callable

from .policy.compile import CompiledPolicy
from .policy.load import DEFAULT_POLICY_FILE, default_policy_file, default_policy_path
from .policy.store import PolicyStore, ReloadEvent, StoreStatus
from .session import Session


class Guard:
    """Decides tool calls for many runs against one policy.

    Args:
        store: the policy store whose ``current`` revision every decision reads.
        history: decisions kept per session (``None``: all).
    """

    def __init__(self, store: PolicyStore, history: int | None = 256) -> None:
        self.store = store
        self.history = history
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_file(
        cls,
        path: str | Path | None = None,
        profile: str | None = None,
        watch: bool = False,
        on_reload: Callable[[ReloadEvent], object] | None = None,
        **options: Any,
    ) -> "Guard":
        """A guard for a policy file (or ``builtin:NAME``).

        Args:
            path: the policy file or ``builtin:NAME`` (``None``: ``./loopguard.yml``, or
                ``./loopguard.yaml`` when only that one exists).
            profile: the profile to apply (``None``: ``$LOOPGUARD_PROFILE`` if set).
            watch: reload in the background when the file (or a file it extends) changes;
                an edit that does not validate never takes effect (see ``docs/operations.md``).
            on_reload: called with a :class:`ReloadEvent` after each reload that changed
                the revision or failed.

        Raises:
            loopguard.policy.PolicyError: the policy does not validate (every problem, with positions).
        """
        if path is None:
            path = default_policy_file() or DEFAULT_POLICY_FILE  # (with neither, the error names loopguard.yml)
        return cls(PolicyStore(path, profile=profile, watch=watch, on_change=on_reload), **options)

    @classmethod
    def from_policy(cls, policy: CompiledPolicy | str | Path = "builtin:default", profile: str | None = None, **options: Any) -> "Guard":
        """A guard for a compiled policy, a path or ``builtin:NAME`` (default: the embedded default)."""
        if isinstance(policy, CompiledPolicy):
            return cls(PolicyStore.of(policy), **options)
        return cls.from_file(policy, profile=profile, **options)

    def close(self) -> None:
        """Stop watching the policy file (if watching) and flush nothing else; idempotent."""
        self.store.close()

    def __enter__(self) -> "Guard":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @classmethod
    def resolve(cls, policy: "Guard | CompiledPolicy | str | Path | None" = None, profile: str | None = None) -> "Guard":
        """A guard for whatever an adapter was given: a ready guard (returned as is), a
        compiled policy, a path or ``builtin:NAME``; ``None`` means ``./loopguard.yml`` when
        it exists, else ``builtin:default``. ``profile`` applies to paths only.

        Raises:
            loopguard.policy.PolicyError: the policy does not validate.
        """
        if isinstance(policy, Guard):
            return policy
        return cls.from_policy(default_policy_path() if policy is None else policy, profile=profile)

    @property
    def policy(self) -> CompiledPolicy:
        """The revision now deciding."""
        return self.store.current

    def status(self) -> StoreStatus:
        """Revision, load time and the last reload error of the policy."""
        return self.store.status()

    def session(self, run_id: str | None = None, thread_id: str | None = None, end_on_stop: bool = True) -> Session:
        """A new session for one run. ``run_id`` defaults to a random UUID; ``end_on_stop``
        (see :class:`Session`) blocks every call after a stop."""
        return Session(self.store, run_id=run_id or str(uuid.uuid4()), thread_id=thread_id, history=self.history, end_on_stop=end_on_stop)

    def session_for(self, key: str, thread_id: str | None = None) -> Session:
        """The session registered under ``key`` (created on first use); for adapters keyed by run id."""
        with self._lock:
            session = self._sessions.get(key)
            if session is None:
                session = self.session(run_id=key, thread_id=thread_id)
                self._sessions[key] = session
            return session

    def end_session(self, key: str) -> Session | None:
        """Forget the session registered under ``key`` and return it."""
        with self._lock:
            return self._sessions.pop(key, None)
