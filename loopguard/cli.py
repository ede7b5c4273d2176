"""The ``loopguard`` command: a thin dispatcher over :mod:`loopguard.policy` and friends.

Exit codes: 0 ok, 1 findings (a policy with problems), 2 usage or I/O error.

    loopguard check POLICY... [--profile NAME | --all-profiles] [--format text|json|github]
    loopguard explain POLICY [--profile NAME] [--format yaml|json]
    loopguard schema
    loopguard replay ...   (loopguard.traces.cli, when installed)
    loopguard test ...     (loopguard.testing.cli, when installed)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path
from typing import Any, Sequence, TextIO

import yaml

from . import __version__
from .policy import PolicyError, PolicyIOError, Problem, check_policy, explain_policy
from .policy.load import Explanation, policy_json_schema

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit:  # argparse exits 2 on usage errors, 0 on --help
        return int(exit.code) if isinstance(exit.code, int) else EXIT_USAGE
    if not hasattr(args, "func"):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.func(args))
    except BrokenPipeError:
        # The reader went away (``loopguard replay ... | head``): not an error of ours.
        devnull = open(os.devnull, "w")
        os.dup2(devnull.fileno(), sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        return 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="loopguard", description="Runtime guard for LLM agents, declared in loopguard.yml.")
    parser.add_argument("--version", action="version", version=f"loopguard {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    check = commands.add_parser("check", help="validate policy files", description="Validate policy files; exit 1 when any has problems.")
    check.add_argument("policies", nargs="*", metavar="POLICY", help="policy file or builtin:NAME (default: ./loopguard.yml, or ./loopguard.yaml)")
    which = check.add_mutually_exclusive_group()
    which.add_argument("--profile", help="validate the base policy and this profile's effective policy only (default: every profile)")
    which.add_argument("--all-profiles", action="store_true", help="validate every profile's effective policy (the default; kept for scripts)")
    check.add_argument("--format", choices=("text", "json", "github"), default="text")
    check.set_defaults(func=_check)

    explain = commands.add_parser("explain", help="print the effective policy and where each value came from")
    explain.add_argument("policy", metavar="POLICY", help="policy file or builtin:NAME")
    explain.add_argument("--profile", help="profile to apply (default: $LOOPGUARD_PROFILE)")
    explain.add_argument("--format", choices=("yaml", "json"), default="yaml")
    explain.set_defaults(func=_explain)

    schema = commands.add_parser("schema", help="print the JSON Schema of loopguard.yml")
    schema.set_defaults(func=_schema)

    _add_optional(commands, "loopguard.traces.cli", "add_replay_parser")
    _add_optional(commands, "loopguard.testing.cli", "add_test_parser")
    return parser


def _add_optional(commands: Any, module: str, function: str) -> None:
    """Commands that live in other packages are added only when those packages are present."""
    try:
        imported = __import__(module, fromlist=[function])
    except ModuleNotFoundError as error:
        if error.name and (module == error.name or module.startswith(f"{error.name}.")):
            return  # not written or not installed yet; a broken import inside it still raises
        raise
    getattr(imported, function)(commands)


# --------------------------------------------------------------------------- check


def _check(args: argparse.Namespace) -> int:
    out: TextIO = sys.stdout
    reports: list[dict[str, Any]] = []
    io_failed = False
    # No policy named: the file replay would use, ./loopguard.yml or ./loopguard.yaml.
    from .policy.load import DEFAULT_POLICY_FILES, default_policy_file

    sources = args.policies
    if not sources:
        found = default_policy_file()
        if found is None:
            print(
                f"loopguard check: no policy named, and no {' or '.join(DEFAULT_POLICY_FILES)} in {Path.cwd()} "
                "(the default; name a policy file, or builtin:default)",
                file=sys.stderr,
            )
            return EXIT_USAGE
        sources = [found]
    for source in sources:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                # Every profile by default: a profile that breaks the policy once merged (thresholds
                # out of order) must show up before it is deployed, not when it is selected.
                profile = args.profile or None  # (an empty name selects no profile, as LOOPGUARD_PROFILE='' does)
                result = check_policy(source, profile=profile, all_profiles=args.all_profiles or profile is None)
        except PolicyIOError as error:
            io_failed = True
            reports.append({"source": source, "ok": False, "io_error": True, "problems": error.problems})
            continue
        reports.append(
            {
                "source": source,
                "ok": result.ok,
                "io_error": False,
                "problems": list(result.problems),
                "revision": result.revisions.get(args.profile),
                "profiles": list(result.profiles),
                "revisions": {name or "": revision for name, revision in result.revisions.items()},
            }
        )
    errors = sum(1 for report in reports for problem in report["problems"] if problem.severity == "error")
    failed = sum(1 for report in reports if not report["ok"])
    if args.format == "json":
        _check_json(reports, errors, out)
    elif args.format == "github":
        _check_github(reports, out)
    else:
        _check_text(reports, errors, failed, args.profile, out)
    if io_failed:
        return EXIT_USAGE
    return EXIT_FINDINGS if failed else EXIT_OK


def _check_text(reports: list[dict[str, Any]], errors: int, failed: int, profile: str | None, out: TextIO) -> None:
    for report in reports:
        for problem in report["problems"]:
            stream = sys.stderr if report["io_error"] else out
            print(problem.format(), file=stream)
        if report["ok"]:
            details = [f"revision {report['revision']}"]
            if profile:
                details.insert(0, f"profile {profile}")
            if report["profiles"]:
                details.append(f"profiles: {', '.join(report['profiles'])}")
            print(f"{report['source']}: ok ({', '.join(details)})", file=out)
    count = len(reports)
    warnings_found = sum(1 for report in reports for problem in report["problems"] if problem.severity == "warning")
    warned = f", {warnings_found} warning{'s' if warnings_found != 1 else ''}" if warnings_found else ""
    if failed:
        print(f"{errors} problem{'s' if errors != 1 else ''} in {failed} of {count} polic{'ies' if count != 1 else 'y'}{warned}", file=out)
    else:
        print(f"{count} polic{'ies' if count != 1 else 'y'} ok{warned}", file=out)


def _github_escape(text: str, property: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if property else text


def _check_github(reports: list[dict[str, Any]], out: TextIO) -> None:
    for report in reports:
        for problem in report["problems"]:
            command = "warning" if problem.severity == "warning" else "error"
            message = problem.message + (f" (hint: {problem.hint})" if problem.hint else "")
            properties = (
                f"file={_github_escape(problem.file, True)},line={problem.line},col={problem.column},"
                f"title={_github_escape(f'{problem.code} {problem.name}', True)}"
            )
            print(f"::{command} {properties}::{_github_escape(message)}", file=out)


def _check_json(reports: list[dict[str, Any]], errors: int, out: TextIO) -> None:
    document = {
        "ok": all(report["ok"] for report in reports),
        "errors": errors,
        "warnings": sum(1 for report in reports for problem in report["problems"] if problem.severity == "warning"),
        "policies": [
            {key: ([p.to_dict() for p in value] if key == "problems" else value) for key, value in report.items()} for report in reports
        ],
    }
    json.dump(document, out, indent=2)
    out.write("\n")


# --------------------------------------------------------------------------- explain


def _explain(args: argparse.Namespace) -> int:
    try:
        explanation = explain_policy(args.policy, profile=args.profile)
    except PolicyIOError as error:
        _print_problems(error.problems)
        return EXIT_USAGE
    except PolicyError as error:
        _print_problems(error.problems)
        return EXIT_FINDINGS
    if args.format == "json":
        json.dump(_explain_json(explanation), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_explanation(explanation))
    return EXIT_OK


def _print_problems(problems: list[Problem]) -> None:
    for problem in problems:
        print(problem.format(), file=sys.stderr)


def _explain_json(explanation: Explanation) -> dict[str, Any]:
    policy = explanation.policy
    origins = {_json_path(path): str(origin) for path, origin in explanation.origins.items() if path and path[0] not in ("profiles", "extends")}
    return {"source": policy.source, "profile": policy.profile, "revision": policy.revision, "policy": explanation.data, "origins": origins}


def _json_path(path: tuple[Any, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def render_explanation(explanation: Explanation) -> str:
    """The effective policy as YAML, each value commented with the file:line it came from (or ``default``)."""
    policy = explanation.policy
    lines = [
        f"# effective policy of {policy.source}" + (f", profile {policy.profile}" if policy.profile else ""),
        f"# revision: {policy.revision}",
    ]
    _render(explanation.data, (), 0, lines, explanation)
    return "\n".join(lines) + "\n"


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    text = str(value)
    plain = text and text.strip() == text and not any(char in text for char in ":#{}[],&*!|>'\"%@`\n") and text[0] not in "-?"
    if plain and yaml.safe_load(text) == text:
        return text
    return json.dumps(text, ensure_ascii=False)


def _comment(explanation: Explanation, path: tuple[Any, ...]) -> str:
    origin = explanation.origin_of(path)
    return f"  # from {origin}" if origin else "  # default"


def _render(value: Any, path: tuple[Any, ...], indent: int, lines: list[str], explanation: Explanation) -> None:
    pad = "  " * indent
    if isinstance(value, dict):
        for key, child in value.items():
            label = f"{pad}{_scalar(key)}:"
            _render_member(label, child, path + (key,), indent, lines, explanation)
    elif isinstance(value, list):
        for position, child in enumerate(value):
            _render_member(f"{pad}-", child, path + (position,), indent, lines, explanation)


def _render_member(label: str, child: Any, path: tuple[Any, ...], indent: int, lines: list[str], explanation: Explanation) -> None:
    if label.endswith("-") and isinstance(child, dict) and child:
        pad = label[:-1]
        nested: list[str] = []
        _render(child, path, indent + 1, nested, explanation)
        nested[0] = f"{pad}- {nested[0][len(pad) + 2 :]}"  # '- key: value', YAML's compact form
        lines.extend(nested)
    elif isinstance(child, (dict, list)) and child and not _flat_list(child):
        lines.append(label)
        _render(child, path, indent + 1, lines, explanation)
    elif isinstance(child, (dict, list)):
        flow = json.dumps(child, ensure_ascii=False) if child else ("{}" if isinstance(child, dict) else "[]")
        if _flat_list(child):
            flow = "[" + ", ".join(_scalar(item) for item in child) + "]"
        lines.append(f"{label} {flow}{_comment(explanation, path)}")
    else:
        lines.append(f"{label} {_scalar(child)}{_comment(explanation, path)}")


def _flat_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(not isinstance(item, (dict, list)) for item in value)


# --------------------------------------------------------------------------- schema


def _schema(args: argparse.Namespace) -> int:
    sys.stdout.write(render_schema())
    return EXIT_OK


def render_schema() -> str:
    """The JSON Schema exactly as ``schema/loopguard.schema.json`` holds it."""
    return json.dumps(policy_json_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
