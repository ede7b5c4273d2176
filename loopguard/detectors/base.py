"""What every detector sees: one record per tool call and a small shared run memory.

The session computes a call's signature and reads its output once; detectors only
read these records and keep their own bounded state, so a step costs the same at
step 10 and at step 100,000.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ..observations import Observation
from ..signature import Signature

Key = TypeVar("Key")
Value = TypeVar("Value")


class BoundedMap(OrderedDict, Generic[Key, Value]):  # type: ignore[type-arg]
    """A dict that forgets its least recently written entries beyond ``capacity``."""

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.capacity = capacity

    def put(self, key: Key, value: Value) -> None:
        if key in self:
            self.move_to_end(key)
        self[key] = value
        if len(self) > self.capacity:
            self.popitem(last=False)


@dataclass(slots=True)
class CallRecord:
    """One tool call as the detectors see it.

    Attributes:
        index: 0-based index of the call in the run.
        step: the session step of the pending call.
        signature: canonical signature (computed once).
        tool_kind: the tool's ``kind`` trait (``other`` when the policy says nothing).
        observation: the read output, once the result is in.
        handoff_target: the agent this call hands control to, for handoff tools.
        pending_patience: identical pending observations tolerated for this tool.
    """

    index: int
    step: int
    signature: Signature
    tool_kind: str = "other"
    agent: str | None = None
    observation: Observation | None = None
    handoff_target: str | None = None
    pending_patience: int | None = None
    rereads_known_range: bool = False  # set by near_duplicate: the call reads a range already read

    @property
    def tool(self) -> str:
        return self.signature.tool


@dataclass(slots=True)
class SignatureStats:
    """What the run has seen of one signature (bounded: kept in a :class:`BoundedMap`)."""

    results: int = 0
    last: Observation | None = None  # the latest result of this signature
    advancing: bool = False  # the latest result differed from the one before, without error
    last_failure: str | None = None  # failure class of the latest result, if it failed
    identical_pending: int = 0  # consecutive identical pending observations
    polling: bool = False  # the latest result repeated a pending state within the poll patience
    failures: dict[int, int] = field(default_factory=dict)  # error shape -> identical failures
    novel_at_failure: dict[int, int] = field(default_factory=dict)  # error shape -> novel count at last failure


@dataclass(slots=True)
class RunMemory:
    """State shared by the detectors of one session; every part is bounded."""

    signatures: BoundedMap[int, SignatureStats] = field(default_factory=lambda: BoundedMap(512))
    novel_results: int = 0  # results that brought new information (not stale, not failed)
    stale_streak: int = 0  # consecutive results that brought nothing new

    def stats(self, key: int) -> SignatureStats:
        found = self.signatures.get(key)
        if found is None:
            found = SignatureStats()
            self.signatures.put(key, found)
        return found


def describe(record: CallRecord, limit: int = 120) -> str:
    """A short readable form of the call for messages: ``tool(args…)``."""
    text = record.signature.text
    return text if len(text) <= limit else text[: limit - 1] + "…"


Evidence = dict[str, Any]
