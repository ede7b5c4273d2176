"""Adapters: translate a framework's tool calls into loopguard's and apply the verdicts.

* :mod:`loopguard.adapters.plain`: plain Python (``GuardedTools``, ``@guarded``); no dependencies.
* :mod:`loopguard.adapters.langchain`: ``LoopGuardMiddleware`` for LangChain v1 agents
  (imports ``langchain``; import it from its module so plain users need not install it).
"""

from .plain import CallOutcome, GuardedTools, guarded

__all__ = ["CallOutcome", "GuardedTools", "guarded"]
