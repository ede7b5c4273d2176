"""near_duplicate recognises range arguments by the words of their keys, not by a list of
spellings: Solr start/rows, Elasticsearch from/size, offset/length byte reads,
start_byte/end_byte, camelCase startLine/endLine and the like all read as ranges, while
strings in from/to, or a limit with no low bound, do not."""

from __future__ import annotations

import pytest

from loopguard import Guard, ToolCall, ToolResult
from loopguard.detectors import near_duplicate
from loopguard.detectors.near_duplicate import _command_line_range, _inside, _kind_of, _plain, _query_range, _range_of
from loopguard.tool_names import changes_state


def default_session():
    return Guard.from_policy("builtin:default").session(run_id="ranges")


def run(tool: str, calls: list[dict], outputs: list[str]) -> list[tuple]:
    """Each call with its output through a session; returns (before_call, after_call) decisions."""
    session = default_session()
    decisions = []
    for index, (arguments, output) in enumerate(zip(calls, outputs, strict=True)):
        call = ToolCall(tool, arguments, id=f"c{index}")
        decisions.append((session.before_call(call), session.after_call(call, ToolResult(output))))
    return decisions


def near_duplicate_signals(decision) -> list[tuple[str, list[float]]]:
    return [(signal.kind, signal.evidence.get("range")) for signal in decision.signals if signal.detector == "near_duplicate"]


# (first call, second call): the second reads [20, 40] right after the first, [0, 20].
PAGING_SPELLINGS = {
    "solr-start-rows": ({"q": "x", "start": 0, "rows": 20}, {"q": "x", "start": 20, "rows": 20}),
    "elasticsearch-from-size": ({"from": 0, "size": 20}, {"from": 20, "size": 20}),
    "offset-length": ({"path": "a.log", "offset": 0, "length": 20}, {"path": "a.log", "offset": 20, "length": 20}),
    "start_byte-end_byte": ({"path": "a.log", "start_byte": 0, "end_byte": 20}, {"path": "a.log", "start_byte": 20, "end_byte": 40}),
    "camelCase-startLine-endLine": ({"path": "a.py", "startLine": 0, "endLine": 20}, {"path": "a.py", "startLine": 20, "endLine": 40}),
    "line_from-line_to": ({"path": "a.py", "line_from": 0, "line_to": 20}, {"path": "a.py", "line_from": 20, "line_to": 40}),
    "page_start-rows": ({"q": "x", "page_start": 0, "rows": 20}, {"q": "x", "page_start": 20, "rows": 20}),
    "cursor_start-rows": ({"q": "x", "cursor_start": 0, "rows": 20}, {"q": "x", "cursor_start": 20, "rows": 20}),
    "skip-limit": ({"skip": 0, "limit": 20}, {"skip": 20, "limit": 20}),
    "offset-size": ({"offset": 0, "size": 20}, {"offset": 20, "size": 20}),
    "offset-rows": ({"offset": 0, "rows": 20}, {"offset": 20, "rows": 20}),
    "start-count": ({"start": 0, "count": 20}, {"start": 20, "count": 20}),
    "first-last": ({"first": 0, "last": 20}, {"first": 20, "last": 40}),
    "start_index-count": ({"start_index": 0, "count": 20}, {"start_index": 20, "count": 20}),
    "offset-max_results": ({"q": "x", "offset": 0, "max_results": 20}, {"q": "x", "offset": 20, "max_results": 20}),
    "odata-skip-top": ({"$skip": 0, "$top": 20}, {"$skip": 20, "$top": 20}),
    "digit-strings": ({"start": "0", "rows": "20"}, {"start": "20", "rows": "20"}),
}


