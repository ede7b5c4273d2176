"""What a tool's name and arguments say about it when the policy gives no traits.

The default policy must judge runs of tools nobody described (cases/README.md), so a
few facts are read from names and arguments:

* a tool named for waiting (``wait``, ``sleep``, ``wait_seconds``) is a deliberate
  pause: kind ``wait``; one that waits *for* something (``wait_for_job``) checks on it:
  kind ``poll``;
* a tool whose name starts with a verb that changes state (``edit_file``, ``send_email``)
  answers each call with its own acknowledgement, so the same short reply to different
  calls is not "nothing new";
* a call that runs a command (a ``command`` / ``cmd`` / ``script`` argument, or a tool
  named ``bash``, ``shell``, ...) may print nothing when it succeeds (``tsc``, ``cp``);
* a command that sleeps before it checks (``sleep 60; dig +short host``) polls;
* a command that ends with a text search (``grep -rn X src/``) exits with status 1 when
  nothing matched: an empty answer, not a failure.

Each answer is memoised by tool name, or computed once per call signature by the caller.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
#: Words a pure wait's name may add to "wait" or "sleep" ("wait_seconds", "sleep_ms").
_WAIT_VERBS = frozenset({"wait", "sleep"})
#: Words that may come before the verb of a pure wait: namespaces of common tool servers.
_WAIT_PREFIXES = frozenset({"time", "mcp", "tools", "tool", "util", "utils", "system", "sys", "builtin", "functions", "default", "do"})
_WAIT_UNITS = frozenset(
    {"s", "sec", "secs", "second", "seconds", "ms", "millis", "milliseconds", "min", "mins", "minute", "minutes", "for", "a", "while"}
)
#: Verbs of tool names that change state (their replies acknowledge their own call), and
#: verbs of tool names that read.
_WRITE_VERBS = frozenset(
    "add append apply approve archive assign book buy cancel change charge checkout close comment commit copy create "
    "delegate delete disable edit enable escalate forward grant handoff insert invite label mark merge modify move notify "
    "patch pay place post publish purchase push put refund register reject remove rename replace reply reset revoke save "
    "schedule send set share store submit tag toggle transfer update upload upsert write".split()
)
_READ_VERBS = frozenset(
    "browse check describe download fetch find get inspect load lookup poll print query read retrieve scan search select "
    "show stat view wait watch".split()
)
#: Verbs that read only at the start of a name (elsewhere they are nouns: "add_to_list").
_FIRST_READ_VERBS = frozenset({"list", "count", "open", "cat", "head", "tail"})
#: Nouns of what a read returns: after one other word they name a read ("commit_status",
#: "share_price"); after a verb and its object, what a write sets ("update_order_status").
_READ_NOUNS = frozenset({"status", "progress", "history", "price", "info", "details", "list"})
_COMMAND_TOOL_WORDS = frozenset({"bash", "shell", "sh", "terminal", "exec", "execute", "cmd", "powershell", "console"})
_COMMAND_ARGUMENTS = ("command", "cmd", "script", "shell", "commands")
#: Argument names that hold a shell command.
COMMAND_ARGUMENT_NAMES = frozenset(_COMMAND_ARGUMENTS)
#: Arguments that hold code to run (a "code" argument is code only where sleeping is in question).
_SCRIPT_ARGUMENTS = COMMAND_ARGUMENT_NAMES | {"code"}
# A sleep in a shell command or a script: "sleep 60; dig ...", "time.sleep(5)", "Start-Sleep -s 5".
_ONLY_SLEEP = re.compile(r"[ \t]*sleep[ \t]+(?:\d+(?:\.\d+)?|\.\d+)[smhd]?[\s;]*", re.IGNORECASE)
# In command position only: "sleep 60; dig ...", "make && sleep .5 && curl", and inside quotes
# when a command follows (bash -c "sleep 2; curl ..."), not a pattern (grep -rn 'sleep 5').
_SLEEP = re.compile(
    r"(?:^|[;&|({\n]|\bthen\b|\bdo\b)[ \t]*(?:/(?:usr/)?bin/)?(?:sleep[ \t]+\.?\d|start-sleep\b)"
    r"|[\"'][ \t]*(?:/(?:usr/)?bin/)?sleep[ \t]+\.?\d+(?:\.\d+)?[smhd]?[ \t]*(?:;|&&|\|\|)"
    r"|\b(?:time|asyncio)\.sleep[ \t]*\(",
    re.IGNORECASE,
)


#: Characters of a tool name that are read (the memo must not keep huge names alive).
NAME_LIMIT = 128


def split_name(name: str) -> list[str]:
    """The lowercase words of a name in snake_case, kebab-case or camelCase (a tool, an
    argument key, a JSON field): ``"waitForJob"``, ``"wait_for_job"`` and ``"HTTPStatus"``
    are ``["wait", "for", "job"]`` and ``["http", "status"]``."""
    return [word.lower() for word in _WORD.findall(name)]


def name_words(tool: str) -> tuple[str, ...]:
    """:func:`split_name` of a tool name's first :data:`NAME_LIMIT` characters, memoised."""
    return _name_words(tool[:NAME_LIMIT])


