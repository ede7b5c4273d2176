"""Signatures and observations: canonical forms, odd input, and word-level matching."""

from __future__ import annotations

import math
import random

import pytest

from loopguard.observations import PERMANENT, RETRYABLE, classify_failure, is_acknowledgement, is_pending, normalize, observe, status_code
from loopguard.signature import MAX_STRING, canonical_json, signature_of


def test_key_order_whitespace_and_number_forms_do_not_change_a_signature() -> None:
    first = signature_of("search", {"q": "x", "page": 1, "opts": {"b": 2.0, "a": [1, 2]}})
    second = signature_of("search", '{ "opts": {"a": [1, 2], "b": 2}, "page": 1.0, "q": "x" }')
    assert first.text == second.text == 'search({"opts":{"a":[1,2],"b":2},"page":1,"q":"x"})'
    assert first.key == second.key
    assert signature_of("search", {"q": "x", "page": True}).text != signature_of("search", {"q": "x", "page": 1}).text


def test_an_integral_float_is_its_int_at_any_size() -> None:
    # JSON reads 1e16 and 10000000000000000 as one number; Python agrees (1e16 == 10**16).
    assert signature_of("t", {"n": 1e16}).key == signature_of("t", {"n": 10**16}).key
    assert signature_of("t", '{"n": 1e16}').text == signature_of("t", '{"n": 10000000000000000}').text == 't({"n":10000000000000000})'
    # 1e300 is not exactly 10**300, so the two stay apart, as they compare in Python.
    assert signature_of("t", [1e300]).key != signature_of("t", [10**300]).key
    assert signature_of("t", {"n": 1e16 + 0.5}).text == signature_of("t", {"n": 1e16}).text  # (1e16 + 0.5 == 1e16 as a float)
    assert signature_of("t", {"n": 2.5e15 + 0.5}).text == 't({"n":2500000000000000.5})'


def test_odd_arguments_never_raise() -> None:
    cyclic: dict = {"name": "loop"}
    cyclic["self"] = cyclic
    assert canonical_json(cyclic) == '{"name":"loop","self":"<cycle>"}'
    assert canonical_json({"x": math.nan, "y": -math.inf}) == '{"x":"NaN","y":"-Infinity"}'
    huge = signature_of("write", {"text": "a" * (MAX_STRING + 1)})
    assert huge.text.startswith('write({"text":"<str len=2049 digest=')
    assert signature_of("t", {1: {3, 1, 2}, "b": b"\x00\x01"}).text == 't({"1":[1,2,3],"b":"<bytes len=2 digest=fb34657ab5e1f0e4>"})'
    deep: list = []
    node = deep
    for _ in range(100):
        node.append([])
        node = node[0]
    assert "<deep digest=" in canonical_json(deep)
    assert signature_of("t", "not json {").text == 't("not json {")'


def test_random_values_never_crash_a_signature() -> None:
    rng = random.Random(3)
    atoms = [None, True, 0, -1, 2**70, 1.5, math.nan, "", "é", "x" * 5000, b"b", object(), (1, 2), frozenset({1})]

    def value(depth: int):
        if depth > 4 or rng.random() < 0.4:
            return rng.choice(atoms)
        if rng.random() < 0.5:
            return [value(depth + 1) for _ in range(rng.randint(0, 4))]
        return {rng.choice(["a", "b", 3, None, 2.0]): value(depth + 1) for _ in range(rng.randint(0, 4))}

    for _ in range(500):
        assert signature_of("tool", value(0)).text.startswith("tool(")


def test_volatile_parts_are_normalised_and_progress_is_kept() -> None:
    assert normalize("stored record 7f02") == normalize("stored record 7f03") == "stored record <id>"
    assert normalize("at 2024-05-13T10:00:00Z, request 1234 id 123e4567-e89b-12d3-a456-426614174000") == "at <time>, request <counter> id <uuid>"
    assert normalize("running 10%") != normalize("running 60%")
    assert normalize("epoch 1/6 - loss 2.31") != normalize("epoch 2/6 - loss 1.87")
    assert normalize("ids 1-50") != normalize("ids 51-100")


@pytest.mark.parametrize(
    ("text", "empty"),
    [("no results", True), ("[]", True), ("0 rows returned (total reported by server: 180)", True), ("nothing to summarize", True),
     ("ids 1-50", False), ("no rule to make target", False), ("4 consultants: C-101", False)],
)
def test_empty_observations(text: str, empty: bool) -> None:
    assert observe(text).empty is empty


