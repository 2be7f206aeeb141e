"""vaultq's help texts, shell completion scripts and man page, all generated from its
argument parser (vaultq._parser, built from the one table of operations, ops.OPS), so
that a new operation or flag shows up in each without a line here; and vaultd's man page,
from its click commands (`vaultd man`), the source of its --help. Standard library only
(click's objects are read, not imported); imported only for help, `vaultq completion` and
the man pages, never for a query.

The pages pip installs (docs/man/vaultq.1 and vaultd.1, pyproject's data-files) are these
functions' output, and tests/test_docs_man.py fails when they are not current.
"""

from __future__ import annotations

import argparse
import datetime
import os

from . import __version__

QUERY_SYNTAX = """\
query syntax:
  memory tiers            notes with either word, those with both first
  "memory tiers"          the words in this order (any form of each)
  +tantivy memory         must contain tantivy
  memory -archive         must not contain archive (also -"old draft")
  tag:rust title:deep path:notes/2025
                          filters (also --tag, --path)
  after:2025-01-01 before:2025-03
                          by the note's date (also --after, --before)
  가치관이                Hangul/Han/Kana match by bigrams (particles never block a match)
  grpah veiw              a word no note holds is matched with typo tolerance
  borrow chec             the last word also matches as a prefix
Nothing typed is an error: C++, TODO: fix, 12:30 and URLs are searched as text."""

EXIT_CODES = """\
exit status:
  0  results
  1  no result (as grep), or a note not found
  2  bad usage or a bad request
  3  the daemon is unreachable (the message says how to start it)
  4  the first index is still being built (the answer holds the notes read so far)"""

ENVIRONMENT = (
    ("VAULTD_SOCKET", "the daemon's socket, when --socket is not given"),
    ("XDG_RUNTIME_DIR", "where daemons listen: $XDG_RUNTIME_DIR/vaultd/<vault-name>.sock; /run/user/UID/vaultd "
                        "and $TMPDIR/vaultd-UID are looked in too"),
    ("VAULTD_AGENT", "1: reads are counted as an agent's (also CLAUDECODE=1)"),
    ("NO_COLOR", "no colour in human output"),
)

EPILOGS = {"search": QUERY_SYNTAX, "context": QUERY_SYNTAX}

NOTES_CMD = "list --format paths"
"""The vaultq command that lists every note's path (for completing a NOTE)."""
TAGS_CMD = "tags"
"""...and every tag, first the count: `  12  rust   with ...`."""


# -- the parser, read ---------------------------------------------------------------------


class Arg:
    """One argument of a command: its flags (none for a positional), what its value is
    (None: no value; "note", "tag", "file", "dir", or a tuple of choices; "" anything)."""

    def __init__(self, action: argparse.Action):
        self.flags = tuple(action.option_strings)
        self.help = (action.help or "").replace("%(default)s", str(action.default))
        self.dest = action.dest
        self.metavar = action.metavar or action.dest.upper()
        takes = not isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction,
                                        argparse._HelpAction, argparse._VersionAction, argparse._CountAction))
        if not takes:
            self.value = None
        elif action.choices:
            self.value = tuple(action.choices)
        elif action.dest in ("note", "link") or self.metavar == "NOTE":
            self.value = "note"
        elif action.dest == "tag":
            self.value = "tag"
        elif action.dest == "socket":
            self.value = "file"
        elif action.dest in ("vault", "path"):
            self.value = "dir"
        else:
            self.value = ""
        self.many = action.nargs in ("*", "+") or isinstance(action, argparse._AppendAction)


def commands(parser: argparse.ArgumentParser) -> dict[str, tuple[str, list[Arg]]]:
    """Each command's help line and arguments, in the parser's order."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help or "" for c in sub._choices_actions}
    return {name: (helps.get(name, ""), [Arg(a) for a in p._actions if not isinstance(a, argparse._HelpAction)])
            for name, p in sub.choices.items()}


def global_args(parser: argparse.ArgumentParser) -> list[Arg]:
    return [Arg(a) for a in parser._actions if not isinstance(a, argparse._SubParsersAction)]


# -- completion ---------------------------------------------------------------------------


def completion(shell: str, parser: argparse.ArgumentParser) -> str:
    return {"bash": _bash, "zsh": _zsh, "fish": _fish}[shell](parser)


def _words(values) -> str:
    return " ".join(values)


def _bash(parser) -> str:
    cmds = commands(parser)
    glob = global_args(parser)
    cases = []
    for name, (_, args) in cmds.items():
        valued = [a for a in args if a.flags and a.value is not None]
        prev = "".join(f"            {'|'.join(a.flags)}) {_bash_value(a.value)}; return;;\n" for a in valued)
        pos = next((a for a in args if not a.flags), None)
        flags = _words(f for a in args for f in a.flags) + " --help"
        cases.append(
            f"        {name})\n"
            f"            case $prev in\n{prev}            esac\n"
            f"            if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W '{flags}' -- \"$cur\")); return; fi\n"
            f"            {_bash_value(pos.value) if pos else 'return'};;\n")
    return f"""\
