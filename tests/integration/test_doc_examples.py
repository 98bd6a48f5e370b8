"""Every example a user may copy is executed, so none can go stale: each ``tpubuild ...`` line of
the help (the top-level examples and every verb's epilog, the hidden pipeline verbs included) and
of the command blocks (```bash, ```sh, ```shell, ```console or unmarked) of README.md and docs/*.md.
```text blocks are output or synopses, not commands.

The examples of one place (one epilog, one code block) run in order in one workspace, as a user
following them would: a copy of the shipped values.env (a unique ENV_BUILD_NAME, so the fakes'
buckets are its own), examples/, models/, and the few files examples name (old.env: the values
as applied before a resize, for ``--applied`` and ``migrate``; plans/filestore.json: a saved
Terraform plan for ``guard``). A line with
``&&`` or ``;`` is its commands in order; a ``|`` or ``>`` part is not tpubuild's (gcloud lines
are parsed by the real gcloud in tests/integration/test_gcloud_lines.py).

How each verb runs (nothing reaches Google):
* host verbs (train, run, stop, logs, profile) in their ``--dry-run`` form, which prints the
  exact script (tests/shell/ executes such scripts against sandboxed hosts);
* cloud verbs (initialize, status, unlock, submit, dispatch, finalize, ttl) against the local
  fakes (tests/support/fakes), after ``initialize`` where they need the state bucket; ``prices update``
  against the Billing Catalog's fake (its ``--endpoint``, when an example names one, is the fake's);
  ``capacity --calendar`` against the calendar-mode advice fake (every zone recommended); a build
  that succeeds runs the pipeline's ``finalize`` (releasing the lock); ``ttl``'s premise, an
  environment with a TTL (ENV_TTL_HOURS and its Scheduler job), is made true first;
* the rest (validate, plan, render, trigger, bootstrap, migrate, guard) as written.
Each must exit 0.
"""

from __future__ import annotations

import ast
import re
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO, rewrite_env
from tests.support.fakes.fixtures import Fakes, fakes, unique_env  # noqa: F401 - fixtures

pytestmark = pytest.mark.slow  # about 40 s in all: a workspace copy and the fakes per place

HOST_VERBS = frozenset({"train", "run", "stop", "logs", "profile"})
NEEDS_STATE = frozenset({"status", "unlock", "submit", "dispatch", "finalize", "ttl"})
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_FENCE = re.compile(r"^\s*```(\w*)\s*$")
COMMAND_BLOCKS = {"", "bash", "sh", "shell", "console"}


def _commands(line: str) -> list[list[str]]:
    """The ``tpubuild`` commands of one shell line, as words, in order (split at ``&&`` and ``;``;
    a ``|`` or ``>`` and what follows, and a ``#`` comment, cut off)."""
    if not re.match(r"(.*(&&|;)\s*)?tpubuild ", line):
        return []  # prose
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    found: list[list[str]] = []
    words: list[str] = []
    cut = False
    for token in [*lexer, ";"]:
        if token in (";", "&&"):
            if words[:1] == ["tpubuild"] and len(words) > 1:
                found.append(words[1:])
            words, cut = [], False
        elif token in ("|", ">", ">>", "|&") or cut:
            cut = True
        else:
            words.append(token)
    return found


def help_examples() -> list[tuple[str, list[list[str]]]]:
    from builder.cli import build_parser

    parser = build_parser()
    places = [("tpubuild --help", parser.epilog or "")]
    sub = next(a for a in parser._actions if a.dest == "command")
    places += [(f"tpubuild {name} --help", p.epilog or "") for name, p in sorted(sub.choices.items())]
    out = []
    for where, epilog in places:
        # an epilog line is "  tpubuild ...   what it does": the command ends at two spaces
        lines = [re.split(r"\s{2,}", ln.strip(), maxsplit=1)[0] for ln in epilog.splitlines()]
        commands = [c for ln in lines for c in _commands(ln)]
        if commands:
            out.append((where, commands))
    return out