@lru_cache(maxsize=4096)
def _name_words(name: str) -> tuple[str, ...]:
    return tuple(split_name(name))


#: Words of a scratchpad tool's name: the agent writes its own thoughts, the world is unchanged
#: ("think", "sequential_thinking", "scratchpad", "reflect").
_THINK_WORDS = frozenset({"think", "thinking", "thought", "thoughts", "scratchpad", "reflect", "reflection"})
_THINK_COMPANIONS = frozenset({"tool", "sequential", "sequentialthinking", "deep", "step"})


def inferred_kind(tool: str) -> str:
    """``wait`` for a pure pause, ``poll`` for a tool that waits for something, ``think`` for a
    scratchpad (``think``, ``sequential_thinking``), else ``other``."""
    return _inferred_kind(tool[:NAME_LIMIT])


@lru_cache(maxsize=4096)
def _inferred_kind(name: str) -> str:
    # A namespaced name ("time__sleep", "mcp__time__sleep", "browser.wait_for") is read by
    # its own words; a server or toolkit prefix says nothing about waiting.
    words = _name_words(name)
    verb = next((index for index, word in enumerate(words) if word in _WAIT_VERBS), None)
    if verb is None:
        own = [word for word in words if word not in _WAIT_PREFIXES]
        if own and not _THINK_WORDS.isdisjoint(own) and all(word in _THINK_WORDS or word in _THINK_COMPANIONS for word in own):
            return "think"
        return "other"
    rest = words[verb + 1 :]
    if all(word in _WAIT_UNITS or word.isdigit() for word in rest) and all(word in _WAIT_PREFIXES for word in words[:verb]):
        return "wait"  # "wait", "sleep_ms", "time_sleep", "mcp__time__sleep", "wait_for"
    if rest[:1] in (("for",), ("until",)):
        return "poll"  # waits for something and reports it: "wait_for_job", "browser_wait_for_text"
    return "other"


def writes_by_name(tool: str) -> bool:
    """True when the tool's name has a verb that changes state and no verb that reads:
    ``edit_file``, ``sheets_update``, ``mailgun_send``, ``transfer_to_billing``,
    ``append_log``, ``update_order_status``; not ``get_update_status``, ``book_search``,
    ``tag_list``, ``commit_status`` or ``share_price`` (a noun and what a read returns) nor
    ``message_history`` (no verb)."""
    return _writes_by_name(tool[:NAME_LIMIT])


@lru_cache(maxsize=4096)
def _writes_by_name(name: str) -> bool:
    words = _name_words(name)
    if not words or words[0] in _FIRST_READ_VERBS or not _READ_VERBS.isdisjoint(words):
        return False
    if len(words) == 2 and words[1] in _READ_NOUNS:
        return False
    return not _WRITE_VERBS.isdisjoint(words)


