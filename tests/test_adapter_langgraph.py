"""The LangGraph adapters on real graphs: the ToolNode wrapper and the guarded stream.

A scripted chat model (reply N = script[number of AIMessages in its input]) drives a real
``StateGraph`` (agent node + ``ToolNode``); tools are real LangChain tools that count their
executions. The helpers here are imported by the other adapter tests.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from loopguard.adapters.langgraph import LoopGuard, LoopGuardToolWrapper, loopguard_async_tool_wrapper, loopguard_tool_wrapper
from loopguard.errors import LoopGuardInterrupt
from loopguard.policy import load_policy_text

# -- helpers (shared with the other adapter tests) ---------------------------------------------


class ScriptedChatModel(BaseChatModel):
    """Replies ``script[n]`` where n is the number of AIMessages in the input (so concurrent
    runs each follow the script), then ``AIMessage("done")``. Replies are copies: LangChain
    writes the run id into a reply's ``id``."""

    script: list[Any]
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self.calls += 1
        turns = sum(1 for message in messages if isinstance(message, AIMessage))
        entry = self.script[turns] if turns < len(self.script) else AIMessage("done")
        reply = entry(messages) if callable(entry) else entry
        return ChatResult(generations=[ChatGeneration(message=reply.model_copy(deep=True))])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> "ScriptedChatModel":
        return self


def ai(*calls: tuple[str, dict[str, Any]], usage: tuple[int, int] | None = None, model: str | None = None, text: str = "") -> AIMessage:
    """An assistant message issuing ``calls`` (a batch when several), with optional usage."""
    extra: dict[str, Any] = {}
    if usage is not None:
        extra["usage_metadata"] = {"input_tokens": usage[0], "output_tokens": usage[1], "total_tokens": sum(usage)}
    if model is not None:
        extra["response_metadata"] = {"model_name": model}
    return AIMessage(text, tool_calls=[{"name": n, "args": a, "id": f"call_{uuid.uuid4().hex[:10]}"} for n, a in calls], **extra)


class Tools:
    """Real tools with side-effect counters (thread-safe)."""

    def __init__(self, outputs: dict[str, Callable[..., Any]] | None = None) -> None:
        self.count: dict[str, int] = {}
        self.seen: list[tuple[str, dict[str, Any]]] = []
        self.lock = threading.Lock()
        defaults: dict[str, Callable[..., Any]] = {
            "search": lambda q: "no results",
            "shell": lambda cmd: "ok",
            "get_weather": lambda city: f"rain in {city}",
            "get_time": lambda zone: "09:00",
            "delete_file": lambda path: "deleted",
            "legacy_api": lambda x: "legacy",
            "book": lambda item: f"booked {item}",
        }
        defaults.update(outputs or {})
        self.tools: list[BaseTool] = [self._tool(name, fn) for name, fn in defaults.items()]

    def _tool(self, name: str, fn: Callable[..., Any]) -> BaseTool:
        def run(**kwargs: Any) -> Any:
            with self.lock:
                self.count[name] = self.count.get(name, 0) + 1
                self.seen.append((name, kwargs))
            return fn(**kwargs)

        import inspect

        params = list(inspect.signature(fn).parameters)
        # a typed signature so the tool has an args schema
        namespace: dict[str, Any] = {"run": run}
        source = f"def {name}({', '.join(p + ': str' for p in params)}):\n    return run({', '.join(f'{p}={p}' for p in params)})\n"
        exec(source, namespace)  # noqa: S102 - builds a plain function with named parameters
        return StructuredTool.from_function(namespace[name], name=name, description=f"the {name} tool")

    def ran(self, name: str) -> int:
        return self.count.get(name, 0)


def build_graph(model: BaseChatModel, tools: Tools, wrap: Any = None, awrap: Any = None, checkpointer: Any = None) -> Any:
    """agent → (tool calls?) → tools → agent, with an optional ToolNode wrapper."""

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    async def aagent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    from langchain_core.runnables import RunnableLambda

    graph = StateGraph(MessagesState)
    graph.add_node("agent", RunnableLambda(agent, afunc=aagent))
    graph.add_node("tools", ToolNode(tools.tools, wrap_tool_call=wrap, awrap_tool_call=awrap))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=checkpointer)