def doc_examples() -> list[tuple[str, list[list[str]]]]:
    out = []
    for path in DOCS:
        lang: str | None = None  # inside a fenced block: its language
        block: list[str] = []
        start = 0
        for number, line in enumerate(path.read_text().splitlines(), 1):
            fence = _FENCE.match(line)
            if fence and lang is None:
                lang, block, start = fence.group(1), [], number
            elif fence:
                commands = [c for ln in block for c in _commands(ln.strip().removeprefix("$ "))]
                if commands and lang in COMMAND_BLOCKS:
                    out.append((f"{path.relative_to(REPO)}:{start}", commands))
                lang = None
            elif lang is not None:
                block.append(line)
    return out


EXAMPLES = help_examples() + doc_examples()


def test_the_examples_are_found() -> None:
    places = [w for w, _ in EXAMPLES]
    assert "tpubuild --help" in places and "tpubuild run --help" in places and any("README.md" in w for w in places)
    assert sum(len(c) for _, c in EXAMPLES) >= 40, EXAMPLES


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's folder: values.env (its own ENV_BUILD_NAME), the repository's examples/, models/,
    env_setup/, modules/ and packaging files (what initialize uploads and submit packs), plus the
    files examples name. The current folder."""
    ws = tmp_path / "ws"
    ws.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", ".terraform*", "*.pyc")
    for name in ("examples", "models", "env_setup", "modules", "builder"):
        shutil.copytree(REPO / name, ws / name, ignore=ignore, symlinks=True)
    for name in ("setup.cfg", "pyproject.toml", "README.md"):
        shutil.copy(REPO / name, ws / name)
    values = rewrite_env((REPO / "values.env").read_text(), ENV_BUILD_NAME=unique_env(), ENV_TTL_HOURS="8")
    (ws / "values.env").write_text(values)
    (ws / "old.env").write_text(rewrite_env(values, TPU_ACCELERATOR_TYPE="v3-8"))
    for example in (ws / "examples").glob("*.env"):  # their own buckets in the fakes, too
        example.write_text(rewrite_env(example.read_text(), ENV_BUILD_NAME=unique_env()))
    (ws / "plans").mkdir()
    shutil.copy(REPO / "tests/data/plans/filestore_noop.json", ws / "plans/filestore.json")
    monkeypatch.chdir(ws)
    return ws


def _verb(words: list[str]) -> str:
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word == "--values":
            skip = True
        elif not word.startswith("-"):
            return word
    return ""


def _values(words: list[str]) -> str:
    return words[words.index("--values") + 1] if "--values" in words else "values.env"


class Session:
    """Runs the examples of one place against the fakes, preparing what each verb needs once."""

    def __init__(self, cli: Callable[..., tuple[int, str, str]], fakes: Fakes, scheduler, catalog=None,
                 advice=None) -> None:
        self.cli, self.fakes, self.scheduler, self.catalog, self.advice = cli, fakes, scheduler, catalog, advice
        self.initialized: set[str] = set()
        self.values = "values.env"
        fakes.google.on_done = self.finalize

    def finalize(self, build_id: str, state: str) -> None:
        """The pipeline's last step, as a successful build runs it: record and release the lock."""
        from builder.cli import main
        from builder.cloud import clients, lock
        from builder.config import load

        s = load(self.values)
        held = lock.read(clients.storage(s.project_id).bucket(s.state_bucket), s.env_name)
        if state == "SUCCESS" and held is not None and held.build_id == build_id:
            main(["--values", self.values, "finalize", "--build-id", build_id, "--action", held.action])

    def initialize(self, values: str) -> None:
        if values not in self.initialized:
            code, _, err = self.cli("--values", values, "initialize")
            assert code == 0, err
            self.initialized.add(values)

    def ttl_job(self, values: str) -> None:
        import datetime

        from builder.inputs import ttl
        from builder.config import load

        s = load(values)
        fires = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=2)
        name = ttl.job_name(s)
        self.scheduler.jobs.setdefault(name, {
            "name": name, "schedule": ttl.cron_for(fires.replace(second=0, microsecond=0)), "timeZone": "Etc/UTC",
            "state": "ENABLED", "httpTarget": {"uri": f"https://cloudbuild.googleapis.com/v1/projects/{s.project_id}/builds"}})

    def build_id(self, values: str) -> str:
        """A build that holds the lock, as the pipeline's finalize step sees it."""
        code, _, err = self.cli("--values", values, "submit", "--action", "create")
        assert code == 0, err
        return list(self.fakes.google.builds)[-1]

    def run(self, words: list[str]) -> tuple[int, str, str]:
        from builder.inputs.root_build import DEFAULTS

        verb, values = _verb(words), _values(words)
        self.values = values
        if verb in NEEDS_STATE:
            self.initialize(values)
        if verb == "ttl":  # the premise of a ttl example: the environment has a TTL
            path = Path(values)
            if "ENV_TTL_HOURS=" not in path.read_text():
                path.write_text(rewrite_env(path.read_text(), ENV_TTL_HOURS="8"))
            self.ttl_job(values)
        if verb == "run":
            check_script_flags(words)
        if verb == "capacity" and "--endpoint" not in words:  # calendar-mode advice: its fake
            words = [*words, "--endpoint", self.advice.url]
        if verb == "prices" and "--endpoint" in words:
            words = [*words[:words.index("--endpoint") + 1], self.catalog.url, *words[words.index("--endpoint") + 2:]]
        if verb in HOST_VERBS and "--dry-run" not in words:
            cut = words.index("--") if "--" in words else len(words)
            words = [*words[:cut], "--dry-run", *words[cut:]]
        subs = {**DEFAULTS}
        if "$BUILD_ID" in words:
            subs["BUILD_ID"] = self.build_id(values)
        words = [re.sub(r"\$\{?(\w+)\}?", lambda m: subs[m.group(1)], w) for w in words]
        return self.cli(*words)


