"""Per-step cost and session memory under the default policy, at growing run lengths.

Prints µs per step for synthetic runs of 100, 1,000, 10,000 and 100,000 steps (the
median of samples that each cover 10,000 steps, and the median and best of whole runs),
each length's cost relative to 100 steps, the memory a session holds at the end of the
run (tracemalloc, MB above an empty interpreter baseline), and the time to replay the
200 tau-bench runs when ../shared/data is present. In the same interleaved rounds it also
times single steps on their own and prints the median (p50: the cost of the median step)
and the 99th percentile of their latencies.

    python bench/bench_session.py [--quick]
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
import tracemalloc
from array import array
from pathlib import Path

from loopguard import Guard, ToolCall, ToolResult

LENGTHS = (100, 1_000, 10_000, 100_000)


def synthetic_steps(count: int, seed: int = 7) -> list[tuple[ToolCall, ToolResult]]:
    """A mixed run: fresh searches, reads of a growing id space, paging, polls, a few
    identical repeats, and calls to 13 URLs that answer 503 every time (in long runs the
    guard blocks their retries). Each call + result pair is two steps."""
    rng = random.Random(seed)
    pairs = []
    for index in range(count // 2):
        roll = rng.random()
        if roll < 0.35:
            call = ToolCall("search_flights", {"origin": "JFK", "destination": rng.choice(["SEA", "SFO", "LAX", "ORD"]), "date": f"2024-05-{index % 28 + 1:02d}"}, id=f"c{index}")
            result = ToolResult(f'[{{"flight": "HAT{index % 997:03d}", "price": {100 + index % 400}}}]')
        elif roll < 0.6:
            call = ToolCall("get_reservation_details", {"reservation_id": f"R{index:06d}"}, id=f"c{index}")
            result = ToolResult(f'{{"reservation_id": "R{index:06d}", "status": "active", "passengers": {1 + index % 3}}}')
        elif roll < 0.75:
            call = ToolCall("list_orders", {"status": "open", "page": index % 50 + 1}, id=f"c{index}")
            result = ToolResult(f"ids {index * 50}-{index * 50 + 49}")
        elif roll < 0.85:
            call = ToolCall("job_status", {"job": "build-77"}, id=f"c{index}")
            result = ToolResult(f"running {index % 100}%")
        elif roll < 0.95:
            call = ToolCall("calculate", {"expression": f"{index} + {index % 17}"}, id=f"c{index}")
            result = ToolResult(str(index + index % 17))
        else:
            call = ToolCall("http_get", {"url": f"https://api.example.test/v1/items/{index % 13}"}, id=f"c{index}")
            result = ToolResult("HTTP 503 Service Unavailable", error=True)
        pairs.append((call, result))
    return pairs


SAMPLE_STEPS = 10_000  # every timed sample covers this many steps, at every run length


def run_once(guard: Guard, pairs: list[tuple[ToolCall, ToolResult]], blocks: int = 1) -> list[float]:
    """Run one session over ``pairs``; return the seconds each of ``blocks`` equal
    consecutive parts of the run took (one clock read between parts)."""
    session = guard.session(run_id="bench")
    size = -(-len(pairs) // blocks)
    parts = [pairs] if blocks == 1 else [pairs[first : first + size] for first in range(0, len(pairs), size)]
    elapsed = []
    start = time.perf_counter()
    for part in parts:
        for call, result in part:
            session.before_call(call)
            session.after_call(call, result)
        now = time.perf_counter()
        elapsed.append(now - start)
        start = now
    return elapsed


def reference_loop() -> float:
    """µs for a fixed pure-Python workload (10,000 dict look-ups, additions and appends):
    how fast the machine is at the moment, so figures from different runs can be compared."""
    table = {index: index for index in range(64)}
    started = time.perf_counter()
    total, out = 0, []
    for index in range(10_000):
        total += table.get(index & 63, 0)
        out.append(total)
    return (time.perf_counter() - started) * 1e6


def timed_rounds(guard: Guard, rounds: int) -> tuple[dict[int, list[float]], dict[int, list[float]], dict[int, list[tuple[float, float]]]]:
    """µs per step for every length, measured in interleaved rounds: (samples, whole runs,
    single steps' (p50, p99) latencies per round).

    Each round times every length once, shortest first, so that the machine's drift
    (this kind of shared machine speeds up and slows down by tens of percent within a
    minute) hits all lengths alike. Every sample covers :data:`SAMPLE_STEPS` steps, so
    that each is exposed to the drift for as long: a short run is repeated that often, and
    the 100,000-step run is timed in ten consecutive blocks (a sample is then the cost per
    step over one block of a long run). The whole runs' figures are returned too. Then the
    round times every length's single steps (see :func:`step_latencies`). The synthetic
    traces are moved out of the cyclic garbage collector's reach (``gc.freeze``) so that
    collections do not bill the guard for the harness's own objects; the guard's objects are
    still collected as usual.
    """
    traces = {count: synthetic_steps(count) for count in LENGTHS}
    for pairs in traces.values():
        run_once(guard, pairs)  # warm-up: first-use imports, regex compilation, caches
    gc.collect()
    gc.freeze()
    samples: dict[int, list[float]] = {count: [] for count in LENGTHS}
    whole: dict[int, list[float]] = {count: [] for count in LENGTHS}
    latencies: dict[int, list[tuple[float, float]]] = {count: [] for count in LENGTHS}
    samples[0] = []  # the reference loop, timed in every round
    try:
        for _ in range(rounds):
            samples[0].append(min(reference_loop() for _ in range(20)))
            for count, pairs in traces.items():
                repeats = max(1, SAMPLE_STEPS // count)
                blocks = max(1, count // SAMPLE_STEPS)
                elapsed = [part for _ in range(repeats) for part in run_once(guard, pairs, blocks)]
                if blocks > 1:
                    samples[count].extend(part / (2 * len(pairs) / blocks) * 1e6 for part in elapsed)
                else:
                    samples[count].append(sum(elapsed) / (repeats * 2 * len(pairs)) * 1e6)
                whole[count].append(sum(elapsed) / (repeats * 2 * len(pairs)) * 1e6)
            for count, pairs in traces.items():
                latencies[count].append(step_latencies(guard, pairs))
    finally:
        gc.unfreeze()
    return samples, whole, latencies


def step_latencies(guard: Guard, pairs: list[tuple[ToolCall, ToolResult]]) -> tuple[float, float]:
    """(p50, p99) in µs of single steps' latencies over runs of ``pairs``: every
    ``before_call`` and every ``after_call`` timed on its own (a clock read costs about
    0.1 µs and is included), over at least :data:`SAMPLE_STEPS` steps (a short run is
    repeated, each time in a new session; a long run's every step counts). The per-step
    figures of :func:`timed_rounds` are means over many steps, which the rare expensive
    step (a long output read, a call blocked with its reasons) pulls up; these say what a
    typical step costs: the median is the cost of the median step."""
    clock = time.perf_counter
    # An array of doubles, not a list of floats: 100,000 live float objects would spread over
    # fresh memory and bill the guard for the harness's cache misses.
    measured = array("d")
    add = measured.append
    for _ in range(max(1, SAMPLE_STEPS // (2 * len(pairs)))):
        session = guard.session(run_id="latency")
        for call, result in pairs:
            started = clock()
            session.before_call(call)
            between = clock()
            session.after_call(call, result)
            add(between - started)
            add(clock() - between)
    ordered = sorted(measured)
    return ordered[len(ordered) // 2] * 1e6, ordered[int(len(ordered) * 0.99)] * 1e6


def session_memory_mb(guard: Guard, count: int) -> float:
    pairs = synthetic_steps(count)
    gc.collect()
    tracemalloc.start()
    baseline = tracemalloc.get_traced_memory()[0]
    session = guard.session(run_id="memory")
    for call, result in pairs:
        session.before_call(call)
        session.after_call(call, result)
    held = tracemalloc.get_traced_memory()[0] - baseline
    tracemalloc.stop()
    del session
    return held / 1e6


def stuck_run_cost(guard: Guard, rounds: int = 7) -> float:
    """µs per step (median of ``rounds``) of a run that is stuck: the same call failing with
    the same 503 again and again, so every step carries signals and every call a replan."""
    calls = [ToolCall("http_get", {"url": "https://api.example.test/v1/items/3"}, id=f"s{index}") for index in range(SAMPLE_STEPS // 2)]
    failure = ToolResult("HTTP 503 Service Unavailable", error=True)
    pairs = [(call, failure) for call in calls]
    run_once(guard, pairs)
    return statistics.median(run_once(guard, pairs)[0] for _ in range(rounds)) / (2 * len(pairs)) * 1e6


def replay_tau_bench() -> str:
    data = Path(__file__).resolve().parents[2] / "shared" / "data" / "tau-bench" / "gpt-4o-airline.json"
    if not data.exists():
        return "tau-bench data not found; skipped"
    from loopguard.policy import load_policy
    from loopguard.traces import read_trace, replay_run

    policy = load_policy("builtin:default")
    start = time.perf_counter()
    runs = read_trace(data)
    parsed = time.perf_counter()
    reports = [replay_run(policy, run) for run in runs]
    done = time.perf_counter()
    calls = sum(report.tool_calls for report in reports)
    return (
        f"tau-bench replay: {len(reports)} runs, {calls} tool calls: parse {1e3 * (parsed - start):.0f} ms, "
        f"replay {1e3 * (done - parsed):.0f} ms ({1e6 * (done - parsed) / max(calls, 1):.1f} µs per tool call incl. result)"
    )


def _round_medians(values: list[float], rounds: int) -> list[float]:
    """The median of each round's samples (a round adds the same number of samples)."""
    per_round = len(values) // rounds
    return [statistics.median(values[index * per_round : (index + 1) * per_round]) for index in range(rounds)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (for smoke runs)")
    parser.add_argument("--rounds", type=int, default=9, help="interleaved rounds (default 9; the median is taken over them)")
    args = parser.parse_args(argv)
    guard = Guard.from_policy("builtin:default")
    print(f"python {sys.version.split()[0]}, policy builtin:default revision {guard.policy.revision}")
    rounds = 2 if args.quick else max(1, args.rounds)
    samples, whole, latencies = timed_rounds(guard, rounds)
    # The ratio is taken within each round (same machine state, samples equally long), then
    # the median over the rounds.
    ratios = {count: statistics.median(_round_medians(samples[count], rounds)[index] / samples[LENGTHS[0]][index] for index in range(rounds)) for count in LENGTHS}
    print(f"{'steps':>8} {'µs/step':>9} {'whole run':>10} {'best run':>9} {'vs 100':>7} {'step p50':>9} {'step p99':>9} {'session MB':>11}")
    for count in LENGTHS:
        memory = session_memory_mb(guard, count)
        typical = statistics.median(p50 for p50, _ in latencies[count])
        tail = statistics.median(p99 for _, p99 in latencies[count])
        print(
            f"{count:>8} {statistics.median(samples[count]):>9.2f} {statistics.median(whole[count]):>10.2f} "
            f"{min(whole[count]):>9.2f} {ratios[count]:>6.2f}x {typical:>9.2f} {tail:>9.2f} {memory:>11.3f}"
        )
    print(
        f"µs/step: median of the {SAMPLE_STEPS:,}-step samples (each a mean over its steps); whole run, best run: "
        "median and best of the rounds' whole runs; vs 100: a round's samples against its 100-step sample, median "
        "over the rounds; step p50, p99: single steps' latencies, each step timed on its own, median over the rounds"
    )
    print(f"stuck run (one call failing the same way again and again): {stuck_run_cost(guard):.2f} µs per step")
    print(f"machine speed: the reference loop (bench_session.reference_loop) took {statistics.median(samples[0]):.0f} µs (median of the rounds)")
    print(replay_tau_bench())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