# bash completion for vaultq {__version__}, generated by `vaultq completion bash` from its
# table of operations. Note paths and tags come from the running daemon.
#   eval "$(vaultq completion bash)"        # in ~/.bashrc, or:
#   vaultq completion bash > ~/.local/share/bash-completion/completions/vaultq
_vaultq_ask() {{
    local i w=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${{COMP_WORDS[i]}} in --socket|--vault) w+=("${{COMP_WORDS[i]}}" "${{COMP_WORDS[i+1]}}");; esac
    done
    command vaultq "${{w[@]}}" "$@" 2>/dev/null
}}
_vaultq_notes() {{
    local IFS=$'\\n'
    compopt -o filenames 2>/dev/null
    COMPREPLY=($(compgen -W "$(_vaultq_ask {NOTES_CMD})" -- "$cur"))
}}
_vaultq_tags() {{
    COMPREPLY=($(compgen -W "$(_vaultq_ask {TAGS_CMD} | awk '{{print $2}}')" -- "$cur"))
}}
_vaultq() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}} cmd= i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${{COMP_WORDS[i]}} in
            --socket|--vault) ((i++));;
            -*) ;;
            *) cmd=${{COMP_WORDS[i]}}; break;;
        esac
    done
    case $prev in
        --socket) COMPREPLY=($(compgen -f -- "$cur")); return;;
        --vault) COMPREPLY=($(compgen -d -- "$cur")); return;;
    esac
    case $cmd in
        '') COMPREPLY=($(compgen -W '{_words(f for a in glob for f in a.flags)} {_words(cmds)}' -- "$cur"));;
{"".join(cases)}    esac
}}
complete -F _vaultq vaultq
"""


def _bash_value(value) -> str:
    if isinstance(value, tuple):
        return f"COMPREPLY=($(compgen -W '{_words(value)}' -- \"$cur\"))"
    return {"note": "_vaultq_notes", "tag": "_vaultq_tags", "file": 'COMPREPLY=($(compgen -f -- "$cur"))',
            "dir": 'COMPREPLY=($(compgen -d -- "$cur"))'}.get(value, "return")


def _zq(text: str) -> str:
    """A zsh _arguments description, in single quotes."""
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]").replace(":", "\\:").replace("'", "'\\''")


def _zsh_spec(a: Arg) -> list[str]:
    action = {"note": "_vaultq_notes", "tag": "_vaultq_tags", "file": "_files", "dir": "_directories"}.get(
        a.value, "") if not isinstance(a.value, tuple) else f"({' '.join(a.value)})"
    if not a.flags:
        return [f"'{'*' if a.many else ''}:{_zq(a.metavar.lower())}:{action}'"]
    value = "" if a.value is None else f":{_zq(a.metavar.lower())}:{action}"
    excl = f"({' '.join(a.flags)})" if len(a.flags) > 1 and not a.many else ""
    star = "*" if a.many and a.flags else ""
    return [f"'{excl}{star}{f}[{_zq(a.help)}]{value}'" for f in a.flags]


def _zsh(parser) -> str:
    cmds = commands(parser)
    glob = [s for a in global_args(parser) for s in _zsh_spec(a)]
    described = "\n".join(f"        '{name}:{_zq(h)}'" for name, (h, _) in cmds.items())
    cases = "\n".join(f"            {name}) _arguments -s {' '.join(s for a in args for s in _zsh_spec(a))} ;;"
                      for name, (_, args) in cmds.items())
    return f"""\