#: Verbs of tool names that act on something (a run, a deployment, a process) without a
#: write verb: what a later read returns may change through them.
_ACTION_VERBS = frozenset(
    "run rerun execute exec start stop restart launch trigger deploy process scale rollback reboot kill terminate "
    "invoke dispatch retry resume pause".split()
)


def acts_by_name(tool: str) -> bool:
    """True when the tool's name says it changes state (:func:`writes_by_name`) or acts on
    something (``instrument_run_protocol``, ``trigger_dag``, ``restart_service``) and has no
    verb that reads (``run_query`` reads)."""
    return _acts_by_name(tool[:NAME_LIMIT])


@lru_cache(maxsize=4096)
def _acts_by_name(name: str) -> bool:
    if _writes_by_name(name):
        return True
    words = _name_words(name)
    return bool(words) and _READ_VERBS.isdisjoint(words) and not _ACTION_VERBS.isdisjoint(words)


def runs_command(tool: str, arguments: Any) -> bool:
    """True when the call runs a shell command or a script."""
    if type(arguments) is dict and any(type(arguments.get(key)) is str for key in _COMMAND_ARGUMENTS):
        return True
    return _is_command_tool(tool)


def echoes(arguments: Any, output: str) -> bool:
    """Whether a command's output is only text its command line holds (``echo "3 of 8
    done"``, ``python3 -c "print('running total: 4000')"``): the call made no news, it said
    what the agent wrote. Outputs of 8 to 200 characters (shorter ones are found anywhere)."""
    stripped = output.strip()
    if not _ECHO_MIN <= len(stripped) <= _ECHO_MAX or type(arguments) is not dict:
        return False
    command = _command_of(arguments)
    return command is not None and stripped in command


_ECHO_MIN, _ECHO_MAX = 8, 200  # characters of an output that may be an echo


def _command_of(arguments: dict[Any, Any]) -> str | None:
    """The command a call runs: the first text among its command arguments, if any."""
    return next((arguments[key] for key in _COMMAND_ARGUMENTS if type(arguments.get(key)) is str), None)


#: Characters around a command's words that are quoting or redirection, not part of a path.
_WORD_EDGES = "\"'`<>|;&(){}"


def resources_of(arguments: Any) -> frozenset[str]:
    """What a call names that a change could touch: its top-level text arguments of 3
    characters or more (a path, a sheet's id), and the words of a command that look like
    paths or URLs (holding ``/`` or ``.``: ``NOTES.md``, ``http://localhost/health``)."""
    if type(arguments) is not dict:
        return frozenset()
    command = _command_of(arguments)
    found = {value for value in list(arguments.values())[:50] if type(value) is str and 3 <= len(value) <= 500 and value is not command}
    if command is not None:
        for word in command[:2000].split():
            word = word.strip(_WORD_EDGES)
            if len(word) >= 3 and ("/" in word or "." in word) and word[0] != "-":
                found.add(word)
    return frozenset(found)


def operation_of(tool: str, arguments: Any) -> str:
    """What a call does, without what it does it to: the tool's name, and for a shell
    command its program (``bash: grep``), with its subcommand for the command-line tools that
    have them (``bash: kubectl logs``, ``bash: git diff``); past ``cd DIR &&``, ``sudo``,
    ``timeout 10``, variable assignments and options. Two calls that do one thing to two
    items (``kubectl cordon node-1``, ``kubectl cordon node-2``) share it."""
    if type(arguments) is not dict or not runs_command(tool, arguments):
        return tool
    command = _command_of(arguments)
    if command is None:
        return tool
    for stage in _STAGES.split(_unquoted(command[:500])):
        found = _program_and_words(stage)
        if found is None:
            continue
        program, words = found
        if program in _SUBCOMMAND_PROGRAMS and words:
            return f"{tool}: {program} {words[0]}"
        return f"{tool}: {program}"
    return tool


