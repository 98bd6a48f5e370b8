"""Helpers of the Terraform slot tests (tests/terraform/test_filestore_move.py, test_shared_pd_move.py):
plan, apply and read back a root module through the stand-in, and run the guard on a real plan."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.terraform import Terraform


def changes(plan: dict[str, Any], rtype: str) -> dict[str, str]:
    """address → '+'.join(actions) of every ``rtype`` resource in the plan."""
    return {c["address"]: "+".join(c["change"]["actions"]) for c in plan.get("resource_changes", [])
            if c["type"] == rtype}


def plan(tf: Terraform, work: Path, values: dict[str, Any], name: str) -> dict[str, Any]:
    (work / "terraform.tfvars.json").write_text(json.dumps(values, indent=1))
    return tf.plan_json(work, name)


def apply(tf: Terraform, work: Path, name: str) -> dict[str, Any]:
    """Apply the saved plan ``name``; the module's outputs."""
    tf(work, "apply", "-input=false", "-no-color", "-lock=false", f"{name}.tfplan")
    return {k: v["value"] for k, v in json.loads(tf(work, "output", "-json").stdout).items()}


def elsewhere(values: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """``values`` in another zone of the same region (the move of the environment), plus ``extra``."""
    zone = values["zone"]
    return {**values, "zone": zone[:-1] + ("b" if zone[-1] != "b" else "c"), **extra}


def guard(tmp: Path, doc: dict[str, Any], module: str) -> subprocess.CompletedProcess[str]:
    """``tpubuild guard`` of an update on the plan ``doc``."""
    path = tmp / "guarded.json"
    path.write_text(json.dumps(doc))
    return subprocess.run([sys.executable, "-m", "builder", "guard", "--plan-json", str(path), "--module", module,
                           "--action", "update"], capture_output=True, text=True, timeout=60)


#: The last commit of main before the slots (modules/filestore, modules/shared_pd): a state its modules wrote.
BEFORE_SLOTS = "916e93ddde6fd4335cb56d607ae5522720c89d4a"


def upgraded(tf: Terraform, tmp: Path, tfdir: str, plan_module: str, values: dict[str, Any]) -> Path:
    """``tfdir`` applied by the modules of :data:`BEFORE_SLOTS`, then today's module prepared (and
    initialised) on the same state: what an environment created before the slots meets."""
    from tests.support.terraform import Workspace, old_module

    old_work = old_module(tmp, BEFORE_SLOTS, tmp / "state", tfdir, plan_module, values)
    tf.init(old_work)
    tf(old_work, "apply", "-input=false", "-no-color", "-lock=false", "-auto-approve")
    work = Workspace(tmp / "ws", state=tmp / "state").module(tfdir, plan_module, values)
    tf.init(work)
    return work
