"""Real Terraform: every module validated and planned by ``terraform`` itself, through the
stand-in google/google-beta provider (tools/tfstandin, docs/terraform.md): 8.7.0 for every root,
6.50.0 for the legacy destroy-only node roots.

* a negative control proves Terraform + the stand-in report the errors "clean" must exclude;
* ``init -backend=false`` + ``validate`` on every folder under modules/ (found by listing);
* for every shipped values file (values.env, examples/*.env; found by glob) the plan modules of its
  architecture are planned and fake-applied in the pipeline's order with the tfvars
  ``builder.inputs.tfvars.all_for`` writes (backend local, terraform_remote_state → the local states);
  the plans are spot-checked, re-planned after apply (no changes), changed in place, destroyed, and
  every plan Terraform wrote goes through ``tpubuild guard``;
* ``moved`` blocks, the legacy roots' destroy and the schema the stand-in serves:
  test_terraform_history.py.

Needs terraform, pip and npm (first run: the bindings packages, cached under ~/.cache/tpubuild/tfstandin).
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from builder.config import load
from builder.config.offers import bulk_mode
from builder.inputs import tfvars
from builder.planning.plan import module_dir
from tests.conftest import EXAMPLES, REPO, SHIPPED
from tests.support.terraform import (
    CURRENT, Terraform, Workspace, counts, is_root, module_dirs, resources, standin_terraform,
)

ENV_FILES = [SHIPPED, *sorted(EXAMPLES.glob("*.env"))]
STARTUP = (REPO / "env_setup" / "scripts" / "startup.sh").read_text()
#: The last commit before host_identity / host_firewall became child modules (48dbc31 moved them).
PREVIOUS_RELEASE = "5b72d57"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def tf() -> Terraform:
    return standin_terraform()


# ---- negative control ---------------------------------------------------------------------------

NEGATIVE = {
    "missing required argument": ('resource "google_compute_disk" "d" {\n  zone = "europe-west4-a"\n}\n',
                                  "Missing required argument"),
    "unknown argument": ('resource "google_compute_disk" "d" {\n  name = "d"\n  sise = 10\n}\n', "Unsupported argument"),
    "wrong type": ('resource "google_compute_disk" "d" {\n  name = "d"\n  size = "ten"\n}\n', "Incorrect attribute value type"),
    "too many blocks": ('resource "google_compute_firewall" "f" {\n  name = "f"\n  network = "n"\n'
                        '  log_config {\n    metadata = "INCLUDE_ALL_METADATA"\n  }\n'
                        '  log_config {\n    metadata = "EXCLUDE_ALL_METADATA"\n  }\n}\n', "Too many log_config blocks"),
    "set indexed like a list": ('resource "google_compute_firewall" "f" {\n  name = "f"\n  network = "n"\n'
                                '  allow {\n    protocol = "tcp"\n  }\n}\n'
                                'output "o" {\n  value = google_compute_firewall.f.allow[0].protocol\n}\n',
                                "Cannot index a set value"),
    "beta-only resource on the GA provider": ('resource "google_tpu_v2_vm" "v" {\n  name = "v"\n  runtime_version = "r"\n}\n',
                                              "Invalid resource type"),
    "misspelt attribute reference": ('resource "google_compute_disk" "d" {\n  name = "d"\n}\n'
                                     'output "o" {\n  value = google_compute_disk.d.self_lnk\n}\n', "Unsupported attribute"),
    "missing required block": ('resource "google_compute_instance_template" "t" {\n  machine_type = "n2-standard-2"\n}\n',
                               "Insufficient disk blocks"),
}
_PROVIDERS = ('terraform {\n  required_providers {\n    google = {\n      source  = "hashicorp/google"\n'
              f'      version = "{CURRENT.provider_version}"\n    }}\n  }}\n}}\n')


@pytest.mark.parametrize("case", sorted(NEGATIVE), ids=lambda c: c.replace(" ", "-"))
def test_negative_control_each_known_error_is_reported(tf: Terraform, tmp_path: Path, case: str) -> None:
    body, expected = NEGATIVE[case]
    (tmp_path / "main.tf").write_text(_PROVIDERS + body)
    tf.init(tmp_path, backend=False)
    proc = tf(tmp_path, "validate", "-no-color", "-json", check=False)
    report = json.loads(proc.stdout)
    summaries = [d["summary"] for d in report["diagnostics"] if d["severity"] == "error"]
    assert proc.returncode == 1 and not report["valid"]
    assert any(expected in s for s in summaries), f"{case}: expected {expected!r}, Terraform said {summaries}"


def test_negative_control_all_errors_in_one_config_fail_validate(tf: Terraform, tmp_path: Path) -> None:
    """The same errors (but the ones that stop decoding early) together: still one failing validate."""
    bodies = [NEGATIVE[c][0].replace('"d"', f'"d{i}"').replace('"f"', f'"f{i}"').replace('"v"', f'"v{i}"')
              .replace('"t"', f'"t{i}"').replace(".d.", f".d{i}.").replace(".f.", f".f{i}.").replace('output "o"', f'output "o{i}"')
              for i, c in enumerate(sorted(NEGATIVE))]
    (tmp_path / "main.tf").write_text(_PROVIDERS + "".join(bodies))
    tf.init(tmp_path, backend=False)
    proc = tf(tmp_path, "validate", "-no-color", "-json", check=False)
    errors = [d for d in json.loads(proc.stdout)["diagnostics"] if d["severity"] == "error"]
    assert proc.returncode == 1 and len(errors) >= 5


# ---- validate every module ---------------------------------------------------------------------

@pytest.mark.parametrize("path", module_dirs(), ids=lambda p: p.name)
def test_every_module_validates_with_zero_diagnostics(tf: Terraform, tmp_path: Path, path: Path) -> None:
    ws = Workspace(tmp_path)
    work = ws.root / "modules" / path.name
    tf.init(work, backend=False)
    proc = tf(work, "validate", "-no-color", "-json", check=False)
    report = json.loads(proc.stdout)
    assert report["valid"] and report["diagnostics"] == [], json.dumps(report["diagnostics"], indent=1)[:4000]


def test_module_discovery_sees_roots_and_children() -> None:
    names = {p.name for p in module_dirs()}
    assert {"filestore", "shared_pd", "tpu_vm", "host_identity", "host_firewall"} <= names
    assert is_root(REPO / "modules" / "tpu_vm") and not is_root(REPO / "modules" / "host_identity")


# ---- plan + fake apply of every root module, per shipped values file ---------------------------

def _guard(plan_path: Path, module: str, action: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "builder", "guard", "--plan-json", str(plan_path), "--module", module, "--action", action],
                          capture_output=True, text=True, timeout=60)


def _write_plan(work: Path, name: str, plan: dict[str, Any]) -> Path:
    path = work / f"{name}.json"
    path.write_text(json.dumps(plan))
    return path


def _spot_check(settings: Any, module: str, plan: dict[str, Any]) -> list[str]:
    """What must hold in every plan; returns what was checked (so a test can see it did check)."""
    checked = []
    for res in resources(plan):
        values, rtype = res["values"], res["type"]
        if rtype == "google_compute_instance_group_manager":
            # flex-start: the group starts empty; mig-resize grows it from 0 to the whole slice
            flex = settings.provisioning == "flex-start"
            assert values["target_size"] == (0 if flex else settings.hosts), f"{res['address']}: MIG size"
            checked.append("mig-size")
            # bulk mode on every multi-host and flex-start group, repair off with flex-start
            # (docs/modules.md, "Google's rules for TPU MIGs"; the stand-in refuses the rest)
            bulk = bulk_mode(settings)  # the pipeline's resizes read the same (builder.config.offers)
            assert bulk == (bool(settings.mig_shape.accelerator_topology) or flex)
            assert values["target_size_policy"] == ([{"mode": "BULK"}] if bulk else []), res["address"]
            lifecycle = values["instance_lifecycle_policy"]
            assert (lifecycle[0]["default_action_on_failure"] if lifecycle else "") == ("DO_NOTHING" if flex else "")
            checked.append("bulk" if bulk else "individual")
        if rtype == "google_compute_resource_policy":
            (policy,) = values["workload_policy"]
            assert policy["accelerator_topology_mode"] == "AUTO_CONNECT", res["address"]  # google-beta only
            checked.append("auto-connect")
        if rtype == "google_compute_future_reservation":
            # calendar mode in Terraform: the whole slice's chips, for the window values.env gives
            facts = settings.mig_shape.generation_record.calendar
            assert facts is not None and facts.terraform, res["address"]
            (window,) = values["time_window"]
            assert window["start_time"] == settings.calendar_start
            assert window["duration"][0]["seconds"] == str(settings.calendar_days * 86400)
            (agg,) = values["aggregate_reservation"]
            assert agg["vm_family"] == facts.vm_family
            assert agg["reserved_resources"][0]["accelerator"][0]["accelerator_count"] == settings.mig_shape.vms * \
                settings.mig_shape.chips_per_vm
            assert (values["reservation_mode"], values["planning_status"], values["deletion_policy"]) == \
                ("CALENDAR", "SUBMITTED", "ABANDON")
            assert values["reservation_name"] == values["name"] and values["specific_reservation_required"] is True
            checked.append("calendar-request")
        assert rtype not in ("google_compute_resize_request", "google_compute_region_resize_request"), \
            f"{res['address']}: Google refuses a resize request on a TPU MIG"
        if rtype == "google_compute_instance_template":
            for nic in values["network_interface"]:
                assert nic["access_config"] == [] or settings.mig_external_ip, f"{res['address']}: external IP"
            for disk in values["disk"]:
                if disk.get("source"):
                    assert disk["mode"] == "READ_ONLY", f"{res['address']}: the shared disk must be READ_ONLY"
                    checked.append("read-only")
            # but in calendar mode mig-attach attaches the shared PD once seeded (read-only:
            # tests/shell/test_mig_attach.py), not the template of a new slice
            from builder.catalogue.module_parts import mig_attaches_disk

            if mig_attaches_disk(settings):
                assert not [d for d in values["disk"] if d.get("source")], f"{res['address']}: no dataset disk"
                checked.append("read-only")
            assert values["metadata"]["startup-script"] == STARTUP
            checked += ["no-external-ip", "startup-script"]
            if settings.provisioning == "flex-start":
                (sched,) = values["scheduling"]
                assert sched["provisioning_model"] == "FLEX_START" and sched["instance_termination_action"] == "DELETE"
                assert sched["max_run_duration"][0]["seconds"] == settings.max_run_hours * 3600, res["address"]
                checked.append("flex-start")
            bulk = bulk_mode(settings)
            if settings.provisioning == "spot":
                # Google's TPU Spot page: a bulk slice's VMs stop on preemption (restarted through 0)
                (sched,) = values["scheduling"]
                assert sched["provisioning_model"] == "SPOT"
                assert sched["instance_termination_action"] == ("STOP" if bulk else "DELETE"), res["address"]
                checked.append("spot")
            if settings.provisioning == "reservation":
                # a named reservation: specific affinity and reservation-bound VMs (bulk groups);
                # none named: any matching reservation, standard VMs (docs/modules.md)
                (sched,), (affinity,) = values["scheduling"], values["reservation_affinity"]
                named = bool(settings.reservation)
                assert sched["provisioning_model"] == ("RESERVATION_BOUND" if named and bulk else "STANDARD")
                assert affinity["type"] == ("SPECIFIC_RESERVATION" if named else "ANY_RESERVATION"), res["address"]
                checked.append("reservation")
            if settings.provisioning == "calendar":
                (sched,) = values["scheduling"]
                assert sched["provisioning_model"] == "RESERVATION_BOUND" and sched["instance_termination_action"] == "DELETE"
                (affinity,) = values["reservation_affinity"]
                assert affinity["type"] == "SPECIFIC_RESERVATION"
                assert affinity["specific_reservation"][0]["values"] == [f"{settings.tpu_name}-cal"], res["address"]
                checked.append("calendar-bound")
        if rtype == "google_compute_disk" and module == "shared_pd":
            assert values["type"] == settings.shared_pd_type in settings.topology.record.shared_pd_types
            # Hyperdisk ML: created writable by one VM (the seeder), then READ_ONLY_MANY
            hyperdisk = settings.shared_pd_type == "hyperdisk-ml"
            assert values.get("access_mode") == ("READ_WRITE_SINGLE" if hyperdisk else None), res["address"]
            checked.append("access-mode")
        if rtype == "google_storage_bucket_iam_member" and ".checkpoints" in res["address"]:
            # the training hosts' one write: objects under the workspace's checkpoints/ prefix
            # (models/checkpoint_sync.sh); never the seeder's account
            assert module != "shared_pd", res["address"]
            assert (values["role"], values["bucket"]) == ("roles/storage.objectUser", settings.state_bucket)
            (cond,) = values["condition"]
            assert cond["expression"] == (f'resource.name.startsWith("projects/_/buckets/{settings.state_bucket}/objects/'
                                          f'workspace/{settings.env_name}/checkpoints/")'), res["address"]
            checked.append("checkpoint-grant")
        if rtype == "google_tpu_v2_vm":
            for nc in values.get("network_config") or []:
                assert nc["enable_external_ips"] is bool(getattr(settings, "tpu_external_ips", False)), res["address"]
                checked.append("no-external-ip")
            # the shared PD is attached by tpu-attach once seeded (read-only: test_tpu_attach), not here
            assert not values.get("data_disks"), f"{res['address']}: Terraform attaches no disk to a TPU VM"
            if settings.shared_pd_attach:
                checked.append("read-only")
            assert values["metadata"]["startup-script"] == STARTUP
            checked.append("startup-script")
    return checked


@pytest.fixture(scope="module")
def applied(tf: Terraform, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Per values file: plan → guard → fake apply of every plan module in order, then a plan of
    the applied state. Done once for the file's tests; a failure is recorded per values file."""
    def one(env: Path) -> dict[str, Any]:
        settings = load(env)
        ws = Workspace(tmp_path_factory.mktemp(env.stem))
        record: dict[str, Any] = {"settings": settings, "ws": ws, "modules": {}}
        try:
            for module, values in tfvars.all_for(settings).items():
                work = ws.module(module_dir(settings, module), module, values)
                tf.init(work)
                create = tf.plan_json(work, "create")
                tf(work, "apply", "-input=false", "-no-color", "-lock=false", "create.tfplan")
                after = tf.plan_json(work, "after-apply")
                record["modules"][module] = {"work": work, "create": create, "after": after, "values": values}
        except AssertionError as exc:
            record["error"] = str(exc)
        return record

    # values files are independent (own workspace and state): two at a time (Terraform mostly waits
    # on plugin start-ups)
    with ThreadPoolExecutor(max_workers=2) as pool:
        out = dict(zip((env.name for env in ENV_FILES), pool.map(one, ENV_FILES)))
    return out