def _program_and_words(stage: str) -> tuple[str, list[str]] | None:
    """The program one stage of a shell command runs, past wrappers and options, and the words
    after it that are no options and no options' values (``kubectl -n team-a describe pod x``:
    ``kubectl``, ``["describe", "pod", "x"]``); ``None`` for a stage that only sets up the
    shell (``cd DIR``) or runs nothing."""
    words = stage.split()
    index = 0
    while index < len(words) and (_option_or_value(words, index) or words[index].isdigit() or words[index] in _WRAPPERS):
        index += 1
    if index == len(words) or words[index] in _SETUP_COMMANDS:
        return None
    program = words[index].rsplit("/", 1)[-1]
    return program, [words[position] for position in range(index + 1, len(words)) if not _option_or_value(words, position)]


#: Subcommands of cluster and infrastructure tools that change what later reads return
#: (a two-word entry: the subcommand and the word after it, ``rollout restart``).
_CLUSTER_WRITES = {
    "kubectl": frozenset(
        "apply create delete patch replace set scale label annotate edit cordon uncordon drain taint expose autoscale "
        "rollout:restart rollout:undo rollout:pause rollout:resume".split()
    ),
    "helm": frozenset("install upgrade uninstall rollback".split()),
    "terraform": frozenset("apply destroy import".split()),
    "systemctl": frozenset("restart start stop reload enable disable".split()),
    "docker": frozenset("run rm restart stop start compose:up".split()),
}
_CLUSTER_WRITES["oc"], _CLUSTER_WRITES["tofu"], _CLUSTER_WRITES["podman"] = _CLUSTER_WRITES["kubectl"], _CLUSTER_WRITES["terraform"], _CLUSTER_WRITES["docker"]


def _changes_cluster(command: str) -> bool:
    """Whether a shell command runs a cluster or infrastructure tool's subcommand that changes
    state (``kubectl -n payments set resources ...``, ``helm upgrade``, ``terraform apply``,
    ``systemctl restart nginx``), read at the subcommand's place: ``kubectl get deploy
    create-order-api`` or ``kubectl -n scale-0 get secret`` only read."""
    if _CLUSTER_PROGRAMS.isdisjoint(_PROGRAM_WORD.findall(command)):
        return False  # (most commands: no such program, no parse)
    for stage in _STAGES.split(command):
        found = _program_and_words(stage)
        if found is None or found[0] not in _CLUSTER_WRITES or not found[1]:
            continue
        program, words = found
        writes = _CLUSTER_WRITES[program]
        if words[0] in writes or (len(words) > 1 and f"{words[0]}:{words[1]}" in writes):
            return True
    return False


_CLUSTER_PROGRAMS = frozenset(_CLUSTER_WRITES)
_PROGRAM_WORD = re.compile(r"[\w-]+")


def _option_or_value(words: list[str], index: int) -> bool:
    """Whether ``words[index]`` is an option (``-n``, ``--region=x``, ``A=1``) or, by its look, an
    option's value: any word after a short option (``-n team-a``), a word with a digit, a dot or
    a slash after a long one (``--region us-east-1``; ``--no-pager diff`` keeps ``diff``)."""
    word = words[index]
    if word[0] == "-" or "=" in word:
        return True
    before = words[index - 1] if index else ""
    if before[:1] != "-" or "=" in before:
        return False
    return len(before) == 2 or before in _LONG_OPTIONS_WITH_VALUES or not word.replace("-", "").isalpha()


#: Long options that always take a value, whatever it looks like (``--context prod``).
_LONG_OPTIONS_WITH_VALUES = frozenset(
    "--context --namespace --kubeconfig --cluster --user --region --profile --project --zone --chdir --file --filename".split()
)


#: Commands that only set up the shell for the command after them (cd DIR && make).
_SETUP_COMMANDS = frozenset({"cd", "pushd", "export", "source", ".", "set", "ulimit", "umask"})
#: Command-line tools whose first word after the program says what they do (kubectl logs).
_SUBCOMMAND_PROGRAMS = frozenset(
    "kubectl oc git docker podman aws gcloud gsutil az gh glab terraform tofu helm npm yarn pnpm cargo go pip pip3 "
    "systemctl brew apt apt-get dnf yum conda poetry uv dotnet heroku flyctl vercel firebase supabase stripe vault "
    "consul nomad eksctl istioctl argocd oci doctl hcloud openstack snap adb xcrun bq dbt airflow ansible-galaxy "
    "composer bundle rails rake mix kafka-topics redis-cli wrangler".split()
)


