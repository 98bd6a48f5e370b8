"""Read values.env with python-dotenv's parser, keeping line numbers, and resolve ``${KEY}``.

Bash semantics as users write them: quotes, ``export``, comments after values, and ``${OTHER}``
(or ``${OTHER:-default}``) referring to a key set *earlier in the file*. python-dotenv finds the
lines and their quotes; the value is then read from the raw text the way bash reads it: single
quotes keep every character, inside double quotes a backslash is removed only before ``$``, a
backquote, ``"``, a backslash or a newline (``"gs://b/\\training"`` keeps its ``\\t``; python-dotenv
alone would make it a TAB), and outside quotes every backslash is removed. What bash would expand
and we cannot (``$NAME``, ``$(...)``, backquotes, ``${NAME:=x}`` and the other ``${...}`` forms) is
refused, never kept as text. The process environment is never consulted: the same file gives the
same environment on every machine.

One problem, one line: an unclosed quote is reported on its own line and reading goes on from
the next line (python-dotenv would swallow the lines up to the next quote), and a key whose value
only echoes a broken key through ``${KEY}`` gets no line of its own (``parse``'s ``broken``).
"""

from __future__ import annotations

import importlib.util
import io
import re
from pathlib import Path
from typing import Any

from builder.facts.errors import ConfigError
from builder.facts.files import MAX_BYTES, VALUES_FILE, read_bytes  # noqa: F401 - MAX_BYTES re-exported
from builder.facts.records import record

#: values.env is at most 1 MiB; its refusals are worded in builder/facts/files.py (VALUES_FILE).



@record
class Entry:
    key: str
    value: str
    line: int
    #: the keys whose values ``${KEY}`` put into this one (and the keys those were made of)
    refs: frozenset[str] = frozenset()


def read_text(path: Path) -> str:
    """The file's text, or one clear ``BadInput`` line saying why it can't be read."""
    data = read_bytes(path, MAX_BYTES, VALUES_FILE)
    if data.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark, as some Windows editors write
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError("is not UTF-8 text", "save the file as UTF-8", path=path, line=line) from None


_ASSIGN = re.compile(r"^\s*(?:export\s+)?(?P<key>[A-Za-z_][A-Za-z0-9_.]*)\s*=\s*(?P<quote>['\"]?)")
#: The raw text between the quotes, as python-dotenv's parser matched it (its own regexes).
_RAW = {"'": re.compile(r"((?:\\.|[^'\\])*)'", re.DOTALL), '"': re.compile(r'((?:\\.|[^"\\])*)"', re.DOTALL)}
_KEY = re.compile(r"[A-Z][A-Z0-9_]*")
#: An assignment with blanks around its ``=``, which bash does not read as one.
_SPACED = re.compile(r"^\s*(?:export\s+)?(?P<key>[A-Za-z_][A-Za-z0-9_]*)(?P<before>[ \t]*)=(?P<after>[ \t]*)(?P<rest>.*)")
#: The expansions values.env supports: ``${NAME}`` and ``${NAME:-default}``.
_EXPANSION = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^$`]*))?", re.DOTALL)
#: Inside double quotes bash removes a backslash only before these (``man bash``, QUOTING).
_DQ_ESCAPES = frozenset('$`"\\\n')


class _Unreadable(Exception):
    """A value refers to a key whose own line could not be read: its error is already reported
    (the root cause), so this key is skipped without a line of its own."""


class _Unclosed(Exception):
    """A quote opened on a line is not closed there and python-dotenv read on into later lines."""

    def __init__(self, error: ConfigError) -> None:
        super().__init__(error.message)
        self.error = error


