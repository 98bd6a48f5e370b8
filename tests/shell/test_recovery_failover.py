"""Recovery over a candidate list (docs/recovery.md, "Candidates"): a spot slice that Google
preempted, whose zone now has no spot capacity, is recreated on-demand in the same zone.

(a) The recreate's pipeline (the update scoped to the slice that health-prepare dispatches, placed
where the applied snapshot says the slice was granted) runs ``tpu-plan`` and ``tpu-apply`` under
BusyBox ``sh`` with a terraform stand-in whose state still holds the lost slot and whose plan JSON
is Terraform's (the lost slot in ``resource_drift`` as a delete, in ``resource_changes`` made
again): the failover loop sees the slice is gone, is refused spot (a real stockout text), is
granted on-demand, removes the refused try, and never asks the other zone (the dataset disk and
Filestore's checkpoints are in this one). A slice that still runs is never moved. (b) The health
build, played as in test_recovery_sandbox.py, whose dispatch leaves the applied record finalize
writes: its recovery record, its log and ``tpubuild status``'s row name the new place and its
hourly cost. (c) Real Terraform (the stand-in provider, reading the slice as gone) writes the plan
JSON the loop's held rule reads: a lost slice is a drift delete and a create, a running one a no-op."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builder.config import load_text
from builder.config.candidates import acting
from builder.inputs.tfvars import all_for, by_candidate
from builder.planning.plan import make_plan
from builder.render.pipeline import render
from tests.conftest import EXAMPLES, REPO, rewrite_env
from tests.support import failover_steps, swap_steps
from tests.support.pipeline import step_script

BASE = EXAMPLES / "vm-v5litepod-16.env"
LIST = {"ZONE": "us-east5-a,us-east5-b", "TPU_PROVISIONING": "spot,on-demand", "TPU_RECOVERY": "auto"}
SLOT = 'google_tpu_v2_vm.this["a"]'

#: terraform: one state per root; plan writes its variables' zone and spot into the plan file;
#: ``show -json`` answers as Terraform does for a slot the state holds (STANDIN_LOST: Google lost
#: it, so drift deletes it and the plan makes it again; else a no-op) or does not (a create); an
#: apply of a spot (on-demand) slice fails with the real stockout text where STANDIN_NO_SPOT
#: (STANDIN_NO_ON_DEMAND) is set
TERRAFORM = failover_steps.HEAD + r"""if cmd == "plan":
    varfile = opt("-var-file") or os.path.join(os.environ["WORKSPACE"], "tfvars", "tpu.tfvars.json")
    v = json.loads(Path(varfile).read_text())
    Path(opt("-out")).write_text(json.dumps({"zone": v["zone"], "spot": v["spot"]}))
    sys.exit(0)
if cmd == "show":
    lost = bool(os.environ.get("STANDIN_LOST"))
    def change(actions):
        return {"address": 'google_tpu_v2_vm.this["a"]', "mode": "managed", "type": "google_tpu_v2_vm",
                "name": "this", "index": "a", "provider_name": "registry.terraform.io/hashicorp/google",
                "change": {"actions": actions, "before": None, "after": {"zone": "z"}}}
    doc = {"format_version": "1.2", "resource_drift": [change(["delete"])] if held and lost else [],
           "resource_changes": [change(["create"] if lost or not held else ["no-op"])]}
    print(json.dumps(doc, separators=(",", ":")))
    sys.exit(0)
if cmd == "state":
    print("\n".join(held))
    sys.exit(0)
if cmd == "apply" and "-destroy" in argv:
    held[:] = [a for a in held if a != opt("-target")]
    state.write_text(json.dumps(held))
    log(f"destroyed {opt('-target')}")
    sys.exit(0)
