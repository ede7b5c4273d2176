"""Parity: one policy file, one scripted run, the same decisions through every adapter.

The run: a batch (search + an answered weather call + a blocked shell call), a cancelled
delete, then the same empty search until the default detectors stop the run. It goes through

* the ToolNode wrapper (applies verdicts, raises on stop),
* the stream wrapper (observes a graph whose ToolNode applies verdicts with its own guard),
* the callback handler (same graph shape, raises on stop),
* ``loopguard replay`` of the run's messages written as an OpenAI-chat JSON trace,
* the LangChain agent middleware, when it is installed.

The first four must report the same decisions: (phase, tool-call index, action, verdict kind)
for each decision that does more than continue, and the same stop. The middleware must give
the same before-call decision per tool-call index and the same stop (see its test for why
its result-phase decisions may differ).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any, Iterable

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from loopguard.adapters.callbacks import LoopGuardCallbackHandler
from loopguard.adapters.langgraph import LoopGuard, LoopGuardToolWrapper
from loopguard.decisions import Decision
from loopguard.errors import LoopGuardInterrupt
from loopguard.policy import load_policy
from loopguard.traces import replay_file
from loopguard.traces.report import is_reported
from test_adapter_langgraph import ScriptedChatModel, Tools, ai, build_graph, user

POLICY = """\
version: 1
extends: builtin:default
rules:
  - id: weather-cache
    tool: get_weather
    match: "arguments.city == 'Tokyo'"
    verdict: answer
    result: {forecast: sunny}
  - id: deletes-need-approval
    tool: "delete_*"
    verdict: cancel
    reason: deleting needs the user's approval
  - id: shell-disabled
    tool: shell
    verdict: block
    message: shell is disabled here
"""

SCRIPT = [
    ai(("search", {"q": "flights"}), ("get_weather", {"city": "Tokyo"}), ("shell", {"cmd": "ls"}), usage=(200, 30)),
    ai(("delete_file", {"path": "/tmp/x"}), usage=(260, 12)),
    ai(("search", {"q": "flights"}), usage=(300, 10)),
    ai(("search", {"q": "flights"}), usage=(320, 10)),
    ai(("search", {"q": "flights"}), usage=(340, 10)),
    AIMessage("I could not find flights."),
]

Row = tuple[str, int | None, str, str]


def rows(decisions: Iterable[Decision]) -> list[Row]:
    """The comparable part of the reported decisions of a run, in order."""
    return [
        (d.phase, d.call_index, d.action.value, d.verdict.kind.value)
        for d in decisions
        if d.phase in ("before_call", "after_call") and is_reported(d)
    ]


@pytest.fixture()
def policy_file(tmp_path: Path) -> Path:
    path = tmp_path / "loopguard.yml"
    path.write_text(POLICY)
    return path


def to_chat_trace(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    """LangChain messages as OpenAI chat messages (with ``usage`` on assistant messages)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            out.append({"role": "user", "content": message.content})
        elif isinstance(message, AIMessage):
            entry: dict[str, Any] = {"role": "assistant", "content": message.content or None}
            if message.tool_calls:
                entry["tool_calls"] = [
                    {"id": tc["id"], "type": "function", "function": {"name": tc["name"], "arguments": json.dumps(tc["args"])}}
                    for tc in message.tool_calls
                ]
            if message.usage_metadata:
                entry["usage"] = {
                    "prompt_tokens": message.usage_metadata["input_tokens"],
                    "completion_tokens": message.usage_metadata["output_tokens"],
                }
            out.append(entry)
        elif isinstance(message, ToolMessage):
            entry = {"role": "tool", "tool_call_id": message.tool_call_id, "name": message.name, "content": message.content}
            if message.status == "error":
                entry["status"] = "error"
            out.append(entry)
    return out


