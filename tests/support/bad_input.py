"""The bad-input corpus's machinery: a ``Case`` (a broken input and the one line it must give),
how a case's files are made, and the check every case passes: exit 2, one line per problem
(``validate`` adds "N problems in FILE"), "what is wrong; how to fix it", the key or line named,
no traceback. The cases are tests/corpus/test_bad_input_*.py."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import SHIPPED, rewrite_env, run_tpubuild

MINIMAL = (
    'ENV_BUILD_NAME="env1"\nPROJECT_ID="my-tpu-project"\nZONE="europe-west4-a"\n'
    'TPU_ACCELERATOR_TYPE="v3-8"\nTPU_PYTORCH_VERSION="pytorch-nightly"\n'
)


@dataclass(frozen=True)
class Case:
    id: str
    #: values.env: overrides of ``base`` (dict), raw text or bytes, or None for no file of ours
    env: dict[str, str | None] | str | bytes | None = None
    base: Path = SHIPPED
    #: the command line; "{values}" is the values file, "{tmp}" the test's folder
    args: tuple[str, ...] = ("validate", "--values", "{values}")
    #: fragments the one line must contain ("{values}" and "{tmp}" are substituted)
    expect: tuple[str, ...] = ()
    sub: bool = False
    setup: Callable[[Path], None] | None = field(default=None, compare=False)
    #: how many problems validate must report (None: any); 1 where a root cause has echoes
    problems: int | None = None


def overrides(**kw: str | None) -> dict[str, str | None]:
    """A case's values.env as overrides of its ``base`` (None removes the key)."""
    return kw


def big_file(tmp: Path) -> None:
    (tmp / "big.env").write_text(MINIMAL + ("# padding\n" * 120_000))


def symlink_loop(tmp: Path) -> None:
    (tmp / "loop.env").symlink_to(tmp / "loop.env")


def a_directory(tmp: Path) -> None:
    (tmp / "values.env.d").mkdir()


def other_env_file(tmp: Path) -> None:
    (tmp / "other.env").write_text(rewrite_env(SHIPPED.read_text(), ENV_BUILD_NAME="other-env"))


def env_same_name(tmp: Path) -> None:
    """A repository whose environments/dev/values.env is the root values.env's twin (same ENV_BUILD_NAME)."""
    (tmp / "environments" / "dev").mkdir(parents=True)
    (tmp / "environments" / "dev" / "values.env").write_text(SHIPPED.read_text())


def env_steals_bucket(tmp: Path) -> None:
    """environments/other/values.env whose PROJECT_ID and ENV_BUILD_NAME make the root's state bucket
    (my-tpu + project-tpu-dev1 and my-tpu-project + tpu-dev1: my-tpu-project-tpu-dev1-tf-backend)."""
    (tmp / "environments" / "other").mkdir(parents=True)
    (tmp / "environments" / "other" / "values.env").write_text(
        rewrite_env(SHIPPED.read_text(), PROJECT_ID="my-tpu", ENV_BUILD_NAME="project-tpu-dev1"))


def roberta_applied_file(tmp: Path) -> None:
    """Applied values whose training ran with another batch shape (8 sequences per device)."""
    (tmp / "applied.env").write_text(rewrite_env(SHIPPED.read_text(), ROBERTA_BATCH_PER_DEVICE="8"))


def plan_files(tmp: Path) -> None:
    (tmp / "plans").mkdir()
    (tmp / "plan.tfplan").write_bytes(b"PK\x03\x04\x14\x00\x00\x00\x08\x00\x9c\xb1tfplan\xff\xfe")


def materialize(case: Case, tmp: Path) -> dict[str, str]:
    values = tmp / "values.env"
    if isinstance(case.env, dict):
        values.write_text(rewrite_env(case.base.read_text(), **case.env))
    elif isinstance(case.env, str):
        values.write_text(case.env)
    elif isinstance(case.env, bytes):
        values.write_bytes(case.env)
    else:
        values.write_text(case.base.read_text())
    if case.setup:
        case.setup(tmp)
    return {"values": str(values), "tmp": str(tmp)}


def check(case: Case, code: int, out: str, err: str, subs: dict[str, str]) -> None:
    assert code == 2, f"{case.id}: exit {code}\n{err}"
    assert "Traceback" not in err and "Traceback" not in out
    lines = err.splitlines()
    if len(lines) > 1:  # validate reports every problem: one line each, then "N problems in FILE"
        assert re.fullmatch(rf"tpubuild: {len(lines) - 1} problems in .+", lines[-1]), f"{case.id}:\n{err}"
        lines = lines[:-1]
        assert all(ln.startswith("tpubuild: error: ") and "; " in ln for ln in lines), f"{case.id}:\n{err}"
    if case.problems is not None and case.args[0] == "validate":
        assert len(lines) == case.problems, f"{case.id}: the root cause once, not its echoes:\n{err}"
    # a value echoed in a message is cut (errors.ECHO_LIMIT): one line stays readable
    assert all(len(ln) < 1000 for ln in lines), f"{case.id}: a line of {max(map(len, lines))} characters"
    line = lines[0]
    assert line.startswith("tpubuild: error: "), line
    for fragment in case.expect:
        assert sub(fragment, subs) in line, f"{case.id}: {fragment!r} not in {line!r}"
    # It says how to fix it: every message is "what is wrong; how to fix it".
    assert "; " in line.removeprefix("tpubuild: error: "), line


def sub(text: str, subs: dict[str, str]) -> str:
    return text.replace("{values}", subs["values"]).replace("{tmp}", subs["tmp"])


def names_key_or_line(fragment: str) -> bool:
    """A fragment that names where: a file (:line), a KEY, a --flag, a substitution, COMMAND, or
    (for a positional argument) the quoted bad value itself."""
    return bool(fragment.startswith(("{values}", "{tmp}", "/dev/null", "--", "_", "only:"))
                or re.fullmatch(r"'[^']+'", fragment)
                or re.search(r"\b[A-Z][A-Z0-9_]{2,}\b", fragment) or "is not a plan module" in fragment
                or "not an action" in fragment or "--" in fragment)


def check_table(cases: list[Case], *, at_least: int, console_at_least: int) -> None:
    """A table of cases is sound: every case names where (a file:line, a KEY, a --flag, ...), ids
    are unique, and it is big enough, with enough cases also run through the console script."""
    assert all(any(names_key_or_line(f) for f in c.expect) for c in cases), \
        [c.id for c in cases if not any(names_key_or_line(f) for f in c.expect)]
    assert len({c.id for c in cases}) == len(cases)
    assert len(cases) >= at_least
    assert sum(c.sub for c in cases) >= console_at_least


def run_in_process(cli: Callable[..., tuple[int, str, str]], tmp: Path, case: Case) -> str:
    """``case`` through ``builder.cli.main`` (the ``cli`` fixture), checked; returns its stderr."""
    subs = materialize(case, tmp)
    code, out, err = cli(*[sub(a, subs) for a in case.args])
    check(case, code, out, err, subs)
    return err


def run_console_script(tmp: Path, case: Case) -> str:
    """``case`` through the real console script in a subprocess, checked; returns its stderr."""
    subs = materialize(case, tmp)
    proc = run_tpubuild(*[sub(a, subs) for a in case.args], cwd=tmp)
    check(case, proc.returncode, proc.stdout, proc.stderr, subs)
    return proc.stderr