def test_status_codes_and_failure_words_are_matched_as_words() -> None:
    assert status_code("HTTP 429 Too Many Requests") == 429
    assert status_code("403 forbidden") == 403
    assert status_code("page 1401 of the author index") is None
    assert status_code("401 rows exported") is None  # at the start, a code needs its reason phrase
    assert status_code("404 Not Found") == 404
    assert status_code("listed 401 rows") is None
    assert observe("page 1401 of the author index").error is False
    assert classify_failure("Error: author not allowed to merge") == "deterministic"
    assert classify_failure("Error: author field is empty") == "deterministic"
    assert classify_failure("401 Unauthorized: invalid API key") == PERMANENT
    assert classify_failure("Error: the request timed out") == RETRYABLE
    assert classify_failure("HTTP 503 Service Unavailable") == RETRYABLE
    assert classify_failure("Error: reservation not found") == PERMANENT
    assert classify_failure("Error: gift card balance is not enough") == "deterministic"


def test_errors_are_inferred_when_the_result_has_no_flag() -> None:
    assert observe("Error: flight HAT030 not available").error is True
    assert observe("make: *** No rule to make target 'x'.\n[exit code 2]").error is True
    assert observe("up to date\n[exit code 0]").error is False
    assert observe({"error": "boom"}).error is True
    assert observe("Context window exceeded. Keeping events with IDs: {0, 1}").error is True
    assert observe("all good", error=True).error is True


def test_pending_states() -> None:
    assert is_pending("state: RUNNING") is True
    assert is_pending("status: queued") is True
    assert is_pending("state: SUCCEEDED") is False
    assert is_pending("job failed while running") is False


@pytest.mark.parametrize(
    ("text", "acknowledgement"),
    [("ok", True), ("Email sent.", True), ('{"status": "ok"}', True), ('{"success": true}', True), ("42", True), ("true", True),
     ("false", False), ("0", False), ("-1", False), ("null", False), ('{"ok": false}', False), ("Message could not be sent", False),
     ("Message wasn't sent.", False), ("Updated 0 rows", False), ("OK - skipped (duplicate)", False), ('{"ok": true, "results": []}', False),
     ("ok \u2014 nicht gesendet", False), ("no", False), ("", False), ("[]", False), ("Here are the results: a, b, c", False),
     ("saved " + "x" * 60, False), ("Change to be applied", False), ("Was the email sent", False),
     ('{"result": [ ], "ok": true}', False), ('{"ok": true, "result": ""}', False), ("Email has been sent", True)],
)
def test_acknowledgements(text: str, acknowledgement: bool) -> None:
    assert is_acknowledgement(text) is acknowledgement


def test_values_past_the_limits_still_tell_calls_apart() -> None:
    rows = {signature_of("write_rows", {"rows": list(range(1000)) + [tail]}).key for tail in range(3)}
    assert len(rows) == 3


def test_unreadable_values_canonicalise_to_a_placeholder() -> None:
    class Hostile:
        def __getattribute__(self, name: str):
            raise RuntimeError("no")

    assert signature_of("t", {"a": Hostile()}).text.startswith('t({"a":"<')
    assert signature_of("t", {"n": 10**5000}).text == 't({"n":"<int 16610 bits digest=6af98046b4cee0be>"})'
    # Two huge ints of one length are still two calls.
    assert signature_of("t", {"n": 10**5000}).key != signature_of("t", {"n": 10**5000 + 1}).key


@pytest.mark.parametrize(
    "left, right", [(-1, -2), (2**61, 1), (2**61 - 1, 0), (-(2**62), -(2**62) + (2**61 - 1)), ("", 0), (None, hash(None))]
)
def test_values_that_share_a_hash_are_still_different_calls(left: object, right: object) -> None:
    """CPython hashes -1 like -2, ints modulo 2**61 - 1, "" like 0; a signature key must not."""
    assert hash(left) == hash(right)
    assert signature_of("read", {"offset": left}).key != signature_of("read", {"offset": right}).key
    assert signature_of("read", {"offset": left}).key == signature_of("read", {"offset": left}).key
    assert signature_of("read", {"offset": -1, "limit": 5}) == signature_of("read", '{"limit": 5, "offset": -1.0}')


def test_a_string_enum_key_is_its_string() -> None:
    import enum

    class Key(str, enum.Enum):
        PAGE = "page"

    signature = signature_of("list", {Key.PAGE: 2, "all": True})
    assert signature == signature_of("list", {"page": 2, "all": True})
    assert [type(key) for key in signature.arguments] == [str, str]
    assert signature.arguments == {"page": 2, "all": True} and signature.text == 'list({"all":true,"page":2})'