def parse(text: str, path: Path, errors: list[ConfigError] | None = None,
          broken: set[str] | None = None, *, bash_assignments: bool = True) -> list[Entry]:
    """Parse and expand; one ``ConfigError`` for the first line that is wrong, or, given
    ``errors``, every wrong line appended there (and the good lines returned). ``broken``, when
    given, receives every key whose value could not be read, including the keys that only echo
    one of them through ``${KEY}`` (those get no error line of their own: the root is reported).
    ``bash_assignments``: refuse a line bash would not read as an assignment (``KEY = "v"`` runs
    ``KEY`` as a command; ``KEY= "v"`` sets KEY empty and runs ``v``); off for values already
    applied, which were read with the blanks skipped."""
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise ConfigError("contains a NUL byte", "save values.env as plain text", path=path, line=line)
    text = text.replace("\r\n", "\n")  # python-dotenv miscounts the line after a broken CRLF line
    seen: dict[str, Entry] = {}
    lost: set[str] = set() if broken is None else broken
    entries: list[Entry] = []
    offset = 0
    while text:
        rest = ""
        for binding in _dotenv("parser").parse_stream(io.StringIO(text)):
            try:
                entry = _entry(binding, seen, lost, path, offset, bash_assignments)
            except _Unreadable:
                lost.add(binding.key)
                continue
            except _Unclosed as exc:
                # the open quote swallowed the lines after it: report it, read on from the next line
                lost.add(exc.error.key or "")
                if errors is None:
                    raise exc.error from None
                errors.append(exc.error)
                rest = "".join(re.split(r"(\r\n|\n|\r)", text)[2 * binding.original.line:])  # dotenv's newlines
                offset += binding.original.line
                break
            except ConfigError as exc:
                if errors is None:
                    raise
                if exc.key:
                    lost.add(exc.key)
                errors.append(exc)
                continue
            if entry is not None:
                seen[entry.key] = entry
                lost.discard(entry.key)
                entries.append(entry)
        text = rest
    lost.discard("")
    return entries


def _entry(binding: Any, seen: dict[str, Entry], lost: set[str], path: Path, offset: int,
           bash_assignments: bool = True) -> Entry | None:
    """One parsed binding as an Entry (None for a blank or comment line), or its ConfigError."""
    line = binding.original.line + offset
    original = binding.original.string
    raw_line = original.strip()
    m = _ASSIGN.match(original)
    if binding.error:
        first = original.splitlines()[0] if original.strip() else ""
        if m and m.group("quote") and not _RAW[m.group("quote")].match(first, m.end()):
            q = m.group("quote")
            key = m.group("key")
            runs_on = raw_line.count("\n")
            where = f" (it runs on through line {line + runs_on})" if runs_on else ""
            error = ConfigError(f"the {q} opened on this line is not closed{where}",
                                f"close it on this line: {key}={q}...{q}", path=path, line=line,
                                key=key if _KEY.fullmatch(key) else None)
            if runs_on:
                raise _Unclosed(error)
            raise error
        shown = first if len(first) <= 60 else first[:57] + "..."
        raise ConfigError(
            f"cannot parse {shown!r}",
            'write KEY="value" (close every quote; comments start with #)',
            path=path, line=line, key=m.group("key") if m and _KEY.fullmatch(m.group("key")) else None,
        )
    if binding.key is None:
        return None
    key = binding.key
    if not _KEY.fullmatch(key):
        raise ConfigError(
            f"{key!r} is not a valid key name",
            "use UPPER_CASE letters, digits and '_' as in the shipped values.env",
            path=path, line=line,
        )
    if binding.value is None:
        raise ConfigError(
            "has no value", f'write {key}="value" (or {key}="" for empty)', path=path, line=line, key=key
        )
    if bash_assignments:
        _check_blanks(original.splitlines()[0], key, path, line)
    quote = m.group("quote") if m else ""
    if quote:  # python-dotenv decodes \t, \n ... in quotes; bash does not: start from the raw text
        raw = _RAW[quote].match(original, m.end()) if m else None
        value = raw.group(1) if raw else binding.value
    else:
        value = binding.value
    if quote == "'":  # bash: single quotes keep every character as written
        return Entry(key, value, line)
    expanded, refs = _expand(value, quoted=quote == '"', seen=seen, lost=lost, path=path, line=line, key=key)
    if not quote and re.search(r"\s", value):
        words = value.split()
        word = words[1] if len(words) > 1 else ""
        raise ConfigError(
            f"has a space outside quotes (bash would run {word!r} as a command)",
            f'quote the value: {key}="{value}"', path=path, line=line, key=key,
        )
    return Entry(key, expanded, line, frozenset(refs))


def _check_blanks(first: str, key: str, path: Path, line: int) -> None:
    """Refuse blanks around ``=`` where bash would not assign: ``KEY = "v"`` and ``KEY ="v"`` run
    ``KEY`` as a command; ``KEY= "v"`` sets KEY to empty and runs ``v``. ``KEY=`` followed by
    blanks and nothing else (or a comment) is bash's empty value, and stays allowed."""
    m = _SPACED.match(first)
    if m is None or not (m["before"] or (m["after"] and m["rest"].strip() and not m["rest"].startswith("#"))):
        return
    rest = m["rest"].strip()
    quoted = re.match(r"'[^']*'|\"(?:\\.|[^\"\\])*\"", rest)
    value = quoted.group() if quoted else (rest.split()[0] if rest and not rest.startswith("#") else '""')
    shown = value if len(value) <= 60 else value[:57] + "..."
    if m["before"]:
        what = f"has a blank before '=', so bash runs {key!r} as a command and sets nothing"
    else:
        what = f"has a blank after '=', so bash sets {key} to empty and runs {shown} as a command"
    raise ConfigError(what, f"write it without blanks around '=': {key}={shown}", path=path, line=line, key=key)


