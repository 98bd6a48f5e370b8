"""Identity posture of modules/, checked on the parsed Terraform.

* the workers' service account has only the roles it needs (storage.objectViewer on the dataset
  bucket and on its own workspace prefix, storage.objectUser on its workspace's checkpoints/
  prefix only, logging.logWriter, monitoring.metricWriter, and on mig
  a custom role with just the MIG read that startup.sh needs, not roles/compute.viewer);
  the seeder's account (modules/shared_pd) has the storage reads and logging.logWriter only (no
  checkpoint writes);
* OS Login, no project-wide SSH keys, shielded VMs, our own service account on every host;
* the shared PD is attached read-only.

The identity lives in the child module host_identity; a root is checked with its children
instantiated (``effective_resources``: each child resource with the call's arguments bound).
The firewall and external IPs are test_security.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support.hcl import MODULES, Module, body_parts, call_args, call_source, child_of, effective_resources, load_module, unquote
from tests.support.hcl_hosts import WORKER_MODULES, from_this_root, hosts_of

WORKER_ROLES = {"roles/logging.logWriter", "roles/monitoring.metricWriter"}
#: What `gcloud compute instance-groups managed list-instances` (startup.sh's leader election)
#: needs: the API's listManagedInstances checks .get, gcloud's help names .list.
MIG_READER_PERMISSIONS = ["compute.instanceGroupManagers.get", "compute.instanceGroupManagers.list"]


#: Child calls with their own identity, not the hosts' (the TTL's and the health check's invokers).
NOT_HOST_CALLS = ("ttl", "health")


def _host_resources(mod: Module) -> dict:
    return {k: v for k, v in effective_resources(mod).items()
            if not k[1].startswith(tuple(f"module.{c}." for c in NOT_HOST_CALLS))}


def _text(mod: Module) -> str:
    """The module's .tf text with its children's main.tf (their resources; a child's variables.tf
    may list roles it refuses)."""
    files = sorted(mod.path.glob("*.tf")) + [call_source(mod, call) / "main.tf" for call in mod.calls
                                             if call not in NOT_HOST_CALLS]
    return "\n".join(p.read_text() for p in files)


def _identity_call(mod: Module, call: str) -> Module:
    """The call's child is host_identity, bound to the root's own environment and buckets."""
    assert call_source(mod, call) == MODULES / "host_identity"
    args = call_args(mod, call)
    for var in ("project_id", "env_name", "state_bucket", "dataset_bucket"):
        assert args[var] == f"${{var.{var}}}", f"{mod.path.name}: module.{call} must get the root's {var}"
    child = child_of(mod, call)
    assert child.locals["member"] == '"serviceAccount:${google_service_account.this.email}"'
    assert child.outputs["email"]["value"] == "${google_service_account.this.email}"
    return child


def test_host_identity_allows_only_the_log_and_metric_roles() -> None:
    """Its own validation refuses any other project role, whoever calls it."""
    mod = load_module("host_identity")
    [validation] = mod.variables["project_roles"]["validation"]
    allowed = re.search(r"contains\(\[(.*?)\]", validation["condition"]).group(1)
    assert {unquote(r.strip()) for r in allowed.split(",")} == WORKER_ROLES
    assert set(re.findall(r'"(roles/[\w.]+)"', (mod.path / "main.tf").read_text())) == {
        "roles/storage.objectViewer", "roles/storage.objectUser"}
    assert mod.variables["checkpoint_writer"]["default"] is False, "a caller opts in to checkpoint writes"


def _grants(mod: Module, call: str, project_roles: set[str], *, writer: bool = True) -> None:
    """The identity grants of ``module.<call>`` as the root instantiates them; ``writer``: the call
    opts in to the checkpoint grant (the training hosts), else it leaves it off (its default)."""
    res = _host_resources(mod)
    prefix = f"module.{call}."
    project = {n: b for (t, n), b in res.items() if t == "google_project_iam_member" and n.startswith(prefix)}
    assert set(project) == {prefix + "project"}
    assert {unquote(r) for r in project[prefix + "project"]["for_each"]} == project_roles
    assert project[prefix + "project"]["role"] == "${each.value}"
    buckets = {n: b for (t, n), b in res.items() if t == "google_storage_bucket_iam_member"}
    assert set(buckets) == {prefix + "dataset", prefix + "workspace", prefix + "checkpoints"}, \
        "no bucket grant outside host_identity"
    checkpoints = buckets.pop(prefix + "checkpoints")
    assert call_args(mod, call).get("checkpoint_writer", False) is writer
    assert checkpoints["count"] == "${var.checkpoint_writer ? 1 : 0}"
    assert unquote(checkpoints["role"]) == "roles/storage.objectUser" and checkpoints["bucket"] == "${var.state_bucket}"
    [(condition, _)] = body_parts(checkpoints)[1]["condition"]
    assert unquote(condition["expression"]) == ('resource.name.startsWith(\\"projects/_/buckets/${var.state_bucket}/objects/'
                                       'workspace/${var.env_name}/checkpoints/\\")'), "objects of the checkpoints/ prefix only"
    assert {unquote(b["role"]) for b in buckets.values()} == {"roles/storage.objectViewer"}
    assert buckets[prefix + "dataset"]["bucket"] == "${var.dataset_bucket}"
    assert buckets[prefix + "dataset"]["count"] == '${var.dataset_bucket == "" ? 0 : 1}'
    assert buckets[prefix + "workspace"]["bucket"] == "${var.state_bucket}"
    [(condition, _)] = body_parts(buckets[prefix + "workspace"])[1]["condition"]
    assert "objects/workspace/${var.env_name}/" in condition["expression"], "the state bucket grant is limited to the workspace"
    assert 'resource.type == \\"storage.googleapis.com/Bucket\\"' in condition["expression"]
    assert {b["member"] for (t, n), b in res.items() if t.endswith("_iam_member") and n.startswith(prefix)} == {"${local.member}"}


@pytest.mark.parametrize("name", WORKER_MODULES)
def test_worker_service_account_is_least_privilege(name: str) -> None:
    mod = load_module(name)
    res = _host_resources(mod)
    types = {t for t, _ in res}
    assert not {t for t in types if t.endswith(("_iam_binding", "_iam_policy"))}, "authoritative IAM would clobber others' grants"
    assert set(re.findall(r'"(roles/[\w.]+)"', _text(mod))) == WORKER_ROLES | {"roles/storage.objectViewer",
                                                                             "roles/storage.objectUser"}
    call = f"{WORKER_MODULES[name]}_identity"
    _identity_call(mod, call)
    assert [n for (t, n) in res if t == "google_service_account"] == [f"module.{call}.this"], "one account, from host_identity"
    _grants(mod, call, WORKER_ROLES)
    project_grants = {n: b for (t, n), b in res.items() if t == "google_project_iam_member"}
    roles = {n: b for (t, n), b in res.items() if t == "google_project_iam_custom_role"}
    if name == "tpu_mig_access":  # the slice's VMs list their own MIG (worker ids, peers, leader)
        assert set(project_grants) == {f"module.{call}.project", "mig_reader"} and set(roles) == {"mig_reader"}
        assert [unquote(p) for p in roles["mig_reader"]["permissions"]] == MIG_READER_PERMISSIONS
        assert project_grants["mig_reader"]["role"] == "${google_project_iam_custom_role.mig_reader.name}"
        assert unquote(project_grants["mig_reader"]["member"]) == f"serviceAccount:${{module.{call}.email}}"
    else:
        assert set(project_grants) == {f"module.{call}.project"} and roles == {}, "TPU VM hosts elect by worker number"
        vm = next(b for (t, _), b in mod.resources.items() if t == "google_tpu_v2_vm")
        assert {f"${{module.{call}}}", f"${{module.{name}_firewall}}"} <= set(vm["depends_on"])


@pytest.mark.parametrize("name", WORKER_MODULES)
def test_hosts_use_os_login_shielded_vm_and_their_own_account(name: str) -> None:
    mod, kind, host = hosts_of(name)
    metadata_local = host["metadata"].removeprefix("${local.").removesuffix("}")
    expr = mod.locals[metadata_local]
    if isinstance(expr, str):  # modules/tpu_mig: today's metadata, the running slot's boot script kept
        assert expr.startswith("${merge(local.metadata, local.kept_script == null ? {} : {"), expr
        expr = mod.locals["metadata"]
        # the slot's own keys (its name, the NFS export) over what every slot's hosts share
        assert isinstance(expr, str) and expr.startswith("${merge(local.metadata_common, {"), expr
        expr = mod.locals["metadata_common"]
    metadata = {unquote(k): v for k, v in expr.items()}
    assert unquote(metadata["enable-oslogin"]) == "TRUE"
    assert unquote(metadata["block-project-ssh-keys"]) == "TRUE"
    assert unquote(metadata["enable-guest-attributes"]) == "TRUE", "startup.sh publishes tpubuild/startup"
    assert "serial-port-enable" not in metadata
    assert metadata["startup-script"] == '${file("${path.module}/../../env_setup/scripts/startup.sh")}'
    _, blocks = body_parts(host)
    [(account, _)] = blocks["service_account"]
    call = f"{WORKER_MODULES[name]}_identity"
    assert load_module(name).locals["hosts_identity"] == f"${{module.{call}}}", "the hosts' identity is this call"
    assert account["email"] == from_this_root(name, "${local.hosts_identity.email}", "service_account_email"), \
        "never the default compute account"
    _identity_call(load_module(name), call)
    if kind == "google_compute_instance_template":
        [(shielded, _)] = blocks["shielded_instance_config"]
        # secure boot is off on the accelerator images (the inline checkov skip says why); the rest is on
        assert shielded["enable_vtpm"] is True and shielded["enable_integrity_monitoring"] is True
        assert host["can_ip_forward"] is False


#: Each Compute Engine command startup.sh may run on a MIG worker → the permissions it needs.
STARTUP_COMPUTE_CALLS = {
    "instance-groups managed list-instances": {"compute.instanceGroupManagers.get"},
}


def test_mig_reader_role_covers_every_compute_call_of_startup_sh() -> None:
    """A new ``gcloud compute`` call in startup.sh must be added here, and to the role if needed."""
    script = (Path(__file__).resolve().parents[2] / "env_setup" / "scripts" / "startup.sh").read_text()
    code = "\n".join(line for line in script.splitlines() if not line.lstrip().startswith("#"))
    # gcloud as a command (line start, $(…), after | & ;), not inside a message
    calls = set(re.findall(r"(?:^|\$\(|[|&;])\s*gcloud compute ((?:[a-z][a-z-]* )+?)(?=\"|\$|-)", code, re.M))
    calls = {c.strip() for c in calls}
    assert calls == set(STARTUP_COMPUTE_CALLS), "startup.sh's gcloud compute calls changed; update the table and the role"
    mod = load_module("tpu_mig_access")
    role = next(b for (t, _), b in mod.resources.items() if t == "google_project_iam_custom_role")
    granted = {unquote(p) for p in role["permissions"]}
    assert set().union(*STARTUP_COMPUTE_CALLS.values()) <= granted


def test_seeder_service_account_is_least_privilege() -> None:
    mod = load_module("shared_pd")
    res = effective_resources(mod)
    types = {t for t, _ in res}
    assert not {t for t in types if t.endswith(("_iam_binding", "_iam_policy"))}
    assert set(re.findall(r'"(roles/[\w.]+)"', _text(mod))) == {"roles/logging.logWriter", "roles/storage.objectViewer",
                                                                 "roles/storage.objectUser"}  # host_identity's text
    assert "google_project_iam_custom_role" not in types
    _identity_call(mod, "seeder_identity")
    grants = {(t, n) for (t, n) in res if t.endswith("_iam_member")}
    assert grants == {("google_project_iam_member", "module.seeder_identity.project"),
                      ("google_storage_bucket_iam_member", "module.seeder_identity.dataset"),
                      ("google_storage_bucket_iam_member", "module.seeder_identity.workspace"),
                      ("google_storage_bucket_iam_member", "module.seeder_identity.checkpoints")}  # count 0
    _grants(mod, "seeder_identity", {"roles/logging.logWriter"}, writer=False)
    assert mod.outputs["seeder_service_account_email"]["value"] == "${module.seeder_identity.email}"


def test_shared_pd_is_attached_read_only() -> None:
    mig_disks = body_parts(next(b for (t, _), b in load_module("tpu_mig").resources.items() if t == "google_compute_instance_template"))[1]["disk"]
    attached = [d for d, dynamic in mig_disks if dynamic]
    assert [unquote(d["mode"]) for d in attached] == ["READ_ONLY"]
    # vm: the pipeline's tpu-attach attaches it read-only once seeded; Terraform leaves the attachment alone
    vm = next(b for (t, _), b in load_module("tpu_vm").resources.items() if t == "google_tpu_v2_vm")
    assert "data_disks" not in body_parts(vm)[1]
    assert "ignore_changes = [data_disks]" in (REPO / "modules/tpu_vm/main.tf").read_text()
    assert "attach-disk" in (attach := (REPO / "builder/templates/tpu_attach.sh.j2").read_text())
    assert "--mode=read-only" in attach and "--mode=read-write" not in attach
    # mig: mig-attach (and the health check, the same function) attaches it read-only to each VM
    mig = (REPO / "builder/templates/_mig_attach.sh.j2").read_text()
    assert "instances attach-disk" in mig and "--mode=ro " in mig and "--mode=rw" not in mig
