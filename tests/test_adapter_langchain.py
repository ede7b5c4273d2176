"""LoopGuardMiddleware with real create_agent agents, scripted chat models and counting tools."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from typing import Any, Callable, Sequence

import pytest
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

from loopguard import Guard, load_policy_text
from loopguard.adapters.langchain import LoopGuardMiddleware
from loopguard.errors import LoopGuardInterrupt

POLICY = """
version: 1
extends: builtin:default
mode: {mode}
rules:
  - id: weather-cached
    tool: get_weather
    match: "arguments.city == 'Tokyo'"
    verdict: answer
    result: {{forecast: sunny}}
  - id: greeting-canned
    tool: greet
    verdict: answer
    result: hello from the policy
  - id: deletes-need-approval
    tool: "delete_*"
    verdict: cancel
    reason: deleting needs the user's approval
  - id: shell-disabled
    tool: shell
    verdict: block
    type: forbidden
    message: shell is disabled here
  - id: legacy-gone
    tool: legacy
    verdict: unavailable
    message: legacy was retired
  - id: one-email
    tool: send_email
    verdict: budget
    limit: 1
    message: one email per run
"""

STOP_POLICY = """
version: 1
extends: builtin:default
mode: {mode}
budgets:
  tool_calls: {{limit: 1, scope: run, on_exceed: stop}}