def test_same_decisions_through_every_adapter(policy_file: Path, tmp_path: Path) -> None:
    results: dict[str, list[Row]] = {}

    # 1. the ToolNode wrapper alone: applies verdicts, raises on the stop
    wrapper = LoopGuardToolWrapper(policy_file)
    tools = Tools()
    with pytest.raises(LoopGuardInterrupt):
        build_graph(ScriptedChatModel(script=SCRIPT), tools, wrap=wrapper).invoke(user("find flights"))
    results["toolnode"] = rows(wrapper.session(wrapper.runs.keys()[0]).decisions)
    assert tools.count == {"search": 2}  # answered, blocked and cancelled calls never ran, nor the 3rd search

    # 2. the stream wrapper, observing a graph whose ToolNode applies verdicts with another guard
    stream_guard = LoopGuard(policy_file)
    applying = LoopGuardToolWrapper(policy_file, raise_on_stop=False)
    graph = build_graph(ScriptedChatModel(script=SCRIPT), Tools(), wrap=applying, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "parity"}}
    messages = list(stream_guard.stream(graph, user("find flights"), config))
    assert messages[-1]["type"] == "done" and messages[-1]["interrupted"] is True
    results["stream"] = rows(stream_guard.session().decisions)
    streamed = [(m["phase"], m["call_index"], m["action"], m["verdict"]) for m in messages if m["type"] == "decision" and m["phase"] != "observe"]
    assert streamed == results["stream"]  # the decision messages are the session's decisions

    # 3. the callback handler on the same graph shape
    handler = LoopGuardCallbackHandler(policy_file)
    run_id = uuid.uuid4()
    with pytest.raises(LoopGuardInterrupt):
        build_graph(ScriptedChatModel(script=SCRIPT), Tools(), wrap=LoopGuardToolWrapper(policy_file, raise_on_stop=False)).invoke(
            user("find flights"), {"callbacks": [handler], "run_id": run_id}
        )
    results["callbacks"] = rows(handler.session(run_id).decisions)

    # 4. replay of the streamed run's messages, written as an OpenAI chat trace
    recorded = graph.get_state(config).values["messages"]
    trace = tmp_path / "run.json"
    trace.write_text(json.dumps({"run_id": "parity", "messages": to_chat_trace(recorded)}))
    (report,) = replay_file(load_policy(policy_file), trace)
    assert report.error is None
    results["replay"] = rows(reported.decision for reported in report.decisions)

    expected = results["toolnode"]
    assert ("before_call", 1, "continue", "answer") in expected
    assert ("before_call", 2, "continue", "block") in expected
    assert ("before_call", 3, "continue", "cancel") in expected
    assert expected[-1][2] == "stop"
    for name, got in results.items():
        assert got == expected, f"{name} decided differently from the ToolNode wrapper"


def test_same_decisions_through_the_langchain_middleware(policy_file: Path) -> None:
    langchain_adapter = pytest.importorskip("loopguard.adapters.langchain")
    from langchain.agents import create_agent

    wrapper = LoopGuardToolWrapper(policy_file)
    with pytest.raises(LoopGuardInterrupt):
        build_graph(ScriptedChatModel(script=SCRIPT), Tools(), wrap=wrapper).invoke(user("find flights"))
    expected = rows(wrapper.session(wrapper.runs.keys()[0]).decisions)

    middleware = langchain_adapter.LoopGuardMiddleware(policy_file, raise_on_stop=True)
    tools = Tools()
    agent = create_agent(ScriptedChatModel(script=SCRIPT), tools.tools, middleware=[middleware])
    run_id = uuid.uuid4()
    with pytest.raises(LoopGuardInterrupt):
        agent.invoke(user("find flights"), {"run_id": run_id})
    session = middleware.session(str(run_id))
    assert session is not None
    got = rows(session.decisions)
    # Every decision is the same, results included: like the other adapters, the middleware
    # records a short-circuited call's payload as that call's result.
    assert got == expected and got[-1][2] == "stop"
    assert tools.count == {"search": 2}