def _is_command_tool(tool: str) -> bool:
    """True when the tool's name says it runs shell commands (``bash``, ``run_cmd``)."""
    return not _COMMAND_TOOL_WORDS.isdisjoint(name_words(tool))


#: Commands whose exit status 1 means "no line matched" (POSIX grep; rg, ag, ack, git grep alike).
_SEARCH_COMMANDS = frozenset({"grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack", "findstr", "select-string"})
#: Words that may come before the search command in its pipeline stage ("git grep", "sudo -u
#: app grep", "timeout 10 grep", "LC_ALL=C grep"), besides options, their values and assignments.
_COMMAND_PREFIXES = frozenset({"git", "xargs", "sudo", "env", "command", "exec", "time", "nice", "timeout", "stdbuf", "nohup"})
#: Words that run the command after them (sudo, timeout 10, env, nice): what the command does is after them.
_WRAPPERS = _COMMAND_PREFIXES - {"git"}
_STAGES = re.compile(r"\|\|?|&&|;|\n")


def _unquoted(command: str) -> str:
    """``command`` with each quoted string replaced by ``''`` (an unclosed quote runs to the
    end; a backslash escapes a double quote). One pass with str.find: a regular expression
    would rescan from every quote of a run of unclosed ones."""
    parts = []
    index = 0
    while True:
        single, double = command.find("'", index), command.find('"', index)
        start = single if double < 0 or 0 <= single < double else double
        if start < 0:
            parts.append(command[index:])
            return "".join(parts)
        parts.append(command[index:start])
        quote, end = command[start], start + 1
        while True:
            end = command.find(quote, end)
            if end < 0:
                parts.append("''")
                return "".join(parts)
            escapes = 0
            while quote == '"' and command[end - 1 - escapes] == "\\" and end - 1 - escapes > start:
                escapes += 1
            if escapes % 2 == 0:
                break
            end += 1
        parts.append("''")
        index = end + 1


def searches(tool: str, arguments: Any) -> bool:
    """True when the call's command ends with a text search (the last stage of its pipeline,
    quotes respected, runs ``grep``, ``rg``, ``ag``, ``ack``, ``git grep``, ``findstr``, ...,
    after prefixes such as ``sudo -u app``, ``timeout 10``, ``xargs -0`` or ``LC_ALL=C``), or
    the tool is named for one (``grep``, ``ripgrep_search``)."""
    if type(arguments) is dict:
        command = _command_of(arguments)
        if command is not None:
            # Quoted text is no pipeline: grep -E 'a|b' is one stage.
            words = _STAGES.split(_unquoted(command[-1000:]).rstrip(" \t\r\n;&|"))[-1].split()
            after_option = False
            for word in words:
                if word.rsplit("/", 1)[-1].lower() in _SEARCH_COMMANDS:
                    return True
                if word in _COMMAND_PREFIXES or word.startswith("-") or "=" in word or word.isdigit():
                    after_option = word.startswith("-") and "=" not in word
                elif after_option:
                    after_option = False  # an option's value: "-u app", "-n 1"
                else:
                    return False
            return False
    words = name_words(tool)
    return "grep" in words or "ripgrep" in words


