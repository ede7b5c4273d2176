"""The callback adapter on real LangGraph runs: interrupts, reports, sessions per root run."""

from __future__ import annotations

import asyncio
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.runnables import RunnableLambda

from loopguard.adapters.callbacks import AsyncLoopGuardCallbackHandler, LoopGuardCallbackHandler, usage_of
from loopguard.adapters.langgraph import LoopGuardToolWrapper
from loopguard.errors import LoopGuardInterrupt
from loopguard.policy import load_policy_text
from test_adapter_langgraph import ALL_VERDICTS, STUCK, ScriptedChatModel, Tools, ai, before_calls, build_graph, policy, two_agent_graph, user


def test_interrupt_propagates_out_of_invoke() -> None:
    tools = Tools()
    handler = LoopGuardCallbackHandler(policy())
    run_id = uuid.uuid4()
    with pytest.raises(LoopGuardInterrupt) as stopped:
        build_graph(ScriptedChatModel(script=STUCK), tools).invoke(user(), {"callbacks": [handler], "run_id": run_id})
    assert stopped.value.decision.action.value == "stop"
    assert tools.ran("search") == 2  # the 3rd identical call is stopped before it runs
    report = handler.report(run_id)
    assert report["interrupted"] is True and report["verdict"] == "stop"
    assert report["stop"]["phase"] == "before_call"
    assert handler.session(run_id).stopped


@pytest.mark.parametrize("handler_type", [AsyncLoopGuardCallbackHandler, LoopGuardCallbackHandler])
def test_interrupt_propagates_out_of_ainvoke(handler_type: type) -> None:
    tools = Tools()
    handler = handler_type(policy())
    model = ScriptedChatModel(script=STUCK)
    with pytest.raises(LoopGuardInterrupt):
        asyncio.run(build_graph(model, tools).ainvoke(user(), {"callbacks": [handler]}))
    assert tools.ran("search") == 2 and model.calls == 3
    assert handler.report()["interrupted"] is True


def test_interrupt_false_and_observe_mode_never_raise() -> None:
    for handler in (LoopGuardCallbackHandler(policy(), interrupt=False), LoopGuardCallbackHandler(policy(mode="observe"))):
        tools = Tools()
        build_graph(ScriptedChatModel(script=STUCK), tools).invoke(user(), {"callbacks": [handler]})
        assert tools.ran("search") == 4
        report = handler.report()
        assert report["interrupted"] is False and report["verdict"] == "stop"


def test_observe_mode_records_the_same_decisions() -> None:
    enforce, observe = LoopGuardCallbackHandler(policy(), interrupt=False), LoopGuardCallbackHandler(policy(mode="observe"))
    for handler in (enforce, observe):
        build_graph(ScriptedChatModel(script=[ALL_VERDICTS] + STUCK), Tools()).invoke(user(), {"callbacks": [handler]})
    assert before_calls(observe.session().decisions) == before_calls(enforce.session().decisions)
    assert [d["verdict"] for d in observe.report()["decisions"] if d["phase"] == "before_call"][:6] == [
        "answer", "answer", "cancel", "block", "unavailable", "budget_spent",
    ]


def test_report_shape_and_reset() -> None:
    handler = LoopGuardCallbackHandler(policy())
    batch = ai(("search", {"q": "a"}), ("shell", {"cmd": "ls"}), usage=(120, 30), model="scripted-1")
    build_graph(ScriptedChatModel(script=[batch]), Tools()).invoke(user("look"), {"callbacks": [handler]})
    report = handler.report()
    assert set(report) >= {"interrupted", "events", "signals", "decisions", "metrics"}
    assert [e["kind"] for e in report["events"]] == [
        "user_message", "model_call", "tool_call", "tool_call", "tool_result", "tool_result", "agent_message",
    ]
    assert report["events"][1]["input_tokens"] == 120 and report["events"][1]["model"] == "scripted-1"
    assert [(d["tool"], d["verdict"]) for d in report["decisions"]] == [("shell", "block")]  # only decisions that do more than continue
    metrics = report["metrics"]
    assert metrics["tool_calls"] == 2 and metrics["tool_results"] == 2 and metrics["model_calls"] == 1  # the final answer carries no usage
    assert metrics["guard_us_total"] > 0 and metrics["guard_us_per_step"] > 0
    handler.reset()
    assert handler.report()["events"] == [] and handler.session() is None


def test_pricing_and_cost_budget_stop_on_a_model_call() -> None:
    text = """
version: 1
extends: builtin:default
pricing:
  scripted-*: {input: 2.0, output: 10.0}
budgets:
  cost_usd: {limit: 0.01, scope: run, on_exceed: stop}
"""
    handler = LoopGuardCallbackHandler(load_policy_text(text))
    script = [ai(("search", {"q": "a"}), usage=(1000, 500), model="scripted-1"), ai(("search", {"q": "b"}), usage=(1000, 500), model="scripted-1")]
    tools = Tools()
    with pytest.raises(LoopGuardInterrupt) as stopped:
        build_graph(ScriptedChatModel(script=script), tools).invoke(user(), {"callbacks": [handler]})
    session = handler.session()
    assert session.run.tokens == 3000
    assert session.run.cost_usd == pytest.approx(2 * (1000 * 2.0 + 500 * 10.0) / 1_000_000)
    assert stopped.value.decision.phase == "observe"  # the model call that spent the budget
    assert tools.ran("search") == 1  # the stop came before the second batch ran