@pytest.mark.parametrize("env", ENV_FILES, ids=lambda p: p.name)
def test_every_root_module_plans_and_applies_for_every_values_file(applied: dict[str, Any], env: Path) -> None:
    record = applied[env.name]
    assert "error" not in record, record.get("error")
    settings = record["settings"]
    assert set(record["modules"]) == set(tfvars.all_for(settings))
    checked: list[str] = []
    for module, run in record["modules"].items():
        create = run["create"]
        assert create["format_version"] and create["terraform_version"]
        assert counts(create).get("create", 0) >= 1 and set(counts(create)) <= {"create"}, (module, counts(create))
        checked += _spot_check(settings, module, create)
        # the fake apply is consistent: planning the applied state changes nothing
        assert set(counts(run["after"])) <= {"no-op"}, (module, counts(run["after"]))
    assert "startup-script" in checked and "no-external-ip" in checked
    if settings.shared_pd_attach:
        assert "read-only" in checked and "access-mode" in checked
    if settings.arch == "mig":
        assert "mig-size" in checked
    if settings.arch in ("vm", "mig"):
        assert checked.count("checkpoint-grant") == 1, "the hosts may write their checkpoints, once"
    if settings.provisioning == "flex-start":
        assert {"flex-start", "bulk"} <= set(checked)
    if settings.arch == "mig" and settings.mig_shape.accelerator_topology:
        assert "bulk" in checked and "individual" not in checked
    if settings.provisioning == "calendar":
        # Terraform makes the request where google-beta knows the generation, else mig-calendar does
        made = settings.mig_shape.generation_record.calendar.terraform
        assert "calendar-bound" in checked and ("calendar-request" in checked) is made
    if settings.arch == "mig" and settings.mig_shape.accelerator_topology:
        assert "auto-connect" in checked


