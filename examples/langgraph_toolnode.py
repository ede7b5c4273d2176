"""A LangGraph agent whose ToolNode is guarded by loopguard, streamed through the guard.

The graph is the classic agent loop: an ``agent`` node (a scripted chat model) and a
``ToolNode`` whose ``wrap_tool_call`` is the guard (``LoopGuard.tool_wrapper``). The run is
streamed with ``LoopGuard.stream``, which prints every loopguard-runtime message: events,
signals, decisions, metrics and done.

What the policy (the default, plus three rules inline) does, step by step:

1. The model issues a batch of three calls: ``search(q="flights to Lisbon")``,
   ``get_weather(city="Tokyo")`` and ``shell(cmd="rm -rf /tmp/cache")``. The guard judges the
   whole batch at once: search runs; the weather call is **answered** from the rule (the
   tool never runs); shell is **blocked** with an in-band error the model reads.
2. The model searches again, twice, with the same arguments. The 2nd search returns
   "no results" again: the search has now brought nothing new twice (the weather and shell
   replies between the searches do not change that). The repeat detector and the no-progress
   detector fire together on the 3rd identical search: it is a **stop**, and it never runs.
3. The stream stops iterating the graph (the model is not asked again) and ends with
   ``done: interrupted=true``.

Run: ``python examples/langgraph_toolnode.py`` (no network, no API key).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from loopguard.adapters.langgraph import LoopGuard
from loopguard.policy import load_policy_text

POLICY = """
version: 1
extends: builtin:default
rules:
  - id: weather-cache
    tool: get_weather
    match: "arguments.city == 'Tokyo'"
    verdict: answer
    result: {forecast: sunny, source: cache}
  - id: shell-disabled
    tool: shell
    verdict: block
    message: shell is disabled in this environment
"""


class ScriptedChatModel(BaseChatModel):
    """Replies ``script[n]``, n = the number of assistant messages so far; then a final answer."""

    script: list[AIMessage]
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self.calls += 1
        turns = sum(1 for message in messages if isinstance(message, AIMessage))
        reply = self.script[turns] if turns < len(self.script) else AIMessage("Here is what I found.")
        return ChatResult(generations=[ChatGeneration(message=reply.model_copy(deep=True))])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> "ScriptedChatModel":
        return self


executed: dict[str, int] = {}


@tool
def search(q: str) -> str:
    """Search the web."""
    executed["search"] = executed.get("search", 0) + 1
    return "no results"


@tool
def get_weather(city: str) -> str:
    """The weather of a city."""
    executed["get_weather"] = executed.get("get_weather", 0) + 1
    return f"rain in {city}"


@tool
def shell(cmd: str) -> str:
    """Run a shell command."""
    executed["shell"] = executed.get("shell", 0) + 1
    return "done"


def call(name: str, args: dict[str, Any], index: int) -> dict[str, Any]:
    return {"name": name, "args": args, "id": f"call_{index}"}


SCRIPT = [
    AIMessage("", tool_calls=[
        call("search", {"q": "flights to Lisbon"}, 1),
        call("get_weather", {"city": "Tokyo"}, 2),
        call("shell", {"cmd": "rm -rf /tmp/cache"}, 3),
    ], usage_metadata={"input_tokens": 420, "output_tokens": 38, "total_tokens": 458}),
    AIMessage("", tool_calls=[call("search", {"q": "flights to Lisbon"}, 4)], usage_metadata={"input_tokens": 512, "output_tokens": 12, "total_tokens": 524}),
    AIMessage("", tool_calls=[call("search", {"q": "flights to Lisbon"}, 5)], usage_metadata={"input_tokens": 560, "output_tokens": 12, "total_tokens": 572}),
    AIMessage("", tool_calls=[call("search", {"q": "flights to Lisbon"}, 6)]),
]


def build(guard: LoopGuard, model: ScriptedChatModel) -> Any:
    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([search, get_weather, shell], wrap_tool_call=guard.tool_wrapper, awrap_tool_call=guard.tool_wrapper.awrap))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile()


def show(message: dict[str, Any]) -> str:
    kind = message["type"]
    if kind == "event":
        detail = {k: v for k, v in message.items() if k not in ("type", "run_id", "kind", "step")}
        return f"event    step={message['step']:<2} {message['kind']:<13} {json.dumps(detail, default=str)}"
    if kind == "signal":
        return f"signal   step={message['step']:<2} {message['detector']}/{message['kind']} score={message['score']}: {message['message']}"
    if kind == "decision":
        payload = f" payload={json.dumps(message['payload'])}" if "payload" in message else ""
        return f"decision step={message['step']:<2} {message['phase']} tool={message['tool']} action={message['action']} verdict={message['verdict']} rule={message['rule']}{payload}"
    if kind == "metrics":
        return (f"metrics  steps={message['steps']} tool_calls={message['tool_calls']} tool_results={message['tool_results']} "
                f"model_calls={message['model_calls']} guard_us_per_step={message['guard_us_per_step']}")
    if kind == "done":
        return f"done     interrupted={str(message['interrupted']).lower()} verdict={message['verdict']} at step {message['verdict_step']}"
    return f"{kind:<8} {json.dumps(message, default=str)}"


def main() -> int:
    guard = LoopGuard(load_policy_text(POLICY))
    model = ScriptedChatModel(script=SCRIPT)
    graph = build(guard, model)
    for message in guard.stream(graph, {"messages": [HumanMessage("Find me a flight to Lisbon.")]}):
        print(show(message))
    print()
    print(f"tools executed: {json.dumps(executed, sort_keys=True)}")
    print(f"model asked {model.calls} times (never after the stop)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
