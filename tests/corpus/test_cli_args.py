"""Bad command lines: every argparse complaint goes through ``builder.commands.parser.Parser``
and comes out as one line, ``tpubuild: error: <what>; <fix>``, exit 2: never argparse's own
text (a usage dump, ``invalid choice: ... (choose from ...)``, a doubled ``tpubuild:`` prefix),
never a hidden verb. The valid values each message lists are read from the code."""

from __future__ import annotations

import pytest

from builder.commands import verb
from builder.facts.actions import Action

COMMAND_GROUPS, HIDDEN_COMMANDS = verb.groups(), verb.hidden()

VALUES = "examples/vm-v6e-16.env"

#: argv → what the one line must say
CASES = [
    (["plna"], ["unknown command 'plna'; did you mean 'plan'?"]),
    (["initialise"], ["unknown command 'initialise'; did you mean 'initialize'?"]),
    (["xyzzy"], ["unknown command 'xyzzy'", "tpubuild --help"]),
    ([], ["no command given", "tpubuild --help"]),
    (["plan", "--bogus"], ["--bogus: 'tpubuild plan' has no such option", "tpubuild plan --help"]),
    (["plan", "--actoin", "create"], ["did you mean --action?"]),
    (["plan", "--al"], ["did you mean --all or --allow-data-loss?"]),  # plan --all (many environments)
    (["plan", "extra"], ["'tpubuild plan' takes no argument 'extra'"]),
    (["initialize", "--tpu"], ["--tpu: 'tpubuild initialize' has no such option", "--values"]),
    (["status", "--format", "xml"], ["--format: 'xml'", "use text or json"]),
    (["render", "--format", "jsno"], ["did you mean 'json'?"]),
    (["plan", "--action", "explode"], ["--action: 'explode'", ", ".join(str(a) for a in list(Action)[:-1])]),
    (["submit", "--action", "explode"], ["--action: 'explode'", f"or {list(Action)[-1]}"]),
    (["submit"], ["--action is required by 'tpubuild submit'"]),
    (["logs", "--lines", "0"], ["--lines: 0 is below 1; pass 1 or more lines"]),
    (["logs", "-n", "many"], ["--lines: 'many' is not a whole number; pass 1 or more"]),
    (["logs", "--host", "x"], ["--host: 'x' is not a whole number"]),
    (["plan", "--values"], ["--values: needs a value; write --values PATH"]),
    (["run"], ["run: no command; write it after --"]),
]


@pytest.mark.parametrize("argv, says", CASES, ids=[" ".join(a) or "(none)" for a, _ in CASES])
def test_bad_arguments_are_one_clean_line(cli, argv, says):
    extra = [] if "--values" in argv or not argv else ["--values", VALUES]
    code, out, err = cli(*argv, *extra)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("tpubuild: error: "), err
    line = err.removeprefix("tpubuild: error: ")
    for raw in ("tpubuild: ", "usage:", "invalid choice", "choose from", "argument -", "argument COMMAND", "unrecognized"):
        assert raw not in line, err
    for part in says:
        assert part in line, err


@pytest.mark.parametrize("argv", [["plna"], []])
def test_a_wrong_command_lists_the_user_verbs_and_never_the_hidden_ones(cli, argv):
    _, _, err = cli(*argv)
    assert all(f" {name}," in err or f" {name};" in err for name in COMMAND_GROUPS[0][1])
    assert not any(name in err for name in HIDDEN_COMMANDS)


def test_every_action_is_accepted_by_name_in_any_case(cli, tmp_path):
    nothing_applied = tmp_path / "applied.env"
    nothing_applied.write_text("")
    for action in Action:
        code, out, err = cli("plan", "--action", f" {str(action).upper()} ", "--values", VALUES,
                             "--applied", nothing_applied)
        assert code == 0 and out, err


def _bad_input_messages() -> list[tuple[str, int, str]]:
    """(file, line, leading text) of every ``BadInput(...)`` under builder/ whose message starts
    with a literal string (a plain string or an f-string's first part)."""
    import ast

    from tests.conftest import REPO

    out = []
    for path in sorted((REPO / "builder").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "BadInput"
                    and node.args):
                first = node.args[0]
                if isinstance(first, ast.JoinedStr) and first.values:
                    first = first.values[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    out.append((path.relative_to(REPO).as_posix(), node.lineno, first.value))
    return out


def test_no_bad_input_message_names_tpubuild_first():
    """The CLI prints a BadInput as ``tpubuild: error: <message>``: a message that starts with
    ``tpubuild`` would print the prefix twice."""
    found = _bad_input_messages()
    assert len(found) > 20  # the reader sees the messages
    doubled = [f"{f}:{line}: {text!r}" for f, line, text in found if text.lstrip().startswith("tpubuild")]
    assert not doubled, "\n".join(doubled)