"""


class ScriptedChatModel(BaseChatModel):
    """Replies ``script(messages)``; a list script is replayed by the number of model calls so far."""

    script: Any

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        if callable(self.script):
            reply = self.script(messages)
        else:
            turns = sum(1 for m in messages if isinstance(m, AIMessage))
            reply = self.script[turns] if turns < len(self.script) else AIMessage("done")
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> "ScriptedChatModel":
        return self


def calls(*specs: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": n, "args": a, "id": f"c{uuid.uuid4().hex[:8]}"} for n, a in specs])


class Tools:
    """Real tools with side-effect counters."""

    def __init__(self) -> None:
        self.count: dict[str, int] = {}
        self.lock = threading.Lock()

        def counted(name: str, output: Callable[..., str]) -> Any:
            def run(**kwargs: Any) -> str:
                with self.lock:
                    self.count[name] = self.count.get(name, 0) + 1
                return output(**kwargs)

            run.__name__ = name
            return run

        @tool
        def get_weather(city: str) -> str:
            """Weather for a city."""
            return counted("get_weather", lambda city: f"rain in {city}")(city=city)

        @tool
        def greet(name: str) -> str:
            """Greet someone."""
            return counted("greet", lambda name: f"hi {name}")(name=name)

        @tool
        def delete_file(path: str) -> str:
            """Delete a file."""
            return counted("delete_file", lambda path: f"deleted {path}")(path=path)

        @tool
        def shell(cmd: str) -> str:
            """Run a shell command."""
            return counted("shell", lambda cmd: "ran")(cmd=cmd)

        @tool
        def legacy(x: int) -> str:
            """An old tool."""
            return counted("legacy", lambda x: "old")(x=x)

        @tool
        def send_email(to: str) -> str:
            """Send an email."""
            return counted("send_email", lambda to: f"sent to {to}")(to=to)

        @tool
        def search(q: str) -> str:
            """Search."""
            return counted("search", lambda q: f"results for {q}")(q=q)

        self.all = [get_weather, greet, delete_file, shell, legacy, send_email, search]

    def __getitem__(self, name: str) -> int:
        return self.count.get(name, 0)


def agent_for(script: Any, policy_text: str = POLICY, mode: str = "enforce", **options: Any) -> tuple[Any, LoopGuardMiddleware, Tools]:
    tools = Tools()
    middleware = LoopGuardMiddleware(load_policy_text(policy_text.format(mode=mode)), **options)
    return create_agent(ScriptedChatModel(script=script), tools.all, middleware=[middleware]), middleware, tools


def user(text: str = "go") -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def tool_messages(result: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in result["messages"] if isinstance(m, ToolMessage)]


# -- one verdict per call ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "args", "content", "status"),
    [
        ("get_weather", {"city": "Tokyo"}, '{"forecast": "sunny"}', "success"),
        ("greet", {"name": "Ada"}, "hello from the policy", "success"),
        ("delete_file", {"path": "/tmp/x"}, '{"cancelled": true, "reason": "deleting needs the user\'s approval"}', "error"),
        ("shell", {"cmd": "ls"}, '{"error": true, "type": "forbidden", "message": "shell is disabled here"}', "error"),
        ("legacy", {"x": 1}, '{"error": true, "type": "tool_unavailable", "message": "legacy was retired"}', "error"),
    ],
)
def test_verdict_payloads_and_the_tool_never_runs(name: str, args: dict[str, Any], content: str, status: str) -> None:
    agent, _, tools = agent_for([calls((name, args))])
    result = agent.invoke(user())
    [message] = tool_messages(result)
    assert message.content == content
    assert message.status == status
    assert message.name == name
    assert message.tool_call_id == result["messages"][1].tool_calls[0]["id"]
    assert tools[name] == 0
    assert result["messages"][-1].content == "done"


def test_allowed_call_runs_and_its_result_is_recorded() -> None:
    agent, middleware, tools = agent_for([calls(("get_weather", {"city": "Oslo"}))])
    key = str(uuid.uuid4())
    result = agent.invoke(user(), {"run_id": key})
    [message] = tool_messages(result)
    assert (message.content, message.status) == ("rain in Oslo", "success")
    assert tools["get_weather"] == 1
    session = middleware.session(key)
    assert session is not None
    assert [(d.phase, d.verdict.kind.value) for d in session.decisions if d.tool] == [("before_call", "allow"), ("after_call", "allow")]


def test_budget_rule_spends_after_the_limit() -> None:
    agent, _, tools = agent_for([calls(("send_email", {"to": "a"})), calls(("send_email", {"to": "b"}))])
    first, second = tool_messages(agent.invoke(user()))
    assert (first.content, first.status) == ("sent to a", "success")
    assert json.loads(second.content) == {"error": True, "type": "budget_spent", "message": "one email per run"}
    assert second.status == "error"
    assert tools["send_email"] == 1


def test_a_blocked_call_closes_only_itself_in_a_batch() -> None:
    agent, _, tools = agent_for([calls(("search", {"q": "a"}), ("shell", {"cmd": "rm"}), ("search", {"q": "b"}))])
    result = agent.invoke(user())
    ai = result["messages"][1]
    messages = {m.tool_call_id: m for m in tool_messages(result)}
    assert set(messages) == {c["id"] for c in ai.tool_calls}
    assert [messages[c["id"]].status for c in ai.tool_calls] == ["success", "error", "success"]
    assert json.loads(messages[ai.tool_calls[1]["id"]].content)["type"] == "forbidden"
    assert tools["search"] == 2 and tools["shell"] == 0


def test_batch_is_judged_once_with_before_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    agent, middleware, _ = agent_for([calls(("search", {"q": "a"}), ("search", {"q": "b"}))])
    seen: list[int] = []
    original = Guard.session

    def spy(self: Guard, *args: Any, **kwargs: Any) -> Any:
        session = original(self, *args, **kwargs)
        batch = session.before_batch
        session.before_batch = lambda c: (seen.append(len(c)), batch(c))[1]  # type: ignore[method-assign]
        session.before_call = lambda c: pytest.fail("per-call fallback used")  # type: ignore[method-assign]
        return session

    monkeypatch.setattr(Guard, "session", spy)
    agent.invoke(user())
    assert seen == [2]


def test_usage_and_user_message_are_reported() -> None:
    reply = calls(("search", {"q": "a"}))
    reply.usage_metadata = {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}
    reply.response_metadata = {"model_name": "gpt-test"}
    agent, middleware, _ = agent_for([reply])
    key = str(uuid.uuid4())
    agent.invoke(user("find a"), {"run_id": key})
    session = middleware.session(key)
    assert session is not None
    assert session.run.tokens == 120
    assert session.user_message == "find a"
    assert session.turn_index == 1


# -- stop ---------------------------------------------------------------------------------


def stop_script() -> list[AIMessage]:
    return [calls(("search", {"q": "a"})), calls(("search", {"q": "b"})), calls(("search", {"q": "c"}))]


def test_stop_ends_the_run_with_a_final_message() -> None:
    agent, _, tools = agent_for(stop_script(), STOP_POLICY)
    result = agent.invoke(user())
    first, second = tool_messages(result)
    assert first.status == "success"
    # a budget that stops the run answers its call with its own budget_spent payload
    payload = json.loads(second.content)
    assert second.status == "error" and payload == {"error": True, "type": "budget_spent", "message": "the run budget 'tool_calls' is spent (1 of 1)"}
    final = result["messages"][-1]
    assert isinstance(final, AIMessage) and not final.tool_calls
    assert final.content.startswith("loopguard stopped the run")
    assert tools["search"] == 1


def test_stop_ends_an_async_run_with_a_final_message() -> None:
    agent, middleware, tools = agent_for(stop_script(), STOP_POLICY)
    key = str(uuid.uuid4())
    result = asyncio.run(agent.ainvoke(user(), {"run_id": key}))
    final = result["messages"][-1]
    assert isinstance(final, AIMessage) and not final.tool_calls
    assert final.content.startswith("loopguard stopped the run")
    assert final.response_metadata["loopguard"]["action"] == "stop"
    assert tools["search"] == 1
    assert middleware.last_session is middleware.session(key)  # the stopped run's session is retired


def test_raise_on_stop_propagates_from_invoke() -> None:
    agent, _, tools = agent_for(stop_script(), STOP_POLICY, raise_on_stop=True)
    with pytest.raises(LoopGuardInterrupt) as caught:
        agent.invoke(user())
    assert caught.value.decision.action.value == "stop"
    assert caught.value.decision.verdict.kind.value == "budget_spent"
    assert caught.value.decision.rule == "budget:tool_calls"
    assert any(signal.detector == "budget" for signal in caught.value.decision.signals)
    assert tools["search"] == 1


def test_raise_on_stop_propagates_from_ainvoke() -> None:
    agent, _, tools = agent_for(stop_script(), STOP_POLICY, raise_on_stop=True)
    with pytest.raises(LoopGuardInterrupt):
        asyncio.run(agent.ainvoke(user()))
    assert tools["search"] == 1


# -- observe mode ---------------------------------------------------------------------------


def verdict_script() -> list[AIMessage]:
    return [
        calls(("get_weather", {"city": "Tokyo"}), ("delete_file", {"path": "x"}), ("shell", {"cmd": "ls"})),
        calls(("legacy", {"x": 1}), ("send_email", {"to": "a"})),
        calls(("send_email", {"to": "b"})),
    ]


def test_observe_mode_blocks_nothing_and_records_what_enforce_would_do() -> None:
    summaries = {}
    for mode in ("enforce", "observe"):
        agent, middleware, tools = agent_for(verdict_script(), mode=mode)
        key = str(uuid.uuid4())
        result = agent.invoke(user(), {"run_id": key})
        session = middleware.session(key)
        assert session is not None
        summaries[mode] = [(d.tool, d.action.value, d.verdict.kind.value, d.rule) for d in session.decisions if d.phase == "before_call"]
        assert {d.mode for d in session.decisions} == {mode}
        if mode == "observe":
            assert all(m.status == "success" for m in tool_messages(result))
            assert all(tools[name] >= 1 for name in ("get_weather", "delete_file", "shell", "legacy", "send_email"))
            assert tools["send_email"] == 2
    assert summaries["observe"] == summaries["enforce"]
    assert [v for _, _, v, _ in summaries["enforce"]] == ["answer", "cancel", "block", "unavailable", "allow", "budget_spent"]


def test_observe_mode_never_stops() -> None:
    agent, _, tools = agent_for(stop_script(), STOP_POLICY, mode="observe", raise_on_stop=True)
    result = agent.invoke(user())
    assert tools["search"] == 3
    assert result["messages"][-1].content == "done"


# -- concurrency ------------------------------------------------------------------------------


def own_script(tag: str) -> Callable[[list[BaseMessage]], AIMessage]:
    """Each run searches for its own tag three times with distinct arguments, then answers."""

    def script(messages: list[BaseMessage]) -> AIMessage:
        done = sum(1 for m in messages if isinstance(m, ToolMessage))
        if done >= 3:
            return AIMessage(f"finished {tag}")
        return AIMessage("", tool_calls=[{"name": "search", "args": {"q": f"{tag}-{done}"}, "id": f"{tag}-{done}"}])

    return script


def check_run(middleware: LoopGuardMiddleware, key: str, tag: str, result: dict[str, Any]) -> None:
    session = middleware.session(key)
    assert session is not None and session.run_id == key
    judged = [d for d in session.decisions if d.phase == "before_call"]
    assert len(judged) == 3 and session.tool_calls == 3
    assert result["messages"][-1].content == f"finished {tag}"
    assert [m.content for m in tool_messages(result)] == [f"results for {tag}-{i}" for i in range(3)]


def test_concurrent_threads_keep_separate_sessions() -> None:
    tools = Tools()
    middleware = LoopGuardMiddleware("builtin:default")
    barrier = threading.Barrier(8)
    outcomes: dict[str, tuple[str, dict[str, Any]]] = {}
    errors: list[BaseException] = []

    def worker(index: int) -> None:
        try:
            tag = f"t{index}"
            agent = create_agent(ScriptedChatModel(script=own_script(tag)), tools.all, middleware=[middleware])
            key = str(uuid.uuid4())
            barrier.wait()
            outcomes[tag] = (key, agent.invoke(user(tag), {"run_id": key}))
        except BaseException as error:  # surfaced below
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(outcomes) == 8
    for tag, (key, result) in outcomes.items():
        check_run(middleware, key, tag, result)
    assert tools["search"] == 24


def test_concurrent_tasks_keep_separate_sessions_without_run_ids() -> None:
    tools = Tools()
    middleware = LoopGuardMiddleware("builtin:default")

    async def one(index: int) -> tuple[str, dict[str, Any]]:
        tag = f"a{index}"
        agent = create_agent(ScriptedChatModel(script=own_script(tag)), tools.all, middleware=[middleware])
        return tag, await agent.ainvoke(user(tag))

    async def main() -> list[tuple[str, dict[str, Any]]]:
        return await asyncio.gather(*(one(i) for i in range(8)))

    # Without run ids the middleware keys each run by a fresh UUID; find them by the user message.
    results = asyncio.run(main())
    sessions = {s.user_message: s for s in middleware.recent_sessions()}
    assert len(sessions) == 8
    for tag, result in results:
        session = sessions[tag]
        check_run(middleware, session.run_id or "", tag, result)
    assert tools["search"] == 24


# -- structure and session lifetime ----------------------------------------------------------


def test_the_guard_adds_no_graph_node_and_no_state_channel() -> None:
    tools = Tools()
    plain = create_agent(ScriptedChatModel(script=[]), tools.all)
    guarded = create_agent(ScriptedChatModel(script=[]), tools.all, middleware=[LoopGuardMiddleware("builtin:default")])
    assert set(guarded.get_graph().nodes) == set(plain.get_graph().nodes)
    assert set(guarded.channels) == set(plain.channels)


def test_the_session_is_retired_at_the_final_answer() -> None:
    agent, middleware, _ = agent_for([calls(("search", {"q": "a"}))])
    key = str(uuid.uuid4())
    agent.invoke(user(), {"run_id": key})
    session = middleware.session(key)
    assert session is not None and session.tool_calls == 1
    assert middleware.last_session is session
    assert middleware.recent_sessions() == [session]


def test_each_run_of_a_thread_gets_a_fresh_session() -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    tools = Tools()
    middleware = LoopGuardMiddleware("builtin:default")
    agent = create_agent(ScriptedChatModel(script=own_script("th")), tools.all, middleware=[middleware], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "thread-1"}}
    agent.invoke(user("first"), config)
    agent.invoke(user("second"), config)
    first, second = middleware.recent_sessions()
    assert (first.user_message, second.user_message) == ("first", "second")
    assert first.run_id != second.run_id
    assert first.thread_id == second.thread_id == "thread-1"
    assert first.tool_calls == 3 and second.tool_calls == 0  # the thread already had 3 results


def test_parallel_subgraph_runs_in_one_parent_run_keep_separate_sessions() -> None:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    tools = Tools()
    middleware = LoopGuardMiddleware("builtin:default")
    agents = {tag: create_agent(ScriptedChatModel(script=own_script(tag)), tools.all, middleware=[middleware]) for tag in ("left", "right")}

    class Parent(TypedDict, total=False):
        left: str
        right: str

    def node(tag: str) -> Callable[[Parent], Parent]:
        def run(state: Parent) -> Parent:
            return {tag: agents[tag].invoke(user(tag))["messages"][-1].content}  # type: ignore[misc]

        return run

    builder = StateGraph(Parent)
    for tag in agents:
        builder.add_node(tag, node(tag))
        builder.add_edge(START, tag)
        builder.add_edge(tag, END)
    assert builder.compile().invoke({}) == {"left": "finished left", "right": "finished right"}
    sessions = {s.user_message: s for s in middleware.recent_sessions()}
    assert set(sessions) == {"left", "right"}
    assert all(s.tool_calls == 3 for s in sessions.values())
    assert tools["search"] == 6


def test_a_structured_response_ends_the_session_and_is_not_judged_as_a_tool() -> None:
    from langchain.agents.structured_output import ToolStrategy
    from pydantic import BaseModel

    class Answer(BaseModel):
        text: str

    tools = Tools()
    middleware = LoopGuardMiddleware("builtin:default")
    script = [calls(("search", {"q": "a"})), AIMessage("", tool_calls=[{"name": "Answer", "args": {"text": "found a"}, "id": "s1"}])]
    agent = create_agent(ScriptedChatModel(script=script), tools.all, middleware=[middleware], response_format=ToolStrategy(Answer))
    key = str(uuid.uuid4())
    result = agent.invoke(user(), {"run_id": key})
    assert result["structured_response"] == Answer(text="found a")
    session = middleware.session(key)
    assert session is not None and middleware.last_session is session
    assert [d.tool for d in session.decisions if d.phase == "before_call"] == ["search"]
