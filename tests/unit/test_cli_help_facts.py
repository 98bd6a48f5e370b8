"""The help and the docs say what the code does: each fact below is read from the code (the
``Action`` enum, the module catalogue, what ``builder.planning.request.parse`` accepts, what the guard lets through)
and the help text or the doc must state it, so neither can drift from the code."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from builder import cli
from builder.catalogue.modules import ARCHS, modules
from builder.commands import verb
from builder.commands.parser import MODULE_NAMES
from builder.config import load
from builder.facts.actions import Action
from builder.facts.errors import BadInput
from builder.planning.guard import evaluate
from builder.planning.request import parse
from tests.conftest import REPO

COMMAND_GROUPS, HIDDEN_COMMANDS = verb.groups(), verb.hidden()


def _commands() -> dict:
    [sub] = [a for a in cli.build_parser()._actions if a.dest == "command"]
    return sub.choices


def _option(command: str, flag: str):
    return _commands()[command]._option_string_actions[flag]


def _help(command: str, flag: str) -> str:
    return " ".join(_option(command, flag).help.split())


def test_every_command_is_in_one_help_group_or_hidden():
    grouped = [name for _, names in COMMAND_GROUPS for name in names]
    assert len(grouped) == len(set(grouped)) and not set(grouped) & HIDDEN_COMMANDS
    assert set(grouped) | HIDDEN_COMMANDS == set(_commands())


def test_help_lists_user_verbs_then_admin_verbs_and_no_hidden_ones():
    out = cli.build_parser().format_help()
    listed = re.findall(r"^  (\w+) ", out, re.M)
    commands = [name for name in listed if name in _commands()]
    assert commands == [name for _, names in COMMAND_GROUPS for name in names]
    assert out.index(COMMAND_GROUPS[0][0]) < out.index(COMMAND_GROUPS[1][0])


@pytest.mark.parametrize("command", ["plan", "render", "submit"])
def test_action_choices_are_the_action_enum_and_the_help_lists_them(command):
    action = _option(command, "--action")
    assert all(action.type(str(a).upper()) is a for a in Action)
    with pytest.raises(BadInput) as refused:
        action.type("explode")
    assert all(str(a) in str(refused.value) for a in Action)
    assert all(str(a) in _help(command, "--action") for a in Action)


@pytest.mark.parametrize("command", ["plan", "render"])
def test_only_help_names_every_module(command):
    every = {m for arch in ARCHS for m in modules(arch)}
    assert set(MODULE_NAMES) == every
    assert all(m in _help(command, "--only") for m in every)


def _settings_of(arch: str):
    files = [*sorted((REPO / "examples").glob("*.env")), REPO / "tests/data/node-values.env"]
    for path in files:
        settings = load(path)
        if settings.arch == arch:
            return settings
    pytest.fail(f"no example or test values file of the {arch} architecture")


@pytest.mark.parametrize("command", ["plan", "render", "submit"])
@pytest.mark.parametrize("arch", ARCHS)
def test_mig_help_says_where_mig_is_refused(command, arch):
    try:
        parse(_settings_of(arch), "destroy", mig=True)  # update on a node file is refused as legacy
        refused = False
    except BadInput:
        refused = True
    text = _help(command, "--mig")
    assert (f"refused on {arch}" in text) == refused, text
    if not refused:
        assert arch in text


@pytest.mark.parametrize("command", ["plan", "render", "submit"])
def test_allow_data_loss_help_matches_the_guard(command):
    """destroy deletes Filestore without the override, create/update refuse to without it."""
    doc = json.loads((REPO / "tests/data/plans/filestore_destroy.json").read_text())
    assert evaluate(doc, "filestore", "destroy").proceed
    assert not evaluate(doc, "filestore", "update").proceed
    text = _help(command, "--allow-data-loss")
    assert "create/update" in text and "destroy does not need it" in text


def test_no_example_passes_allow_data_loss_to_destroy():
    epilogs = "\n".join(p.epilog or "" for p in _commands().values())
    docs = "\n".join(p.read_text() for p in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))])
    for text in (epilogs, docs):
        assert not re.search(r"tpubuild \w+ --action destroy(?: --[\w-]+)* --allow-data-loss", text)


def _table_rows(path: Path, header: str) -> dict[str, str]:
    text = path.read_text()
    table = text[text.index(header):].split("\n\n", 1)[0]
    rows = {}
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = " ".join(cells[1:])
    return rows


def test_readme_actions_table_has_every_action_and_names_every_module():
    rows = _table_rows(REPO / "docs/commands.md", "| action | flags | what runs |")
    assert set(rows) == {str(a) for a in Action}
    buildable = [arch for arch in ARCHS if arch != "node"]  # node files are destroy only
    for action in ("create", "destroy"):
        for arch in buildable:
            missing = [m for m in modules(arch) if m not in rows[action]]
            assert not missing, f"docs/commands.md's {action} row does not name {missing} ({arch})"


def test_pipeline_doc_lists_every_plan_module():
    text = (REPO / "docs/pipeline.md").read_text()
    listed = text[text.index("Plan modules:"):].split("\n\n", 1)[0]
    assert all(f"`{m}`" in listed for m in MODULE_NAMES)


@pytest.mark.parametrize("command", sorted(set(_commands()) - HIDDEN_COMMANDS))
def test_every_option_of_a_user_facing_command_says_what_it_does(command):
    parser = _commands()[command]
    silent = [a.option_strings or a.dest for a in parser._actions if not a.help]
    assert not silent, f"'tpubuild {command} --help' says nothing about {silent}"
