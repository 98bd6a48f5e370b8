"""The argument parser every ``tpubuild`` command uses, and the one place that words its errors.

argparse's own messages (``tpubuild: error: tpubuild: unrecognized arguments``, ``invalid choice:
'plna' (choose from ...)`` listing the pipeline's hidden verbs) are not ours: :class:`Parser`
turns each kind into one line that says what is wrong and how to fix it, raised as ``BadInput``
(exit 2) for ``builder.cli.main`` to print:

- an unknown command: ``unknown command 'plna'; did you mean 'plan'?`` and the user's verbs
  (never the hidden ones the pipeline runs);
- an unknown option: which command does not take it, the closest option it does take, its help;
- a value outside ``choices``: every valid value, from the same ``choices`` the help shows;
- a missing value, a missing required option, a value of the wrong type, an ambiguous
  abbreviation, two options that exclude each other.

:class:`TopParser` also lays out ``tpubuild --help``: the user's verbs first, then the admin
verbs (each verb's ``group``, builder/commands/verb.py); hidden verbs are listed by neither.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NoReturn

from builder.catalogue.modules import ARCHS, modules
from builder.facts.actions import Action
from builder.facts.errors import BadInput

#: Every plan module of any architecture, in create order (what ``--only`` names).
MODULE_NAMES: tuple[str, ...] = tuple(dict.fromkeys(m for arch in ARCHS for m in modules(arch)))


def or_list(items: Iterable[str]) -> str:
    """``a, b or c``."""
    items = list(items)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def and_list(items: Iterable[str]) -> str:
    """``a, b and c``."""
    items = list(items)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate ``word`` is most likely a typo of, or None."""
    import difflib

    found = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return found[0] if found else None


def add_action(parser: argparse.ArgumentParser, *, valid: Sequence[Action] = tuple(Action),
                default: Action | None = None, what: str = "the action") -> None:
    """``--action``, its choices the ``Action`` enum (``valid``), listed in its help; a bad one is
    refused by :meth:`Action.parse`, in the words ``submit``/``dispatch`` use too."""
    shown = ", ".join(str(a) for a in valid)
    help_ = f"{what}: {shown}" + (f" (default: {default})" if default else "")
    kwargs: dict[str, Any] = {"default": default} if default else {"required": True}
    parser.add_argument("--action", type=lambda text: Action.parse(text, "--action", choices=valid),
                        metavar="ACTION", help=help_, **kwargs)


def add_flags(parser: argparse.ArgumentParser, flags: dict[str, str]) -> None:
    """On/off options (``store_true``, default off), each with its help, in the order given: the one
    way a verb adds its switches."""
    for name, help_ in flags.items():
        parser.add_argument(name, action="store_true", help=help_)


def add_scope(parser: argparse.ArgumentParser) -> None:
    """``--tpu``, ``--mig`` and ``--allow-data-loss``, worded once for plan, render and submit.

    What they do is ``builder.planning.plan.make_plan`` (the scope) and ``builder.planning.guard`` (the override):
    ``--mig`` names the MIG module, which is the slice itself on ``TPU_ARCH=mig`` and the worker
    VMs of a legacy node (refused on ``vm``, which has none); ``builder.planning.guard`` lets a destroy delete
    Filestore and the shared PD without the override (the pipeline snapshots the disk, and backs
    Filestore up where its tier has backups, first), so only create/update need ``--allow-data-loss``.
    """
    add_flags(parser, {
        "--tpu": "scope update/destroy to the TPU (_TPU=true): the TPU VM on vm; on mig the slice's identity and "
                 "firewall",
        "--mig": "scope update/destroy to the MIG (_MIG=true): the slice itself on mig, the worker VMs on a legacy "
                 "node; refused on vm (no MIG there)",
        "--allow-data-loss": "let create/update destroy or replace Filestore or the shared PD (_ALLOW_DATA_LOSS=true); "
                             "destroy does not need it: it snapshots the disk, and backs up Filestore on tiers with "
                             "backups, before deleting them",
    })
    parser.add_argument("--move-to", metavar="ZONE", default=None,
                        help="update: place the environment in ZONE, a zone of the ZONE list, and move it there "
                             "make-before-break (TPU_MOVE; docs/capacity.md, \"Moving an environment to another zone\")")


