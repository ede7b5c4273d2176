"""``loopguard replay TRACE... [--policy FILE] [--profile NAME] [--json] [--fail-on ACTION]``.

Exit codes: 0 no findings; 1 findings (a run reached the ``--fail-on`` action or a
more severe one, or a run's trace could not be read); 2 usage or I/O error (a
trace file that cannot be read, a policy that does not load).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from typing import Any, TextIO

from loopguard.decisions import GuardAction
from loopguard.traces.model import TraceIOError
from loopguard.traces.replay import SessionFactory, replay_paths
from loopguard.traces.report import RunReport, render_text, summarize

DEFAULT_POLICY_FILE = "loopguard.yml"
DEFAULT_POLICY = "builtin:default"
EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2

DESCRIPTION = """\
Replay saved traces through a policy and report what it would have decided.

Traces are JSON or JSON Lines: loopguard step runs ({"run_id", "steps": [...]}),
OpenAI chat messages (a message list, {"messages": [...]}, tau-bench {"traj": [...]}),
or lists of such runs; the format is detected per run. A directory stands for its
*.json, *.jsonl and *.ndjson files. Recorded results are always fed to the guard, so
every step is judged on what really happened.

Runs labelled "stuck" / "healthy" (with "acceptable_window") are judged:
ok, premature, late, missed or false_alarm.

exit status: 0 no findings, 1 a run reached --fail-on (or worse) or a trace error,
2 usage or I/O error."""


def add_replay_parser(subparsers: Any) -> None:
    """Register ``replay`` on an ``argparse`` subparsers object; the parsed namespace's
    ``func(args) -> int`` runs it and returns the exit code."""
    parser = subparsers.add_parser(
        "replay",
        help="replay saved traces through a policy",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("traces", nargs="+", metavar="TRACE", help="trace file or directory")
    parser.add_argument(
        "--policy",
        metavar="FILE",
        help=f"policy file or builtin:NAME (default: ./{DEFAULT_POLICY_FILE} or ./loopguard.yaml if present, else {DEFAULT_POLICY})",
    )
    parser.add_argument("--profile", metavar="NAME", help="profile of the policy to apply")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    parser.add_argument(
        "--fail-on",
        metavar="ACTION",
        default=GuardAction.STOP.value,
        choices=[action.value for action in GuardAction if action is not GuardAction.CONTINUE],
        help="exit 1 when a run reaches this action or a more severe one: warn, replan, pause, stop (default: stop)",
    )
    parser.set_defaults(func=run_replay)


def run_replay(
    args: argparse.Namespace,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    session_factory: SessionFactory | None = None,
) -> int:
    """Run ``loopguard replay`` for parsed ``args``; returns the exit code."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    from loopguard.policy import default_policy_path, load_policy  # the CLI loads the policy layer only when used
    from loopguard.policy.errors import PolicyError, PolicyFileWarning

    source = args.policy or default_policy_path()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", PolicyFileWarning)
            policy = load_policy(source, profile=args.profile)
    except (PolicyError, OSError) as exc:
        print(f"loopguard replay: {exc}", file=err)
        return EXIT_USAGE
    for warning in caught:
        # The policy's warnings (LG9xx) as check prints them, not as Python's warning machinery does.
        if issubclass(warning.category, PolicyFileWarning):
            print(f"loopguard replay: {warning.message}", file=err)
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    try:
        reports = replay_paths(policy, args.traces, session_factory=session_factory)
    except TraceIOError as exc:
        print(f"loopguard replay: {exc}", file=err)
        return EXIT_USAGE

    if args.json:
        document = {
            "policy": {"source": policy.source, "profile": policy.profile, "revision": policy.revision},
            "runs": [report.to_dict() for report in reports],
            "summary": summarize(reports),
        }
        json.dump(document, out, indent=2, ensure_ascii=False, default=str)
        out.write("\n")
    else:
        profile = f", profile {policy.profile}" if policy.profile else ""
        # In observe mode the verdicts below were recorded, never applied: say so up front.
        mode = ", observe mode: verdicts are recorded, not applied" if policy.mode == "observe" else ""
        print(f"policy {policy.source}{profile} (revision {policy.revision}{mode})", file=out)
        print(render_text(reports), file=out)
    return exit_code(reports, GuardAction(args.fail_on))


def exit_code(reports: list[RunReport], fail_on: GuardAction) -> int:
    """1 when a run has an error or reached ``fail_on`` or worse, else 0."""
    failed = any(report.error is not None or report.verdict.at_least(fail_on) for report in reports)
    return EXIT_FINDINGS if failed else EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry point (``python -m loopguard.traces.cli replay ...``)."""
    parser = argparse.ArgumentParser(prog="loopguard")
    add_replay_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