def user(text: str = "go") -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


RULES = """
version: 1
extends: builtin:default
rules:
  - id: weather-cache
    tool: get_weather
    match: "arguments.city == 'Tokyo'"
    verdict: answer
    result: {forecast: sunny}
  - id: time-cache
    tool: get_time
    verdict: answer
    result: "12:00 UTC"
  - id: deletes-need-approval
    tool: "delete_*"
    verdict: cancel
    reason: deleting needs the user's approval
  - id: shell-disabled
    tool: shell
    verdict: block
    message: shell is disabled here
  - id: legacy-gone
    tool: legacy_api
    verdict: unavailable
    message: the legacy API was retired
  - id: one-booking
    tool: book
    verdict: budget
    limit: 1
    message: one booking per run
"""


def policy(text: str = RULES, mode: str | None = None) -> Any:
    if mode is not None:
        text = text.replace("extends: builtin:default\n", f"extends: builtin:default\nmode: {mode}\n")
    return load_policy_text(text, base_dir=".")


def tool_messages(state: dict[str, Any]) -> dict[str, ToolMessage]:
    return {m.name: m for m in state["messages"] if isinstance(m, ToolMessage)}


def before_calls(decisions: Sequence[Any]) -> list[tuple[int, str, str]]:
    return [(d.call_index, d.action.value, d.verdict.kind.value) for d in decisions if d.phase == "before_call"]


ALL_VERDICTS = ai(
    ("get_weather", {"city": "Tokyo"}),
    ("get_time", {"zone": "UTC"}),
    ("delete_file", {"path": "/tmp/a"}),
    ("shell", {"cmd": "ls"}),
    ("legacy_api", {"x": "1"}),
    ("book", {"item": "room"}),
    ("book", {"item": "car"}),
)

STUCK = [ai(("search", {"q": "flights"})), ai(("search", {"q": "flights"})), ai(("search", {"q": "flights"})), ai(("search", {"q": "flights"}))]


# -- ToolNode wrapper --------------------------------------------------------------------------


def test_wrapper_payload_per_verdict_and_blocked_tools_never_run() -> None:
    tools = Tools()
    wrapper = loopguard_tool_wrapper(policy())
    state = build_graph(ScriptedChatModel(script=[ALL_VERDICTS]), tools, wrap=wrapper).invoke(user())
    results = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert len(results) == 7  # every call of the batch gets exactly one result
    by_id = {m.tool_call_id: m for m in results}
    calls = {tc["name"] + ":" + json.dumps(tc["args"]): by_id[tc["id"]] for tc in state["messages"][1].tool_calls}

    weather = calls['get_weather:{"city": "Tokyo"}']
    assert json.loads(weather.content) == {"forecast": "sunny"} and weather.status == "success"
    clock = calls['get_time:{"zone": "UTC"}']
    assert clock.content == "12:00 UTC" and clock.status == "success"  # a string answer is sent as is
    cancel = calls['delete_file:{"path": "/tmp/a"}']
    assert json.loads(cancel.content) == {"cancelled": True, "reason": "deleting needs the user's approval"}
    assert cancel.status == "error"
    block = json.loads(calls['shell:{"cmd": "ls"}'].content)
    assert block["error"] is True and block["message"] == "shell is disabled here" and calls['shell:{"cmd": "ls"}'].status == "error"
    unavailable = calls['legacy_api:{"x": "1"}']
    assert json.loads(unavailable.content) == {"error": True, "type": "tool_unavailable", "message": "the legacy API was retired"}
    assert unavailable.status == "error"
    assert calls['book:{"item": "room"}'].content == "booked room" and calls['book:{"item": "room"}'].status == "success"
    spent = calls['book:{"item": "car"}']
    assert json.loads(spent.content)["type"] == "budget_spent" and spent.status == "error"
    assert spent.response_metadata["loopguard"]["verdict"] == "budget_spent"

    assert tools.count == {"book": 1}  # nothing answered, cancelled, blocked or spent ever ran
    session = wrapper.session(wrapper.runs.keys()[0])
    assert [v for _, _, v in before_calls(session.decisions)] == ["answer", "answer", "cancel", "block", "unavailable", "allow", "budget_spent"]
    assert session.tool_calls == 7


