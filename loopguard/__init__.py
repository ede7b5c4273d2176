"""loopguard: a runtime guard for LLM agents, declared in a YAML policy.

The public API::

    from loopguard import Guard, ToolCall, ToolResult

    guard = Guard.from_file("loopguard.yml")          # or Guard.from_policy() for the default
    session = guard.session(run_id="run-1")
    decision = session.before_call(ToolCall("search", {"q": "flights"}))
    if decision.runs_tool:
        ...run the tool...
        session.after_call(call, ToolResult(output))
"""

import importlib
import importlib.util
import logging
from typing import TYPE_CHECKING, Any

from .calls import Handoff, ModelUsage, ToolCall, ToolResult
from .decisions import Decision, GuardAction, Signal, Verdict, VerdictKind
from .errors import LoopGuardError, LoopGuardInterrupt
from .guard import Guard
from .policy import CompiledPolicy, PolicyError, Problem, load_policy, load_policy_text
from .policy.store import PolicyStore
from .session import Session

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .adapters.callbacks import AsyncLoopGuardCallbackHandler, LoopGuardCallbackHandler
    from .adapters.langchain import LoopGuardMiddleware
    from .adapters.langgraph import LoopGuard, LoopGuardToolWrapper, loopguard_async_tool_wrapper, loopguard_tool_wrapper
    from .adapters.plain import CallOutcome, GuardedTools, guarded

# The adapters, importable from here too; loaded on first use, so that plain users need not
# install LangChain (the ``langchain`` extra) and the CLI starts without it.
_ADAPTERS = {
    "CallOutcome": "plain",
    "GuardedTools": "plain",
    "guarded": "plain",
    "LoopGuardMiddleware": "langchain",
    "LoopGuardCallbackHandler": "callbacks",
    "AsyncLoopGuardCallbackHandler": "callbacks",
    "LoopGuard": "langgraph",
    "LoopGuardToolWrapper": "langgraph",
    "loopguard_tool_wrapper": "langgraph",
    "loopguard_async_tool_wrapper": "langgraph",
}


def __getattr__(name: str) -> Any:
    """``from loopguard import LoopGuardMiddleware`` and the other adapters (see ``_ADAPTERS``).

    Raises:
        ImportError: the adapter needs LangChain and it is not installed.
        AttributeError: ``name`` is not part of loopguard.
    """
    module = _ADAPTERS.get(name)
    if module is None:
        raise AttributeError(f"module 'loopguard' has no attribute {name!r}")
    try:
        imported = importlib.import_module(f".adapters.{module}", __name__)
    except ModuleNotFoundError as error:
        from .adapters._extra import missing_extra

        raise missing_extra(f"loopguard.{name}", error) from error
    return getattr(imported, name)


def __dir__() -> list[str]:
    """The module's names and the adapters that can be imported here: ``help(loopguard)`` and
    ``inspect.getmembers`` walk this list, and must not trip over a missing extra."""
    try:
        installed = all(importlib.util.find_spec(name) is not None for name in ("langchain_core", "langchain", "langgraph"))
    except (ImportError, ValueError):
        installed = False
    available = [name for name, module in _ADAPTERS.items() if module == "plain" or installed]
    return sorted({*globals(), *available} - _HELPERS)


# (Imports of this module itself, not part of loopguard's API.)
_HELPERS = frozenset({"Any", "TYPE_CHECKING", "importlib", "logging"})

# A library's loggers stay silent until the application configures logging.
logging.getLogger("loopguard").addHandler(logging.NullHandler())

__all__ = [
    "CompiledPolicy",
    "Decision",
    "Guard",
    "GuardAction",
    "LoopGuardError",
    "LoopGuardInterrupt",
    "Handoff",
    "ModelUsage",
    "PolicyError",
    "PolicyStore",
    "Problem",
    "Session",
    "Signal",
    "ToolCall",
    "ToolResult",
    "Verdict",
    "VerdictKind",
    "__version__",
    "load_policy",
    "load_policy_text",
]