#compdef vaultq
# zsh completion for vaultq {__version__}, generated by `vaultq completion zsh` from its
# table of operations. Note paths and tags come from the running daemon.
#   vaultq completion zsh > "${{fpath[1]}}/_vaultq"     # then restart zsh
_vaultq_ask() {{
    local -a w
    local i
    for ((i = 2; i < CURRENT; i++)); do
        [[ $words[i] == --socket || $words[i] == --vault ]] && w+=($words[i] $words[i+1])
    done
    command vaultq $w "$@" 2>/dev/null
}}
_vaultq_notes() {{ local -a n; n=(${{(f)"$(_vaultq_ask {NOTES_CMD})"}}); compadd -a n; }}
_vaultq_tags() {{ local -a t; t=(${{(f)"$(_vaultq_ask {TAGS_CMD} | awk '{{print $2}}')"}}); compadd -a t; }}
_vaultq() {{
    local curcontext=$curcontext state line
    local -a cmds
    cmds=(
{described}
    )
    _arguments -C {' '.join(glob)} '1:command:->cmd' '*::arg:->args'
    case $state in
        cmd) _describe -t commands 'vaultq command' cmds ;;
        args)
            case $words[1] in
{cases}
            esac ;;
    esac
}}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then _vaultq "$@"; else compdef _vaultq vaultq; fi
"""


def _fq(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish(parser) -> str:
    cmds = commands(parser)
    ask = "(__vaultq_ask {})"
    out = [f"# fish completion for vaultq {__version__}, generated by `vaultq completion fish` from its",
           "# table of operations. Note paths and tags come from the running daemon.",
           "#   vaultq completion fish > ~/.config/fish/completions/vaultq.fish",
           "function __vaultq_ask",
           "    set -l t (commandline -opc)",
           "    set -l w",
           "    for i in (seq 2 (count $t))",
           "        if contains -- $t[$i] --socket --vault; and test $i -lt (count $t)",
           "            set -a w $t[$i] $t[(math $i + 1)]",
           "        end",
           "    end",
           "    command vaultq $w $argv 2>/dev/null",
           "end",
           "complete -c vaultq -f",
           f"set -l __vaultq_cmds {' '.join(cmds)}"]
    for a in global_args(parser):
        out.append(_fish_arg(a, "not __fish_seen_subcommand_from $__vaultq_cmds", ask))
    for name, (h, args) in cmds.items():
        out.append(f"complete -c vaultq -n 'not __fish_seen_subcommand_from $__vaultq_cmds' -a {name} -d {_fq(h)}")
        for a in args:
            out.append(_fish_arg(a, f"__fish_seen_subcommand_from {name}", ask))
    return "\n".join(out) + "\n"


def _fish_arg(a: Arg, cond: str, ask: str) -> str:
    if isinstance(a.value, tuple):
        value = f" -xa {_fq(' '.join(a.value))}"
    else:
        value = {"note": f" -xa {_fq(ask.format(NOTES_CMD))}",
                 "tag": f" -xa {_fq(ask.format(TAGS_CMD + ' | awk ' + chr(39) + '{print $2}' + chr(39)))}",
                 "file": " -rF", "dir": " -xa '(__fish_complete_directories)'", "": " -x", None: ""}[a.value]
    names = "".join(f" -s {f[1:]}" if len(f) == 2 else f" -l {f[2:]}" for f in a.flags)
    return f"complete -c vaultq -n {_fq(cond)}{names}{value} -d {_fq(a.help or a.metavar)}"


# -- the man page -------------------------------------------------------------------------


def _roff(text: str) -> str:
    """Text safe in roff: backslashes and hyphens escaped, no line starting with . or '."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + ln) if ln[:1] in (".", "'") else ln for ln in text.split("\n"))


def man(parser: argparse.ArgumentParser) -> str:
    """vaultq(1) in roff (man -l renders it)."""
    out = [_title("VAULTQ"),
           ".SH NAME", "vaultq \\- query a running vaultd, the live index of a notes vault",
           ".SH SYNOPSIS", ".B vaultq", "[\\fB\\-\\-socket\\fR \\fIPATH\\fR | \\fB\\-\\-vault\\fR \\fIDIR\\fR]",
           "\\fICOMMAND\\fR [\\fIARGS\\fR]",
           ".SH DESCRIPTION",
           _roff("vaultq asks the vaultd daemon of a vault (Obsidian Markdown, Org-mode, Denote) over its Unix "
                 "socket: full-text search, the link graph, the HOT working set, budgeted context for agents. "
                 "Paths are shown relative to the current folder inside the vault, absolute outside it; --json "
                 "keeps them relative to the vault. Without --socket or --vault, vaultq uses the daemon of the "
                 "vault around the current folder, else the only one running."),
           ".SH OPTIONS"]
    for a in global_args(parser):
        out += [".TP", _flags(a), _roff(a.help)]
    out.append(".SH COMMANDS")
    for name, (h, args) in commands(parser).items():
        pos = " ".join(f"[{a.metavar}{' ...' if a.many else ''}]" for a in args if not a.flags)
        out += [".SS " + _roff(f"{name} {pos}".strip()), _roff(h)]
        for a in args:
            if a.flags:
                out += [".TP", _flags(a), _roff(a.help)]
    out += [".SH QUERY SYNTAX", ".nf", _roff(QUERY_SYNTAX.split("\n", 1)[1]), ".fi",
            ".SH EXIT STATUS", ".nf", _roff(EXIT_CODES.split("\n", 1)[1]), ".fi",
            ".SH ENVIRONMENT"]
    for var, what in ENVIRONMENT:
        out += [".TP", f"\\fB{var}\\fR", _roff(what)]
    out += [".SH EXAMPLES", ".nf", _roff('vaultq search "memory tiers" --tag agents\n'
                                          "vaultq backlinks \"Deep work\"\nvaultq context \"how do I focus\" "
                                          "--budget 2000\nvaultq graph Zettelkasten --depth 2 --format dot | dot -Tsvg "
                                          '> z.svg\neval "$(vaultq completion bash)"'), ".fi",
            ".SH SEE ALSO", _roff("vaultd(1); vaultd run --help, vaultd check, vaultd install-service; the manual: "
                                  "docs/ of vaultd (README.md there).")]
    return "\n".join(out) + "\n"