if cmd == "apply":
    plan = json.loads(Path(argv[-1]).read_text())
    held[:] = []  # the saved plan's refresh: the lost slot is no longer in the state
    if os.environ.get("STANDIN_NO_SPOT" if plan["spot"] else "STANDIN_NO_ON_DEMAND"):
        text = (Path(os.environ["FIXTURES"]) / "tpu_vm_stockout.txt").read_text()
        print(text.replace("us-central1-c", plan["zone"]), file=sys.stderr)
        held.append('google_tpu_v2_vm.this["a"]')  # a create that failed half-way: tainted
        state.write_text(json.dumps(held))
        log(f"refused {plan['zone']} {'spot' if plan['spot'] else 'on-demand'}")
        sys.exit(1)
    held.append('google_tpu_v2_vm.this["a"]')
    state.write_text(json.dumps(held))
    log(f"created {plan['zone']} {'spot' if plan['spot'] else 'on-demand'}")
    sys.exit(0)
sys.exit(0)
"""


@pytest.fixture
def granted_spot():
    """The values, placed where the applied snapshot says the slice was granted (us-east5-a spot),
    as the recovery's dispatch places them (builder/config/candidates.py, acting)."""
    s = load_text(rewrite_env(BASE.read_text(), **LIST), BASE)
    return acting(s, s.candidates[0], "update")


def _recreate(tmp_path: Path, s, **env: str):
    config = render(s, make_plan(s, "update", tpu=True, mig=False))
    steps = {st["id"]: (st["entrypoint"], step_script(st)) for st in config["steps"]}
    sandbox = swap_steps.sandbox(tmp_path, "tpu", "tpu_vm", TERRAFORM, "#!/usr/bin/env bash\nexit 0\n")
    ws = Path(sandbox["WORKSPACE"])
    for name, values in {**all_for(s), **by_candidate(s)}.items():
        path = ws / "tfvars" / f"{name}.tfvars.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    (Path(sandbox["JOURNAL_DIR"]) / "state-tpu_vm.json").write_text(json.dumps([SLOT]))  # the state holds it
    sandbox["FIXTURES"] = str(REPO / "tests" / "data" / "capacity_errors")
    done, journal = swap_steps.run_in_workspace(steps, ("tpu-plan", "tpu-apply"), {**sandbox, **env})
    return done, journal, ws


def test_a_lost_spot_slice_without_spot_capacity_is_recreated_on_demand_in_its_zone(tmp_path, granted_spot):
    done, journal, ws = _recreate(tmp_path, granted_spot, STANDIN_LOST="1", STANDIN_NO_SPOT="1")
    assert all(p.returncode == 0 for p in done.values()), {k: p.stderr[-2000:] for k, p in done.items()}
    out = done["tpu-apply"].stdout
    assert "the slice in the state is gone (the plan makes it again)" in out
    assert "no capacity in us-east5-a (spot): There is no more capacity in the zone" in out
    assert "granted in us-east5-a (candidate 2 of 4)" in out
    events = [x for x in journal if x.startswith(("created", "refused", "destroyed"))]
    assert events == ["refused us-east5-a spot", f"destroyed {SLOT}", "created us-east5-a on-demand"]
    assert not any("us-east5-b" in x or "candidates/2/" in x or "candidates/3/" in x for x in journal)
    assert json.loads((ws / "plans" / "granted.json").read_text()) == {"zone": "us-east5-a", "mode": "on-demand"}
    assert json.loads((ws / "tfvars" / "tpu.tfvars.json").read_text())["spot"] is False  # later steps: on-demand


def test_no_mode_of_its_zone_fails_the_try_and_says_how_to_move(tmp_path, granted_spot):
    done, journal, _ws = _recreate(tmp_path, granted_spot, STANDIN_LOST="1", STANDIN_NO_SPOT="1",
                                   STANDIN_NO_ON_DEMAND="1")
    assert done["tpu-apply"].returncode == 1
    [line] = [x for x in done["tpu-apply"].stderr.splitlines() if x.startswith("tpubuild:")]
    assert "no candidate of us-east5-a granted" in line and "us-east5-a/spot us-east5-a/on-demand" in line
    assert "put another zone first in ZONE and update to move there" in line
    assert not [x for x in journal if x.startswith("created") or "us-east5-b" in x]


