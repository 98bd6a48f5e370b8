"""The failover loop (docs/capacity.md), through the rendered steps of a create, each under its
image's shell (BusyBox ``sh`` for the Terraform image's): ``tpu-plan``, ``tpu-apply`` (the
acquisition), then ``filestore`` and ``shared_pd`` planned and applied, ``tpu-attach``. The
terraform stand-in keeps a state per root and answers an apply in a zone of ``STANDIN_STOCKOUT``
with a real stockout text of the Cloud TPU API (tests/data/capacity_errors/), in one of
``STANDIN_DENIED`` with a real permission error; with ``STANDIN_TAINT`` a refused try leaves its
TPU VM in the state, as a create that failed half-way does.

(a) the first two candidates have no capacity: the slice lands in the third; Filestore and the
disk are planned with the third's variables, in its zone; nothing is left of the refused tries
(the tainted slice destroyed); tpu-attach addresses the granted zone; plans/granted.json (which
finalize records in the applied snapshot) names the zone and mode; (b) a permission error at the
first candidate stops there with one line, no other candidate tried, nothing else made; (c) no
candidate has capacity: one line naming every refusal; (d) finalize's granted place reads that
file (and keeps the snapshot's when the build did not apply the slice)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builder.config import load_text
from builder.facts.actions import Action
from builder.planning.plan import make_plan
from builder.render.pipeline import render
from tests.conftest import EXAMPLES, rewrite_env
from tests.support import failover_steps, swap_steps
from tests.support.pipeline import step_script

ZONES = ("us-east5-a", "us-east5-b", "us-east5-c")

#: terraform: one state per root (the folder it runs in); plan writes the zone of its -var-file
#: into the plan file; apply of a TPU VM plan fails in STANDIN_STOCKOUT / STANDIN_DENIED zones
TERRAFORM = failover_steps.terraform(r"""if cmd == "plan":
    varfile = opt("-var-file") or os.path.join(os.environ["WORKSPACE"], "tfvars", f"{root}.tfvars.json")
    zone = json.loads(Path(varfile).read_text()).get("zone", "")
    Path(opt("-out")).write_text(json.dumps({"zone": zone}))
    sys.exit(0)
if cmd == "output":
    name = {"-raw": argv[2] if len(argv) > 2 else ""}.get(argv[1], "")
    print({"nfs_ip": "10.20.0.2", "share_name": "tpushare", "name": "tpu-v5e-pod"}.get(name, "{}"), end="")
    sys.exit(0)
if cmd == "apply":
    zone = json.loads(Path(argv[-1]).read_text())["zone"]
    if root == "tpu_vm":
        for env, fixture in (("STANDIN_STOCKOUT", "tpu_vm_stockout.txt"), ("STANDIN_DENIED", "permission_denied_tpu.txt")):
            if zone in os.environ.get(env, "").split(","):
                print((Path(os.environ["FIXTURES"]) / fixture).read_text().replace("us-central1-c", zone), file=sys.stderr)
                if env == "STANDIN_STOCKOUT" and os.environ.get("STANDIN_TAINT"):
                    held.append(('google_tpu_v2_vm.this["a"]', zone))
                    save()
                    log(f"tainted {zone}")
                sys.exit(1)
    address = {"tpu_vm": 'google_tpu_v2_vm.this["a"]', "filestore": "google_filestore_instance.this",
               "shared_pd": "google_compute_disk.this"}.get(root, root)
    held.append((address, zone))
    save()
    log(f"created {root} in {zone}")
    sys.exit(0)