def _title(name: str) -> str:
    """A page's .TH line, dated today (or by SOURCE_DATE_EPOCH, for a reproducible build)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    day = (datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc).date() if epoch.isdigit()
           else datetime.date.today())
    return f'.TH {name} 1 "{day.isoformat()}" "vaultd {__version__}" "User Commands"'


VAULTD_EXIT_CODES = """\
0  done
1  an error vaultd names (a file it cannot read or write, a failed index); check: something is wrong
2  a configuration error (the file and the key) or bad usage
3  another vaultd holds the socket or the index of this vault"""


def man_vaultd(group) -> str:
    """vaultd(1) in roff, from its click group `group` (each command's help and options, as
    --help shows them)."""
    ctx = group.context_class(group, info_name="vaultd")
    out = [_title("VAULTD"),
           ".SH NAME", "vaultd \\- keep a live index and link graph of a notes vault, and answer over a socket",
           ".SH SYNOPSIS", ".B vaultd", "\\fICOMMAND\\fR [\\fIOPTIONS\\fR]",
           ".SH DESCRIPTION",
           _roff("vaultd watches a vault of Denote, Org and Obsidian Markdown notes, keeps a full-text index and "
                 "link graph of it, splits notes that grow too big (journaled, undoable), and answers vaultq, "
                 "editors (vaultd lsp) and agents (vaultd mcp) over a Unix socket."),
           ".SH COMMANDS"]
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None or cmd.hidden:
            continue
        sub = cmd.context_class(cmd, info_name=name, parent=ctx)
        out += [".SS " + _roff(f"vaultd {name} {' '.join(cmd.collect_usage_pieces(sub))}".strip()),
                _roff(" ".join((cmd.help or "").split()))]
        for param in cmd.get_params(sub):
            record = param.get_help_record(sub)
            if record:
                out += [".TP", "\\fB" + _roff(record[0]) + "\\fR", _roff(" ".join(record[1].split()))]
    out += [".SH EXIT STATUS", ".nf", _roff(VAULTD_EXIT_CODES), ".fi",
            ".SH ENVIRONMENT"]
    for var, what in VAULTD_ENVIRONMENT:
        out += [".TP", f"\\fB{var}\\fR", _roff(what)]
    out += [".SH FILES", ".TP", _roff("$XDG_CONFIG_HOME/vaultd/config.toml"),
            _roff("the configuration (config.example.toml of vaultd lists every key)"),
            ".TP", _roff("$XDG_STATE_HOME/vaultd/<vault-name>/"), _roff("the index and state of a vault"),
            ".TP", _roff("VAULT/.vaultd/split/"), _roff("the journal of every split, rename and remembered entry: their undo (vaultq history, vaultq undo)"),
            ".SH SEE ALSO", _roff("vaultq(1); the manual: docs/ of vaultd (README.md there).")]
    return "\n".join(out) + "\n"


VAULTD_ENVIRONMENT = (
    ("VAULTD_CONFIG", "the config file, when --config is not given"),
    ("VAULTD_VAULT, VAULTD_STATE_DIR, VAULTD_SOCKET", "the vault, the state folder, the socket, when not given"),
    ("VAULTD_SPLIT", "auto, propose or off: overrides [split] mode (run --split overrides it)"),
    ("XDG_RUNTIME_DIR", "where the socket is made: $XDG_RUNTIME_DIR/vaultd/<vault-name>.sock"),
)


def _flags(a: Arg) -> str:
    value = "" if a.value is None else (" \\fI" + ("{" + ",".join(a.value) + "}" if isinstance(a.value, tuple)
                                                  else _roff(a.metavar)) + "\\fR")
    return ", ".join(f"\\fB{_roff(f)}\\fR" for f in a.flags) + value
