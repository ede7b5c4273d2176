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

import logging

from .calls import Handoff, ModelUsage, ToolCall, ToolResult
from .decisions import Decision, GuardAction, Signal, Verdict, VerdictKind
from .guard import Guard
from .policy import CompiledPolicy, PolicyError, Problem, load_policy, load_policy_text
from .policy.store import PolicyStore
from .session import Session

__version__ = "0.1.0"

# A library's loggers stay silent until the application configures logging.
logging.getLogger("loopguard").addHandler(logging.NullHandler())

__all__ = [
    "CompiledPolicy",
    "Decision",
    "Guard",
    "GuardAction",
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
