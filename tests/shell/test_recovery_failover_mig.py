"""Recovery over a candidate list on mig (docs/recovery.md, "Candidates"): a spot group Google
preempted stays in the state and Compute Engine recreates its VMs where it is; when spot has no
capacity the group stays short. The health build (played as in test_recovery_sandbox.py, with the
stateful fake gcloud, whose ``list-errors`` answers with Compute Engine's real stockout text of
tests/data/capacity_errors/) removes such a group and dispatches the recreate, whose failover loop
(the one of builder/templates/_acquire.sh.j2, proven on mig by test_failover_mig.py) asks the
candidates of its zone in order; the dispatch stand-in leaves the applied record finalize writes
(granted: flex-start). Its recovery record, its log and ``tpubuild status``'s row name the new
place and its hourly cost. A whole group, and a short one without a capacity error within the
wait, are left to the MIG; a group removed by a check whose recreate failed is asked for again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builder.catalogue.status_rows import recovery_row
from builder.config import load_text
from builder.inputs import recovery
from tests.conftest import REPO, rewrite_env
from tests.shell.test_recovery_sandbox import MIG, _launched, _sandbox
from tests.support import failover_steps
from tests.support.pipeline import step_script

LIST = {"TPU_PROVISIONING": "spot,flex-start"}  # both in us-east5-b, the example's zone
FIXTURE = REPO / "tests" / "data" / "capacity_errors" / "compute_zone_resource_pool_exhausted.txt"
WHOLE = "RUNNING NONE\n" * 4


def _stockout(box) -> None:
    code, _, message = FIXTURE.read_text().partition(": ")
    box.put(f"mig_errors/{box.settings.tpu_name}", f"{code}\t{message.splitlines()[0]}\n")


def _granted(box, mode: str) -> dict[str, str]:
    """The dispatch stand-in's env: the group made again whole, and the applied record of its finalize."""
    s = box.settings
    text = json.dumps({"action": "update", "build_id": "b2", "granted": {"mode": mode, "zone": s.zone}})
    return {"FAKE_DISPATCH_RECORD": str(box.gcs(f"workspace/{s.env_name}/applied/build.json")),
            "FAKE_DISPATCH_TEXT": text, "FAKE_DISPATCH_MIG": WHOLE}


def _dispatched(box) -> list[str]:
    return [c for c in box.calls() if c.startswith("tpubuild dispatch")]


def test_a_short_spot_group_with_a_stockout_fails_over_to_flex_start(tmp_path: Path) -> None:
    box = _sandbox(tmp_path, MIG, **LIST)
    s = box.settings
    assert recovery.places(s)["place"] == "us-east5-b spot"
    assert "in the first of spot, flex-start in us-east5-b that grants it" in recovery.plan_text(s)
    box.mig("RUNNING NONE\nRUNNING NONE\nPROVISIONING CREATING\nPROVISIONING CREATING\n")  # preempted
    _stockout(box)
    code, out = box.run_build(**_granted(box, "flex-start"))
    assert code == 0, out
    assert "no capacity in us-east5-b spot (ZONE_RESOURCE_POOL_EXHAUSTED)" in out, out
    assert "the group is removed and the slice asked for in the first of spot, flex-start in us-east5-b" in out
    calls = box.calls()
    delete = next(i for i, c in enumerate(calls) if "instance-groups managed delete" in c)
    assert f"delete {s.tpu_name} --zone={s.zone} --project={s.project_id} --quiet" in calls[delete]
    [dispatch] = _dispatched(box)
    assert delete < calls.index(dispatch) and "--mig true" in dispatch
    assert len(_launched(calls)) == 4 and all(calls.index(c) > calls.index(dispatch) for c in _launched(calls))
    assert "the slice moved from us-east5-b spot to us-east5-b flex-start" in out and "21.6000 USD/h" in out, out
    [record] = box.records()
    assert record["outcome"] == "recovered" and record["place"] == "us-east5-b flex-start"
    assert record["moved_from"] == "us-east5-b spot" and record["now_hourly_usd"] == 21.6
    assert record["hourly_usd"] == recovery.hourly_usd(s)  # the down time is priced at the slice that was lost
    row = recovery_row({**recovery.summary(box.records(), 5), "mark": None, "max_tries": 3, "interval_min": 10})
    assert "recreated in us-east5-b flex-start, as us-east5-b spot had no capacity: it costs 21.6000 USD/h now" in row
    assert box.mark() == {}


def test_a_whole_group_and_a_short_one_without_a_capacity_error_are_left_to_the_mig(tmp_path: Path) -> None:
    box = _sandbox(tmp_path, MIG, **LIST)
    _stockout(box)  # an old error does not matter to a whole group
    box.mig(WHOLE)
    code, out = box.run_build()
    assert code == 0 and "is whole; nothing to do" in out, out
    box.put(f"mig_errors/{box.settings.tpu_name}", "")
    box.mig("RUNNING NONE\nRUNNING NONE\n")
    code, out = box.run_build("hb-2")
    assert code == 0 and "2 of 4 VMs running; the MIG recreates its VMs" in out, out
    assert not [c for c in box.calls() if "managed delete" in c] and not _dispatched(box)
    assert box.mark()["reason"] == "2 of 4 VMs running" and "removed" not in box.mark()