@pytest.mark.parametrize("first, second", PAGING_SPELLINGS.values(), ids=PAGING_SPELLINGS.keys())
def test_paging_forward_is_recognised_in_every_spelling(first: dict, second: dict) -> None:
    """Paging on from a page that brought nothing is the pagination context; from a page with
    news it says nothing (other calls' stale results must not make healthy paging a replan)."""
    (_, _), (before, _) = run("fetch", [first, second], ["no results", "no results"])
    assert (before.action.value, near_duplicate_signals(before)) == ("continue", [("pagination", [20.0, 40.0])])
    assert before.signals[0].message == "fetch pages forward (range 20–40)"
    (_, _), (before, _) = run("fetch", [first, second], ["items 1-20", "items 21-40"])
    assert (before.action.value, near_duplicate_signals(before)) == ("continue", [])


def test_offset_length_reads_its_length_not_one_position() -> None:
    """Byte reads that keep covering what was read (blind case k8f): [2048, 6144] lies inside
    [0, 4096] + [4096, 8192], the second re-read, so the signal comes on the fourth call."""
    offsets = [0, 4096, 0, 2048]
    decisions = run(
        "read_bytes",
        [{"path": "var/log/worker.log", "offset": offset, "length": 4096} for offset in offsets],
        [f"<4096 bytes from offset {offset}: line {offset}>" for offset in offsets],
    )
    assert [near_duplicate_signals(before) for before, _ in decisions] == [
        [],
        [],  # paging on from a page with news
        [],  # the first re-read: below the signal's count of repeats - 1 = 2
        [("reread_range", [2048.0, 6144.0])],
    ]
    before, after = decisions[3]
    assert before.signals[0].evidence == {"call": 3, "range": [2048.0, 6144.0], "rereads": 2}
    assert (before.action.value, after.action.value) == ("warn", "replan")  # with no_progress (reread) on the result


def test_start_byte_end_byte_rereads_are_signalled() -> None:
    ranges = [(0, 4096), (4096, 8192), (1024, 5120), (0, 4096)]
    decisions = run(
        "read_file_range",
        [{"path": "var/log/worker.log", "start_byte": low, "end_byte": high} for low, high in ranges],
        [f"bytes {low}-{high}: chunk {low}" for low, high in ranges],
    )
    assert near_duplicate_signals(decisions[3][0]) == [("reread_range", [0.0, 4096.0])]


def test_solr_start_rows_paging_past_the_end_reaches_replan() -> None:
    """Blind case k7e: a short page, then "No more results" pages while start keeps growing."""
    query = "graph neural networks for protein docking"
    starts = range(0, 140, 20)
    outputs = ["Showing results 1-20 of 47", "Showing results 21-40 of 47", "Showing results 41-47 of 47"]
    outputs += [f"No more results (start={start} exceeds total=47)." for start in starts[3:]]
    decisions = run("search_papers", [{"q": query, "start": start, "rows": 20} for start in starts], outputs)
    after = decisions[4][1]
    assert (after.action.value, after.risk) == ("replan", 0.8)
    assert [(signal.detector, signal.kind) for signal in after.signals] == [("near_duplicate", "pagination"), ("no_progress", "empty_result")]
    assert after.signals[0].evidence == {"call": 4, "range": [80.0, 100.0]}
    assert [after.action.value for _, after in decisions] == ["continue"] * 4 + ["replan"] * 3


def test_elasticsearch_from_size_paging_past_the_end_reaches_replan() -> None:
    froms = range(0, 120, 20)
    outputs = ['{"hits": {"total": 45, "hits": [%s]}}' % ", ".join(f'{{"_id": "{item}"}}' for item in range(start, min(start + 20, 45))) for start in froms[:3]]
    outputs += ['{"hits": {"total": 45, "hits": []}}'] * 3
    decisions = run("es_search", [{"index": "logs", "query": "status:500", "from": start, "size": 20} for start in froms], outputs)
    # {"hits": {"total": 45, "hits": []}} is an empty answer in its envelope: the second one is enough.
    assert [after.action.value for _, after in decisions] == ["continue"] * 4 + ["replan"] * 2
    assert [(signal.kind, signal.evidence) for signal in decisions[4][1].signals] == [
        ("pagination", {"call": 4, "range": [80.0, 100.0]}),
        ("empty_result", {"call": 4, "stale_results": 2}),
    ]


