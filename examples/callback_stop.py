"""A LangGraph run stopped by loopguard's callback handler, runnable offline.

The agent (a scripted chat model) keeps searching for the same thing, and the search keeps
returning "no results". Nothing in the graph knows about loopguard: the guard is a callback
handler passed in the run's config. It watches every model call and tool call and, with the
embedded default policy (``builtin:default``):

1. search #1 runs, returns nothing: continue.
2. search #2 (identical) runs, returns nothing again: the no-progress detector warns.
3. the model asks for search #3 (identical): no progress still holds, and with the repeat
   it escalates to **stop** before the search runs. The handler raises
   ``LoopGuardInterrupt`` from the model's callback, when it judges the model's tool
   calls; it propagates out of ``graph.invoke``, so search #3 never runs. (LangChain logs
   the exception on stderr as "Error in LoopGuardCallbackHandler.on_llm_end callback"
   before it propagates.)

Then the example prints the handler's report (events, signals, decisions, metrics).

Run: ``python examples/callback_stop.py`` (no network, no API key).
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from loopguard.adapters.callbacks import LoopGuardCallbackHandler
from loopguard.errors import LoopGuardInterrupt


class ScriptedChatModel(BaseChatModel):
    """Always searches for the same thing (an agent stuck in a loop)."""

    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self.calls += 1
        reply = AIMessage(
            "",
            tool_calls=[{"name": "search_orders", "args": {"customer": "ACME", "status": "open"}, "id": f"call_{self.calls}"}],
            usage_metadata={"input_tokens": 300 + 40 * self.calls, "output_tokens": 15, "total_tokens": 315 + 40 * self.calls},
        )
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> "ScriptedChatModel":
        return self


searches = 0


@tool
def search_orders(customer: str, status: str) -> str:
    """Search a customer's orders."""
    global searches
    searches += 1
    return "no results"


def main() -> int:
    model = ScriptedChatModel()

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([search_orders]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    app = graph.compile()

    handler = LoopGuardCallbackHandler("builtin:default")
    run_id = uuid.uuid4()
    try:
        app.invoke({"messages": [HumanMessage("Which orders of ACME are open?")]}, {"callbacks": [handler], "run_id": run_id, "recursion_limit": 50})
        print("the run ended on its own (unexpected)")
    except LoopGuardInterrupt as stop:
        decision = stop.decision
        print(f"LoopGuardInterrupt: {stop}")
        print(f"  decided at step {decision.step} ({decision.phase} of call {decision.call_index + 1}), risk {decision.risk:.2f}, revision {decision.revision}")

    report = handler.report(run_id)
    print()
    print(f"interrupted={str(report['interrupted']).lower()} verdict={report['verdict']} at step {report['verdict_step']}")
    print("events:")
    for event in report["events"]:
        detail = {k: v for k, v in event.items() if k not in ("type", "run_id", "kind", "step")}
        print(f"  step={event['step']:<2} {event['kind']:<12} {json.dumps(detail, default=str)}")
    print("decisions:")
    for decision in report["decisions"]:
        signals = ", ".join(f"{s['detector']}/{s['kind']}" for s in decision["signals"])
        print(f"  step={decision['step']:<2} {decision['phase']:<11} {decision['tool']} action={decision['action']} risk={decision['risk']} signals=[{signals}]")
    metrics = report["metrics"]
    print(f"metrics: steps={metrics['steps']} tool_calls={metrics['tool_calls']} model_calls={metrics['model_calls']} "
          f"guard_us_per_step={metrics['guard_us_per_step']}")
    print()
    print(f"search_orders executed {searches} times; the model was asked {model.calls} times")
    return 0


if __name__ == "__main__":
    sys.exit(main())
