"""The failover loop on mig (docs/capacity.md, "The failover loop"), through the rendered steps of
a create, each under its image's shell: ``mig-plan`` (which leaves its Terraform binary in the
workspace), ``mig-apply`` (the acquisition, in the gcloud image), then ``filestore`` and
``shared_pd`` planned and applied, ``mig-resize``, ``mig-attach``. A MIG's create does not fail on
a stockout: the terraform stand-in makes the group (its template and workload policy) in any zone,
and the gcloud stand-in's ``list-errors`` answers in a zone of ``STANDIN_STOCKOUT`` with Compute
Engine's real stockout text (tests/data/capacity_errors/), in one of ``STANDIN_DENIED`` with a real
permission error.

(a) the first two candidates have no capacity: the slice lands in the third; what each refused
try made (group, template, policy) is destroyed; Filestore and the disk are made with the third's
variables, in its zone; mig-resize and mig-attach address the granted zone; plans/granted.json
(which finalize records) names it; (b) a permission error at the first candidate stops there with
one line, no other candidate planned, and the failing group removed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builder.catalogue.step_kinds import IMAGES
from builder.config import load_text
from builder.planning.plan import make_plan
from builder.render.pipeline import render
from tests.conftest import EXAMPLES, rewrite_env
from tests.support import failover_steps, swap_steps
from tests.support.pipeline import step_script

ZONES = ("us-east5-b", "us-east5-a", "us-central1-b")
SLICE = ("google_compute_resource_policy.slice[0]", 'google_compute_instance_template.slice["a"]',
         'google_compute_instance_group_manager.slice["a"]')

#: terraform: one state per root (the folder it runs in); plan writes the zone of its -var-file
#: into the plan file; an apply makes what the root makes, in that zone (a MIG's create succeeds
#: without capacity: the group keeps retrying)
TERRAFORM = failover_steps.terraform(r"""if cmd == "plan":
    varfile = opt("-var-file") or os.path.join(os.environ["WORKSPACE"], "tfvars", f"{root}.tfvars.json")
    values = json.loads(Path(varfile).read_text())
    if root == "tpu_mig":
        assert values["wait_for_instances"] is False, "a failover's MIG apply must not wait for the group"
    Path(opt("-out")).write_text(json.dumps({"zone": values.get("zone", "")}))
    sys.exit(0)
if cmd == "output":
    name = argv[2] if len(argv) > 2 and argv[1] == "-raw" else ""
    print({"nfs_ip": "10.20.0.2", "share_name": "tpushare", "name": "tpu-mig-failover"}.get(name, "{}"), end="")
    sys.exit(0)
if cmd == "apply":
    zone = json.loads(Path(argv[-1]).read_text())["zone"]
    made = {"tpu_mig": json.loads(os.environ["SLICE"]), "filestore": ["google_filestore_instance.this"],
            "shared_pd": ["google_compute_disk.this"]}.get(root, [root])
    held.extend((a, zone) for a in made)
    save()
    log(f"created {root} in {zone}")
    sys.exit(0)
""")

#: gcloud: list-errors answers with a real stockout / permission text in those zones, else nothing;
#: the group is stable (wait-until) wherever it has no error
GCLOUD = r"""#!/usr/bin/env python3
import os, sys
from pathlib import Path

argv = sys.argv[1:]
with open(Path(os.environ["JOURNAL_DIR"]) / "journal", "a") as f:
    f.write("gcloud " + " ".join(argv) + "\n")
zone = next((a.split("=", 1)[1] for a in argv if a.startswith("--zone=")), "")
fixtures = Path(os.environ["FIXTURES"])
if "list-errors" in argv:
    for env, fixture in (("STANDIN_STOCKOUT", "compute_zone_resource_pool_exhausted.txt"),
                         ("STANDIN_DENIED", "permission_denied.txt")):
        if zone in os.environ.get(env, "").split(","):
            code, _, message = (fixtures / fixture).read_text().partition(": ")
            print(f"{code}\t{message.splitlines()[0].replace('us-central1-a', zone)}")
if "describe" in argv and "--format=value(accessMode)" in argv:
    print("READ_ONLY_MANY")  # the seeded Hyperdisk ML
if "list-instances" in argv:
    print("tpu-mig-failover-w0")
if "wait-until" in argv:
    bad = os.environ.get("STANDIN_STOCKOUT", "").split(",") + os.environ.get("STANDIN_DENIED", "").split(",")
    sys.exit(1 if zone in bad else 0)