def test_batch_of_three_with_one_blocked() -> None:
    tools = Tools()
    batch = ai(("search", {"q": "a"}), ("shell", {"cmd": "rm -rf /"}), ("search", {"q": "b"}))
    state = build_graph(ScriptedChatModel(script=[batch]), tools, wrap=LoopGuardToolWrapper(policy())).invoke(user())
    results = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in results] == [tc["id"] for tc in state["messages"][1].tool_calls]
    assert [m.status for m in results] == ["success", "error", "success"]
    assert tools.count == {"search": 2}
    assert isinstance(state["messages"][-1], AIMessage) and state["messages"][-1].content == "done"


def test_batch_is_judged_once_in_model_order() -> None:
    """ToolNode runs a batch on pool threads; the first call to arrive judges the whole batch."""
    tools = Tools()
    wrapper = LoopGuardToolWrapper(policy())
    batch = ai(*[("search", {"q": str(i)}) for i in range(6)], usage=(100, 20))
    build_graph(ScriptedChatModel(script=[batch]), tools, wrap=wrapper).invoke(user())
    session = wrapper.session(wrapper.runs.keys()[0])
    assert [i for i, _, _ in before_calls(session.decisions)] == list(range(6))
    assert session.run.tokens == 120  # the batch's model usage is reported once
    assert tools.ran("search") == 6


def test_stop_raises_out_of_invoke_and_ainvoke() -> None:
    tools = Tools()
    wrapper = LoopGuardToolWrapper(policy())
    with pytest.raises(LoopGuardInterrupt) as stopped:
        build_graph(ScriptedChatModel(script=STUCK), tools, wrap=wrapper).invoke(user())
    assert stopped.value.decision.action.value == "stop"
    assert tools.ran("search") == 2  # the 3rd identical call, with no progress holding, never runs

    tools = Tools()
    awrap = loopguard_async_tool_wrapper(policy())
    with pytest.raises(LoopGuardInterrupt):
        asyncio.run(build_graph(ScriptedChatModel(script=STUCK), tools, awrap=awrap).ainvoke(user()))
    assert tools.ran("search") == 2
    assert awrap.__self__.session(awrap.__self__.runs.keys()[0]).stopped


def test_stop_without_raise_answers_the_stop_payload() -> None:
    tools = Tools()
    wrapper = LoopGuardToolWrapper(policy(), raise_on_stop=False)
    state = build_graph(ScriptedChatModel(script=STUCK), tools, wrap=wrapper).invoke(user())
    last = [m for m in state["messages"] if isinstance(m, ToolMessage)][-1]
    assert json.loads(last.content)["type"] == "guard_stop" and last.status == "error"
    assert tools.ran("search") == 2  # the 3rd call got the stop payload instead of running


def test_async_wrapper_payloads_match_sync() -> None:
    tools = Tools()
    wrapper = LoopGuardToolWrapper(policy())
    state = asyncio.run(build_graph(ScriptedChatModel(script=[ALL_VERDICTS]), tools, awrap=wrapper.awrap).ainvoke(user()))
    statuses = [m.status for m in state["messages"] if isinstance(m, ToolMessage)]
    assert statuses == ["success", "success", "error", "error", "error", "success", "error"]
    assert tools.count == {"book": 1}