# A shell command that changes files: in-place edits, redirections into a file, the usual
# commands that write, move or remove, formatters that rewrite, and scripts fed by a heredoc
# (a redirection to /dev/... or to a descriptor is none). Quoted text is set aside first, so
# grep -n 'a > b' or awk '$3 > 100' change nothing.
_CHANGES_FILES = re.compile(
    r"\b(?:sed|perl)\s+(?:-\w+\s+)*-\w*i|\bsed\s+(?:-\w+\s+)*--in-place|(?<![<=>-])>>?\s*(?![&>]|/dev/)[\w./~$]"
    r"|(?:^|[;&|(]\s*|\b(?:sudo|then|do)\s+)(?:patch|mv|cp|rm|touch|mkdir|truncate|install|ln|ed|apply_patch)\b"
    r"|\bgit\s+(?:apply|checkout|restore|reset|stash(?!\s+(?:list|show))|commit|merge|rebase|pull|am|cherry-pick|revert|switch)\b"
    r"|\b(?:black|isort|gofmt\s+-w|prettier\s+--write|ruff\s+(?:format|check\s+--fix)|autopep8\s+-i|clang-format\s+-i)\b"
    r"|-delete\b|\b(?:python3?|node|ruby|perl|bash|sh)\b[^|;&]*<<"
)
# Code that writes files, in a command's quoted script (python -c "open('f', 'w')...").
_SCRIPT_WRITES = re.compile(r"\.write(?:_text|_bytes)?\(|\bopen\([^)]*['\"][wa]|\bfs\.write")
#: Name words of tools that edit files (edit_file, MultiEdit, search_and_replace, NotebookEdit).
_EDIT_WORDS = frozenset(
    {"edit", "edits", "write", "replace", "patch", "insert", "create", "apply", "modify", "multiedit", "append", "overwrite", "rename", "move", "delete", "remove"}
)
#: Editor tools' own commands that write (str_replace_editor's "str_replace", "insert", ...).
_EDITOR_WRITES = frozenset({"str", "replace", "insert", "create", "write", "edit", "undo", "patch", "append", "delete", "apply"})


#: Arguments that hold a SQL statement, and the statements that write (after comments and a WITH).
_SQL_ARGUMENT_NAMES = ("sql", "query", "statement", "statements")
_SQL_WRITE = re.compile(
    r"\s*(?:(?:--[^\n]*\n|/\*.*?\*/)\s*)*(?:with\b.*?\)\s*)?(?:insert|update|delete|merge|upsert|replace|alter|drop|create|truncate|grant|revoke|copy\s+into|copy\s+[\w.\"]+(?:\s*\([^)]*\))?\s+from|load\s+data)\b",
    re.IGNORECASE | re.DOTALL,
)


def changes_state(tool: str, arguments: Any) -> bool:
    """True when the call may change what later reads return: a tool named for editing files
    (``edit_file``, ``MultiEdit``, ``search_and_replace``), an editor command that writes
    (``{"command": "str_replace"}``), or a shell command that edits, redirects into, moves,
    removes or reformats files (``sed -i``, ``perl -pi``, ``echo x > f``, ``git checkout``,
    ``black .``, a script fed by a heredoc, ``python -c "open('f', 'w')..."``), or a SQL
    statement that writes (``{"sql": "UPDATE ..."}``)."""
    if type(arguments) is dict and not arguments.keys().isdisjoint(_SQL_ARGUMENT_NAMES):
        for key in _SQL_ARGUMENT_NAMES:
            statement = arguments.get(key)
            if type(statement) is str and _SQL_WRITE.match(statement[:2000]) is not None:
                return True  # a SQL statement that writes (UPDATE ... SET status = 'approved')
    if type(arguments) is not dict or arguments.keys().isdisjoint(COMMAND_ARGUMENT_NAMES):
        return _edits_by_name(tool[:NAME_LIMIT])
    # A command says what the call does, whatever the tool's name ("str_replace_editor" views too).
    command = _command_of(arguments)
    if command is None:
        return False
    if " " not in command.strip():  # an editor's own command word
        return not _EDITOR_WRITES.isdisjoint(split_name(command))
    command = command[:2000]
    unquoted = _unquoted(command)
    return _CHANGES_FILES.search(unquoted) is not None or _SCRIPT_WRITES.search(command) is not None or _changes_cluster(unquoted)


@lru_cache(maxsize=4096)
def _edits_by_name(name: str) -> bool:
    """Whether a tool's name says it edits files: a word of _EDIT_WORDS anywhere in it
    (``mcp__filesystem__edit_file``, ``MultiEdit``), not any verb that changes state
    (``send_message`` and ``update_plan`` change no file)."""
    return not _EDIT_WORDS.isdisjoint(_name_words(name))