@pytest.mark.parametrize("env", ENV_FILES, ids=lambda p: p.name)
def test_guard_on_plans_terraform_wrote(applied: dict[str, Any], env: Path) -> None:
    """create, after-apply (no-op), update in place (a label changed) and destroy, as Terraform
    writes them, through `tpubuild guard`: all proceed for their action; a destroy of filestore or
    shared_pd under `update` is refused (data loss)."""
    record = applied[env.name]
    assert "error" not in record, record.get("error")
    for module, run in record["modules"].items():
        work = run["work"]
        for name, action in (("create", "create"), ("after", "update")):
            proc = _guard(_write_plan(work, name, run[name]), module, action)
            assert proc.returncode == 0, (module, name, proc.stdout, proc.stderr)
            assert proc.stdout.startswith(f"guard: {module} ({action}): ")


def test_update_in_place_and_destroy_plans_through_the_guard(tf: Terraform, applied: dict[str, Any]) -> None:
    record = next(r for r in applied.values() if "error" not in r)
    seen = set()
    for module, run in record["modules"].items():
        work: Path = run["work"]
        values = dict(run["values"])
        labelled = [k for k in ("labels",) if k in values]
        # update in place: a label changed (the root modules that take labels)
        if labelled:
            values["labels"] = {**values["labels"], "tpubuild-standin": "changed"}
            (work / "terraform.tfvars.json").write_text(json.dumps(values))
            update = tf.plan_json(work, "update")
            kinds = counts(update)
            assert kinds.get("update", 0) >= 1 and not {"create", "delete", "delete+create", "create+delete"} & set(kinds)
            proc = _guard(_write_plan(work, "update", update), module, "update")
            assert proc.returncode == 0, (module, proc.stdout, proc.stderr)
            seen.add("update")
            (work / "terraform.tfvars.json").write_text(json.dumps(run["values"]))
        destroy = tf.plan_json(work, "destroy", "-destroy")
        assert set(counts(destroy)) == {"delete"}, counts(destroy)
        ok = _guard(_write_plan(work, "destroy", destroy), module, "destroy")
        assert ok.returncode == 0, (module, ok.stdout, ok.stderr)
        if module in ("filestore", "shared_pd"):
            refused = _guard(work / "destroy.json", module, "update")
            assert refused.returncode != 0 and "data" in (refused.stdout + refused.stderr).lower(), refused.stdout
            seen.add("refused")
        seen.add("destroy")
    assert {"destroy", "refused"} <= seen