def test_page_with_a_page_size_is_still_the_page_number() -> None:
    decisions = run("list_issues", [{"repo": "acme/widgets", "page": page, "per_page": 30} for page in (1, 2)], ["[]", "[]"])
    assert near_duplicate_signals(decisions[1][0]) == [("pagination", [2.0, 3.0])]


def test_dates_in_from_and_to_are_not_paging() -> None:
    months = [("2024-06-01", "2024-06-30"), ("2024-07-01", "2024-07-31"), ("2024-08-01", "2024-08-31")]
    decisions = run("export", [{"table": "events", "from": low, "to": high} for low, high in months], ["export queued"] * 3)
    assert [near_duplicate_signals(before) for before, _ in decisions] == [[], [], []]


@pytest.mark.parametrize(
    "arguments, expected",
    [
        ({"q": "x", "start": 40, "rows": 20}, ((40.0, 60.0), ("start", "rows"))),
        ({"from": 40, "size": 20}, ((40.0, 60.0), ("from", "size"))),
        ({"path": "p", "offset": 2048, "length": 4096}, ((2048.0, 6144.0), ("offset", "length"))),
        ({"start_line": 3, "end_line": 9, "max_results": 5}, ((3.0, 9.0), ("start_line", "end_line"))),  # the pair sharing "line" wins
        ({"start_offset": 3, "end_offset": 9}, ((3.0, 9.0), ("start_offset", "end_offset"))),
        ({"startLineNumber": 1, "endLine": 5}, ((1.0, 5.0), ("startLineNumber", "endLine"))),  # sharing one word is enough
        ({"offset": 40}, ((40.0, 41.0), ("offset",))),  # a low bound alone reads one position
        ({"offset": 0, "end_time": 99}, ((0.0, 1.0), ("offset",))),  # a high bound of another thing is no partner
        ({"start": 10, "end": -1}, ((10.0, 11.0), ("start",))),  # "to the end" is no upper bound
        ({"skip": 5, "limit": 0}, ((5.0, 6.0), ("skip",))),  # nor is an empty length
        ({"page": 3, "page_size": 50}, ((3.0, 4.0), ("page",))),
        ({"pageNumber": "7"}, ((7.0, 8.0), ("pageNumber",))),
        ({"view_range": [10, 40]}, ((10.0, 40.0), ("view_range",))),
    ],
)
def test_range_of_reads_the_bounds_and_keys(arguments: dict, expected: tuple) -> None:
    assert tuple(_range_of(arguments)) == expected


@pytest.mark.parametrize(
    "arguments",
    [
        {"from": "SFO", "to": "JFK"},
        {"from": "2024-06-01", "to": "2024-06-30"},
        {"start": "13:30", "end": "14:30"},
        {"size": "large"},
        {"limit": 10},
        {"count": 3},
        {"q": "x", "max_results": 5},
        {"strategy": "summarize_oldest", "keep_last": 20},
        {"first_name": "Priya", "last_name": "Ramaswamy"},
        {"ttl": 5, "time_to_live": 60},  # a range word inside a name gives it no role
        {"start_year": 2019, "end_year": 2021},  # bounds of a filter, not positions in the data
        {"price_from": 100, "price_to": 300},
        {"from_account": 5000, "to_account": 7009, "amount": 2100},
        {"start_time": 1718000000, "end_time": 1718003600},
        {"offset": True},  # a bool is not a number
        {"view_range": [1, "end"]},
    ],
)
def test_healthy_arguments_are_not_ranges(arguments: dict) -> None:
    assert _range_of(arguments) is None


@pytest.mark.parametrize(
    "arguments, plain",
    [
        ({"limit": 10, "status": "open"}, True),  # a length or high bound alone cannot make a range
        ({"q": "x", "max_results": 5}, True),
        ({"offset": 10}, False),
        ({"Page": 2}, False),
        ({"requestId": "abc"}, False),  # a throwaway key, in camelCase
    ],
)
def test_plain_arguments_skip_the_shape(arguments: dict, plain: bool) -> None:
    assert _plain(arguments) is plain