sys.exit(0)
"""


@pytest.fixture
def settings():
    text = rewrite_env((EXAMPLES / "mig-v6e-16-spot.env").read_text(), ZONE=",".join(ZONES), REGION="",
                       TPU_PROVISIONING="spot", GCS_DATASET="")
    return load_text(text, EXAMPLES / "mig-v6e-16-spot.env")


def _sandbox(tmp_path: Path, settings) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    steps, env, config = failover_steps.sandbox(tmp_path, settings, "mig", "tpu_mig", TERRAFORM, GCLOUD)
    assert next(st["name"] for st in config["steps"] if st["id"] == "mig-apply") == IMAGES["gcloud"]
    env.update(SLICE=json.dumps(SLICE), TPUBUILD_ACQUIRE_POLL_S="0")
    return steps, env


ORDER = ("mig-plan", "mig-apply", "filestore-plan", "filestore-apply", "shared_pd-plan", "shared_pd-apply",
         "mig-resize", "mig-attach")


def test_the_slice_lands_in_the_third_candidate_and_nothing_is_left_behind(tmp_path, settings) -> None:
    steps, env = _sandbox(tmp_path, settings)
    assert [c.zone for c in settings.candidates] == list(ZONES)
    done, journal = swap_steps.run_in_workspace(steps, ORDER, env, STANDIN_STOCKOUT="us-east5-b,us-east5-a")
    assert all(p.returncode == 0 for p in done.values()), {k: p.stderr[-2000:] for k, p in done.items()}
    made = [line for line in journal if line.startswith(("created", "destroyed"))]
    refused = [f"destroyed {a}" for a in SLICE]
    assert made == ["created tpu_mig in us-east5-b", *refused, "created tpu_mig in us-east5-a", *refused,
                    "created tpu_mig in us-central1-b", "created filestore in us-central1-b",
                    "created shared_pd in us-central1-b"]
    state = json.loads((Path(env["JOURNAL_DIR"]) / "state-tpu_mig.json").read_text())
    assert state == [[a, "us-central1-b"] for a in SLICE]  # nothing of the refused tries
    ws = Path(env["WORKSPACE"])
    assert json.loads((ws / "plans" / "granted.json").read_text()) == {"zone": "us-central1-b", "mode": "spot"}
    assert (ws / "plans" / "mig.refused").read_text() == "us-east5-b spot\nus-east5-a spot\n"
    out = done["mig-apply"].stdout
    assert "no capacity in us-east5-b (spot): ZONE_RESOURCE_POOL_EXHAUSTED" in out
    assert "granted in us-central1-b (candidate 3 of 3)" in out
    assert json.loads((ws / "tfvars" / "filestore.tfvars.json").read_text())["zone"] == "us-central1-b"
    later = [line for line in journal if line.startswith("gcloud") and "list-errors" not in line
             and "wait-until" not in line or "--stable --timeout=3" in line]
    assert later and all("--zone=us-central1-b" in line for line in later if "--zone=" in line), later
    assert (ws / ".tpubuild" / "bin" / "terraform").read_text() == TERRAFORM  # the plan carried it


def test_a_permission_error_stops_at_the_first_candidate_with_one_line(tmp_path, settings) -> None:
    steps, env = _sandbox(tmp_path, settings)
    failover_steps.stops_at_the_first(steps, env, ORDER, "mig", "us-east5-b", "PERMISSION_DENIED")
    assert json.loads((Path(env["JOURNAL_DIR"]) / "state-tpu_mig.json").read_text()) == []  # the failing group removed


def test_a_mig_failover_build_is_a_valid_build_and_shellcheck_clean(settings) -> None:
    import shutil
    import subprocess

    from tests.unit.test_pipeline import check_config

    from google.cloud.devtools.cloudbuild_v1.types import Build as build
    for action in ("create", "update", "destroy"):
        plan = make_plan(settings, action)
        config = render(settings, plan)
        build.from_json(json.dumps(config), ignore_unknown_fields=False)
        check_config(config, settings, plan)
        for st in config["steps"]:
            dialect = "dash" if st["entrypoint"] == "sh" else "bash"
            proc = subprocess.run([shutil.which("shellcheck") or "shellcheck", "-s", dialect, "-"],
                                  input=step_script(st), capture_output=True, text=True)
            assert proc.returncode == 0, (action, st["id"], proc.stdout)