def test_usage_from_llm_output_token_usage() -> None:
    message = AIMessage("hi", response_metadata={})
    usage = usage_of(message, {"token_usage": {"prompt_tokens": 7, "completion_tokens": 3}, "model_name": "gpt-x"})
    assert usage is not None and (usage.input_tokens, usage.output_tokens, usage.model) == (7, 3, "gpt-x")
    handler = LoopGuardCallbackHandler(policy())
    run_id = uuid.uuid4()
    handler.on_llm_end(
        LLMResult(generations=[[ChatGeneration(message=message)]], llm_output={"token_usage": {"prompt_tokens": 7, "completion_tokens": 3}}),
        run_id=run_id,
    )
    assert handler.session(run_id).run.tokens == 10


def test_nested_chains_share_the_root_session() -> None:
    handler = LoopGuardCallbackHandler(policy())
    graph = build_graph(ScriptedChatModel(script=[ai(("search", {"q": "a"})), ai(("search", {"q": "b"}))]), Tools())
    outer = RunnableLambda(lambda x: graph.invoke(x)) | RunnableLambda(lambda state: state["messages"][-1].content)
    root = uuid.uuid4()
    assert outer.invoke(user(), {"callbacks": [handler], "run_id": root}) == "done"
    assert handler.runs.keys() == [str(root)]
    assert handler.session(root).tool_calls == 2


def _threaded_run(handler: LoopGuardCallbackHandler, graph: Any, index: int) -> str:
    run_id = uuid.uuid4()
    graph.invoke(user(f"run {index}"), {"callbacks": [handler], "run_id": run_id})
    return str(run_id)


QUERY_SCRIPT = [lambda ms: ai(("search", {"q": ms[0].content})), lambda ms: ai(("search", {"q": ms[0].content + "!"}))]


def _assert_separate(handler: Any, keys: list[str]) -> None:
    assert len(set(keys)) == 8 and sorted(handler.runs.keys()) == sorted(keys)
    for index, key in enumerate(keys):
        report = handler.report(key)
        queries = [e["arguments"]["q"] for e in report["events"] if e["kind"] == "tool_call"]
        assert queries == [f"run {index}", f"run {index}!"]
        assert [e["text"] for e in report["events"] if e["kind"] == "user_message"] == [f"run {index}"]
        assert report["metrics"]["tool_results"] == 2


def test_concurrent_runs_on_threads_keep_separate_sessions() -> None:
    handler = LoopGuardCallbackHandler(policy())
    graph = build_graph(ScriptedChatModel(script=QUERY_SCRIPT), Tools())
    with ThreadPoolExecutor(8) as pool:
        keys = list(pool.map(lambda i: _threaded_run(handler, graph, i), range(8)))
    _assert_separate(handler, keys)


def test_concurrent_runs_on_asyncio_keep_separate_sessions() -> None:
    handler = AsyncLoopGuardCallbackHandler(policy())
    graph = build_graph(ScriptedChatModel(script=QUERY_SCRIPT), Tools())
    keys = [str(uuid.uuid4()) for _ in range(8)]

    async def main() -> None:
        await asyncio.gather(*(
            graph.ainvoke(user(f"run {i}"), {"callbacks": [handler], "run_id": uuid.UUID(key)}) for i, key in enumerate(keys)
        ))

    asyncio.run(main())
    _assert_separate(handler, keys)


def test_results_of_calls_a_per_call_guard_answered_are_recorded() -> None:
    """With a ToolNode wrapper in the graph, blocked calls never start a tool; the handler
    reads their payloads from the tools node's output."""
    handler = LoopGuardCallbackHandler(policy())
    tools = Tools()
    graph = build_graph(ScriptedChatModel(script=[ALL_VERDICTS]), tools, wrap=LoopGuardToolWrapper(policy()))
    graph.invoke(user(), {"callbacks": [handler]})
    results = [e for e in handler.report()["events"] if e["kind"] == "tool_result"]
    assert len(results) == 7 and sum(1 for e in results if e["error"]) == 4  # cancel, block, unavailable, budget_spent
    assert tools.count == {"book": 1}


def test_handoffs_between_agent_nodes() -> None:
    graph = two_agent_graph()
    handler = LoopGuardCallbackHandler(policy())
    graph.compile().invoke(user(), {"callbacks": [handler]})
    handoffs = [e for e in handler.report()["events"] if e["kind"] == "handoff"]
    assert [(h["caller"], h["agent"]) for h in handoffs] == [("researcher", "writer")]  # tools, __start__ are never agents
