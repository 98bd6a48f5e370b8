"""The ``tpubuild`` command line: argument parsing and the one error handler. Thin by design.

Each verb is one file, ``builder/commands/verbs/<name>.py`` (builder/commands/verb.py): the CLI
finds the file of the verb named and loads only that one (help and errors load them all);
``common`` is the parent parser that gives every verb ``--values`` and ``--debug``. Nothing loads
``google.*`` until a verb that talks to Google runs, so ``render`` and ``plan`` stay fast. The
parser's error wording and the grouped help are ``builder/commands/parser.py``; ``builder/facts/console.py`` makes the output degrade to ASCII where the
terminal cannot show more.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from collections.abc import Sequence

from builder import __version__
from builder.commands import verb
from builder.commands.parser import Parser, TopParser
from builder.facts.console import degrade_streams
from builder.facts.errors import BadInput, TpuBuildError, document


def _command_word(argv: Sequence[str]) -> str | None:
    """The sub-command named in ``argv`` (skipping the shared options), or None."""
    args = iter(argv)
    for arg in args:
        if arg in ("--values",):
            next(args, None)
        elif arg in ("-h", "--help", "--version"):
            return None
        elif not arg.startswith("-"):
            return arg
    return None


DESCRIPTION = ("Turn one values.env into a Google Cloud TPU training environment for PyTorch/XLA, "
               "and keep it right as the file changes.")

EPILOG = """examples:
  tpubuild validate                           check values.env (every problem, one line each)
  tpubuild plan                               what create does, before -> after, and its hourly cost
  tpubuild plan --action update --tpu         what changing the TPU does (replaced? hosts recreated?)
  tpubuild initialize && tpubuild submit --action create --wait
  tpubuild status                             what is running, the lock, the TTL
  tpubuild ttl extend 4h                      push the environment's TTL back

Run 'tpubuild COMMAND --help' for a command's options and examples. Exit codes: 0 ok,
1 a failure in the world (a cloud call, a build), 2 bad input."""

#: Defaults of the options every command shares (see build_parser).
COMMON_DEFAULTS: dict[str, object] = {"values": "values.env", "debug": False}


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given ``argv``, with only the verb it names (when its file exists), else every verb."""
    # SUPPRESS, not a default: the same options sit on the top parser and on every sub-command,
    # and a sub-command's default would silently replace `tpubuild --values X validate`'s X.
    # main() fills in the defaults after parsing (COMMON_DEFAULTS).

    common = Parser(add_help=False, argument_default=argparse.SUPPRESS)
    common.add_argument("--values", metavar="PATH",
                        help="the environment's values file (default: ./values.env)")
    common.add_argument("--debug", action="store_true", help="show the full trace of unexpected errors")
    parser = TopParser(prog="tpubuild", description=DESCRIPTION, epilog=EPILOG, parents=[common],
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"tpubuild {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    found = verb.find(_command_word(argv)) if argv is not None else None
    if found is not None:
        parser.command_groups = ()
        found.register(sub, common)
    else:
        parser.command_groups = verb.groups()
        for each in verb.every():
            each.register(sub, common)
        hidden = verb.hidden()
        sub._choices_actions = [a for a in sub._choices_actions if a.dest not in hidden]
    return parser


def one_line(text: str, limit: int = 2000) -> str:
    """Messages are one line: whatever newlines a message carries (a path, a cloud error) become spaces."""
    flat = " ".join(part.strip() for part in text.splitlines() if part.strip())
    # a lone surrogate (a non-UTF-8 byte in a path or argument) must not crash the print itself
    flat = flat.encode("utf-8", "backslashreplace").decode("utf-8")
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def check_text_args(argv: Sequence[str]) -> None:
    """Arguments are UTF-8 text: Python hands non-UTF-8 bytes of argv over as lone surrogates."""
    for index, arg in enumerate(argv, 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            shown = arg.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
            raise BadInput(f"argument {index} ({shown}) is not UTF-8 text; pass names and paths in UTF-8") from None


def wants_json(argv: Sequence[str]) -> bool:
    """``--format json`` (or ``--format=json``) is on the command line: then a failure prints a JSON
    object on stdout too (builder.facts.errors.document), so stdout is JSON on every exit."""
    return any(a == "--format=json" or (a == "--format" and b == "json") for a, b in zip(argv, [*argv[1:], ""]))


def _fail(what: str, detail: str, code: int, as_json: bool, exc: BaseException | None = None) -> int:
    """Print a failure: its one line on stderr (``tpubuild: <what><detail>``) and, under
    ``--format json``, its JSON object on stdout (builder.facts.errors.document)."""
    print(f"tpubuild: {what}{detail}", file=sys.stderr)
    if as_json:
        print(json.dumps(document(detail, code, exc), indent=2, sort_keys=True), flush=True)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """The program (``argv`` None: ``sys.argv``, as the console script and ``python -m builder``
    call it), or one command line in this process (tests)."""
    if argv is not None:
        return _run(list(argv))
    try:
        return _run(sys.argv[1:])
    finally:
        # The process exits next, and Python's last collection would walk every object the verb made
        # (about a seventh of `tpubuild render`'s CPU time: docs/startup.md). Nothing is left to collect
        # that matters: files are closed, stdout and stderr are flushed at exit, atexit handlers run.
        gc.freeze()


def _run(argv: list[str]) -> int:
    degrade_streams(sys.stdout, sys.stderr)
    debug = "--debug" in argv
    as_json = wants_json(argv)
    try:
        check_text_args(argv)
        args = build_parser(argv).parse_args(argv)
        for name, default in COMMON_DEFAULTS.items():
            if not hasattr(args, name):
                setattr(args, name, default)
        return int(args.func(args) or 0)
    except TpuBuildError as exc:
        if debug:
            raise
        return _fail("error: ", one_line(str(exc)), exc.exit_code, as_json, exc)
    except KeyboardInterrupt:
        return _fail("", "interrupted", 130, as_json)
    except BrokenPipeError:  # `tpubuild render | head`: stop quietly, and keep Python from complaining at exit
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 0
    except Exception as exc:  # the one handler for everything we did not foresee
        if debug:
            raise
        detail = one_line(str(exc))
        return _fail("internal error: ", f"{type(exc).__name__}: {detail} (rerun with --debug for the trace)",
                     1, as_json, exc)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
