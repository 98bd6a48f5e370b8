"""`tpubuild validate` is a superset of every later refusal: over a generated corpus of values
files (the shipped one, every example and the legacy node file, each with mutations of sizes,
generations, architectures, provisioning, disks, Filestore, the model and its batch), whenever
`plan`, `render` (every action), `train <MODEL> --dry-run`, `logs --dry-run`, `stop --dry-run`
or `run --dry-run` refuses a file with exit 2, `validate` refused it too, naming the same key.

Every command runs in-process (``builder.cli.main``, like tests/data/golden/generate.py), so the
corpus of about 400 files takes some 20 s of CPU. The mutations are single edits and
a fixed set of pairs; no randomness, so a failure names a file that reproduces.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, NODE, SHIPPED, rewrite_env

pytestmark = [pytest.mark.usefixtures("no_cloud"), pytest.mark.slow]  # ~2 s of CPU per base file

BASES: tuple[Path, ...] = (SHIPPED, *sorted(EXAMPLES.glob("*.env")), NODE)

#: One edit each (key → value; None removes the key).
EDITS: tuple[dict[str, str | None], ...] = (
    {},
    # sizes and generations (a generation change without its runtime or zone is a mistake too)
    *({"TPU_ACCELERATOR_TYPE": t} for t in ("v2-8", "v3-33", "v3-128", "v3-256", "v4-32", "v5p-8", "v6e-16",
                                             "v6e-256", "tpu7x-128", "v5e-16")),
    {"TPU_ACCELERATOR_TYPE": "v3-128", "ROBERTA_TOTAL_BATCH": "1536"},
    # the model and its batch
    *({"ROBERTA_TOTAL_BATCH": b} for b in ("1536", "1000", "64")),
    *({"ROBERTA_BATCH_PER_DEVICE": b} for b in ("7", "5000")),
    {"ROBERTA_WARMUP_UPDATES": "200000"},
    *({"MODEL": m} for m in ("bert", "")),
    # architectures and runtimes
    *({"TPU_ARCH": a} for a in ("vm", "mig", "node", "nod")),
    {"TPU_ARCH": "mig", "TPU_ACCELERATOR_TYPE": "v3-32"},
    {"TPU_ARCH": "mig", "TPU_RUNTIME_VERSION": None, "TPU_PYTORCH_VERSION": None},
    {"TPU_RUNTIME_VERSION": "v2-alpha-tpuv6e"},
    # provisioning
    *({"TPU_PROVISIONING": p} for p in ("spot", "preemptible", "reservation", "cheap")),
    {"TPU_QUEUED": "true"},
    {"TPU_SPOT": "true", "TPU_PREEMPTIBLE": "true"},
    {"TPU_RESERVATION": "my-res"},
    # disks and Filestore
    *({"SHARED_PD_DISK_ATTACH": v} for v in ("true", "false")),
    *({"SHARED_PD_DISK_TYPE": v} for v in ("pd-ssd", "pd-fast")),
    {"SHARED_PD_DISK_ATTACH": "false", "SHARED_PD_RESTORE": "latest"},
    {"SHARED_FS_CAPACITY": "500"},
    {"SHARED_FS_TIER": "BASIC_SSD"},
    {"SHARED_FS_CAPACITY": "500", "TPU_ACCELERATOR_TYPE": "v3-33", "SHARED_PD_DISK_TYPE": "pd-fast",
     "MOUNT_POINT": "mnt/common"},
    # names, paths, scripts, TTL
    {"ENV_BUILD_NAME": "a-very-long-environment-name"},
    {"ZONE": None, "ROBERTA_TOTAL_BATCH": "1000"},
    {"REGION": "us-central1"},
    {"ENV_TTL_HOURS": "4"},
    {"MIG_SETUP_SCRIPT": "scripts/not_here.sh"},
    {"MIG_SEED_DATA_PREP_SCRIPT": "env_setup/scripts/setup_mig.sh"},
)

ACTIONS = ("initialize", "create", "update", "destroy", "auto")
_KEY = re.compile(r"^tpubuild: error: \S+?\.env(?::\d+)?: ([A-Z][A-Z0-9_]*): ", re.M)


def _run(argv: list[str]) -> tuple[int, str]:
    from builder.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, err.getvalue()


def _later(path: Path, model: str, nothing: Path) -> list[tuple[str, list[str]]]:
    """The later commands on ``path``; ``nothing``: an empty applied file (nothing applied yet),
    which auto needs to decide."""
    values = ["--values", str(path)]
    # plan and render share their preparation (builder/commands/pipeline_cmds.py _plan); render
    # adds the pipeline's own checks, so it runs every action and plan the two a user starts with
    cases = [(f"{verb} --action {action}",
              [verb, *values, "--action", action, "--applied", str(nothing) if action == "auto" else "none"])
             for verb, actions in (("plan", ("create", "auto")), ("render", ACTIONS)) for action in actions]
    cases += [("run --dry-run", ["run", *values, "--dry-run", "--", "python3", "train.py"]),
              ("stop --dry-run", ["stop", *values, "--dry-run"])]
    if model:  # train and logs take the file's MODEL; with none selected they need --model
        cases += [(f"train {model} --dry-run", ["train", model, *values, "--dry-run"]),
                  ("logs --dry-run", ["logs", *values, "--dry-run"])]
    return cases


def _model(text: str) -> str:
    found = re.findall(r'^MODEL="([^"]*)"', text, re.M)
    return found[-1] if found else "roberta"


@pytest.mark.parametrize("base", BASES, ids=lambda p: p.name)
def test_validate_refuses_whatever_a_later_command_refuses(base: Path, tmp_path: Path) -> None:
    text = base.read_text()
    nothing = tmp_path / "nothing-applied.env"
    nothing.write_text("")
    refused = 0
    problems: list[str] = []
    for n, edit in enumerate(EDITS):
        path = tmp_path / f"{base.stem}.{n}.env"
        body = rewrite_env(text, **edit)
        path.write_text(body)
        code, err = _run(["validate", "--values", str(path)])
        assert code in (0, 2) and "Traceback" not in err, (edit, err)
        keys = set(_KEY.findall(err))
        refused += code == 2
        if code == 2:
            assert keys, (edit, err)  # every refusal names its key
        for name, argv in _later(path, _model(body), nothing):
            later_code, later_err = _run(argv)
            assert "Traceback" not in later_err, (edit, name, later_err)
            if later_code != 2:
                continue
            later_keys = set(_KEY.findall(later_err))
            if code != 2:
                problems.append(f"{edit}: validate ok, {name} refuses: {later_err.strip()}")
            elif later_keys and not later_keys & keys:
                problems.append(f"{edit}: {name} refuses {sorted(later_keys)}, validate {sorted(keys)}: "
                                f"{later_err.strip()}")
    assert not problems, "\n".join(problems)
    assert 0 < refused and (base == NODE or refused < len(EDITS))  # good and bad files (a node file builds nothing)


#: Edits whose refusal submit could meet in its own offline checks (the variables of every module,
#: packed for every action, name the scripts; create applies the model's slice).
SUBMIT_EDITS: tuple[dict[str, str | None], ...] = (
    {},
    {"MIG_SETUP_SCRIPT": "scripts/not_here.sh"},
    {"MIG_SEED_DATA_PREP_SCRIPT": "env_setup/scripts/setup_mig.sh"},
    {"TPU_ACCELERATOR_TYPE": "v3-128", "ROBERTA_TOTAL_BATCH": "1536"},
    {"MODEL": "bert"},
)


@pytest.mark.parametrize("base", (SHIPPED, EXAMPLES / "mig-v6e-16-spot.env", NODE), ids=lambda p: p.name)
def test_validate_refuses_whatever_submit_refuses_before_the_cloud(base: Path, tmp_path: Path) -> None:
    """submit's offline checks (builder/commands/submit.py ``prepare``) run before any client:
    with no credentials, a file they pass ends in exit 1 (no credentials), one they refuse in 2."""
    problems: list[str] = []
    for n, edit in enumerate(SUBMIT_EDITS):
        path = tmp_path / f"{base.stem}.{n}.env"
        path.write_text(rewrite_env(base.read_text(), **edit))
        code, err = _run(["validate", "--values", str(path)])
        keys = set(_KEY.findall(err))
        for action in ("create", "destroy"):
            later_code, later_err = _run(["submit", "--values", str(path), "--action", action])
            assert later_code in (1, 2) and "Traceback" not in later_err, (edit, action, later_err)
            later_keys = set(_KEY.findall(later_err))
            if later_code == 2 and (code != 2 or (later_keys and not later_keys & keys)):
                problems.append(f"{edit}: submit {action} refuses {later_err.strip()}; validate: {err.strip()}")
    assert not problems, "\n".join(problems)
