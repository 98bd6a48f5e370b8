"""Output degrades to ASCII where the stream cannot encode more (builder/facts/console.py): the real
console script, under ``PYTHONIOENCODING=ascii`` and under the C locale, prints what it prints
under UTF-8 with each character spelled by ``console.ascii_spelling``, and exits as it would."""

from __future__ import annotations

import pytest

from builder.facts.console import ASCII, ascii_spelling
from tests.conftest import REPO, SHIPPED, run_tpubuild

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


@pytest.mark.parametrize("char, spelled", [("→", "->"), ("×", "x"), ("é", "\\xe9"), ("２", "\\uff12"),
                                            ("\u200b", "\\u200b")])
def test_ascii_spelling(char, spelled):
    assert ascii_spelling(char) == spelled


def test_a_refused_value_is_escaped_never_transliterated(tmp_path):
    """The refusal of tpu-dév1 must not show tpu-dev1, a name that would pass."""
    bad = tmp_path / "bad.env"
    bad.write_text(SHIPPED.read_text().replace('ENV_BUILD_NAME="tpu-dev1"', 'ENV_BUILD_NAME="tpu-d\u00e9v1"'))
    for env in ASCII_ENVS.values():
        plain = run_tpubuild("validate", "--values", bad, env=env)
        assert plain.returncode == 2 and plain.stderr.isascii()
        assert "ENV_BUILD_NAME: 'tpu-d\\xe9v1' is not" in plain.stderr and "'tpu-dev1' is not" not in plain.stderr


def test_the_table_spells_every_character_tpubuild_writes():
    """Every non-ASCII character in a string of builder/ or models/ is one of tpubuild's own
    (console.ASCII); the user's characters are the only ones a message escapes."""
    import io
    import tokenize

    found = {}
    for path in [*(REPO / "builder").rglob("*.py"), *(REPO / "models").rglob("*.py")]:
        if path.name == "console.py":
            continue
        for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
            if tok.type == tokenize.STRING:
                found.update({c: path for c in tok.string if not c.isascii()})
    for path in [*(REPO / "builder").rglob("*.j2"), *(REPO / "builder" / "data").glob("*.json")]:
        found.update({c: path for c in path.read_text() if not c.isascii()})
    assert {c: str(p) for c, p in found.items() if c not in ASCII} == {}