def test_values_and_keys_take_the_form_json_gives_them() -> None:
    """A call whose arguments a framework hands over as enum members or numpy strings is
    the same call as the one with plain values, as ``json.dumps`` would write it."""
    import enum

    class Mode(str, enum.Enum):
        FAST = "fast"

    class Level(enum.IntEnum):
        HIGH = 3

    class Text(str):
        def __str__(self) -> str:
            return "overridden"

    plain = signature_of("run", {"mode": "fast", "level": 3, "note": "hi"})
    odd = signature_of("run", {"mode": Mode.FAST, "level": Level.HIGH, "note": Text("hi")})
    assert odd == plain and odd.key == plain.key
    assert odd.text == 'run({"level":3,"mode":"fast","note":"hi"})'
    assert [type(value) for value in odd.arguments.values()] == [str, int, str]
    keys = signature_of("t", {True: 1, False: 2, None: 3, 2.0: 4, 1.5: 5, math.nan: 6, Level.HIGH: 7})
    assert keys.text == 't({"1.5":5,"2":4,"3":7,"NaN":6,"false":2,"null":3,"true":1})'
    assert signature_of("t", {True: 1}) == signature_of("t", '{"true": 1}')


@pytest.mark.parametrize("arguments", [None, "", "   ", "null", " {} ", {}])
def test_no_arguments_is_one_call_however_it_comes(arguments: object) -> None:
    signature = signature_of("list_tools", arguments)
    assert signature.arguments == {} and signature.text == "list_tools({})"
    assert signature.key == signature_of("list_tools", {}).key


def test_keys_that_json_writes_alike_keep_both_values() -> None:
    """{True: 1, "true": 2} is two keys to JSON's reader too; neither value may be dropped,
    whatever the insertion order."""
    one = signature_of("t", {True: 1, "true": 2})
    assert one.text == 't({"true":2,"true <bool>":1})'
    assert one == signature_of("t", {"true": 2, True: 1})
    assert one.key != signature_of("t", {True: 3, "true": 2}).key
    assert signature_of("t", {1: "a", "1": "b"}).text == 't({"1":"b","1 <int>":"a"})'


def test_subclass_methods_are_never_called() -> None:
    """A str/int subclass is read through the base type, so its own methods cannot raise
    or change what the call is."""

    class HostileInt(int):
        def __int__(self) -> int:
            raise RuntimeError("no")

        def __hash__(self) -> int:
            return 7

    class HostileText(str):
        def strip(self, *args: object) -> str:
            raise RuntimeError("no")

        def __bool__(self) -> bool:
            raise RuntimeError("no")

    assert signature_of("t", {HostileInt(5): 1, "b": "keep"}).text == 't({"5":1,"b":"keep"})'
    assert signature_of("t", {"n": HostileInt(5)}) == signature_of("t", {"n": 5})
    assert signature_of("t", HostileText(' {"a": 1} ')).text == 't({"a":1})'


def test_shared_and_huge_values_cost_a_bounded_amount() -> None:
    """A list that holds one sub-list twice, forty levels deep, is 2**40 values when
    expanded; huge containers are cut. Each must still give a signature at once (the limits
    are counts, so this asserts them, not a time)."""
    from loopguard.signature import MAX_ITEMS, MAX_NODES, canonical_value

    shared: list = [1]
    for _ in range(40):
        shared = [shared, shared]
    text = signature_of("t", {"a": shared}).text
    assert text.count("[") <= 2 * MAX_NODES and "more digest=" in text
    long_list = list(range(10**6))
    canonical = canonical_value(long_list)
    assert len(canonical) == MAX_ITEMS + 1 and canonical[-1].startswith(f"<{10**6 - MAX_ITEMS} more digest=")
    flat = {f"k{index}": index for index in range(10**5)}
    assert len(signature_of("t", flat).arguments) == MAX_ITEMS + 1  # a flat mapping is cut too
    same_string = "z" * 100_000
    assert signature_of("t", {"a": [same_string] * 1100}).text.count("<str len=100000 digest=") == MAX_ITEMS


def test_huge_ints_and_long_strings_are_exact_values_not_wording() -> None:
    """Placeholders such as "<int 1700 bits digest=...>" share all their words: near_duplicate
    must not read two different ones as a rewording."""
    from loopguard import Guard, ToolCall, ToolResult

    session = Guard.from_policy("builtin:default").session(run_id="ints")
    for index in range(4):
        call = ToolCall("store", {"value": 3**1100 + index}, id=f"c{index}")
        decision = session.before_call(call)
        assert [signal.kind for signal in decision.signals] == []
        session.after_call(call, ToolResult(f"stored {index}"))