def test_hyperdisk_ml_switched_by_the_seeder_is_no_drift_and_a_replace_is_refused(
        tf: Terraform, applied: dict[str, Any]) -> None:
    """The Hyperdisk ML dataset disk of a Hyperdisk-only generation: once the seeder has set it
    READ_ONLY_MANY (gcloud compute disks update --access-mode), the next plan is a no-op; growing
    it changes it in place; replacing it (another type) is refused by the guard without the
    override, since the disk is data."""
    record = next(r for r in applied.values() if "error" not in r and r["settings"].shared_pd_type == "hyperdisk-ml"
                  and "shared_pd" in r["modules"])
    run = record["modules"]["shared_pd"]
    work: Path = run["work"]
    values = dict(run["values"])

    def plan_with(name: str, **change: Any) -> dict[str, Any]:
        (work / "terraform.tfvars.json").write_text(json.dumps({**values, **change}))
        return tf.plan_json(work, name)

    # the seeder's switch, written into the applied state as the API would report it
    state_file = record["ws"].state / "shared_pd.tfstate"
    state = json.loads(state_file.read_text())
    disk = next(r for r in state["resources"] if r["type"] == "google_compute_disk")
    disk["instances"][0]["attributes"]["access_mode"] = "READ_ONLY_MANY"
    state["serial"] += 1
    state_file.write_text(json.dumps(state))
    assert set(counts(plan_with("switched"))) <= {"no-op"}
    grown = plan_with("grown", size_gb=values["size_gb"] * 2)
    assert {k: n for k, n in counts(grown).items() if k != "no-op"} == {"update": 1}, counts(grown)
    # another type: the provider replaces the disk (ForceNew); the stand-in never plans a
    # replacement (tools/tfstandin/server.py), so the change Terraform wrote is marked as the
    # provider would mark it before the guard reads it
    retyped = plan_with("retyped", type="pd-balanced")
    change = next(c for c in retyped["resource_changes"] if c["type"] == "google_compute_disk")
    assert change["change"]["actions"] == ["update"] and change["change"]["after"]["type"] == "pd-balanced"
    change["change"]["actions"] = ["delete", "create"]
    refused = _guard(_write_plan(work, "retyped", retyped), "shared_pd", "update")
    assert refused.returncode != 0 and "data" in (refused.stdout + refused.stderr).lower(), refused.stdout
    (work / "terraform.tfvars.json").write_text(json.dumps(values))


def test_hyperdisk_ml_from_a_snapshot_is_created_read_only_many(tf: Terraform, tmp_path: Path) -> None:
    settings = load(EXAMPLES / "mig-v6e-16-spot.env")
    values = {**tfvars.all_for(settings)["shared_pd"], "snapshot": "pd-v6e-slice-20261124"}
    work = Workspace(tmp_path).module("modules/shared_pd", "shared_pd", values)
    tf.init(work)
    disk = next(r for r in resources(tf.plan_json(work, "restore")) if r["type"] == "google_compute_disk")
    assert (disk["values"]["type"], disk["values"]["access_mode"]) == ("hyperdisk-ml", "READ_ONLY_MANY")
