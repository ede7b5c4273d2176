"""A LangChain v1 agent guarded by loopguard, runnable offline.

A scripted chat model plays an agent that books a table and keeps retrying the same
failing booking call. The booking tool really runs (it counts its executions) and fails
deterministically with "Error: payment amount does not add up" while the amount is wrong.

What the default policy (builtin:default) does, step by step:

1. book_table(amount=90) runs and fails.
2. book_table(amount=90) runs again and fails with the same error. The failure detector
   now sees the same deterministic failure repeated with nothing new in between: the decision on that
   result is ``replan``.
3. The third identical call is blocked before it runs: the model reads a ``guard_error``
   payload telling it to change its approach. The tool does not execute.
4. The model changes the call (amount=100); it is allowed, runs and succeeds.

Run: ``python examples/langchain_agent.py`` (no network, no API key).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

from loopguard.adapters.langchain import LoopGuardMiddleware
from loopguard.decisions import Decision


class ScriptedChatModel(BaseChatModel):
    """A chat model that replies from a script: ``script(messages) -> AIMessage``.

    The reply depends only on the conversation so far, so one model can serve many runs.
    ``bind_tools`` is accepted and ignored (the script already knows the tools).
    """

    script: Callable[[list[BaseMessage]], AIMessage]

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.script(messages))])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> "ScriptedChatModel":
        return self


executions = {"book_table": 0}


@tool
def book_table(restaurant: str, amount: int) -> str:
    """Book a table and pay the deposit (amount in EUR; the deposit for 4 people is 100)."""
    executions["book_table"] += 1
    if amount != 100:
        return "Error: payment amount does not add up"
    return f"Booked {restaurant} for 4, deposit {amount} EUR paid. Confirmation R-1042."


def script(messages: list[BaseMessage]) -> AIMessage:
    """The stubborn agent: retry amount=90 until something other than the same error comes back."""
    tool_messages = [m for m in messages if isinstance(m, ToolMessage)]
    usage = {"input_tokens": 120 + 40 * len(messages), "output_tokens": 25, "total_tokens": 145 + 40 * len(messages)}
    meta = {"model_name": "scripted-1"}
    if tool_messages and "Confirmation" in str(tool_messages[-1].content):
        return AIMessage("Your table at Chez Loop is booked (confirmation R-1042).", usage_metadata=usage, response_metadata=meta)
    blocked = bool(tool_messages) and "guard_error" in str(tool_messages[-1].content)
    amount = 100 if blocked else 90
    call = {"name": "book_table", "args": {"restaurant": "Chez Loop", "amount": amount}, "id": f"call_{len(tool_messages) + 1}"}
    return AIMessage("", tool_calls=[call], usage_metadata=usage, response_metadata=meta)


def show(key: str, decision: Decision) -> None:
    if decision.phase == "observe":
        return  # model usage: not interesting here
    line = f"  [{decision.phase:<11}] {decision.tool}: action={decision.action.value:<8} verdict={decision.verdict.kind.value}"
    if decision.verdict.rule:
        line += f" rule={decision.verdict.rule}"
    print(line)


def main() -> int:
    guard = LoopGuardMiddleware("builtin:default", on_decision=show)
    agent = create_agent(ScriptedChatModel(script=script), [book_table], middleware=[guard])
    print("loopguard + LangChain create_agent, policy builtin:default")
    print("decisions:")
    result = agent.invoke({"messages": [{"role": "user", "content": "Book Chez Loop for 4 tonight."}]})
    print("conversation:")
    for message in result["messages"]:
        if isinstance(message, ToolMessage):
            print(f"  tool[{message.tool_call_id}] status={message.status}: {str(message.content)[:110]}")
        elif isinstance(message, AIMessage) and message.tool_calls:
            calls = ", ".join(f"{c['name']}({c['args']})" for c in message.tool_calls)
            print(f"  model calls: {calls}")
        else:
            print(f"  {message.type}: {message.text}")
    print(f"book_table executed {executions['book_table']} times: 2 failures + 1 success; the blocked 3rd attempt never ran")
    session = guard.last_session
    assert session is not None
    worst = session.worst.action.value if session.worst else "continue"
    print(f"session: {session.tool_calls} tool calls judged, most severe action: {worst}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
