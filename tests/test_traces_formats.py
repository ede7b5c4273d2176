"""Reading traces: the step format, OpenAI chat messages, JSON Lines, errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopguard.signature import parse_arguments
from loopguard.traces import (
    AgentMessage,
    Batch,
    TraceFileError,
    TraceHandoff,
    TraceIOError,
    TraceToolCall,
    TraceToolResult,
    UserMessage,
    parse_trace,
    read_trace,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "traces"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
TAU = SHARED / "tau-bench" / "gpt-4o-airline.json"
CASES = SHARED / "cases"


def write(tmp_path: Path, data: Any, name: str = "trace.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def kinds(items: list[Any]) -> list[str]:
    return [type(item).__name__ for item in items]


# -- step format ---------------------------------------------------------------


def test_step_with_tool_is_a_call_then_its_result(tmp_path: Path) -> None:
    path = write(tmp_path, {"run_id": "r", "steps": [{"agent": "a", "tool": "search", "args": {"q": "x"}, "output": "[]"}]})
    [run] = read_trace(path)
    assert run.run_id == "r" and run.format == "steps" and run.steps == 1 and run.error is None
    call, result = run.items
    assert isinstance(call, TraceToolCall) and isinstance(result, TraceToolResult)
    assert call.call.name == "search" and call.call.arguments == {"q": "x"} and call.call.agent == "a"
    assert result.call is call.call and result.result.output == "[]" and result.result.error is None


@pytest.mark.parametrize(
    "step",
    [
        {"tool_name": "search", "arguments": {"q": "x"}, "result": "none", "is_error": True, "from": "lead", "agent": "a"},
        {"name": "search", "input": {"q": "x"}, "observation": "none", "failed": True, "from_agent": "lead", "agent": "a"},
        {"tool": "search", "tool_input": {"q": "x"}, "output": "none", "error": True, "caller": "lead", "agent_name": "a"},
    ],
)
def test_step_aliases(step: dict[str, Any]) -> None:
    [run] = parse_trace([step])
    assert run.error is None
    handoff, call, result = run.items
    assert isinstance(handoff, TraceHandoff) and handoff.handoff.agent == "a" and handoff.handoff.caller == "lead"
    assert isinstance(call, TraceToolCall) and call.call.name == "search" and call.call.arguments == {"q": "x"}
    assert isinstance(result, TraceToolResult) and result.result.output == "none" and result.result.error is True


def test_handoff_only_step_and_agent_message_step() -> None:
    [run] = parse_trace({"steps": [{"agent": "b", "caller": "a", "output": "handing over"}, {"agent": "b", "output": "done"}]})
    assert kinds(run.items) == ["TraceHandoff", "AgentMessage"]
    assert run.items[1] == AgentMessage(agent="b", text="done", step=1)


def test_error_message_string_marks_failure_and_becomes_output() -> None:
    [run] = parse_trace([{"tool": "bash", "args": {"command": "make"}, "error": "no rule to make target"}])
    result = run.items[1]
    assert isinstance(result, TraceToolResult)
    assert result.result.error is True and result.result.output == "no rule to make target"


def test_error_written_as_text_true_or_false_is_the_boolean() -> None:
    steps = [{"tool": "t", "args": {"n": n}, "output": "done", "error": flag} for n, flag in enumerate(("false", "True", " ", "boom"))]
    [run] = parse_trace(steps)
    results = [item.result for item in run.items if isinstance(item, TraceToolResult)]
    assert [(result.error, result.output) for result in results] == [(False, "done"), (True, "done"), (None, "done"), (True, "done")]


def test_user_and_usage_keys_in_steps() -> None:
    [run] = parse_trace([{"user": "hi"}, {"usage": {"prompt_tokens": 10, "completion_tokens": 2}, "tool": "t"}])
    assert kinds(run.items) == ["UserMessage", "ModelCall", "TraceToolCall", "TraceToolResult"]
    assert run.items[1].usage.total_tokens == 12  # type: ignore[union-attr]


def test_run_list_default_ids_and_meta(tmp_path: Path) -> None:
    path = write(tmp_path, [{"steps": [], "label": "healthy"}, {"steps": [], "acceptable_window": [1, 2]}], "my-runs.json")
    runs = read_trace(path)
    assert [run.run_id for run in runs] == ["my-runs#0", "my-runs#1"]
    assert runs[0].meta == {"label": "healthy"} and runs[1].meta == {"acceptable_window": [1, 2]}


def test_single_bare_step_list_takes_the_file_stem(tmp_path: Path) -> None:
    [run] = read_trace(write(tmp_path, [{"tool": "ls"}], "session-7.json"))
    assert run.run_id == "session-7"


def test_malformed_step_names_file_run_and_step_and_other_runs_still_parse() -> None:
    path = FIXTURES / "malformed.json"
    runs = read_trace(path)
    assert [run.run_id for run in runs] == ["good-1", "abc", "good-2"]
    assert runs[0].error is None and runs[2].error is None
    assert str(runs[1].error) == f"{path}: run 'abc': step 3: 'args' must be an object, got list"
    assert kinds(runs[2].items) == ["AgentMessage"]


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ("just text", "step 0: must be an object, got string"),
        ({"tool": 3}, "step 0: 'tool' must be a string, got number"),
        ({"tool": "t", "args": '{"q": "x",}', "output": ""}, """step 0: 'args' must be an object, got a string that is not valid JSON: '{"q": "x",}'"""),
        ({"tool": "t", "is_error": 1}, "step 0: 'is_error' must be a boolean or a message, got number"),
        ({"caller": "a", "output": "x"}, "step 0: a handoff from 'a' needs 'agent' (the agent receiving control)"),
        ({"agent": "a"}, "step 0: has no 'tool', 'caller', 'output' or 'user'"),
        ({"args": {"q": 1}, "output": "x"}, "step 0: has 'args' but no 'tool' (or 'tool_name', 'name')"),
        ({"tool_input": {"q": 1}}, "step 0: has 'tool_input' but no 'tool' (or 'tool_name', 'name')"),
        ({"arguments": {"q": 1}, "agent": "a"}, "step 0: has 'arguments' but no 'tool' (or 'tool_name', 'name')"),
    ],
)
def test_malformed_step_messages(step: Any, message: str) -> None:
    [run] = parse_trace({"run_id": "r", "steps": [step]}, source="t.json")
    assert str(run.error) == f"t.json: run 'r': {message}"


def test_steps_must_be_a_list() -> None:
    [run] = parse_trace({"run_id": "r", "steps": {"tool": "x"}}, source="t.json")
    assert str(run.error) == "t.json: run 'r': 'steps' must be a list, got object"


def test_run_that_is_not_a_run_is_an_error_for_that_run_only() -> None:
    runs = parse_trace([{"run_id": "a", "steps": []}, {"run_id": "b", "stuff": 1}], source="t.json")
    assert runs[0].error is None
    assert str(runs[1].error).startswith("t.json: run 'b': a run must have 'steps' or 'messages'")


def _label_errors(field: str, values: list[Any]) -> list[str | None]:
    """The error of each labelled stuck run ``r0``, ``r1``, ... whose ``field`` is each value."""
    step = {"tool": "a", "args": {}, "output": "x"}
    runs = parse_trace([{"run_id": f"r{index}", "label": "stuck", field: value, "steps": [step]} for index, value in enumerate(values)], source="t.json")
    return [str(run.error) if run.error else None for run in runs]


def test_a_malformed_acceptable_window_is_an_error_for_that_run_only() -> None:
    expected = "'acceptable_window' must be [first, last]: two step indexes, first <= last, got"
    assert _label_errors("acceptable_window", [[5], [7, 3], ["1", "2"], [1.0, 2], [-1, 2], {"lo": 1}, [1, 2], None]) == [
        f"t.json: run 'r0': {expected} [5]",
        f"t.json: run 'r1': {expected} [7, 3]",
        f't.json: run \'r2\': {expected} ["1", "2"]',
        f"t.json: run 'r3': {expected} [1.0, 2]",
        f"t.json: run 'r4': {expected} [-1, 2]",
        f't.json: run \'r5\': {expected} {{"lo": 1}}',
        None,
        None,  # no window: any intervention is in time
    ]


def test_acceptable_decisions_must_be_a_list_of_actions() -> None:
    expected = "'acceptable_decisions' must be a list of actions (continue, warn, replan, pause, stop), got"
    assert _label_errors("acceptable_decisions", ["stop", ["replan", "stopp"], [3], ["replan", "stop"]]) == [
        f't.json: run \'r0\': {expected} "stop"',
        f't.json: run \'r1\': {expected} ["replan", "stopp"]',
        f"t.json: run 'r2': {expected} [3]",
        None,
    ]


def test_a_mistyped_label_is_an_error_for_that_run_only() -> None:
    step = {"tool": "a", "args": {}, "output": "x"}
    runs = parse_trace(
        [{"run_id": "typo", "label": "stcuk", "steps": [step]}, {"run_id": "odd", "label": 3, "steps": [step]},
         {"run_id": "fine", "label": "healthy", "steps": [step]}],
        source="t.json",
    )
    assert [str(run.error) if run.error else None for run in runs] == [
        "t.json: run 'typo': 'label' must be 'stuck' or 'healthy', got 'stcuk'",
        "t.json: run 'odd': 'label' must be 'stuck' or 'healthy', got number",
        None,
    ]


def test_string_arguments_holding_a_json_object_are_kept_as_given() -> None:
    [run] = parse_trace([{"tool": "t", "args": '{"a": 1}'}])
    assert run.items[0].call.arguments == '{"a": 1}'  # type: ignore[union-attr]


@pytest.mark.parametrize("arguments", [None, "", "  ", "null", {}])
def test_a_step_without_arguments_is_a_call_without_arguments(arguments: Any) -> None:
    [run] = parse_trace([{"tool": "list_all", "args": arguments}, {"tool": "list_all", "args": "{}"}])
    assert run.error is None
    assert run.items[0].call.arguments == {}  # type: ignore[union-attr]


# -- chat messages -------------------------------------------------------------


def test_chat_batch_of_parallel_calls_and_results_paired_by_id() -> None:
    [run] = read_trace(FIXTURES / "chat_batch.json")
    assert run.run_id == "weather-fanout" and run.format == "chat" and run.steps == 2
    assert kinds(run.items) == ["UserMessage", "Batch", "TraceToolResult", "TraceToolResult", "AgentMessage"]
    batch = run.items[1]
    assert isinstance(batch, Batch)
    assert [entry.call.id for entry in batch.calls] == ["call_1", "call_2"]
    assert [entry.step for entry in batch.calls] == [0, 1]
    assert batch.calls[0].call.arguments == '{"city": "Paris"}'  # kept as given
    assert parse_arguments(batch.calls[0].call.arguments) == {"city": "Paris"}
    tokyo, paris = run.items[2], run.items[3]
    assert isinstance(tokyo, TraceToolResult) and tokyo.call is batch.calls[1].call and tokyo.step == 1
    assert tokyo.result.output == "rain" and tokyo.result.error is None
    assert isinstance(paris, TraceToolResult) and paris.call is batch.calls[0].call and paris.result.error is True
    assert run.items[-1] == AgentMessage(agent=None, text="Paris: sunny, Tokyo: rain.", step=1)


def test_bare_message_list_and_messages_object_and_legacy_function_call() -> None:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": None, "function_call": {"name": "lookup", "arguments": "{}"}},
        {"role": "function", "name": "lookup", "content": "found"},
    ]
    for data in (messages, {"messages": messages}):
        [run] = parse_trace(data)
        assert kinds(run.items) == ["UserMessage", "TraceToolCall", "TraceToolResult"]
        assert run.items[0] == UserMessage(text="hi", step=0)
        assert run.items[2].result.output == "found"  # type: ignore[union-attr]


def test_single_call_is_not_a_batch_and_agent_name_is_kept() -> None:
    [run] = parse_trace(
        [
            {"role": "assistant", "name": "planner", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c", "content": "ok"},
        ]
    )
    assert isinstance(run.items[0], TraceToolCall) and run.items[0].call.agent == "planner"


def test_chat_errors_name_the_message() -> None:
    [run] = parse_trace(
        {"run_id": "c", "messages": [{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "nope", "content": "?"}]},
        source="chat.json",
    )
    assert str(run.error) == "chat.json: run 'c': message 1: 'tool_call_id' 'nope' matches no unanswered tool call"
    [run] = parse_trace({"run_id": "c", "messages": [{"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}]})
    assert str(run.error) == "<memory>: run 'c': message 0: tool call 0: 'function.name' must be a non-empty string, got null"


@pytest.mark.shared_data
def test_tau_bench_file() -> None:
    runs = read_trace(TAU)
    assert len(runs) == 200
    assert all(run.error is None and run.format == "chat" for run in runs)
    assert sum(len(run.tool_calls) for run in runs) == 1164
    assert max(run.steps for run in runs) == 27
    assert runs[0].run_id == "task0-trial0"
    assert len({run.run_id for run in runs}) == 200
    assert runs[0].meta["reward"] in (0.0, 1.0) and "traj" not in runs[0].meta
    first_call = runs[0].tool_calls[0]
    assert first_call.name == "get_user_details" and isinstance(first_call.arguments, str)
    results = [item for run in runs for item in run.items if isinstance(item, TraceToolResult)]
    assert len(results) == 1164 and all(result.result.error is None for result in results)


@pytest.mark.shared_data
@pytest.mark.parametrize(("name", "count"), [("basic.json", 7), ("incidents.json", 12)])
def test_cases_files(name: str, count: int) -> None:
    runs = read_trace(CASES / name)
    assert len(runs) == count
    assert all(run.error is None and run.format == "steps" for run in runs)
    assert all(run.steps == len(json.loads((CASES / name).read_text()) [index]["steps"]) for index, run in enumerate(runs))
    assert all("label" in run.meta for run in runs)


@pytest.mark.shared_data
def test_cases_handoff_triangle_and_transfer_pingpong() -> None:
    basic = {run.run_id: run for run in read_trace(CASES / "basic.json")}
    assert kinds(basic["basic-handoff-triangle"].items) == ["TraceHandoff"] * 6
    incidents = {run.run_id: run for run in read_trace(CASES / "incidents.json")}
    run = incidents["rw13-adk-transfer-pingpong"]
    assert kinds(run.items[:3]) == ["TraceHandoff", "TraceToolCall", "TraceToolResult"]
    assert run.items[0].handoff.caller == "user"  # type: ignore[union-attr]


# -- JSON Lines and file errors ------------------------------------------------


def test_jsonl_one_run_per_line() -> None:
    runs = read_trace(FIXTURES / "runs.jsonl")
    assert [run.run_id for run in runs] == ["line-a", "line-b"]
    assert [run.steps for run in runs] == [1, 2]


def test_jsonl_one_step_per_line() -> None:
    [run] = read_trace(FIXTURES / "steps.jsonl")
    assert run.run_id == "steps" and run.steps == 3 and len(run.tool_calls) == 3


def test_jsonl_detected_without_the_suffix(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_text('{"role": "user", "content": "a"}\n{"role": "assistant", "content": "b"}\n')
    [run] = read_trace(path)
    assert kinds(run.items) == ["UserMessage", "AgentMessage"]


def test_invalid_json_names_file_line_and_column() -> None:
    path = FIXTURES / "invalid.json"
    with pytest.raises(TraceFileError) as info:
        read_trace(path)
    assert str(info.value) == f"{path}: line 3, column 19: invalid JSON: Expecting value"


def test_invalid_jsonl_line_is_that_runs_error_and_the_others_still_read() -> None:
    path = FIXTURES / "broken.jsonl"
    first, second = read_trace(path)
    assert (first.run_id, first.error) == ("ok", None)
    assert second.run_id == "broken (line 2)"
    assert str(second.error) == f"{path}: line 2, column 32: invalid JSON: Expecting value"


def test_invalid_jsonl_line_of_a_one_run_steps_file_fails_the_file(tmp_path: Path) -> None:
    path = tmp_path / "steps.jsonl"
    path.write_text('{"tool": "a", "args": {}, "output": "x"}\n{"tool": \n')
    with pytest.raises(TraceFileError) as info:
        read_trace(path)
    assert str(info.value) == f"{path}: line 2, column 10: invalid JSON: Expecting value"


def test_missing_file_is_an_io_error(tmp_path: Path) -> None:
    with pytest.raises(TraceIOError) as info:
        read_trace(tmp_path / "nope.json")
    assert str(info.value).startswith(f"{tmp_path / 'nope.json'}: cannot read:")


def test_not_a_trace(tmp_path: Path) -> None:
    with pytest.raises(TraceFileError) as info:
        read_trace(write(tmp_path, {"hello": 1}))
    assert "not a trace" in str(info.value) and "'hello'" in str(info.value)


def test_chat_step_indexes_of_usage_and_messages() -> None:
    [run] = parse_trace(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "usage": {"prompt_tokens": 5, "completion_tokens": 1}, "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "assistant", "usage": {"prompt_tokens": 9, "completion_tokens": 3}, "tool_calls": [{"id": "b", "function": {"name": "g", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "b", "content": "2"},
            {"role": "assistant", "content": "done"},
        ]
    )
    assert kinds(run.items) == [
        "UserMessage", "ModelCall", "TraceToolCall", "TraceToolResult", "ModelCall", "TraceToolCall", "TraceToolResult", "AgentMessage",
    ]
    assert [item.step for item in run.items] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert run.steps == 2


def test_a_step_key_close_to_a_known_one_is_an_error_and_other_keys_are_metadata(tmp_path: Path) -> None:
    path = tmp_path / "typos.json"
    path.write_text(json.dumps([
        {"run_id": "a", "steps": [{"tol": "x", "args": {}}]},
        {"run_id": "b", "steps": [{"tool": "x", "args": {}, "outptu": "z"}]},
        {"run_id": "c", "steps": [{"tool": "x", "args": {}, "output": "z", "thought": "hm", "timestamp": 3}]},
    ]))
    runs = read_trace(path)
    assert [str(run.error) if run.error else None for run in runs] == [
        f"{path}: run 'a': step 0: unknown key 'tol' (did you mean 'tool'?)",
        f"{path}: run 'b': step 0: unknown key 'outptu' (did you mean 'output'?)",
        None,
    ]


def test_a_message_step_may_carry_a_null_tool_and_empty_arguments() -> None:
    [run] = parse_trace({"run_id": "r", "steps": [{"agent": "a", "tool": None, "args": {}, "output": "Fetching the next page."}]}, source="t.json")
    assert run.error is None
    assert kinds(run.items) == ["AgentMessage"]
    assert run.items[0].text == "Fetching the next page."