def add_compare(parser: argparse.ArgumentParser) -> None:
    """plan's and render's ``--action`` (default create), scope, ``--only`` and ``--applied``."""
    add_action(parser, default=Action.CREATE)
    add_scope(parser)
    parser.add_argument("--only", metavar="MODULES", default=None,
                        help=f"update only these comma-separated modules, as GitOps auto does: {', '.join(MODULE_NAMES)}")
    parser.add_argument("--applied", metavar="FILE", default=None,
                        help="compare with this values.env as last applied ('none': compare with nothing); "
                             "default: the applied snapshot in the state bucket when credentials exist")


def at_least(minimum: int, what: str = "") -> Any:
    """An ``int`` option's type that refuses values below ``minimum``, saying the valid range."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; pass {minimum} or more{what}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is below {minimum}; pass {minimum} or more{what}")
        return value

    return parse


def _flag(name: str) -> str:
    """The long spelling of argparse's ``--follow/-f``."""
    return max(name.split("/"), key=len)


def _kind(type_name: str) -> str:
    """What argparse's ``type`` name asks for, in words."""
    return {"int": "a whole number", "float": "a number"}.get(type_name, f"a valid {type_name}")


#: argparse's complaints about one option (``argument --x: <problem>``), each as the pattern of
#: its problem and the line that says what is wrong and how to fix it.
_OPTION_PROBLEMS: tuple[tuple[str, Callable[[str, re.Match[str]], str]], ...] = (
    (r"invalid (\w+) value: (.*)", lambda flag, m: f"{flag}: {m[2]} is not {_kind(m[1])}; pass {_kind(m[1])}"),
    (r"not allowed with argument (\S+)",
     lambda flag, m: f"{flag}: cannot be used with {_flag(m[1])}; drop one of them"),
    (r"ignored explicit argument (.*)", lambda flag, m: f"{flag}: takes no value (got {m[1]}); write {flag} alone"),
)