def test_short_beyond_the_wait_fails_over_and_a_failed_recreate_is_asked_again(tmp_path: Path) -> None:
    box = _sandbox(tmp_path, MIG, **LIST)
    s = box.settings
    box.mig("RUNNING NONE\n")
    mark = box.gcs(recovery.objects(s)["mark"])
    mark.parent.mkdir(parents=True, exist_ok=True)
    mark.write_text("detected_at=2020-01-01T00:00:00Z\ndetected_s=1577836800\nreason=1 of 4 VMs running\n"
                    "tries=0\ngave_up=0\n")  # short since long before the failover's wait
    code, out = box.run_build(FAKE_DISPATCH_FAILS="1")
    assert code == 0 and "beyond the failover's wait of 600 s" in out, out
    assert box.mark()["removed"] == s.tpu_name and box.mark()["tries"] == "1"
    assert [r["outcome"] for r in box.records()] == ["failed"]
    row = recovery_row({**recovery.summary(box.records(), 5), "mark": box.mark(), "max_tries": 3, "interval_min": 10})
    assert f"1 failed tries; group {s.tpu_name} removed for want of capacity, the recreate asks the modes" in row
    code, out = box.run_build("hb-2", **_granted(box, "spot"))  # the group is gone; the next check asks again
    assert code == 0 and "was removed for want of capacity in us-east5-b spot by an earlier check" in out, out
    assert len(_dispatched(box)) == 2 and box.records()[-1]["outcome"] == "recovered" and box.mark() == {}
    assert box.records()[-1]["moved_from"] == ""  # granted in spot again: it did not move


def test_one_candidate_in_the_zone_leaves_the_short_group_to_the_mig(tmp_path: Path) -> None:
    moving = _sandbox(tmp_path / "moving", MIG, ZONE="us-east5-b,us-east5-a", REGION="")
    assert recovery.mig_failover(moving.settings)["fails_over_mig"] is False  # mig does not move zones yet (MOVES_ON)
    box = _sandbox(tmp_path, MIG, ZONE="us-east5-b,us-east5-a", REGION="", TPU_RECOVERY_MOVE="false")
    assert recovery.mig_failover(box.settings)["fails_over_mig"] is False  # spot only in us-east5-b, never moved
    box.mig("RUNNING NONE\n")
    _stockout(box)
    code, out = box.run_build()
    assert code == 0 and "the MIG recreates its VMs" in out and not _dispatched(box), out
    assert not [c for c in box.calls() if "list-errors" in c]


def test_the_health_build_of_a_mig_list_is_a_real_build_and_shellcheck_clean(tmp_path: Path) -> None:
    files = failover_steps.checked_health_build(load_text(rewrite_env(MIG.read_text(), **LIST, ENV_TTL_HOURS="8"),
                                                          MIG), tmp_path)
    assert "instance-groups managed delete" in files[0].read_text()


@pytest.mark.slow
def test_every_gcloud_line_of_a_mig_recovery_that_moves_parses_in_real_gcloud(gcloud, tmp_path: Path) -> None:
    box = _sandbox(tmp_path, MIG, **LIST)
    box.mig("RUNNING NONE\n")
    _stockout(box)
    assert box.run_build(**_granted(box, "flex-start"))[0] == 0
    failover_steps.gcloud_lines_parse(gcloud, box, ("compute", "instance-groups", "managed", "list-errors"),
                                      ("compute", "instance-groups", "managed", "delete"))


#: terraform for the recreate's mig-plan and mig-apply: one state (what tpu_mig makes, with the
#: mode it was made in); plan writes the zone and mode of its -var-file into the plan file; ``show``
#: answers as Terraform does for a group the health check removed (STANDIN_LOST: the state holds
#: it, the plan makes it again) or one that runs (a no-op); an apply makes the slice in the plan's
#: mode (a MIG's create succeeds without capacity: the group keeps retrying) and notes the mode
#: for the gcloud stand-in
TERRAFORM = failover_steps.HEAD + r"""if cmd == "plan":
    v = json.loads(Path(opt("-var-file") or os.path.join(os.environ["WORKSPACE"], "tfvars", "mig.tfvars.json")).read_text())
    assert v["wait_for_instances"] is False
    Path(opt("-out")).write_text(json.dumps({"zone": v["zone"], "mode": v["provisioning"]}))
elif cmd == "show":
    actions = ["create"] if os.environ.get("STANDIN_LOST") or not held else ["no-op"]
    print(json.dumps({"resource_changes": [{"address": 'google_compute_instance_group_manager.slice["a"]',
                                            "type": "google_compute_instance_group_manager", "name": "slice",
                                            "change": {"actions": actions}}]}, separators=(",", ":")))
elif cmd == "state":
    print("\n".join(a for a, _m in held))
elif cmd == "output":
    print("tpu-v6e-slice" if argv[1:2] == ["-raw"] and argv[2] == "name" else "{}", end="")
elif cmd == "apply" and "-destroy" in argv:
    held[:] = [(a, m) for a, m in held if a != opt("-target")]
    state.write_text(json.dumps(held))
    log(f"destroyed {opt('-target')}")
elif cmd == "apply":
    plan = json.loads(Path(argv[-1]).read_text())
    held[:] = [(a, plan["mode"]) for a in json.loads(os.environ["SLICE"])]
    state.write_text(json.dumps(held))
    (j / "mode").write_text(plan["mode"])
    log(f"created {plan['zone']} {plan['mode']}")
"""

