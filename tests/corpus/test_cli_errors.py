"""The one error handler in builder/cli.py.

An unexpected exception must print one line with the hint to rerun with --debug (exit 1), and
--debug must show the trace. Nothing of ours is mocked: the test adds a real command module
(``boom``, a verb file written to tmp_path and added to the verbs folder's path, the way every verb
is a file of builder/commands/verbs/), and that command really fails: it indexes a missing key, divides by zero, or is
interrupted. The subprocess tests run the real interpreter with the module on PYTHONPATH.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from builder.commands import verbs
from tests.conftest import REPO, run_tpubuild

BOOM = '''
"""A real verb for the handler tests."""
from builder.commands.verb import Group, Verb


def arguments(p):
    p.add_argument("--kind", default="key")


def run(args):
    if args.kind == "key":
        return {"present": 1}["missing"]
    if args.kind == "zero":
        return 1 // 0
    if args.kind == "multiline":
        raise RuntimeError("first line\\nsecond line\\nthird line")
    if args.kind == "interrupt":
        raise KeyboardInterrupt
    if args.kind == "pipe":
        raise BrokenPipeError(32, "Broken pipe")
    return 0


VERB = Verb(name="boom", group=Group.PIPELINE, rank=99, help="fail on purpose", description="Fail on purpose.",
            epilog="example: tpubuild boom", arguments=arguments, body=run)
'''


@pytest.fixture
def boom(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "boom.py").write_text(BOOM)
    monkeypatch.setattr(verbs, "__path__", [*verbs.__path__, str(tmp_path)])
    return tmp_path


@pytest.mark.parametrize("kind, shown", [
    ("key", "internal error: KeyError: 'missing' (rerun with --debug for the trace)"),
    ("zero", "internal error: ZeroDivisionError: integer division or modulo by zero (rerun with --debug for the trace)"),
    ("multiline", "internal error: RuntimeError: first line second line third line (rerun with --debug for the trace)"),
])
def test_unexpected_exception_is_one_line_with_debug_hint(boom: Path, cli, kind: str, shown: str) -> None:
    code, out, err = cli("boom", "--kind", kind)
    assert code == 1 and out == ""
    assert err == f"tpubuild: {shown}\n"


def test_debug_reraises_the_real_exception(boom: Path, cli) -> None:
    with pytest.raises(KeyError, match="missing"):
        cli("boom", "--kind", "key", "--debug")


def test_interrupt_and_broken_pipe(boom: Path, cli) -> None:
    assert cli("boom", "--kind", "interrupt") == (130, "", "tpubuild: interrupted\n")
    code, out, err = cli("boom", "--kind", "pipe")
    assert (code, err) == (0, "")


def _run_with_boom(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "boom.py").write_text(BOOM)
    code = (f"import sys, builder.cli as c, builder.commands.verbs as v; v.__path__.append({str(tmp_path)!r}); "
            "raise SystemExit(c.main())")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    return subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)


def test_trace_only_with_debug_in_a_real_process(tmp_path: Path) -> None:
    plain = _run_with_boom(tmp_path, "boom", "--kind", "zero")
    assert plain.returncode == 1 and "Traceback" not in plain.stderr
    assert plain.stderr.count("\n") == 1 and "--debug" in plain.stderr
    debug = _run_with_boom(tmp_path, "boom", "--kind", "zero", "--debug")
    assert debug.returncode == 1
    assert "Traceback (most recent call last)" in debug.stderr
    assert "boom.py" in debug.stderr and debug.stderr.rstrip().endswith(
        "ZeroDivisionError: integer division or modulo by zero")


def test_bad_input_trace_with_debug(tmp_path: Path) -> None:
    missing = tmp_path / "nope.env"
    plain = run_tpubuild("validate", "--values", missing)
    assert plain.returncode == 2 and plain.stderr.count("\n") == 1 and "Traceback" not in plain.stderr
    debug = run_tpubuild("validate", "--values", missing, "--debug")
    assert debug.returncode == 1 and "Traceback" in debug.stderr and "BadInput" in debug.stderr


def test_message_with_newline_in_a_path_stays_one_line(cli, tmp_path: Path) -> None:
    odd = tmp_path / "two\nlines.env"
    code, out, err = cli("validate", "--values", odd)
    assert code == 2 and err.count("\n") == 1 and "no such file" in err

