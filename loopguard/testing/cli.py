"""``loopguard test [PATH...] [-k SUBSTRING] [--format text|json] [-q]``.

Output in the style of pytest: one line per case (``FILE::NAME PASSED``), the reasons of each
failure, then ``N passed, M failed in X.XXs``. Exit codes: 0 every case passed; 1 a case
failed; 2 usage or file errors (a path that does not exist, a malformed test file, a policy
or trace that does not load, or no cases at all).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence, TextIO

from .runner import DEFAULT_TEST_PATH, TestFileError, TestReport, run_tests

EXIT_USAGE = 2

DESCRIPTION = f"""\
Run policy tests: YAML files whose cases replay steps (inline, or a trace file) through a
policy and profile and check the decisions at given steps, the run's verdict, and actions
that must never be reached. Directories are searched for *.yml / *.yaml files.

exit status: 0 all passed, 1 a case failed, 2 usage or file errors.
(default PATH: {DEFAULT_TEST_PATH}/)"""


def add_test_parser(subparsers: Any) -> None:
    """Register ``test`` on an ``argparse`` subparsers object; the parsed namespace's
    ``func(args) -> int`` runs it and returns the exit code."""
    parser = subparsers.add_parser(
        "test", help="run policy tests", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help=f"test file or directory (default: {DEFAULT_TEST_PATH}/)")
    parser.add_argument("-k", dest="keyword", metavar="SUBSTRING", help="run only cases whose FILE::NAME contains SUBSTRING")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("-q", "--quiet", action="store_true", help="text: print only failures and the summary")
    parser.set_defaults(func=run_test_command)


def run_test_command(args: argparse.Namespace, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run ``loopguard test`` for parsed ``args``; returns the exit code."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    try:
        report = run_tests(args.paths or [DEFAULT_TEST_PATH], keyword=args.keyword)
    except TestFileError as error:
        message = str(error)
        if not args.paths:
            message += " (the default; name your policy test files or folders: loopguard test PATH...)"
        if args.format == "json":
            print(json.dumps({"error": message, "tests": [], "summary": None}), file=out)
        else:
            print(f"loopguard test: {message}", file=err)
        return EXIT_USAGE
    if args.format == "json":
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False), file=out)
    else:
        render_text(report, out, quiet=args.quiet)
    return report.exit_code


def render_text(report: TestReport, out: TextIO, quiet: bool = False) -> None:
    """pytest-style text: a line per case, then failure details, then the summary line."""
    for result in report.results:
        if not quiet or result.outcome != "passed":
            print(f"{result.id} {result.outcome.upper() if result.outcome != 'error' else 'ERROR'}", file=out)
    problems = [result for result in report.results if result.outcome != "passed"]
    if problems:
        print("", file=out)
        for result in problems:
            title = "FAILURES" if result.outcome == "failed" else "ERRORS"
            print(f"___ {result.id} ({title[:-1].lower()}) ___", file=out)
            for message in result.messages:
                print(f"  {message}", file=out)
        print("", file=out)
    print(report.summary(), file=out)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m loopguard.testing.cli``: the ``test`` command on its own."""
    parser = argparse.ArgumentParser(prog="loopguard")
    add_test_parser(parser.add_subparsers())
    args = parser.parse_args(["test", *(sys.argv[1:] if argv is None else argv)])
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