def test_key_kinds_are_memoised_in_a_bounded_table() -> None:
    assert _kind_of("startLine") is _kind_of("startLine")
    assert (_kind_of("line_to").role, _kind_of("line_to").qualifier) == ("high", frozenset({"line"}))
    for index in range(near_duplicate._KEY_KINDS_LIMIT + 10):
        _kind_of(f"field_{index}")
    assert 0 < len(near_duplicate._KEY_KINDS) <= near_duplicate._KEY_KINDS_LIMIT
    assert _kind_of("rows").role == "length"  # classified again after the table was cleared


def test_only_the_first_bounds_are_paired() -> None:
    # Pairing is quadratic in the bounds, so a call naming hundreds of them pairs the first 16
    # low bounds with the first 16 partners: the 20th pair is out of reach, the first is read.
    arguments = {**{f"start_{index}": index * 100 for index in range(300)}, **{f"end_{index}": index * 100 + 50 for index in range(300)}}
    assert tuple(_range_of(arguments)) == ((0.0, 50.0), ("start_0", "end_0"))
    late = {**{f"start_{index}": 0 for index in range(16)}, "start_19": 1900, "end_19": 1950}
    assert tuple(_range_of(late)) == ((0.0, 1.0), ("start_0",))  # start_19 is pairable, but not among the first 16 low bounds


def test_line_ranges_printed_by_shell_commands_are_ranges() -> None:
    assert _command_line_range("sed -n '47900,47960p' logs/worker-3.log") == ((47900.0, 47961.0), "<lines> logs/worker-3.log")
    assert _command_line_range('nl -ba src/app.py | sed -n "120,+40p"') == ((120.0, 161.0), "nl -ba src/app.py | <lines>")
    assert _command_line_range("awk 'NR>=10 && NR<=20' f.txt") == ((10.0, 21.0), "awk '<lines>' f.txt")
    assert [_command_line_range(command) for command in ("sed -i 's/a/b/' f", "sed -n '/start/,/end/p' f", "sed -n 5,3p f")] == [None, None, None]
    # Shifted views of one unchanged log: the third view is the second re-read (blind case st-near-05).
    lines = "2024-05-14T09:18:20Z INFO worker-3 req={} processed batch ok"
    views = ["47900,47960p", "47890,47970p", "47900,47960p", "47895,47965p"]
    decisions = run("bash", [{"command": f"sed -n '{view}' logs/worker-3.log"} for view in views], [lines.format(index) for index in range(4)])
    assert near_duplicate_signals(decisions[3][0]) == [("reread_range", [47895.0, 47966.0])]
    assert decisions[3][1].action.value == "replan"
    # Paging through a file with sed is pagination, and healthy.
    pages = run("bash", [{"command": f"nl -ba src/app.py | sed -n '{start},{start + 79}p'"} for start in (1, 81, 161)], ["code 1", "code 2", "code 3"])
    assert [near_duplicate_signals(before) for before, _ in pages] == [[], [], []]
    assert {after.action.value for _, after in pages} == {"continue"}