def _expand(value: str, *, quoted: bool, seen: dict[str, Entry], lost: set[str], path: Path, line: int,
            key: str) -> tuple[str, set[str]]:
    """What bash makes of ``value`` (the text between double quotes, or an unquoted value):
    backslashes, then ``${NAME}`` and ``${NAME:-default}`` of keys set above. Everything else that
    bash would expand (``$NAME``, ``$(...)``, backticks, ``${NAME:=...}`` and the other forms) is
    refused rather than kept as text. Returns the value and the keys it was made of."""
    out: list[str] = []
    refs: set[str] = set()

    def refuse(what: str, fix: str) -> ConfigError:
        return ConfigError(what, fix, path=path, line=line, key=key)

    i = 0
    while i < len(value):
        c = value[i]
        if c == "\\" and i + 1 < len(value):
            nxt = value[i + 1]
            if not quoted or nxt in _DQ_ESCAPES:  # unquoted, bash drops every backslash
                out.append("" if nxt == "\n" else nxt)
                i += 2
                continue
            out.append(c)  # in double quotes "\t" stays a backslash and a t, as in bash
            i += 1
            continue
        if c == "`" or value.startswith("$(", i):
            raise refuse("uses command substitution, which values.env does not run", "write the value out literally")
        if c != "$":
            out.append(c)
            i += 1
            continue
        name = re.match(r"[A-Za-z_][A-Za-z0-9_]*", value[i + 1:])
        if name:
            raise refuse(f"uses ${name.group()} without braces",
                         f"write ${{{name.group()}}} (only ${{NAME}} of a key set above is expanded), "
                         "or single-quote a literal $")
        if not value.startswith("${", i):
            out.append(c)
            i += 1
            continue
        close = value.find("}", i + 2)
        if close < 0:
            raise refuse("has a '${' that is not closed", "write ${NAME} with a closing brace, or single-quote a literal $")
        inner = value[i + 2:close]
        form = _EXPANSION.fullmatch(inner)
        if form is None:
            shown = f"${{{inner}}}" if "\n" not in inner and len(inner) < 40 else "this '${...}'"
            raise refuse(f"uses {shown}, an expansion form values.env does not support",
                         "write ${NAME} (or ${NAME:-default}) with NAME a key set above, or write the value out")
        ref, default = form.group("name"), form.group("default")
        if ref in lost:
            raise _Unreadable(ref)
        if ref in seen and (seen[ref].value or default is None):
            out.append(seen[ref].value)
            refs |= {ref} | seen[ref].refs
        elif default is not None:  # bash: ":-" takes the default when NAME is unset or empty
            out.append(default)
        else:
            raise refuse(f"refers to ${{{ref}}}, which is not set above this line",
                         f"define {ref} earlier in the file or write the value out")
        i = close + 1
    return "".join(out), refs


_DOTENV: dict[str, Any] = {}


def _dotenv(name: str) -> Any:
    """python-dotenv's ``parser`` or ``variables`` module, loaded from its file without running the
    package's ``__init__``: that imports ``dotenv.main`` (logging, tempfile, random, ...), a third of
    ``tpubuild render``'s start-up (benchmarks/cli_startup.py). Both modules import only the standard
    library. Loaded under private names, so a later ``import dotenv`` is unaffected."""
    if name not in _DOTENV:
        spec = importlib.util.find_spec("dotenv")
        if spec is None or not spec.submodule_search_locations:
            raise ModuleNotFoundError("python-dotenv is not installed (pip install python-dotenv)")
        path = Path(next(iter(spec.submodule_search_locations))) / f"{name}.py"
        mod_spec = importlib.util.spec_from_file_location(f"_tpubuild_dotenv_{name}", path)
        assert mod_spec is not None and mod_spec.loader is not None
        module = importlib.util.module_from_spec(mod_spec)
        mod_spec.loader.exec_module(module)
        _DOTENV[name] = module
    return _DOTENV[name]