#: Name words of tools that wait on the server for something new (long polls): Telegram
#: getUpdates, SQS ReceiveMessage, CouchDB _changes, a Kubernetes watch, an event stream.
_LONG_POLL_WORDS = frozenset({"updates", "receive", "poll", "longpoll", "watch", "listen", "subscribe"})
#: Argument name words that ask the server to wait (timeout=50, WaitTimeSeconds=20).
_SERVER_WAIT_WORDS = frozenset({"timeout", "wait"})


def long_polls_by_name(tool: str) -> bool:
    """True when the tool's name says it waits on the server for news (``getUpdates``,
    ``receive_message``, ``watch_pods``, ``poll_queue``, ``subscribe``)."""
    return not _LONG_POLL_WORDS.isdisjoint(name_words(tool))


# A shell command that long-polls: Telegram getUpdates with a timeout, aws sqs receive-message
# with a wait, redis-cli BLPOP/BRPOP/BLMOVE with a timeout, XREAD BLOCK, a watch, a long-poll feed.
_LONG_POLL_COMMAND = re.compile(
    r"getupdates\b[^|;\n]*\btimeout=[1-9]|receive-message\b[^|;&]*--wait-time-seconds[ =]+[1-9]"
    r"|\bb(?:l|r)pop(?:lpush)?\b[^|;&]*\s[1-9]\d*(?:\.\d+)?\s*(?:$|[|;&\n])|\bblmove\b|\bxread\b[^|;&]*\bblock\s+[1-9]"
    r"|\bkubectl\b[^|;&]*\s(?:--watch|-w)(?:\s|$)|feed=longpoll"
)
_LONG_POLL_HINTS = ("getupdates", "receive-message", "pop", "blmove", "block", "kubectl", "longpoll")


def long_poll_command(arguments: Any) -> bool:
    """True when a call's shell command long-polls (``curl ".../getUpdates?timeout=30"``,
    ``aws sqs receive-message --wait-time-seconds 20``, ``redis-cli BLPOP jobs 30``,
    ``kubectl get pods --watch``)."""
    if type(arguments) is not dict:
        return False
    command = _command_of(arguments)
    if command is None:
        return False
    lowered = command[:1000].lower()
    return any(hint in lowered for hint in _LONG_POLL_HINTS) and _LONG_POLL_COMMAND.search(lowered) is not None


def waits_on_server(arguments: Any) -> bool:
    """True when the arguments ask the server to hold the call until news comes: a timeout or
    wait of at least one second (``{"timeout": 50}``, ``{"WaitTimeSeconds": 20}``), or a
    long-poll feed (``{"feed": "longpoll"}``, ``{"watch": true}``). For a tool named for a
    long poll (see :func:`long_polls_by_name`) such a call is a poll."""
    if type(arguments) is not dict:
        return False
    for key, value in arguments.items():
        if value is True and str(key).lower() in ("watch", "long_poll", "longpoll"):
            return True
        if type(value) is str and value.lower() in ("longpoll", "continuous"):
            return True
        if type(value) in (int, float) and value >= 1 and not _SERVER_WAIT_WORDS.isdisjoint(split_name(str(key))):
            return True
    return False


def only_sleeps(arguments: Any) -> bool:
    """True when the call's command does nothing but sleep (``sleep 20``): a deliberate wait."""
    if type(arguments) is not dict:
        return False
    command = next((arguments[key] for key in _COMMAND_ARGUMENTS if key in arguments), None)
    return type(command) is str and _ONLY_SLEEP.fullmatch(command) is not None


def sleeps(tool: str, arguments: Any) -> bool:
    """True when the call runs a command or script that sleeps before whatever else it runs
    (a timed poll). Only commands count: a search for "sleep 8 hours" is no pause."""
    if type(arguments) is not dict:
        return False
    command_tool: bool | None = None
    for key, value in arguments.items():
        if type(value) is str and "leep" in value and _SLEEP.search(value) is not None:
            if key in _SCRIPT_ARGUMENTS:
                return True
            if command_tool is None:
                command_tool = _is_command_tool(tool)
            if command_tool:
                return True
    return False
