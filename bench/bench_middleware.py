"""Added cost per tool call of LoopGuardMiddleware versus an unguarded agent.

Both agents are real ``create_agent`` graphs with the same scripted chat model and the same
tools. Each run makes ``ROUNDS`` model turns of ``BATCH`` parallel calls with distinct
arguments (a healthy run: nothing is blocked, so every guarded call pays the full path:
before_batch, wrap_tool_call, after_call). Guarded and unguarded runs are interleaved so
machine noise hits both alike. The policy is builtin:default plus ten inline rules.

Figures are microseconds per tool call: the median over runs of (run time / tool calls),
and the added cost is guarded minus unguarded. A second table times the middleware's own
hooks directly (after_model on a batch + wrap_tool_call with a no-op handler), which is the
cost without LangGraph's scheduling noise.

Run: ``python bench/bench_middleware.py [runs]`` (default 200 runs of each agent).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.prebuilt.tool_node import ToolCallRequest

from loopguard import load_policy_text
from loopguard.adapters.langchain import LoopGuardMiddleware

ROUNDS = 4
BATCH = 5
CALLS_PER_RUN = ROUNDS * BATCH

POLICY = """
version: 1
extends: builtin:default
rules:
  - {id: r1-shell, tool: shell, verdict: block, message: shell is disabled}
  - {id: r2-delete, tool: "delete_*", verdict: cancel, reason: ask the user first}
  - {id: r3-legacy, tool: legacy_search, verdict: unavailable, message: retired}
  - {id: r4-weather, tool: get_weather, match: "arguments.city == 'Tokyo'", verdict: answer, result: {forecast: sunny}}
  - {id: r5-email-budget, tool: send_email, verdict: budget, limit: 3}
  - {id: r6-big-search, tool: search, match: "arguments.limit > `1000`", verdict: block, message: limit too large}
  - {id: r7-admin, tool: "admin_*", verdict: block, message: admin tools are off}
  - {id: r8-cost, when: "run.cost_usd >= 5", verdict: cancel, reason: cost ceiling reached}
  - {id: r9-many-searches, tool: search, when: "tool.calls > 500", verdict: cancel, reason: too many searches}
  - {id: r10-pay, tool: pay, match: "arguments.amount > `10000`", verdict: cancel, reason: large payment needs approval}
"""


class ScriptedChatModel(BaseChatModel):
    """ROUNDS turns of BATCH distinct search calls, then a final answer."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        turn = sum(1 for m in messages if isinstance(m, AIMessage))
        if turn >= ROUNDS:
            reply = AIMessage("done")
        else:
            reply = AIMessage("", tool_calls=[{"name": "search", "args": {"q": f"q{turn}-{i}", "limit": 10}, "id": f"c{turn}-{i}"} for i in range(BATCH)],
                              usage_metadata={"input_tokens": 100, "output_tokens": 20, "total_tokens": 120})
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> "ScriptedChatModel":
        return self


executed = {"search": 0}


@tool
def search(q: str, limit: int = 10) -> str:
    """Search (returns a distinct result per query)."""
    executed["search"] += 1
    return f"results for {q}"


def end_to_end(runs: int) -> tuple[list[float], list[float]]:
    plain = create_agent(ScriptedChatModel(), [search])
    guarded = create_agent(ScriptedChatModel(), [search], middleware=[LoopGuardMiddleware(load_policy_text(POLICY))])
    request = {"messages": [{"role": "user", "content": "search"}]}
    for agent in (plain, guarded):  # warm up imports, caches and the thread pool
        for _ in range(5):
            agent.invoke(request)
    times: dict[str, list[float]] = {"plain": [], "guarded": []}
    for _ in range(runs):
        for name, agent in (("plain", plain), ("guarded", guarded)):
            started = time.perf_counter()
            result = agent.invoke(request)
            elapsed = time.perf_counter() - started
            assert result["messages"][-1].content == "done"
            times[name].append(elapsed / CALLS_PER_RUN * 1e6)
    return times["plain"], times["guarded"]


def hooks_only(runs: int) -> list[float]:
    """µs per tool call spent in the middleware's hooks (no graph)."""
    middleware = LoopGuardMiddleware(load_policy_text(POLICY))

    def handler(request: ToolCallRequest) -> ToolMessage:
        return ToolMessage(content="results", tool_call_id=request.tool_call["id"], name="search")

    per_call: list[float] = []
    for r in range(runs):
        state: dict[str, Any] = {"messages": [HumanMessage("search", id="h")]}
        started = time.perf_counter()
        state.update(middleware.before_agent(state, None) or {})  # type: ignore[arg-type]
        for turn in range(ROUNDS):
            middleware.before_model(state, None)  # type: ignore[arg-type]
            ai = AIMessage("", id=f"a{r}-{turn}", tool_calls=[{"name": "search", "args": {"q": f"q{turn}-{i}", "limit": 10}, "id": f"c{turn}-{i}"} for i in range(BATCH)])
            state["messages"].append(ai)
            middleware.after_model(state, None)  # type: ignore[arg-type]
            for tc in ai.tool_calls:
                state["messages"].append(middleware.wrap_tool_call(ToolCallRequest(tool_call=tc, tool=search, state=state, runtime=None), handler))  # type: ignore[arg-type]
        middleware.after_agent(state, None)  # type: ignore[arg-type]
        per_call.append((time.perf_counter() - started) / CALLS_PER_RUN * 1e6)
    return per_call


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    plain, guarded = end_to_end(runs)
    hooks = hooks_only(runs * 5)
    med_plain, med_guarded = statistics.median(plain), statistics.median(guarded)
    deltas = sorted(g - p for g, p in zip(guarded, plain))
    print(f"LoopGuardMiddleware overhead: builtin:default + 10 rules, {runs} runs x {CALLS_PER_RUN} tool calls ({ROUNDS} batches of {BATCH})")
    print(f"python {sys.version.split()[0]}")
    print()
    print(f"{'measure':<44}{'median µs/call':>16}{'p90 µs/call':>14}")
    print("-" * 74)
    p90 = lambda xs: statistics.quantiles(xs, n=10)[-1]  # noqa: E731
    print(f"{'unguarded agent (create_agent)':<44}{med_plain:>16.1f}{p90(plain):>14.1f}")
    print(f"{'guarded agent (LoopGuardMiddleware)':<44}{med_guarded:>16.1f}{p90(guarded):>14.1f}")
    print(f"{'added cost, end to end (guarded - unguarded)':<44}{med_guarded - med_plain:>16.1f}{'':>14}")
    print(f"{'added cost, paired runs (median of deltas)':<44}{statistics.median(deltas):>16.1f}{p90(deltas):>14.1f}")
    print(f"{'middleware hooks alone (no graph)':<44}{statistics.median(hooks):>16.1f}{p90(hooks):>14.1f}")
    print()
    added = statistics.median(deltas)
    print(f"target: <= 50 µs added per tool call -> {'met' if added <= 50 else 'NOT met'} (end to end {added:.1f} µs; hooks {statistics.median(hooks):.1f} µs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
