"""mig's tpu-identity step (builder/templates/tf_identity.sh.j2), rendered from a create and run as
the Terraform image runs it (BusyBox ``sh``), with a terraform stand-in whose ``show -json`` gives a
plan shaped as Terraform writes it (one line, compact): it plans the access module with
``-target`` the catalogue entry's ``identity`` and applies that plan only when it creates the
account (absent: made; present: nothing applied; replaced or updated: nothing applied, one line
naming the guarded tpu-apply). A delete in ``resource_drift`` (before ``resource_changes``) or an
output's change (after it) is not the account's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from builder.catalogue.modules import spec
from builder.config import load
from builder.planning.plan import make_plan
from builder.render.pipeline import render
from tests.conftest import EXAMPLES, require
from tests.support.pipeline import step_script
from tests.support.swap_steps import shell

ACCOUNT = spec("mig", "tpu").identity  # type: ignore[union-attr]

#: terraform: journals every call; plan writes its -out file; show prints $STANDIN_SHOW; apply of a
#: saved plan journals "applied <plan>"
TERRAFORM = r"""#!/usr/bin/env bash
set -u
echo "terraform $*" >> "$JOURNAL"
if [ "${STANDIN_FAIL:-}" = "$1" ]; then echo "terraform $1 failed" >&2; exit 1; fi
case "$1" in
  plan) for a in "$@"; do case "$a" in -out=*) : > "${a#-out=}";; esac; done ;;
  show) cat "$STANDIN_SHOW" ;;
  apply) echo "applied ${*: -1}" >> "$JOURNAL" ;;
esac
"""


def _plan(actions: list[list[str]], *, drift: list[str] | None = None, outputs: list[str] | None = None) -> str:
    """``terraform show -json`` of a plan whose resources change by ``actions`` (the account's first)."""
    shown: dict[str, Any] = {"format_version": "1.2", "terraform_version": "1.16.4", "variables": {}}
    if drift:
        shown["resource_drift"] = [{"address": ACCOUNT, "change": {"actions": drift}}]
    shown["resource_changes"] = [{"address": ACCOUNT if i == 0 else f"x.r{i}", "mode": "managed",
                                  "change": {"actions": a, "before": None, "after": {"account_id": "tb-x-vm"}}}
                                 for i, a in enumerate(actions)]
    if outputs:
        shown["output_changes"] = {"service_account_email": {"actions": outputs}}
    shown["configuration"] = {"root_module": {}}
    return json.dumps(shown, separators=(",", ":"))


@pytest.fixture(scope="module")
def step() -> tuple[str, str]:
    s = load(EXAMPLES / "mig-v6e-16-spot.env")
    config = render(s, make_plan(s, "create"))
    [found] = [st for st in config["steps"] if st["id"] == "tpu-identity"]
    assert found["name"].startswith("hashicorp/terraform:") and found["timeout"] == "600s"
    return found["entrypoint"], step_script(found)


def _run(step: tuple[str, str], tmp_path: Path, shown: str, **extra: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    ws, bin_dir = tmp_path / "workspace", tmp_path / "bin"
    for d in (ws / "tfvars", ws / "modules" / "tpu_mig_access", bin_dir):
        d.mkdir(parents=True)
    (ws / "tfvars" / "tpu.tfvars.json").write_text("{}\n")
    (bin_dir / "terraform").write_text(TERRAFORM)
    (bin_dir / "terraform").chmod(0o755)
    (tmp_path / "show.json").write_text(shown + "\n")
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path), "LANG": "C.UTF-8",
           "WORKSPACE": str(ws), "JOURNAL": str(tmp_path / "journal"), "STANDIN_SHOW": str(tmp_path / "show.json"), **extra}
    entrypoint, script = step
    proc = subprocess.run([*shell(entrypoint), "-c", script], env=env, capture_output=True, text=True, timeout=60)
    journal = (tmp_path / "journal").read_text().splitlines()
    assert journal[0].startswith("terraform init ") and "-backend-config=prefix=v6e-slice/tpu" in journal[0].split()
    assert f"-target={ACCOUNT}" in journal[1].split() and journal[1].startswith("terraform plan "), journal
    assert '-var-file=' in journal[1], "the tpu module's own variables"
    return proc, journal


def _applied(journal: list[str]) -> list[str]:
    return [line for line in journal if line.startswith(("terraform apply", "applied"))]


def test_an_absent_account_is_made(step: tuple[str, str], tmp_path: Path) -> None:
    proc, journal = _run(step, tmp_path, _plan([["create"]], outputs=["update"]))
    assert proc.returncode == 0, proc.stderr
    assert _applied(journal)[-1] == f"applied {tmp_path}/workspace/plans/tpu-identity.tfplan"
    assert "the hosts' service account is made" in proc.stdout


def test_an_account_that_exists_is_left_alone(step: tuple[str, str], tmp_path: Path) -> None:
    proc, journal = _run(step, tmp_path, _plan([["no-op"]], drift=["delete"]))
    assert proc.returncode == 0, proc.stderr
    assert _applied(journal) == [] and "exists; nothing to do" in proc.stdout


@pytest.mark.parametrize("actions", [[["delete", "create"]], [["update"]], [["create"], ["delete"]]],
                         ids=["replace", "update", "create-and-delete"])
def test_anything_but_a_create_is_left_to_the_guarded_apply(step: tuple[str, str], tmp_path: Path,
                                                            actions: list[list[str]]) -> None:
    proc, journal = _run(step, tmp_path, _plan(actions))
    assert proc.returncode == 0, proc.stderr
    assert _applied(journal) == []
    [line] = [ln for ln in proc.stdout.splitlines() if "tpu-identity" in ln]
    assert "nothing applied here: the guarded tpu-apply makes that change" in line, proc.stdout


def test_a_failing_plan_fails_the_step_and_applies_nothing(step: tuple[str, str], tmp_path: Path) -> None:
    proc, journal = _run(step, tmp_path, _plan([["create"]]), STANDIN_FAIL="plan")
    assert proc.returncode != 0 and _applied(journal) == [] and len(journal) == 2


def test_the_step_is_shellcheck_clean(step: tuple[str, str]) -> None:
    exe = shutil.which("shellcheck")
    require("shellcheck", exe is not None, "apt-get install shellcheck")
    assert step[0] == "sh"  # the Terraform image: BusyBox sh, POSIX plus pipefail
    proc = subprocess.run([exe, "-s", "dash", "-"], input=step[1], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
