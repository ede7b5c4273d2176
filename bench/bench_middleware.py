"""Added cost per tool call of LoopGuardMiddleware versus an unguarded agent.

Both agents are real ``create_agent`` graphs with the same scripted chat model and the same
tools. Each run makes ``ROUNDS`` model turns of ``BATCH`` parallel calls with distinct
arguments (a healthy run: nothing is blocked, so every guarded call pays the full path:
before_batch, wrap_tool_call, after_call). Guarded and unguarded runs are interleaved, in
alternating order, so machine noise hits both alike. The policy is builtin:default plus ten
inline rules.

Figures are microseconds per tool call (run time / tool calls). The added cost is the median
over pairs of (guarded run - the unguarded run next to it); the spread is its p10..p90 and
the median of each half of the runs (how stable the figure is on a noisy machine). A third
agent carries a middleware with the same two hooks doing nothing: LangChain's
``create_agent`` wraps every ``wrap_*`` hook in LangSmith's ``traceable`` (tracing on or
off), and that row shows what any such middleware costs before it does any work. Two more
rows time, without any graph:

* the middleware's own hooks: ``wrap_model_call`` on a batch (the model's response is
  prebuilt) + ``wrap_tool_call`` for each call with a no-op handler;
* the engine alone: ``Session.observe_user_message``, ``observe_model_call``,
  ``before_batch`` and ``after_call``, which the hooks call (the floor for any adapter).

Run: ``python bench/bench_middleware.py [runs]`` (default 400 runs of each agent; ``--help``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langchain.agents.middleware.types import ModelRequest, ModelResponse
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import ExecutionInfo, RunControl, Runtime

from loopguard import load_policy_text
from loopguard.calls import ModelUsage, ToolCall, ToolResult
from loopguard.guard import Guard
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


class NoOpMiddleware(AgentMiddleware):  # type: ignore[type-arg]
    """The same two hooks doing nothing: what LangChain charges for wrapping at all (it
    wraps every ``wrap_*`` hook in LangSmith's ``traceable``, tracing on or off)."""

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return handler(request)

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        return handler(request)


def end_to_end(runs: int) -> dict[str, list[float]]:
    """µs per tool call of each agent; runs interleaved, the order reversed every other time."""
    agents = {
        "plain": create_agent(ScriptedChatModel(), [search]),
        "no-op": create_agent(ScriptedChatModel(), [search], middleware=[NoOpMiddleware()]),
        "guarded": create_agent(ScriptedChatModel(), [search], middleware=[LoopGuardMiddleware(load_policy_text(POLICY))]),
    }
    assert set(agents["plain"].get_graph().nodes) == set(agents["guarded"].get_graph().nodes)  # the guard adds no node
    request = {"messages": [{"role": "user", "content": "search"}]}
    for agent in agents.values():  # warm up imports, caches and the thread pool
        for _ in range(10):
            agent.invoke(request)
    times: dict[str, list[float]] = {name: [] for name in agents}
    order = list(agents.items())
    for index in range(runs):
        for name, agent in order if index % 2 == 0 else order[::-1]:
            started = time.perf_counter()
            result = agent.invoke(request)
            elapsed = time.perf_counter() - started
            assert result["messages"][-1].content == "done"
            times[name].append(elapsed / CALLS_PER_RUN * 1e6)
    return times


def _batches(tag: str) -> list[AIMessage]:
    return [
        AIMessage("", id=f"{tag}-a{turn}", tool_calls=[{"name": "search", "args": {"q": f"q{turn}-{i}", "limit": 10}, "id": f"{tag}-c{turn}-{i}"} for i in range(BATCH)],
                  usage_metadata={"input_tokens": 100, "output_tokens": 20, "total_tokens": 120})
        for turn in range(ROUNDS)
    ]


def hooks_only(runs: int) -> list[float]:
    """µs per tool call spent in the middleware's hooks (no graph; fixtures built untimed)."""
    middleware = LoopGuardMiddleware(load_policy_text(POLICY))
    human = HumanMessage("search", id="h")

    def tool_handler(request: ToolCallRequest) -> ToolMessage:
        return results[request.tool_call["id"]]

    per_call: list[float] = []
    for r in range(runs):
        runtime = Runtime(execution_info=ExecutionInfo(checkpoint_id="c", checkpoint_ns="model:t", task_id="t"), control=RunControl())
        batches = _batches(f"r{r}")
        responses = [ModelResponse(result=[ai]) for ai in batches]
        model_requests = [ModelRequest(model=None, messages=[human], runtime=runtime) for _ in batches]  # type: ignore[arg-type]
        tool_requests = [[ToolCallRequest(tool_call=tc, tool=search, state={}, runtime=runtime) for tc in ai.tool_calls] for ai in batches]  # type: ignore[arg-type]
        results = {tc["id"]: ToolMessage(content="results", tool_call_id=tc["id"], name="search") for ai in batches for tc in ai.tool_calls}
        final = ModelResponse(result=[AIMessage("done", id=f"r{r}-final")])
        final_request = ModelRequest(model=None, messages=[human], runtime=runtime)  # type: ignore[arg-type]
        started = time.perf_counter()
        for turn in range(ROUNDS):
            response = responses[turn]
            middleware.wrap_model_call(model_requests[turn], lambda _request: response)
            for request in tool_requests[turn]:
                middleware.wrap_tool_call(request, tool_handler)
        middleware.wrap_model_call(final_request, lambda _request: final)
        per_call.append((time.perf_counter() - started) / CALLS_PER_RUN * 1e6)
        assert middleware.recent_sessions()[-1].tool_calls == CALLS_PER_RUN
    return per_call


def engine_only(runs: int) -> list[float]:
    """µs per tool call spent in the engine calls the hooks make (the floor for any adapter)."""
    guard = Guard.from_policy(load_policy_text(POLICY))
    usage = ModelUsage(100, 20)
    per_call: list[float] = []
    for r in range(runs):
        batches = [[ToolCall(tc["name"], tc["args"], id=tc["id"]) for tc in ai.tool_calls] for ai in _batches(f"r{r}")]
        session = guard.session(run_id=f"r{r}")
        outputs = [ToolResult("results", None, 0.1) for _ in range(BATCH)]
        started = time.perf_counter()
        session.observe_user_message("search")
        for calls in batches:
            session.observe_model_call(usage)
            session.before_batch(calls)
            for call, output in zip(calls, outputs):
                session.after_call(call, output)
        session.observe_model_call(usage)
        per_call.append((time.perf_counter() - started) / CALLS_PER_RUN * 1e6)
    return per_call


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="?", type=int, default=400, help="runs of each agent (default 400)")
    runs = parser.parse_args(argv).runs
    times = end_to_end(runs)
    plain, noop, guarded = times["plain"], times["no-op"], times["guarded"]
    hooks = hooks_only(runs * 5)
    engine = engine_only(runs * 5)
    deltas = [g - p for g, p in zip(guarded, plain)]
    noop_deltas = [n - p for n, p in zip(noop, plain)]
    beyond_noop = [g - n for g, n in zip(guarded, noop)]
    q = lambda xs, i: statistics.quantiles(xs, n=10)[i]  # noqa: E731
    med = statistics.median
    print(f"LoopGuardMiddleware overhead: builtin:default + 10 rules, {runs} runs x {CALLS_PER_RUN} tool calls ({ROUNDS} batches of {BATCH})")
    print(f"python {sys.version.split()[0]}")
    print()
    print(f"{'measure (µs per tool call)':<52}{'median':>10}{'p10':>10}{'p90':>10}")
    print("-" * 82)
    for label, xs in (
        ("unguarded agent (create_agent)", plain),
        ("agent with a no-op middleware (same hooks)", noop),
        ("guarded agent (LoopGuardMiddleware)", guarded),
        ("added by a no-op middleware (LangChain's own cost)", noop_deltas),
        ("added cost, paired runs (guarded - unguarded)", deltas),
        ("added beyond the no-op (guarded - no-op)", beyond_noop),
        ("middleware hooks alone (no graph)", hooks),
        ("engine alone (Session calls the hooks make)", engine),
    ):
        print(f"{label:<52}{med(xs):>10.1f}{q(xs, 0):>10.1f}{q(xs, -1):>10.1f}")
    half = len(deltas) // 2
    print()
    print(f"added cost: median of medians {med(guarded) - med(plain):.1f}; first half {med(deltas[:half]):.1f}, second half {med(deltas[half:]):.1f}")
    added = med(deltas)
    print(
        f"target: <= 50 µs added per tool call -> {'met' if added <= 50 else 'NOT met'} (end to end {added:.1f} µs, of which "
        f"{med(noop_deltas):.1f} µs LangChain charges any wrap_* middleware; hooks {med(hooks):.1f} µs; engine {med(engine):.1f} µs)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