def test_observe_mode_blocks_nothing_and_records_the_same_decisions() -> None:
    enforce_tools, observe_tools = Tools(), Tools()
    enforce = LoopGuardToolWrapper(policy())
    observe = LoopGuardToolWrapper(policy(mode="observe"))
    build_graph(ScriptedChatModel(script=[ALL_VERDICTS]), enforce_tools, wrap=enforce).invoke(user())
    state = build_graph(ScriptedChatModel(script=[ALL_VERDICTS]), observe_tools, wrap=observe).invoke(user())
    assert observe_tools.count == {name: 1 for name in ("get_weather", "get_time", "delete_file", "shell", "legacy_api")} | {"book": 2}
    assert all(m.status == "success" for m in state["messages"] if isinstance(m, ToolMessage))
    enforce_decisions = before_calls(enforce.session(enforce.runs.keys()[0]).decisions)
    observe_session = observe.session(observe.runs.keys()[0])
    assert before_calls(observe_session.decisions) == enforce_decisions
    assert all(d.mode == "observe" for d in observe_session.decisions)


def test_observe_mode_never_raises_on_stop() -> None:
    tools = Tools()
    wrapper = LoopGuardToolWrapper(policy(mode="observe"))
    build_graph(ScriptedChatModel(script=STUCK), tools, wrap=wrapper).invoke(user())
    assert tools.ran("search") == 4
    assert wrapper.session(wrapper.runs.keys()[0]).stopped  # decided and recorded


def _one_run(wrapper: LoopGuardToolWrapper, graph: Any, index: int) -> str:
    run_id = uuid.uuid4()
    graph.invoke(user(f"run {index}"), {"run_id": run_id})
    return str(run_id)


def test_concurrent_runs_on_threads_keep_separate_sessions() -> None:
    tools = Tools()
    wrapper = LoopGuardToolWrapper(policy())
    script = [lambda ms: ai(("search", {"q": ms[0].content})), lambda ms: ai(("search", {"q": ms[0].content + "!"}))]
    graph = build_graph(ScriptedChatModel(script=script), tools, wrap=wrapper)
    with ThreadPoolExecutor(8) as pool:
        keys = list(pool.map(lambda i: _one_run(wrapper, graph, i), range(8)))
    assert len(set(keys)) == 8
    worst = set()
    for index, key in enumerate(keys):
        session = wrapper.session(key)
        assert session.tool_calls == 2 and session.run.tool_calls == 2 and not session.stopped
        worst.add(session.worst.action)
        queries = [e["arguments"]["q"] for e in wrapper.run(key).events if e["kind"] == "tool_call"]
        assert queries == [f"run {index}", f"run {index}!"]  # only this run's calls
    assert len(worst) == 1  # every run was judged alike
    assert tools.ran("search") == 16


def test_concurrent_runs_on_asyncio_without_run_ids_keep_separate_sessions() -> None:
    tools = Tools()
    wrapper = LoopGuardToolWrapper(policy())
    graph = build_graph(ScriptedChatModel(script=[ai(("search", {"q": "x"})), ai(("search", {"q": "x"}))]), tools, awrap=wrapper.awrap)

    async def main() -> None:
        await asyncio.gather(*(graph.ainvoke(user(f"run {i}")) for i in range(8)))

    asyncio.run(main())
    keys = wrapper.runs.keys()
    assert len(keys) == 8 and all(key.startswith("messages:") for key in keys)  # keyed by the input message id
    assert all(wrapper.session(key).tool_calls == 2 for key in keys)