def test_a_range_read_again_after_an_edit_is_no_re_read() -> None:
    """Views of a file between edits (break-it h8): an edit makes what was read read otherwise."""
    commands = ["sed -n '1,80p' app.py", "sed -i 's/foo/bar/' app.py", "sed -n '20,40p' app.py", "sed -i 's/baz/qux/' app.py", "sed -n '25,35p' app.py"]
    decisions = run("bash", [{"command": command} for command in commands], ["v0 lines 1-80", "", "v1 lines 20-40 (bar)", "", "v2 lines 25-35 (qux)"])
    assert {after.action.value for _, after in decisions} <= {"continue", "warn"}
    assert [near_duplicate_signals(before) for before, _ in decisions] == [[]] * 5
    # The same views with no edit between are re-reads.
    views = run("bash", [{"command": command} for command in commands[::2] + commands[::2]], ["lines"] * 6)
    assert near_duplicate_signals(views[4][0]) == [("reread_range", [20.0, 41.0])]
    assert [changes_state("bash", {"command": command}) for command in (
        "sed -i 's/a/b/' f", "echo x > f.txt", "echo x>f", "cat a >> b", "git checkout -- f", "perl -pi -e 's/a/b/' f", "black .",
        "python3 - <<'EOF'\nprint(1)\nEOF", "python -c \"open('f', 'w').write('x')\"",
        "make 2>&1 | tail", "ls >/dev/null", "awk 'NR>200 && NR<=250' f", "awk '$3 > 100' f", "grep -n 'retries > 3' app.py",
        "pytest | tee test.log", "git stash list", "sed -n '1,80p' f",
    )] == [True] * 9 + [False] * 8
    assert (changes_state("str_replace_editor", {"command": "str_replace", "path": "a"}), changes_state("str_replace_editor", {"command": "view", "path": "a"})) == (True, False)
    assert [changes_state(tool, {"file_path": "a"}) for tool in ("Edit", "MultiEdit", "mcp__filesystem__edit_file", "search_and_replace", "Read", "send_message", "update_plan")] == [
        True, True, True, True, False, False, False,
    ]


def test_a_url_that_pages_by_its_query_is_a_range() -> None:
    assert _query_range("https://api.example.test/users?limit=50&offset=100") == ((100.0, 150.0), "https://api.example.test/users?<range>")
    assert _query_range('gh api -i "repos/acme/shop/pulls?state=closed&per_page=10&page=4"') == (
        (4.0, 5.0), 'gh api -i "repos/acme/shop/pulls?state=closed&per_page=10<range>"',
    )
    assert [_query_range(url) for url in ("https://x.test/a?q=cats", "https://x.test/search?from=SFO&to=JFK", "no url here?")] == [None, None, None]
    # Paging past the end by the URL, each empty page printed with its headers (blind case
    # b6-stuck-pastend-github-rest-page-numbers).
    empty = "HTTP/2.0 200 OK\nContent-Type: application/json\nLink: <https://api.github.com/x?page=3>; rel=\"prev\"\n\n[]"
    outputs = ["HTTP/2.0 200 OK\n\n[{\"number\": 1}]", "HTTP/2.0 200 OK\n\n[{\"number\": 2}]", empty, empty, empty]
    decisions = run("bash", [{"command": f'gh api -i "repos/acme/shop/pulls?per_page=10&page={page}"'} for page in range(1, 6)], outputs)
    assert [after.action.value for _, after in decisions] == ["continue", "continue", "continue", "replan", "replan"]


def test_a_view_shifted_by_a_few_lines_is_a_re_read() -> None:
    """Blind round 7: 140-190, 138-188, 142-192, then 140-190 and 141-191 read almost nothing new."""
    assert _inside((140.0, 191.0), [(138.0, 189.0), (142.0, 193.0)])
    assert _inside((0.0, 100.0), [(0.0, 91.0)]) and not _inside((0.0, 100.0), [(0.0, 89.0)])
    assert not _inside((45.0, 95.0), [(0.0, 50.0)])  # paging on with an overlap of a few rows
    assert not _inside((5.0, 6.0), [(4.0, 5.0)])  # the next page number


def test_a_url_argument_that_pages_is_read_and_exactly_ninety_percent_is_a_re_read() -> None:
    """From the docs check: a URL with no other text argument was skipped as plain arguments,
    and 90 % coverage exactly failed a float comparison."""
    assert not _plain({"url": "https://api.example.test/users?limit=50&offset=100"})
    pages = run("http_get", [{"url": f"https://api.example.test/users?limit=50&offset={offset}"} for offset in (100, 150, 200)], ['{"users": []}'] * 3)
    assert near_duplicate_signals(pages[1][0]) == [("pagination", [150.0, 200.0])]
    assert _inside((10.0, 110.0), [(0.0, 100.0)])
