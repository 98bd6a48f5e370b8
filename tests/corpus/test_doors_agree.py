"""Every door agrees with the gate (builder/config/gate.py), and so with every other door.

For every shipped values file (the root one, every example, the legacy node file) and a generated
set of edits (bad values, candidate-list edits, model changes, calendar starts, missing scripts),
against an applied file that differs (the base, unedited), each door runs in-process as a user or
a build runs it: ``validate``, ``plan`` and ``render`` (create, update and auto), ``plan --all``,
``trigger``, ``train MODEL --dry-run``, ``submit`` and ``dispatch`` (offline: no credentials, so a
request that passes every check ends in exit 1 when the client is needed). Its verdict must be the
one the gate predicts: refused (exit 2) exactly when ``load`` refuses the file or one of the
gate's rows for that door and action finds something, naming a key the prediction names;
``validate`` says (an error, or a warning) every key any door refuses. Where the file builds, the
doors agree on the hosts (validate's summary, plan, train's header) and on the hourly money and
its worst case (plan and plan --all).

A door or a row that the table does not know fails here: every :class:`~builder.config.gate.Door`
has a runner below and every verb that reads a values file is a door or is listed as one that
refuses nothing the build would (:data:`NOT_DOORS`); every row has a case that fires it
(:data:`ROW_CASES`), which a door then refuses with its key.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings as hyp_settings, strategies as st

from tests.conftest import EXAMPLES, NODE, SHIPPED, rewrite_env

pytestmark = [pytest.mark.usefixtures("no_cloud"), pytest.mark.slow]

BASES: tuple[Path, ...] = (SHIPPED, *sorted(EXAMPLES.glob("*.env")), NODE)
ACTIONS = ("create", "update", "auto")
#: Edits (key → value; None removes it): bad values, list edits, model changes, the gate's rows.
EDITS: tuple[dict[str, str | None], ...] = (
    {},
    {"TPU_ACCELERATOR_TYPE": "v6e-32"},
    {"TPU_ACCELERATOR_TYPE": "v9-8"},
    {"ROBERTA_TOTAL_BATCH": "1000"},
    {"ROBERTA_SEQ_LEN": "256"},
    {"MODEL": "torchtpu", "TORCHTPU_SCRIPT": "train.py"},
    {"MODEL": "torchtpu", "TORCHTPU_SCRIPT": "folder"},
    {"MODEL": "bert"},
    {"MODEL": ""},
    {"ZONE": "us-east5-b,us-east5-a"},
    {"TPU_QUEUED": "true"},
    {"TPU_PROVISIONING": "spot,on-demand"},
    {"TPU_CALENDAR_START": "+14d"},
    {"TPU_CALENDAR_START": "2026-11-28T12:00:00Z"},
    {"TPU_MAX_RUN_HOURS": ""},
    {"MIG_SETUP_SCRIPT": "scripts/not_here.sh"},
    {"ENV_PROTECTED": "true"},
    {"ENV_TTL_HOURS": "8"},
    {"TPU_ARCH": "node", "TPU_RUNTIME_VERSION": None, "TPU_PYTORCH_VERSION": "pytorch-2.0"},
)
#: Every verb that reads a values file but refuses nothing a build of it would, beyond ``load``
#: (which every door runs first): what they act on already exists, or they print no build.
NOT_DOORS = frozenset({"status", "logs", "stop", "run", "profile", "ttl", "unlock", "guard", "finalize",
                       "check-capacity", "migrate", "initialize", "bootstrap", "capacity", "prices"})
#: For each gate row, a case that fires it: (base, edit, door, action).
ROW_CASES: dict[str, tuple[Path, dict[str, str | None], str, str]] = {
    "legacy-node": (NODE, {}, "plan", "create"),
    "model": (SHIPPED, {"MODEL": "bert"}, "render", "create"),
    "auto-move": (EXAMPLES / "vm-v5litepod-16.env", {"ZONE": "us-east5-b,us-east5-a"}, "render", "auto"),
    "model-change": (SHIPPED, {"ROBERTA_SEQ_LEN": "256"}, "plan", "update"),
    "scripts": (SHIPPED, {"MIG_SETUP_SCRIPT": "scripts/not_here.sh"}, "plan", "create"),
    "calendar-too-soon": (EXAMPLES / "mig-v6e-32-calendar.env", {"TPU_CALENDAR_START": "2026-11-28T12:00:00Z"},
                          "render", "create"),
    "calendar-relative": (EXAMPLES / "mig-v6e-32-calendar.env", {}, "trigger", "auto"),
}
_KEY = re.compile(r"^tpubuild: (?:error|warning): \S+?\.env(?::\d+)?: ([A-Z][A-Z0-9_]*): ", re.M)


def _run(argv: list[str]) -> tuple[int, str, str]:
    from builder.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def _case(tmp: Path, base: Path, edit: dict[str, str | None]) -> tuple[Path, Path]:
    """The edited file as ``environments/x/values.env`` of a repository of its own (so ``plan
    --all`` and ``trigger`` take it alone), and the applied file (the base, unedited) beside it."""
    folder = tmp / "environments" / "x"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "folder").mkdir(exist_ok=True)
    (folder / "train.py").write_text("print('hello')\n")
    values = folder / "values.env"
    values.write_text(rewrite_env(base.read_text(), **edit))
    applied = tmp / "applied.env"
    applied.write_text(base.read_text())
    return values, applied


def _model(path: Path) -> str:
    found = re.findall(r'^MODEL="([^"]*)"', path.read_text(), re.M)
    return found[-1] if found else "roberta"


def _doors(values: Path, applied: Path, action: str) -> Iterator[tuple[str, list[str]]]:
    """(door, argv) of every door for ``action`` (validate, plan --all, trigger and train read no action)."""
    from builder.config.gate import Door

    flags = ["--applied", applied] if action != "create" else ["--applied", "none"]
    runners = {
        Door.VALIDATE: ["validate", "--values", values],
        Door.PLAN: ["plan", "--values", values, "--action", action, *flags],
        Door.RENDER: ["render", "--values", values, "--action", action, *flags],
        Door.PLAN_ALL: ["plan", "--all", "--values", values],
        Door.TRIGGER: ["trigger", "--values", values, "--repo-owner", "me", "--repo-name", "tpu-env"],
        Door.TRAIN: ["train", _model(values) or "roberta", "--values", values, "--dry-run"],
        Door.SUBMIT: ["submit", "--values", values, "--action", action],
        Door.DISPATCH: ["dispatch", "--values", values, "--action", action],
    }
    assert set(runners) == set(Door), "a door without a runner here: add it"
    for door, argv in runners.items():
        if door is Door.TRAIN and not _model(values):
            continue
        if door in (Door.SUBMIT, Door.DISPATCH) and action != "create":
            continue  # update and auto read the applied snapshot from the bucket: offline they stop there
        yield str(door), argv


def _predicted(values: Path, applied: Path, door: str, action: str) -> set[str] | None:
    """The keys the gate says ``door`` refuses for ``action`` (None: it does not refuse)."""
    from builder.config import load
    from builder.config.gate import Door, refusals
    from builder.facts.actions import Action
    from builder.facts.errors import ConfigError, ConfigErrors

    try:
        s = load(values, later=door == "validate")
    except ConfigErrors as exc:
        return {e.key for e in exc.errors}
    except ConfigError as exc:
        return {exc.key}
    if door == "validate":
        return None
    try:
        old = load(applied) if action != "create" else None
    except ConfigError:
        old = None
    d = Door(door)
    old = None if d in (Door.PLAN_ALL, Door.TRIGGER) else old  # offline: the applied snapshot is unknown there
    act = None if d is Door.TRAIN else Action.AUTO if d in (Door.PLAN_ALL, Door.TRIGGER) else Action(action)
    return {e.key for e in refusals(s, act, d, old)} or None


def _verdicts(tmp: Path, base: Path, edit: dict[str, str | None]) -> list[str]:
    """Every door's verdict for ``base`` with ``edit``; the disagreements, one line each."""
    values, applied = _case(tmp, base, edit)
    problems: list[str] = []
    _, summary, said = _run(["validate", "--values", values])
    # what only the applied values decide (a change the MODEL cannot resume across): validate --applied says it
    said_keys = set(_KEY.findall(said)) | set(_KEY.findall(_run(["validate", "--values", values, "--applied",
                                                                 applied])[2]))
    money: dict[str, tuple[float | None, float | None]] = {}
    for action in ACTIONS:
        for door, argv in _doors(values, applied, action):
            code, out, err = _run(argv)
            where = f"{base.name} {edit} {door} {action}"
            if "Traceback" in err or code not in (0, 1, 2):
                problems.append(f"{where}: exit {code}: {err.strip()[:300]}")
                continue
            keys = set(_KEY.findall(err))
            if code == 2 and keys - said_keys:
                problems.append(f"{where}: refuses {sorted(keys)}, validate says {sorted(said_keys)}: {err.strip()[:300]}")
            want = _predicted(values, applied, door, action)
            if door == "plan --all" and code == 0:
                row = json.loads(_run([*argv, "--format", "json"])[1])["environments"][0]
                money["plan --all"] = (row["hourly_after"], row["hourly_worst"])
            if door == "plan" and action == "create" and code == 0:
                info = json.loads(_run([*argv, "--format", "json"])[1])
                cands = info["cost"].get("candidates")
                money["plan"] = (info["cost"]["after"]["hourly_known"], cands["worst"]["hourly"] if cands else None)
                if f", {info['hosts']} host" not in summary:
                    problems.append(f"{where}: plan says {info['hosts']} hosts, validate: {summary.strip()[:200]}")
            if want is None and code == 2 and keys:
                problems.append(f"{where}: refuses {sorted(keys)}, which the gate does not predict: {err.strip()[:300]}")
            elif want is not None and code != 2:
                problems.append(f"{where}: the gate predicts a refusal of {sorted(want)}, the door exits {code}")
            elif want is not None and keys and not keys & want:
                problems.append(f"{where}: refuses {sorted(keys)}, the gate predicts {sorted(want)}")
    if len(money) == 2 and money["plan"] != money["plan --all"]:
        problems.append(f"{base.name} {edit}: plan prices {money['plan']}, plan --all {money['plan --all']}")
    return problems


