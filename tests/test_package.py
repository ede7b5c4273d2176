"""The package's top level: the adapters import from ``loopguard`` too, loaded on first use."""

from __future__ import annotations

import subprocess
import sys

import pytest

import loopguard
from loopguard.adapters.callbacks import AsyncLoopGuardCallbackHandler, LoopGuardCallbackHandler
from loopguard.adapters.langchain import LoopGuardMiddleware
from loopguard.adapters.langgraph import LoopGuard, LoopGuardToolWrapper, loopguard_async_tool_wrapper, loopguard_tool_wrapper
from loopguard.adapters.plain import CallOutcome, GuardedTools, guarded


def test_every_adapter_is_importable_from_the_top_level() -> None:
    from loopguard import LoopGuardMiddleware as middleware

    assert middleware is LoopGuardMiddleware
    assert [loopguard.LoopGuardCallbackHandler, loopguard.AsyncLoopGuardCallbackHandler] == [LoopGuardCallbackHandler, AsyncLoopGuardCallbackHandler]
    assert [loopguard.LoopGuard, loopguard.LoopGuardToolWrapper] == [LoopGuard, LoopGuardToolWrapper]
    assert [loopguard.loopguard_tool_wrapper, loopguard.loopguard_async_tool_wrapper] == [loopguard_tool_wrapper, loopguard_async_tool_wrapper]
    from loopguard.errors import LoopGuardInterrupt

    assert loopguard.LoopGuardInterrupt is LoopGuardInterrupt
    assert [loopguard.CallOutcome, loopguard.GuardedTools, loopguard.guarded] == [CallOutcome, GuardedTools, guarded]
    assert {"LoopGuardMiddleware", "GuardedTools", "Guard"} <= set(dir(loopguard))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="^module 'loopguard' has no attribute 'LoopGuardMiddlewares'$"):
        loopguard.LoopGuardMiddlewares  # noqa: B018


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)


def test_importing_loopguard_does_not_import_langchain() -> None:
    done = _run("import sys, loopguard; print(sorted(name for name in sys.modules if name.startswith(('langchain', 'langgraph'))))")
    assert (done.returncode, done.stdout) == (0, "[]\n")


@pytest.mark.parametrize(
    ("statement", "module"),
    [
        ("from loopguard import LoopGuardMiddleware", "loopguard.adapters.langchain"),
        ("from loopguard.adapters.langchain import LoopGuardMiddleware", "loopguard.adapters.langchain"),
        ("from loopguard.adapters.langgraph import loopguard_tool_wrapper", "loopguard.adapters.langgraph"),
        ("from loopguard.adapters.callbacks import LoopGuardCallbackHandler", "loopguard.adapters.callbacks"),
    ],
)
def test_an_adapter_without_langchain_installed_says_which_extra_to_install(statement: str, module: str) -> None:
    # None in sys.modules makes the import fail as if the package were not installed.
    done = _run(f"import sys; sys.modules['langchain_core'] = None\ntry:\n    {statement}\nexcept ImportError as error:\n    print(error)")
    assert (done.returncode, done.stdout) == (
        0,
        f"{module} needs langchain_core, from loopguard's langchain extra: "
        "pip install -e '.[langchain]' in a loopguard checkout, or pip install 'PATH/TO/loopguard[langchain]'\n",
    )


def test_help_works_without_langchain_installed() -> None:
    # help() and inspect.getmembers walk dir(): it lists only the adapters that can be imported.
    done = _run(
        "import sys; sys.modules['langchain_core'] = None\n"
        "import inspect, pydoc, loopguard\n"
        "names = dir(loopguard)\n"
        "print('LoopGuardMiddleware' in names, 'GuardedTools' in names, 'importlib' in names)\n"
        "pydoc.render_doc(loopguard); inspect.getmembers(loopguard); print('ok')"
    )
    assert (done.returncode, done.stdout) == (0, "False True False\nok\n")
