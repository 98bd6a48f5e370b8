"""A CLI verb is one file: ``builder/commands/verbs/<name>.py`` (``-`` in the name is ``_`` in
the file's). Its docstring is its help (the description, a blank line, the examples), and it
declares ``VERB = Verb.of(__doc__, name, group, rank, help, arguments, body)``: its name, its group
in ``tpubuild --help`` and its place there, its one-line help, its arguments and its body. The CLI
(builder/cli.py) discovers the verbs by listing that folder and imports only the file of the verb
it runs; help and errors load them all.

A verb file stays light: its body (:func:`work`) imports the module that does the work
(builder/commands/<area>.py, which may load the cloud edge) when the verb runs, so ``render``
loads no other verb's work and ``tpubuild --help`` loads none.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from enum import Enum
from functools import lru_cache
from pathlib import Path

from builder.facts.errors import BadInput
from builder.facts.records import record

#: The package whose modules are the verbs.
PACKAGE = "builder.commands.verbs"


class Group(Enum):
    """Where ``tpubuild --help`` lists a verb: the verbs a user runs day to day, the ones that set
    up or repair the machinery, and the ones the pipeline runs (listed by neither: hidden)."""

    USER = "commands"
    ADMIN = "admin commands (set up the environment's machinery, or repair it)"
    PIPELINE = ""


@record
class Verb:
    """One ``tpubuild`` sub-command."""

    name: str
    group: Group
    #: its place in its group's listing (ascending)
    rank: int
    #: the one line ``tpubuild --help`` shows
    help: str
    #: ``tpubuild NAME --help``'s paragraph and examples
    description: str
    epilog: str
    #: adds the verb's own arguments (``--values`` and ``--debug`` are every verb's)
    arguments: Callable[[argparse.ArgumentParser], None]
    #: runs it; its exit code (None: 0)
    body: Callable[[argparse.Namespace], int | None]

    @classmethod
    def of(cls, doc: str | None, name: str, group: Group, rank: int, help: str,
           arguments: Callable[[argparse.ArgumentParser], None], body: Callable[[argparse.Namespace], int | None],
           **fill: str) -> Verb:
        """The verb whose file's docstring ``doc`` is its help: the first paragraph (its lines
        joined by spaces) is the description, the rest, as written, the examples (``{name}`` in
        them is ``fill[name]``)."""
        head, _, tail = (doc or "").partition("\n\n")
        epilog = tail.removesuffix("\n")
        return cls(name, group, rank, help, " ".join(head.split("\n")), epilog.format(**fill) if fill else epilog,
                   arguments, body)

    def register(self, sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
        p = sub.add_parser(self.name, parents=[common], help=self.help, description=self.description,
                           epilog=self.epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
        self.arguments(p)
        p.set_defaults(func=self.body)


def work(module: str, function: str) -> Callable[[argparse.Namespace], int | None]:
    """A verb's body that imports ``module`` (a module of builder/commands/ that does the work)
    when the verb runs, and calls its ``function`` with the parsed arguments."""
    def body(args: argparse.Namespace) -> int | None:
        return getattr(importlib.import_module(module), function)(args)

    body.__name__ = function
    return body


def module_of(name: str) -> str:
    return f"{PACKAGE}.{name.replace('-', '_')}"


def files() -> list[str]:
    """The verb modules' names (the files of the verbs folder, without importing them)."""
    package = importlib.import_module(PACKAGE)  # (pkgutil.iter_modules would import inspect: start-up)
    return sorted({f.stem for folder in package.__path__ for f in Path(folder).glob("*.py")
                   if not f.name.startswith("_")})


def load(module: str) -> Verb:
    """The verb a module of the verbs folder declares."""
    verb = getattr(importlib.import_module(f"{PACKAGE}.{module}"), "VERB", None)
    if not isinstance(verb, Verb) or module_of(verb.name) != f"{PACKAGE}.{module}":
        raise BadInput(f"builder/commands/verbs/{module}.py: declares no VERB named {module.replace('_', '-')!r}")
    return verb


def find(word: str | None) -> Verb | None:
    """The verb ``word`` names, loading only its file; None when there is no such file."""
    if not word or word.replace("-", "_") not in files():
        return None
    return load(word.replace("-", "_"))


@lru_cache(maxsize=1)
def _all() -> tuple[Verb, ...]:
    return tuple(sorted((load(m) for m in files()), key=lambda v: (list(Group).index(v.group), v.rank, v.name)))


def every() -> tuple[Verb, ...]:
    """Every verb, in help order (a verb file added while running, as a test does, is seen)."""
    if len(_all()) != len(files()):
        _all.cache_clear()
    return _all()


def groups() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The top-level help's sections, in order: (title, verbs) of every listed group."""
    verbs = every()
    return tuple((g.value, tuple(v.name for v in verbs if v.group is g)) for g in Group if g is not Group.PIPELINE)


def hidden() -> frozenset[str]:
    """Verbs the pipeline runs, not people: they work, but the top-level help does not list them."""
    return frozenset(v.name for v in every() if v.group is Group.PIPELINE)
