"""PolicyStore: the current compiled revision of one policy file, swapped atomically.

A session reads :attr:`PolicyStore.current` once per decision; :meth:`reload`
builds a new :class:`CompiledPolicy` and swaps it in with one reference assignment.
An edit that does not validate never takes effect: the last good revision keeps
deciding and the error is kept in :attr:`last_error`.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .compile import CompiledPolicy
from .errors import PolicyError


@dataclass(frozen=True)
class StoreStatus:
    """What :meth:`PolicyStore.status` reports.

    Attributes:
        source: the policy file (or ``builtin:NAME``).
        profile: the profile applied.
        revision: the revision now deciding.
        loaded_at: when it was loaded (seconds since the epoch).
        last_error: the last failed reload's error text, or ``None`` once a reload succeeds.
    """

    source: str
    profile: str | None
    revision: str
    loaded_at: float
    last_error: str | None


class PolicyStore:
    """Holds the current revision of a policy.

    Args:
        source: a path or ``builtin:NAME``.
        profile: the profile to apply (``None``: ``$LOOPGUARD_PROFILE`` if set).

    Raises:
        PolicyError: the initial load fails (there is no last good revision to keep).
    """

    def __init__(self, source: str | Path, profile: str | None = None) -> None:
        from .load import load_policy  # local import: load imports compile, which must not import the store

        self._load = load_policy
        self.source = str(source)
        self.profile = profile
        self._lock = threading.Lock()
        self.current: CompiledPolicy = load_policy(self.source, profile=profile)
        self.loaded_at = time.time()
        self.last_error: str | None = None

    @classmethod
    def of(cls, policy: CompiledPolicy) -> "PolicyStore":
        """A store holding an already compiled policy (it cannot reload from a file)."""
        store = cls.__new__(cls)
        store._load = None
        store.source = policy.source
        store.profile = policy.profile
        store._lock = threading.Lock()
        store.current = policy
        store.loaded_at = time.time()
        store.last_error = None
        return store

    def reload(self) -> bool:
        """Load, validate and compile the file again; swap it in if it is valid.

        Returns True when a new revision took effect (False when invalid or unchanged).
        Never raises for an invalid policy: the error is kept in :attr:`last_error`.
        """
        if self._load is None:
            return False
        with self._lock:
            try:
                policy = self._load(self.source, profile=self.profile)
            except (PolicyError, OSError) as error:
                self.last_error = str(error)
                return False
            self.last_error = None
            if policy.revision == self.current.revision:
                return False
            self.current = policy  # one reference assignment: readers see the old or the new, never a mix
            self.loaded_at = time.time()
            return True

    def status(self) -> StoreStatus:
        return StoreStatus(self.source, self.profile, self.current.revision, self.loaded_at, self.last_error)