@hyp_settings(max_examples=40, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(base=st.sampled_from(BASES), edits=st.lists(st.sampled_from(EDITS), min_size=1, max_size=2))
def test_every_door_answers_as_the_gate_says(tmp_path_factory, base: Path, edits: list[dict[str, str | None]]) -> None:
    edit: dict[str, str | None] = {}
    for one in edits:
        edit.update(one)
    problems = _verdicts(tmp_path_factory.mktemp("case"), base, edit)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("row", sorted(ROW_CASES))
def test_every_row_has_a_case_a_door_refuses(tmp_path: Path, row: str) -> None:
    """Each row of the gate is fired by its case, and the door refuses it with the row's key."""
    from builder.config.gate import BY_NAME

    assert set(ROW_CASES) == set(BY_NAME), "a row of builder/config/gate.py without a case here: add one"
    base, edit, door, action = ROW_CASES[row]
    assert door in {str(d) for d in BY_NAME[row].doors}, (row, door)
    values, applied = _case(tmp_path, base, edit)
    argv = dict(_doors(values, applied, action))[door]
    code, _, err = _run(argv)
    assert code == 2 and "Traceback" not in err, (row, err)
    assert set(_KEY.findall(err)) == _predicted(values, applied, door, action), (row, err)


def test_every_verb_that_reads_values_is_a_door_or_listed() -> None:
    """A new verb is a door of the gate (builder/config/gate.py ``Door``) or listed in NOT_DOORS."""
    from builder.commands import verb
    from builder.config.gate import Door

    doors = {str(d).split()[0] for d in Door}
    names = {v.name for v in verb.every()}
    assert names <= doors | NOT_DOORS, sorted(names - doors - NOT_DOORS)
    assert NOT_DOORS <= names, sorted(NOT_DOORS - names)


def test_the_rows_keep_the_doors_in_order() -> None:
    """validate reports every row; each (superset, subset) of gate.SUPERSETS holds row by row."""
    from builder.config.gate import CHECKS, SUPERSETS, Door

    for c in CHECKS:
        assert Door.VALIDATE in c.doors or c.validate == "warning", c.name
        for bigger, smaller in SUPERSETS:
            assert smaller not in c.doors or bigger in c.doors, (c.name, bigger, smaller)
