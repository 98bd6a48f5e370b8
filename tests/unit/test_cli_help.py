"""Every command explains itself (description + examples), and the CLI's lazy command loading
(builder/cli.py loads only the named verb's file, builder/commands/verbs/<name>.py) builds the same
command as the full parser."""

from __future__ import annotations

import subprocess
import sys

import pytest

from builder import cli
from builder.commands import verb

COMMAND_GROUPS, HIDDEN_COMMANDS = verb.groups(), verb.hidden()


def _commands() -> dict:
    parser = cli.build_parser()
    [sub] = [a for a in parser._actions if a.dest == "command"]
    return sub.choices


@pytest.mark.parametrize("name", sorted(_commands()))
def test_every_command_has_a_description_and_examples(name):
    parser = _commands()[name]
    assert parser.description and len(parser.description) > 30
    assert parser.epilog and "example" in parser.epilog and f"tpubuild {name}" in parser.epilog


@pytest.mark.parametrize("name", sorted(v.name for v in verb.every()))
def test_each_command_is_registered_by_its_own_file(name):
    parser = cli.build_parser([name])
    [sub] = [a for a in parser._actions if a.dest == "command"]
    assert name in sub.choices
    full = _commands()[name]
    assert [a.dest for a in sub.choices[name]._actions] == [a.dest for a in full._actions]


def test_unknown_commands_list_the_user_verbs_only(cli):
    code, _, err = cli("rendr")
    assert code == 2 and "did you mean 'render'?" in err
    assert all(name in err for name in COMMAND_GROUPS[0][1])
    assert not any(f" {name}" in err for name in HIDDEN_COMMANDS)


def test_render_imports_neither_other_commands_nor_pyyaml():
    code = ("import sys; from builder.cli import main; import io, contextlib\n"
            "with contextlib.redirect_stdout(io.StringIO()): main(['render', '--action', 'create', "
            "'--values', 'examples/vm-v4-32.env'])\n"
            "print(sorted(m for m in sys.modules if m.startswith(('yaml', 'builder.commands.', 'google', 'dotenv'))))")
    from tests.conftest import REPO

    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert out.strip() == ("['builder.commands.parser', 'builder.commands.pipeline_cmds', 'builder.commands.verb', "
                           "'builder.commands.verbs', 'builder.commands.verbs.render']")