def test_a_slice_that_still_runs_is_never_moved(tmp_path, granted_spot):
    done, journal, _ws = _recreate(tmp_path, granted_spot, STANDIN_NO_SPOT="1")
    assert done["tpu-apply"].returncode == 1
    assert "a slice is in the state, so it is not moved to another candidate" in done["tpu-apply"].stderr
    assert not [x for x in journal if x.startswith("created")]


def test_the_record_and_status_name_the_new_place_and_its_hourly_cost(tmp_path: Path) -> None:
    from builder.inputs import recovery
    from builder.catalogue.status_rows import recovery_row
    from tests.shell.test_recovery_sandbox import _sandbox

    box = _sandbox(tmp_path, BASE, **LIST)
    s = box.settings
    assert recovery.places(s)["place"] == "us-east5-a spot"
    assert "recreates a lost slice in the first of spot, on-demand in us-east5-a that grants it" in \
        recovery.plan_text(s)  # what plan says the recovery does
    box.tpu("PREEMPTED")
    applied = box.gcs(f"workspace/{s.env_name}/applied/build.json")  # what finalize of the recreate writes
    text = json.dumps({"action": "update", "build_id": "b2", "granted": {"mode": "on-demand", "zone": "us-east5-a"}},
                      indent=2, sort_keys=True)
    code, out = box.run_build(FAKE_DISPATCH_RECORD=str(applied), FAKE_DISPATCH_TEXT=text)
    assert code == 0, out
    assert "the slice moved from us-east5-a spot to us-east5-a on-demand" in out and "19.2000 USD/h" in out, out
    [record] = box.records()
    assert record["outcome"] == "recovered" and record["place"] == "us-east5-a on-demand"
    assert record["moved_from"] == "us-east5-a spot" and record["now_hourly_usd"] == 19.2
    assert record["hourly_usd"] == 9.6  # the down time is priced at the slice that was lost
    row = recovery_row({**recovery.summary(box.records(), 5), "mark": None, "max_tries": 3, "interval_min": 10})
    assert "recreated in us-east5-a on-demand, as us-east5-a spot had no capacity: it costs 19.2000 USD/h now" in row


def test_the_health_build_of_a_list_is_a_real_build_and_shellcheck_clean(tmp_path: Path) -> None:
    files = failover_steps.checked_health_build(load_text(rewrite_env(BASE.read_text(), **LIST, ENV_TTL_HOURS="8"),
                                                          BASE), tmp_path)
    assert "'us-east5-b on-demand') hourly=19.2000 ;;" in files[-1].read_text()


@pytest.mark.slow
def test_every_gcloud_line_of_a_recovery_that_moves_parses_in_real_gcloud(gcloud, tmp_path: Path) -> None:
    from tests.shell.test_recovery_sandbox import _sandbox

    box = _sandbox(tmp_path, BASE, **LIST)
    box.tpu("PREEMPTED")
    applied = box.gcs(f"workspace/{box.settings.env_name}/applied/build.json")
    text = json.dumps({"granted": {"mode": "on-demand", "zone": "us-east5-a"}})
    assert box.run_build(FAKE_DISPATCH_RECORD=str(applied), FAKE_DISPATCH_TEXT=text)[0] == 0
    failover_steps.gcloud_lines_parse(gcloud, box, ("storage", "cat", f"gs://{box.settings.state_bucket}/workspace/"
                                                     f"{box.settings.env_name}/applied/build.json"))