def script_flags(path: Path) -> set[str]:
    """The options a Python script's argparse takes (``add_argument("--steps", ...)``)."""
    tree = ast.parse(path.read_text())
    return {arg.value for node in ast.walk(tree) if isinstance(node, ast.Call)
            and getattr(node.func, "attr", "") == "add_argument"
            for arg in node.args if isinstance(arg, ast.Constant) and str(arg.value).startswith("-")}


def check_script_flags(words: list[str]) -> None:
    """``run -- python3 SCRIPT.py --flag ...``: a script here that reads its flags with argparse
    takes every --flag the example gives it (the dry run alone would not notice)."""
    command = words[words.index("--") + 1:] if "--" in words else []
    for i, word in enumerate(command):
        if word.endswith(".py") and Path(word).is_file() and (known := script_flags(Path(word))):
            given = [w.split("=", 1)[0] for w in command[i + 1:] if w.startswith("-")]
            assert set(given) <= known, f"{word} takes {sorted(known)}, not {sorted(set(given) - known)}"


@pytest.fixture
def scheduler(monkeypatch: pytest.MonkeyPatch):
    from tests.support.fakes.scheduler import FakeScheduler

    fake = FakeScheduler().start()
    monkeypatch.setenv("TPUBUILD_SCHEDULER_ENDPOINT", fake.url)
    yield fake
    fake.stop()


@pytest.fixture
def advice():
    from tests.support.fakes.advice import FakeAdvice

    fake = FakeAdvice({}, default=("RECOMMENDED", "2026-12-12T00:00:00Z", "2026-12-19T00:00:00Z")).start()
    yield fake
    fake.stop()


@pytest.fixture
def catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from tests.support.fakes.billing import FakeCatalog

    fake = FakeCatalog().start()
    monkeypatch.setenv("TPUBUILD_BILLING_ENDPOINT", fake.url)
    monkeypatch.setenv("TPUBUILD_PRICES_CACHE", str(tmp_path / "prices"))
    yield fake
    fake.stop()


@pytest.mark.parametrize("where,commands", EXAMPLES, ids=[w for w, _ in EXAMPLES])
def test_example_runs(where: str, commands: list[list[str]], workspace: Path, fakes: Fakes, scheduler, catalog,
                      advice, cli) -> None:
    session = Session(cli, fakes, scheduler, catalog, advice)
    for words in commands:
        code, out, err = session.run(words)
        assert code == 0, f"{where}: tpubuild {shlex.join(words)}\nexit {code}\n{err}{out[-2000:]}"