""")

GCLOUD = r"""#!/usr/bin/env bash
echo "gcloud $*" >> "$JOURNAL_DIR/journal"
exit 0
"""


@pytest.fixture
def settings():
    text = rewrite_env((EXAMPLES / "vm-v5litepod-16.env").read_text(), ZONE=",".join(ZONES),
                       TPU_PROVISIONING="spot", GCS_DATASET="")
    return load_text(text, EXAMPLES / "vm-v5litepod-16.env")


def _sandbox(tmp_path: Path, settings) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    steps, env, _config = failover_steps.sandbox(tmp_path, settings, "tpu", "tpu_vm", TERRAFORM, GCLOUD)
    return steps, env


ORDER = ("tpu-plan", "tpu-apply", "filestore-plan", "filestore-apply", "shared_pd-plan", "shared_pd-apply",
         "tpu-attach")


def test_the_slice_lands_in_the_third_candidate_and_the_storage_follows(tmp_path, settings) -> None:
    steps, env = _sandbox(tmp_path, settings)
    assert [c.zone for c in settings.candidates] == list(ZONES)
    done, journal = swap_steps.run_in_workspace(steps, ORDER, env, STANDIN_STOCKOUT="us-east5-a,us-east5-b",
                                                STANDIN_TAINT="1")
    assert all(p.returncode == 0 for p in done.values()), {k: p.stderr[-2000:] for k, p in done.items()}
    created = [line for line in journal if line.startswith(("created", "destroyed", "tainted"))]
    assert created == ["tainted us-east5-a", 'destroyed google_tpu_v2_vm.this["a"]',
                       "tainted us-east5-b", 'destroyed google_tpu_v2_vm.this["a"]',
                       "created tpu_vm in us-east5-c", "created filestore in us-east5-c",
                       "created shared_pd in us-east5-c"]
    ws = Path(env["WORKSPACE"])
    state = json.loads((Path(env["JOURNAL_DIR"]) / "state-tpu_vm.json").read_text())
    assert state == [['google_tpu_v2_vm.this["a"]', "us-east5-c"]]  # nothing of the refused tries
    assert json.loads((ws / "plans" / "granted.json").read_text()) == {"zone": "us-east5-c", "mode": "spot"}
    out = done["tpu-apply"].stdout
    assert "no capacity in us-east5-a (spot): There is no more capacity in the zone" in out
    assert "granted in us-east5-c (candidate 3 of 3)" in out
    assert (ws / "plans" / "tpu.refused").read_text() == "us-east5-a spot\nus-east5-b spot\n"
    attach = [line for line in journal if line.startswith("gcloud") and "tpu-vm" in line]
    assert attach and all("--zone=us-east5-c" in line for line in attach), attach


def test_a_permission_error_stops_at_the_first_candidate_with_one_line(tmp_path, settings) -> None:
    steps, env = _sandbox(tmp_path, settings)
    journal = failover_steps.stops_at_the_first(steps, env, ORDER, "tpu", "us-east5-a", "Permission 'tpu.nodes.get' denied")
    assert not [line for line in journal if line.startswith("created")]


def test_no_candidate_with_capacity_names_every_refusal(tmp_path, settings) -> None:
    steps, env = _sandbox(tmp_path, settings)
    done, journal = swap_steps.run_in_workspace(steps, ORDER, env, STANDIN_STOCKOUT=",".join(ZONES))
    assert done["tpu-apply"].returncode == 1
    [line] = [x for x in done["tpu-apply"].stderr.splitlines() if x.startswith("tpubuild:")]
    assert "no candidate granted" in line and "us-east5-a/spot us-east5-b/spot us-east5-c/spot" in line
    assert not [x for x in journal if x.startswith("created")]


def test_finalize_records_the_granted_place(tmp_path, monkeypatch) -> None:
    from builder.commands.finalize import granted_place

    monkeypatch.setenv("WORKSPACE", str(tmp_path))
    before = type("Applied", (), {"granted": {"zone": "us-east5-a", "mode": "spot"}})()
    assert granted_place(before, Action.UPDATE) == {"zone": "us-east5-a", "mode": "spot"}  # slice not applied
    assert granted_place(before, Action.DESTROY) == {}
    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "granted.json").write_text('{"zone": "us-east5-c", "mode": "flex-start"}\n')
    assert granted_place(before, Action.CREATE) == {"zone": "us-east5-c", "mode": "flex-start"}


@pytest.mark.parametrize("action", ["create", "update", "destroy"])
def test_a_failover_build_loads_into_the_real_build_type_and_is_shellcheck_clean(settings, action) -> None:
    import shutil
    import subprocess

    from tests.unit.test_pipeline import check_config

    from google.cloud.devtools.cloudbuild_v1.types import Build as build
    plan = make_plan(settings, action)
    config = render(settings, plan)
    build.from_json(json.dumps(config), ignore_unknown_fields=False)
    check_config(config, settings, plan)  # every property the pipeline's contract fixes
    ids = [st["id"] for st in config["steps"]]
    for n, st in enumerate(config["steps"]):  # Cloud Build: waitFor names earlier steps only
        assert all(w == "-" or w in ids[:n] for w in st["waitFor"]), st["id"]
    exe = shutil.which("shellcheck")
    assert exe
    for st in config["steps"]:
        dialect = "dash" if st["entrypoint"] == "sh" else "bash"
        proc = subprocess.run([exe, "-s", dialect, "-"], input=step_script(st), capture_output=True, text=True)
        assert proc.returncode == 0, (st["id"], proc.stdout)
    if action != "destroy":
        assert ids.index("tpu-apply") < ids.index("filestore-plan") and ids.index("tpu-apply") < ids.index("shared_pd-plan")
