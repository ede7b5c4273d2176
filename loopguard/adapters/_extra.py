"""The error for an adapter imported without the ``langchain`` extra installed."""

from __future__ import annotations

#: How to install the extra: from a checkout or a path (the name "loopguard" on PyPI is another project).
INSTALL_EXTRA = "pip install -e '.[langchain]' in a loopguard checkout, or pip install 'PATH/TO/loopguard[langchain]'"


def missing_extra(what: str, error: ModuleNotFoundError) -> ImportError:
    """An ImportError for ``what`` (``loopguard.LoopGuardMiddleware``, a module's name) that names
    the missing package (from ``error``) and how to install the extra."""
    missing = (error.name or "langchain").split(".")[0]
    return ImportError(f"{what} needs {missing}, from loopguard's langchain extra: {INSTALL_EXTRA}", name=missing)
