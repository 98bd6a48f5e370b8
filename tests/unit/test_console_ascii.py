"""Output degrades to ASCII where the stream cannot encode more (builder/console.py): the real
console script, under ``PYTHONIOENCODING=ascii`` and under the C locale, prints what it prints
under UTF-8 with each character spelled by ``console.ascii_spelling``, and exits as it would."""

from __future__ import annotations

import pytest

from builder.console import ascii_spelling
from tests.conftest import run_tpubuild

UTF8 = {"PYTHONIOENCODING": "utf-8", "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}
ASCII_ENVS = {
    "PYTHONIOENCODING=ascii": {"PYTHONIOENCODING": "ascii"},
    "LANG=C": {"PYTHONIOENCODING": "", "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0"},
}


def _spelled(text: str) -> str:
    return "".join(c if c.isascii() else ascii_spelling(c) for c in text)


def _bad_values(tmp_path):
    bad = tmp_path / "bad.env"
    bad.write_text('ENV_BUILD_NAME="caf\u00e9→x"\nTPU_ACCELERATOR_TYPE="v3-33"\n')
    return bad


#: name → argv (a callable of tmp_path): stdout with → and ×, stderr with non-ASCII paths and values
COMMANDS = {
    "plan": lambda tmp: ["plan", "--values", "examples/vm-v6e-16.env", "--applied", "none"],
    "plan update": lambda tmp: ["plan", "--action", "update", "--values", "examples/mig-v6e-16-spot.env",
                                "--applied", "none"],
    "validate bad file": lambda tmp: ["validate", "--values", _bad_values(tmp)],
    "missing file": lambda tmp: ["status", "--values", tmp / "nöpe→.env"],
    "help": lambda tmp: ["--help"],
}


#: Under an ASCII locale a non-ASCII argument arrives as undecodable bytes, refused on its own
#: (check_text_args), so the path with non-ASCII characters runs under PYTHONIOENCODING only.
CASES = [(name, env) for name in COMMANDS for env in ASCII_ENVS if not (name == "missing file" and env == "LANG=C")]


@pytest.mark.parametrize("name, env_name", CASES)
def test_output_degrades_to_ascii(tmp_path, name, env_name):
    argv = COMMANDS[name](tmp_path)
    utf8 = run_tpubuild(*argv, env=UTF8)
    plain = run_tpubuild(*argv, env=ASCII_ENVS[env_name])
    assert "UnicodeEncodeError" not in plain.stderr and "internal error" not in plain.stderr, plain.stderr
    assert plain.returncode == utf8.returncode
    assert plain.stdout.isascii() and plain.stderr.isascii()
    assert (plain.stdout, plain.stderr) == (_spelled(utf8.stdout), _spelled(utf8.stderr))


def test_the_plan_says_its_arrows_in_ascii():
    plain = run_tpubuild("plan", "--values", "examples/vm-v6e-16.env", "--applied", "none",
                         env=ASCII_ENVS["PYTHONIOENCODING=ascii"])
    assert plain.returncode == 0 and "Before -> after" in plain.stdout and " x $" in plain.stdout


@pytest.mark.parametrize("char, spelled", [("→", "->"), ("×", "x"), ("é", "e"), ("２", "2"), ("\u200b", "\\u200b")])
def test_ascii_spelling(char, spelled):
    assert ascii_spelling(char) == spelled