#: A root with the slice's resource as modules/tpu_vm declares it (the stand-in serves its schema)
SLICE_ROOT = """
terraform {
  required_providers {
    google-beta = { source = "hashicorp/google-beta", version = "~> 8.7" }
  }
}
variable "zone" { type = string }
variable "spot" { type = bool }
resource "google_tpu_v2_vm" "this" {
  for_each         = toset(["a"])
  provider         = google-beta
  name             = "tpu-${each.key}"
  zone             = var.zone
  accelerator_type = "v5litepod-16"
  runtime_version  = "v2-alpha-tpuv5-lite"
  scheduling_config {
    spot = var.spot
  }
}
output "slices" { value = { for k, v in google_tpu_v2_vm.this : k => v.name } }
output "name" { value = google_tpu_v2_vm.this["a"].name }
"""


@pytest.mark.slow
@pytest.mark.parametrize("gone", [True, False], ids=["lost", "running"])
def test_real_terraform_plan_json_tells_a_lost_slice_from_a_running_one(tmp_path, granted_spot, gone) -> None:
    """The held rule of the failover loop read from real Terraform's plan JSON (the stand-in
    provider reads the slice as gone with TFSTANDIN_GONE, as Google answers for a slice it lost):
    the loop's own tpu-apply script says a lost slice may be granted by any candidate of its zone,
    and gives a running one its one try."""
    import subprocess

    from tests.support.terraform import standin_terraform

    tf_env = standin_terraform().env  # terraform and the stand-in's packages, required as every Terraform test does
    s = granted_spot
    config = render(s, make_plan(s, "update", tpu=True, mig=False))
    steps = {st["id"]: (st["entrypoint"], step_script(st)) for st in config["steps"]}
    sandbox = swap_steps.sandbox(tmp_path, "tpu", "tpu_vm", "#!/bin/sh\nexit 1\n", "#!/bin/sh\nexit 0\n")
    (tmp_path / "bin" / "terraform").unlink()  # the real one
    (Path(sandbox["JOURNAL_DIR"]) / "journal").touch()
    ws = Path(sandbox["WORKSPACE"])
    root = ws / "modules" / "tpu_vm"
    (root / "main.tf").write_text(SLICE_ROOT)
    for name, values in {**all_for(s), **by_candidate(s)}.items():
        path = ws / "tfvars" / f"{name}.tfvars.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"zone": values["zone"], "spot": values["spot"]} if name.endswith("tpu") else {}))
    env = {**sandbox, **tf_env, **({"TFSTANDIN_GONE": "google_tpu_v2_vm"} if gone else {})}

    def tf(*args: str, **extra: str) -> str:
        proc = subprocess.run(["terraform", *args], cwd=root, env={**env, **extra}, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout

    varfile = f"-var-file={ws / 'tfvars' / 'tpu.tfvars.json'}"
    tf("init", "-input=false")
    tf("apply", "-input=false", "-auto-approve", varfile, TFSTANDIN_GONE="")  # the slice the state holds
    tf("plan", "-input=false", varfile, f"-out={ws / 'plans' / 'tpu.tfplan'}")  # tpu-plan's guarded plan
    (ws / "plans" / "tpu.json").write_text(tf("show", "-json", str(ws / "plans" / "tpu.tfplan")))
    shown = json.loads((ws / "plans" / "tpu.json").read_text())
    drift = [c["change"]["actions"] for c in shown.get("resource_drift", [])]
    assert drift == ([["delete"]] if gone else []), drift  # why the loop reads resource_changes only
    assert [c["change"]["actions"] for c in shown["resource_changes"]] == [["create"] if gone else ["no-op"]]
    [done], _journal = swap_steps.run(steps, ("tpu-apply",), env, cwd=str(ws), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    said = "the slice in the state is gone (the plan makes it again)" in done.stdout
    assert said is gone, done.stdout
    assert json.loads((ws / "plans" / "granted.json").read_text()) == {"zone": "us-east5-a", "mode": "spot"}
    assert tf("state", "list").split() == ['google_tpu_v2_vm.this["a"]']