class Parser(argparse.ArgumentParser):
    """argparse whose every complaint is one ``BadInput`` line with its fix (exit 2).

    Options are never abbreviated (``allow_abbrev=False``): ``--al`` silently meaning
    ``--allow-data-loss`` today would mean something else, or nothing, once another ``--al...``
    option exists; a typo gets "did you mean" instead."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        self._building = False
        super().__init__(*args, **kwargs)

    # argparse makes a throw-away help formatter for each argument it adds (to check the metavar)
    # and for add_subparsers (the sub-commands' prog, here the bare "tpubuild"); that formatter
    # asks shutil (which imports zlib, bz2, lzma) for the terminal's width, a few ms of every run.
    # Neither use depends on the width, so while building, the formatter gets a fixed one; help
    # and usage text still take the terminal's.
    def _get_formatter(self) -> argparse.HelpFormatter:
        if self._building:
            return self.formatter_class(prog=self.prog, width=80)
        return super()._get_formatter()

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        self._building = True
        try:
            return super().add_argument(*args, **kwargs)
        finally:
            self._building = False

    def add_subparsers(self, **kwargs: Any) -> argparse._SubParsersAction:
        self._building = True
        try:
            return super().add_subparsers(**kwargs)
        finally:
            self._building = False

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        raise BadInput(self.explain(message))

    def explain(self, message: str) -> str:
        """argparse's ``message`` as what is wrong; how to fix it."""
        see = f"see '{self.prog} --help'"
        m = re.fullmatch(r"the following arguments are required: (.*)", message)
        if m:
            if m[1] == "COMMAND":
                return f"no command given; {self._command_hint()}"
            missing = m[1].split(", ")
            if not any(name.startswith("-") for name in missing):  # positionals: MODEL, show|extend
                return f"'{self.prog}' needs {and_list(missing)}; {see}"
            verb = "is" if len(missing) == 1 else "are"
            return f"{and_list(missing)} {verb} required by '{self.prog}'; {see}"
        m = re.fullmatch(r"one of the arguments (.*) is required", message)
        if m:
            return f"'{self.prog}' needs one of {m[1]}; {see}"
        m = re.fullmatch(r"ambiguous option: (\S+?)(?:=\S*)? could match (.*)", message)
        if m:
            return f"{m[1]}: could be {or_list(m[2].split(', '))}; spell the option out"
        m = re.fullmatch(r"argument (\S+): (.*)", message, re.S)
        if not m:
            return f"{message}; {see}"
        flag, problem = _flag(m[1]), m[2]
        action = self._option_string_actions.get(flag)
        if problem.startswith("expected"):
            if action is not None and action.choices is not None:
                return f"{flag}: needs a value; use {or_list([str(c) for c in action.choices])}"
            metavar = (action.metavar or action.dest.upper()) if action else "VALUE"
            return f"{flag}: needs a value; write {flag} {metavar}"
        for pattern, say in _OPTION_PROBLEMS:
            m = re.fullmatch(pattern, problem)
            if m:
                return say(flag, m)
        return f"{flag}: {problem}"

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if action.choices is None or value in action.choices:
            return
        if isinstance(action, argparse._SubParsersAction):
            hint = closest(str(value), self._visible_commands(action))
            guess = f"did you mean '{hint}'? " if hint else ""
            raise BadInput(f"unknown command '{value}'; {guess}{self._command_hint()}")
        valid = [str(c) for c in action.choices]
        hint = closest(str(value), valid)
        guess = f"did you mean '{hint}'? " if hint else ""
        # what the value is: the metavar when it is a word (ACTION), else the option's name
        noun = str(action.metavar if str(action.metavar or "").isidentifier() else action.dest)
        noun = noun.lower().replace("_", " ")
        article = "an" if noun[:1] in "aeiou" else "a"
        what = f"{str(value)!r} is not {article} {noun} of '{self.prog}'; {guess}use {or_list(valid)}"
        raise BadInput(f"{_flag('/'.join(action.option_strings))}: {what}" if action.option_strings else what)

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            raise BadInput(self._unrecognized(parsed, extras))
        return parsed

    def _commands_action(self) -> argparse._SubParsersAction | None:
        return next((a for a in self._actions if isinstance(a, argparse._SubParsersAction)), None)

    def _unrecognized(self, parsed: argparse.Namespace, extras: list[str]) -> str:
        """Extra arguments, worded for the command they were given to."""
        sub = self._commands_action()
        command = getattr(parsed, "command", None)
        target = sub.choices.get(command, self) if sub and command else self
        options = sorted(o for o in target._option_string_actions if o.startswith("--") and o != "--help")
        see = f"see '{target.prog} --help'"
        first = extras[0]  # the first is the root cause: what follows it may be its value
        if not first.startswith("-"):
            return f"'{target.prog}' takes no argument {first!r}; {see}"
        name = first.split("=", 1)[0]
        starts = [o for o in options if o.startswith(name)]
        hint = or_list(starts) if starts else closest(name, options)
        if hint:
            return f"{name}: '{target.prog}' has no such option; did you mean {hint}? {see}"
        takes = f"its options are {and_list(options)}" if len(options) <= 6 else see
        return f"{name}: '{target.prog}' has no such option; drop it ({takes})"

    # ---- the commands, as the help shows them ----

    #: (title, commands) in help order; set by builder.cli on the top parser.
    command_groups: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def _visible_commands(self, sub: argparse._SubParsersAction) -> list[str]:
        return [a.dest for a in sub._choices_actions]

    def _command_hint(self) -> str:
        """The user's verbs, for a missing or unknown command."""
        sub = self._commands_action()
        users = self.command_groups[0][1] if self.command_groups else tuple(self._visible_commands(sub) if sub else ())
        return f"use one of {', '.join(users)}; see '{self.prog} --help' for every command"


class TopParser(Parser):
    """The ``tpubuild`` parser: its help lists the commands in ``command_groups``, one section each."""

    def format_help(self) -> str:
        formatter = self._get_formatter()
        formatter.add_usage(self.usage, self._actions, self._mutually_exclusive_groups)
        formatter.add_text(self.description)
        sub = self._commands_action()
        shown = {a.dest: a for a in sub._choices_actions} if sub else {}
        for title, names in self.command_groups:
            formatter.start_section(title)
            formatter.add_arguments([shown[n] for n in names if n in shown])
            formatter.end_section()
        for group in self._action_groups:
            actions = [a for a in group._group_actions if a is not sub]
            if actions:
                formatter.start_section(group.title)
                formatter.add_text(group.description)
                formatter.add_arguments(actions)
                formatter.end_section()
        formatter.add_text(self.epilog)
        return formatter.format_help()
