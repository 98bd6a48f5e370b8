"""Read values.env with python-dotenv's parser, keeping line numbers, and resolve ``${KEY}``.

Bash semantics as users write them: quotes, ``export``, comments after values, and ``${OTHER}``
(or ``${OTHER:-default}``) referring to a key set *earlier in the file*. Values in single quotes
are taken literally, as bash does. The process environment is never consulted: the same file
gives the same environment on every machine.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any


from builder.errors import ConfigError
from builder.files import MAX_BYTES, VALUES_FILE, read_bytes  # noqa: F401 - MAX_BYTES re-exported

#: values.env is at most 1 MiB; its refusals are worded in builder/files.py (VALUES_FILE).



@dataclass(frozen=True)
class Entry:
    key: str
    value: str
    line: int


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


_ASSIGN = re.compile(r"^\s*(?:export\s+)?[A-Za-z_][A-Za-z0-9_.]*\s*=\s*(?P<quote>['\"]?)")
#: ``$NAME``, ``$(cmd)``, ``$((1+1))`` and backticks: bash would expand them, we cannot.
_UNSUPPORTED = re.compile(r"(?<!\\)(\$[A-Za-z_(]|`)")
_KEY = re.compile(r"[A-Z][A-Z0-9_]*")


def parse(text: str, path: Path, errors: list[ConfigError] | None = None) -> list[Entry]:
    """Parse and interpolate; one ``ConfigError`` for the first line that is wrong, or, given
    ``errors``, every wrong line appended there (and the good lines returned)."""
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise ConfigError("contains a NUL byte", "save values.env as plain text", path=path, line=line)
    seen: dict[str, str] = {}
    entries: list[Entry] = []
    for binding in _dotenv("parser").parse_stream(io.StringIO(text)):
        if errors is None:
            entry = _entry(binding, seen, path)
        else:
            try:
                entry = _entry(binding, seen, path)
            except ConfigError as exc:
                errors.append(exc)
                continue
        if entry is not None:
            seen[entry.key] = entry.value
            entries.append(entry)
    return entries


def _entry(binding: Any, seen: dict[str, str], path: Path) -> Entry | None:
    """One parsed binding as an Entry (None for a blank or comment line), or its ConfigError."""
    line = binding.original.line
    raw_line = binding.original.string.strip()
    if binding.error:
        shown = raw_line if len(raw_line) <= 60 else raw_line[:57] + "..."
        raise ConfigError(
            f"cannot parse {shown!r}",
            'write KEY="value" (close every quote; comments start with #)',
            path=path, line=line,
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
    value = binding.value
    m = _ASSIGN.match(binding.original.string)
    quote = m.group("quote") if m else ""
    if quote != "'":
        _check_unsupported(value, quote, path=path, line=line, key=key)
        value = _interpolate(value, seen, path=path, line=line, key=key).replace("\\$", "$")
    return Entry(key, value, line)


def _check_unsupported(value: str, quote: str, *, path: Path, line: int, key: str) -> None:
    """Refuse what bash would do differently from us, instead of silently keeping the text."""
    m = _UNSUPPORTED.search(value)
    if m:
        token = m.group(1)
        if token == "`" or token == "$(":
            raise ConfigError(
                "uses command substitution, which values.env does not run",
                "write the value out literally", path=path, line=line, key=key,
            )
        name = re.match(r"\$([A-Za-z_][A-Za-z0-9_]*)", value[m.start():])
        shown = name.group(1) if name else token[1:]
        raise ConfigError(
            f"uses ${shown} without braces",
            f"write ${{{shown}}} (only ${{NAME}} of a key set above is expanded), or single-quote a literal $",
            path=path, line=line, key=key,
        )
    if not quote and re.search(r"\s", value):
        words = value.split()
        word = words[1] if len(words) > 1 else ""
        raise ConfigError(
            f"has a space outside quotes (bash would run {word!r} as a command)",
            f'quote the value: {key}="{value}"', path=path, line=line, key=key,
        )


def _interpolate(value: str, seen: dict[str, str], *, path: Path, line: int, key: str) -> str:
    out: list[str] = []
    variables = _dotenv("variables")
    for atom in variables.parse_variables(value):
        if isinstance(atom, variables.Literal):
            if "${" in atom.value.replace("\\${", ""):
                raise ConfigError(
                    "has a '${' that is not closed", "write ${NAME} with a closing brace, or single-quote a literal $",
                    path=path, line=line, key=key,
                )
            out.append(atom.value)
            continue
        name, default = atom.name, atom.default
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ConfigError(
                f"has ${{{name}}}, which is not a reference to a key" if "\n" not in name and len(name) < 40
                else "has a '${' whose name is not a key name",
                "write ${NAME} with NAME a key set above, or single-quote a literal $",
                path=path, line=line, key=key,
            )
        if name in seen:
            out.append(seen[name])
        elif default is not None:
            out.append(default)
        else:
            raise ConfigError(
                f"refers to ${{{name}}}, which is not set above this line",
                f"define {name} earlier in the file or write the value out",
                path=path, line=line, key=key,
            )
    return "".join(out)


_DOTENV: dict[str, Any] = {}


def _dotenv(name: str) -> Any:
    """python-dotenv's ``parser`` or ``variables`` module, loaded from its file without running the
    package's ``__init__``: that imports ``dotenv.main`` (logging, tempfile, random, ...), a third of
    ``tpubuild render``'s start-up (benchmarks/cli_startup.py). Both modules import only the standard
    library. Loaded under private names, so a later ``import dotenv`` is unaffected."""
    if name not in _DOTENV:
        import importlib.util

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