#: gcloud: list-errors answers with Compute Engine's real stockout text while the group was made in
#: a mode of STANDIN_NO_CAPACITY; wait-until fails there; a flex-start request is SUCCEEDED
GCLOUD = r"""#!/usr/bin/env python3
import os, sys
from pathlib import Path

argv = sys.argv[1:]
j = Path(os.environ["JOURNAL_DIR"])
with open(j / "journal", "a") as f:
    f.write("gcloud " + " ".join(argv) + "\n")
mode = (j / "mode").read_text() if (j / "mode").exists() else ""
short = mode in os.environ.get("STANDIN_NO_CAPACITY", "").split(",")
if "list-errors" in argv and short:
    code, _, message = Path(os.environ["FIXTURE"]).read_text().partition(": ")
    print(f"{code}\t{message.splitlines()[0]}")
if "resize-requests" in argv:
    print("SUCCEEDED")
sys.exit(1 if "wait-until" in argv and short else 0)
"""
SLICE = ("google_compute_resource_policy.slice[0]", 'google_compute_instance_template.slice["a"]',
         'google_compute_instance_group_manager.slice["a"]')


def _recreate(tmp_path: Path, **env: str):
    """The recreate the health check dispatches (the update scoped to the slice, placed where the
    applied snapshot says the slice was granted: spot), its mig-plan and mig-apply, with the state
    holding the spot group the check removed."""
    from builder.config.candidates import acting
    from builder.render.pipeline import render
    from builder.planning.plan import make_plan
    from builder.inputs.tfvars import all_for, by_candidate
    from tests.support import swap_steps

    s = load_text(rewrite_env(MIG.read_text(), **LIST, GCS_DATASET=""), MIG)
    s = acting(s, s.candidates[0], "update")
    config = render(s, make_plan(s, "update", mig=True))
    steps = {st["id"]: (st["entrypoint"], step_script(st)) for st in config["steps"]}
    sandbox = swap_steps.sandbox(tmp_path, "mig", "tpu_mig", TERRAFORM, GCLOUD)
    ws = Path(sandbox["WORKSPACE"])
    for name, values in {**all_for(s), **by_candidate(s)}.items():
        path = ws / "tfvars" / f"{name}.tfvars.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    journal = Path(sandbox["JOURNAL_DIR"])
    (journal / "state-tpu_mig.json").write_text(json.dumps([[a, "spot"] for a in SLICE]))
    (journal / "mode").write_text("spot")
    sandbox.update(FIXTURE=str(FIXTURE), SLICE=json.dumps(SLICE), TPUBUILD_ACQUIRE_POLL_S="0")
    done, lines = swap_steps.run_in_workspace(steps, ("mig-plan", "mig-apply"), {**sandbox, **env})
    return done, lines, ws, journal


def test_the_recreate_of_a_removed_spot_group_is_granted_flex_start_in_its_zone(tmp_path: Path) -> None:
    done, journal, ws, folder = _recreate(tmp_path, STANDIN_LOST="1", STANDIN_NO_CAPACITY="spot")
    assert all(p.returncode == 0 for p in done.values()), {k: p.stdout[-2000:] + p.stderr[-2000:] for k, p in done.items()}
    out = done["mig-apply"].stdout
    assert "the slice in the state is gone (the plan makes it again)" in out
    assert "no capacity in us-east5-b (spot): ZONE_RESOURCE_POOL_EXHAUSTED" in out
    assert "granted in us-east5-b (candidate 2 of 2)" in out
    events = [x for x in journal if x.startswith(("created", "destroyed"))]
    assert events == ["created us-east5-b spot", *(f"destroyed {a}" for a in SLICE), "created us-east5-b flex-start"]
    assert json.loads((folder / "state-tpu_mig.json").read_text()) == [[a, "flex-start"] for a in SLICE]
    assert json.loads((ws / "plans" / "granted.json").read_text()) == {"zone": "us-east5-b", "mode": "flex-start"}
    assert json.loads((ws / "tfvars" / "mig.tfvars.json").read_text())["provisioning"] == "flex-start"


def test_a_group_that_still_runs_is_never_moved(tmp_path: Path) -> None:
    done, journal, _ws, _folder = _recreate(tmp_path, STANDIN_NO_CAPACITY="spot")
    assert done["mig-apply"].returncode == 1
    assert "a slice is in the state, so it is not moved to another candidate" in done["mig-apply"].stderr
    assert not [x for x in journal if x.startswith("created us-east5-b flex-start") or x.startswith("destroyed")]