def test_thread_keyed_sessions_span_runs_of_a_thread() -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    tools = Tools()
    wrapper = LoopGuardToolWrapper(policy(), key_by="thread")
    model = ScriptedChatModel(script=[ai(("search", {"q": "a"})), AIMessage("first"), ai(("search", {"q": "b"}))])
    graph = build_graph(model, tools, wrap=wrapper, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t-1"}}
    graph.invoke(user("one"), config)
    graph.invoke(user("two"), config)
    session = wrapper.session("thread:t-1")
    assert session is not None and session.tool_calls == 2 and session.turn_index == 2


# -- stream wrapper ----------------------------------------------------------------------------


def test_stream_messages_types_and_order() -> None:
    tools = Tools()
    guard = LoopGuard(policy())
    batch = ai(("search", {"q": "a"}), ("shell", {"cmd": "ls"}), ("search", {"q": "b"}), usage=(50, 5))
    graph = build_graph(ScriptedChatModel(script=[batch, AIMessage("all done")]), tools)
    messages = list(guard.stream(graph, user("find a and b")))
    types = [m["type"] for m in messages]
    assert types[-1] == "done" and types[-2] == "metrics" and types.count("done") == 1 and types.count("metrics") == 1
    events = [m for m in messages if m["type"] == "event"]
    assert [e["kind"] for e in events] == [
        "user_message", "model_call", "tool_call", "tool_call", "tool_call",
        "tool_result", "tool_result", "tool_result", "agent_message",
    ]
    assert [e["tool"] for e in events if e["kind"] == "tool_call"] == ["search", "shell", "search"]  # the whole batch
    decision = next(m for m in messages if m["type"] == "decision")
    assert decision["tool"] == "shell" and decision["verdict"] == "block" and decision["payload"]["message"] == "shell is disabled here"
    shell_event = next(i for i, m in enumerate(messages) if m.get("kind") == "tool_call" and m["tool"] == "shell")
    assert types.index("decision") == shell_event + 1  # right after the shell call's event
    assert all(m["run_id"] == messages[0]["run_id"] for m in messages)
    done = messages[-1]
    assert done["interrupted"] is False and done["verdict"] == "continue" and done["error"] is None
    metrics = messages[-2]
    assert metrics["tool_calls"] == 3 and metrics["tool_results"] == 3 and metrics["model_calls"] == 1
    assert metrics["guard_us_per_step"] > 0
    assert tools.count == {"search": 2, "shell": 1}  # the stream observes; a ToolNode wrapper applies


def test_stream_stops_before_the_tools_of_a_stopped_batch() -> None:
    budget = "version: 1\nextends: builtin:default\nbudgets:\n  tool_calls: {limit: 2, scope: run, on_exceed: stop}\n"
    tools = Tools()
    model = ScriptedChatModel(script=[ai(("search", {"q": "a"}), ("search", {"q": "b"})), ai(("search", {"q": "c"}), ("search", {"q": "d"}))])
    messages = list(LoopGuard(load_policy_text(budget)).stream(build_graph(model, tools), user()))
    assert tools.ran("search") == 2  # the second batch never ran
    assert model.calls == 2
    stop = [m for m in messages if m["type"] == "decision" and m["action"] == "stop"]
    # a budget that stops the run keeps its own verdict and message
    assert stop and stop[0]["verdict"] == "budget_spent" and stop[0]["payload"]["type"] == "budget_spent"
    assert any(signal["detector"] == "budget" and signal["kind"] == "tool_calls" for signal in stop[0]["signals"])
    assert messages[-1]["interrupted"] is True and messages[-1]["verdict"] == "stop"
    assert messages[-1]["stop"]["phase"] == "before_call"


def test_stream_with_detector_stop_ends_iteration() -> None:
    tools = Tools()
    model = ScriptedChatModel(script=STUCK)
    messages = list(LoopGuard(policy()).stream(build_graph(model, tools), user()))
    assert messages[-1]["interrupted"] is True
    assert tools.ran("search") == 2 and model.calls == 3  # the stopped call never runs; the model is not asked again
    signals = {m["detector"] for m in messages if m["type"] == "signal"}
    assert {"repeat", "no_progress"} <= signals


def test_stream_observe_mode_runs_to_the_end() -> None:
    tools = Tools()
    messages = list(LoopGuard(policy(mode="observe")).stream(build_graph(ScriptedChatModel(script=STUCK), tools), user()))
    assert messages[-1]["interrupted"] is False and messages[-1]["verdict"] == "stop"
    assert tools.ran("search") == 4


def test_stream_reports_errors() -> None:
    def broken(q: str) -> str:
        raise RuntimeError("search backend down")

    tools = Tools({"search": broken})
    messages = list(LoopGuard(policy()).stream(build_graph(ScriptedChatModel(script=STUCK), tools), user()))
    error = [m for m in messages if m["type"] == "error"]
    assert error and error[0]["error"] == "RuntimeError" and "backend down" in error[0]["message"]
    assert [m["type"] for m in messages[-2:]] == ["metrics", "done"] and messages[-1]["error"].startswith("RuntimeError")


def test_astream_matches_stream() -> None:
    sync_messages = list(LoopGuard(policy()).stream(build_graph(ScriptedChatModel(script=[ALL_VERDICTS]), Tools()), user()))

    async def collect() -> list[dict[str, Any]]:
        guard = LoopGuard(policy())
        return [m async for m in guard.astream(build_graph(ScriptedChatModel(script=[ALL_VERDICTS]), Tools()), user())]

    async_messages = asyncio.run(collect())
    strip = lambda ms: [(m["type"], m.get("kind"), m.get("tool"), m.get("action"), m.get("verdict")) for m in ms if m["type"] != "metrics"]  # noqa: E731
    assert strip(async_messages) == strip(sync_messages)


def test_stream_and_its_tool_wrapper_share_one_session() -> None:
    tools = Tools()
    guard = LoopGuard(policy())
    graph = build_graph(ScriptedChatModel(script=[ALL_VERDICTS]), tools, wrap=guard.tool_wrapper)
    messages = list(guard.stream(graph, user()))
    session = guard.session()
    assert session.tool_calls == 7  # each call judged once, by whichever saw the batch first
    assert [m["kind"] for m in messages if m["type"] == "event"].count("tool_result") == 7  # each result recorded once
    assert tools.count == {"book": 1}
    assert guard.report()["metrics"]["tool_calls"] == 7


def two_agent_graph() -> StateGraph:
    """A researcher (with a ToolNode) that hands over to a writer: one handoff between agent nodes."""
    researcher = ScriptedChatModel(script=[ai(("search", {"q": "a"})), AIMessage("notes")])
    writer = ScriptedChatModel(script=[lambda ms: AIMessage("draft")])
    tools = Tools()

    def research(state: MessagesState) -> dict[str, Any]:
        return {"messages": [researcher.invoke(state["messages"])]}

    def write(state: MessagesState) -> dict[str, Any]:
        return {"messages": [writer.invoke(state["messages"][:1])]}

    graph = StateGraph(MessagesState)
    graph.add_node("researcher", research)
    graph.add_node("tools", ToolNode(tools.tools))
    graph.add_node("writer", write)
    graph.add_edge(START, "researcher")
    graph.add_conditional_edges("researcher", tools_condition, {"tools": "tools", "__end__": "writer"})
    graph.add_edge("tools", "researcher")
    return graph


def test_stream_sees_handoffs_between_agent_nodes() -> None:
    graph = two_agent_graph()
    messages = list(LoopGuard(policy()).stream(graph.compile(), user()))
    handoffs = [m for m in messages if m["type"] == "event" and m["kind"] == "handoff"]
    assert [(h["caller"], h["agent"]) for h in handoffs] == [("researcher", "writer")]


def test_stream_sees_a_subgraph_once() -> None:
    """With subgraphs=True a nested agent's messages arrive in its own updates and again in
    its parent's update; each step is observed once and no handoff is invented."""
    from loopguard.adapters.callbacks import LoopGuardCallbackHandler

    tools = Tools()
    inner = build_graph(ScriptedChatModel(script=[ai(("search", {"q": "a"}), usage=(10, 1)), ai(("search", {"q": "b"})), AIMessage("notes")]), tools)
    outer = StateGraph(MessagesState)
    outer.add_node("research", inner)
    outer.add_edge(START, "research")
    app = outer.compile()
    guard = LoopGuard(policy())
    messages = list(guard.stream(app, user()))
    kinds = [m["kind"] for m in messages if m["type"] == "event"]
    assert kinds == ["user_message", "model_call", "tool_call", "tool_result", "tool_call", "tool_result", "agent_message"]
    assert guard.session().tool_calls == 2 and guard.session().run.tokens == 11
    handler = LoopGuardCallbackHandler(policy())
    app.invoke(user(), {"callbacks": [handler]})
    assert [e["kind"] for e in handler.report()["events"]] == kinds  # the callback adapter sees the same steps
