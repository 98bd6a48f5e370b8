"""Security posture of modules/, checked on the parsed Terraform.

* no firewall source is 0.0.0.0/0 or ::/0, and no ingress rule leaves its source out (which GCP
  reads as 0.0.0.0/0); SSH reaches the hosts from outside the VPC only from IAP's 35.235.240.0/20;
* no instance template or TPU VM gets an access_config / external IP with the variables' default
  values;
* the workers' service account has only the roles it needs (storage.objectViewer on the dataset
  bucket and on its own workspace prefix, logging.logWriter, monitoring.metricWriter, and on mig
  a custom role with just the MIG read that startup.sh needs, not roles/compute.viewer);
  the seeder's account (modules/shared_pd) has the storage reads and logging.logWriter only;
* OS Login, no project-wide SSH keys, shielded VMs, our own service account on every host.

The identity and the firewall rules live in the child modules host_identity and host_firewall; a
root is checked with its children instantiated (``effective_resources``: each child resource
with the call's arguments bound), and each child alone with its defaults.

Each checker is also run on a deliberately bad module, so a checker that sees nothing fails.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.hcl import (
    ALL_DIRS, MODULES, Module, body_parts, call_args, call_source, child_of, effective_resources, load_module, unquote,
    write_caller, write_module,
)

IAP_RANGE = "35.235.240.0/20"
#: The roots that give the training hosts their identity and firewall → the child calls' prefix
#: (``module.<prefix>_identity``, ``module.<prefix>_firewall``). On vm the hosts are in the same
#: root; on mig they are modules/tpu_mig's instance template, which reads both from this root's
#: state (the node architecture's roots are destroy only and declare nothing).
WORKER_MODULES = {"tpu_vm": "tpu_vm", "tpu_mig_access": "slice"}
#: identity root → the root whose resource is the hosts (a TPU VM, or the MIG's instance template).
HOSTS_IN = {"tpu_vm": "tpu_vm", "tpu_mig_access": "tpu_mig"}
_FROM_ACCESS = "${data.terraform_remote_state.tpu.outputs.%s}"
WORKER_ROLES = {"roles/logging.logWriter", "roles/monitoring.metricWriter"}
#: What `gcloud compute instance-groups managed list-instances` (startup.sh's leader election)
#: needs: the API's listManagedInstances checks .get, gcloud's help names .list.
MIG_READER_PERMISSIONS = ["compute.instanceGroupManagers.get", "compute.instanceGroupManagers.list"]
_REMOTE_CIDR = re.compile(r"^\$\{data\.terraform_remote_state\.tpu\.outputs\.cidr_block\}$")


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _reaches_port_22(rule: dict[str, Any]) -> bool:
    _, blocks = body_parts(rule)
    for allow, _ in blocks.get("allow", []):
        proto = unquote(allow["protocol"])
        if proto not in ("tcp", "all"):
            continue
        ports = [unquote(p) for p in _list(allow.get("ports", []))]
        if not ports:
            return True
        for port in ports:
            lo, _, hi = str(port).partition("-")
            if int(lo) <= 22 <= int(hi or lo):
                return True
    return False


def firewall_problems(mod: Module) -> list[str]:
    """Firewall rules of the module and of its child modules (as the module calls them)."""
    problems = []
    for (tf_type, name), body in effective_resources(mod).items():
        if tf_type != "google_compute_firewall":
            continue
        where = f"{mod.path.name}: {tf_type}.{name}"
        attrs, _ = body_parts(body)
        direction = unquote(attrs.get("direction", '"INGRESS"'))
        # null (a child's default) leaves source_ranges unset
        ranges = [unquote(r) for r in _list(attrs.get("source_ranges") or [])]
        if direction != "INGRESS":
            continue
        if not ranges and not attrs.get("source_tags") and not attrs.get("source_service_accounts"):
            problems.append(f"{where}: an ingress rule without a source is open to 0.0.0.0/0")
        for r in ranges:
            if r.startswith("${"):
                if not _REMOTE_CIDR.match(r):
                    problems.append(f"{where}: source range {r} is not provably internal")
                continue
            net = ipaddress.ip_network(r, strict=False)
            if net.prefixlen == 0:
                problems.append(f"{where}: source range {r} is the whole internet")
            elif r != IAP_RANGE and not net.is_private:
                problems.append(f"{where}: source range {r} is public")
            elif r != IAP_RANGE and _reaches_port_22(body):
                problems.append(f"{where}: SSH from {r}; only {IAP_RANGE} (IAP) may reach port 22 by range")
    return problems


def _default(mod: Module, var: str) -> Any:
    body = mod.variables[var]
    if "default" not in body:
        raise AssertionError(f"{mod.path.name}: var.{var} guards an external IP but has no default (must default to false)")
    return body["default"]


_TOGGLE = re.compile(r"^\$\{var\.(\w+) \? \[.*\] : \[\]\}$")


def external_ip_problems(mod: Module) -> list[str]:
    """Evaluate, with the variables' defaults, whether any host gets an external address."""
    problems = []
    for (tf_type, name), body in mod.resources.items():
        where = f"{mod.path.name}: {tf_type}.{name}"
        attrs, blocks = body_parts(body)
        if tf_type in ("google_compute_instance_template", "google_compute_instance"):
            for nic, _ in blocks.get("network_interface", []):
                nic_attrs, nic_blocks = body_parts(nic)
                for access, dynamic in nic_blocks.get("access_config", []) + nic_blocks.get("ipv6_access_config", []):
                    if not dynamic:
                        problems.append(f"{where}: a static access_config gives every VM an external IP")
                        continue
                dyn = [d for d in nic.get("dynamic", []) for k in d if unquote(k) in ("access_config", "ipv6_access_config")]
                for d in dyn:
                    [(label, spec)] = [(k, v) for k, v in d.items() if not k.startswith("__")]
                    m = _TOGGLE.match(spec["for_each"])
                    if not m:
                        problems.append(f"{where}: cannot prove dynamic {unquote(label)} is empty by default ({spec['for_each']})")
                    elif _default(mod, m.group(1)) is not False:
                        problems.append(f"{where}: {unquote(label)} is on by default (var.{m.group(1)})")
        if tf_type == "google_tpu_v2_vm":
            for net, _ in blocks.get("network_config", []) + blocks.get("network_configs", []):
                value = net.get("enable_external_ips", False)
                if isinstance(value, str) and (m := re.fullmatch(r"\$\{var\.(\w+)\}", value)):
                    value = _default(mod, m.group(1))
                if value is not False:
                    problems.append(f"{where}: enable_external_ips is {value!r} by default")
            if not blocks.get("network_config") and not blocks.get("network_configs"):
                problems.append(f"{where}: no network_config, so the API default (external IPs) applies")
    return problems


@pytest.mark.parametrize("name", ALL_DIRS)
def test_no_firewall_open_to_the_internet_and_ssh_only_through_iap(name: str) -> None:
    assert firewall_problems(load_module(name)) == []


@pytest.mark.parametrize("name", ALL_DIRS)
def test_no_external_ip_by_default(name: str) -> None:
    assert external_ip_problems(load_module(name)) == []


def _firewalls(mod: Module) -> dict[str, dict[str, Any]]:
    return {n: b for (t, n), b in effective_resources(mod).items() if t == "google_compute_firewall"}


def _host(name: str) -> tuple[Module, str, dict[str, Any]]:
    """The hosts of identity root ``name``: (their module, resource type, resource body)."""
    mod = load_module(HOSTS_IN[name])
    [(kind, host)] = [(t, b) for (t, _), b in mod.resources.items() if t in ("google_compute_instance_template", "google_tpu_v2_vm")]
    return mod, kind, host


def _from_this_root(name: str, expr: str, output: str) -> str:
    """What the hosts' module writes for this root's ``expr``: the expression itself when the hosts
    are here, else this root's output ``output`` (which must be ``expr``) read from its state."""
    if HOSTS_IN[name] == name:
        return expr
    assert load_module(name).outputs[output]["value"] == expr, f"{name}: output {output} is not {expr}"
    return _FROM_ACCESS % output


@pytest.mark.parametrize("name", WORKER_MODULES)
def test_iap_ssh_rule_targets_the_hosts(name: str) -> None:
    mod, prefix = load_module(name), WORKER_MODULES[name]
    rules = _firewalls(mod)
    assert set(rules) == {f"module.{prefix}_firewall.iap_ssh", f"module.{prefix}_firewall.internal"}, "the rules come from host_firewall"
    ssh = [b for b in rules.values() if _reaches_port_22(b) and IAP_RANGE in [unquote(r) for r in b.get("source_ranges") or []]]
    assert len(ssh) == 1, f"{name}: exactly one IAP SSH rule"
    [rule] = ssh
    assert [unquote(r) for r in rule["source_ranges"]] == [IAP_RANGE]
    assert "source_tags" not in rule
    assert rule["target_tags"] == ["${local.tag}"]
    assert _host(name)[2]["tags"] == [_from_this_root(name, "${local.tag}", "network_tag")]
    internal = rules[f"module.{prefix}_firewall.internal"]
    assert internal["source_tags"] == internal["target_tags"] == ["${local.tag}"]
    assert internal["source_ranges"] is None, "only the hosts themselves reach each other"


#: Child calls with their own identity, not the hosts' (the TTL's invoker: tests/integration/test_ttl.py).
NOT_HOST_CALLS = ("ttl",)


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
    assert child.outputs["member"]["value"] == "${local.member}"
    assert child.outputs["email"]["value"] == "${google_service_account.this.email}"
    return child


def test_host_identity_allows_only_the_log_and_metric_roles() -> None:
    """Its own validation refuses any other project role, whoever calls it."""
    mod = load_module("host_identity")
    [validation] = mod.variables["project_roles"]["validation"]
    allowed = re.search(r"contains\(\[(.*?)\]", validation["condition"]).group(1)
    assert {unquote(r.strip()) for r in allowed.split(",")} == WORKER_ROLES
    assert set(re.findall(r'"(roles/[\w.]+)"', (mod.path / "main.tf").read_text())) == {"roles/storage.objectViewer"}


def _grants(mod: Module, call: str, project_roles: set[str]) -> None:
    """The identity grants of ``module.<call>`` as the root instantiates them."""
    res = _host_resources(mod)
    prefix = f"module.{call}."
    project = {n: b for (t, n), b in res.items() if t == "google_project_iam_member" and n.startswith(prefix)}
    assert set(project) == {prefix + "project"}
    assert {unquote(r) for r in project[prefix + "project"]["for_each"]} == project_roles
    assert project[prefix + "project"]["role"] == "${each.value}"
    buckets = {n: b for (t, n), b in res.items() if t == "google_storage_bucket_iam_member"}
    assert set(buckets) == {prefix + "dataset", prefix + "workspace"}, "no bucket grant outside host_identity"
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
    assert set(re.findall(r'"(roles/[\w.]+)"', _text(mod))) == WORKER_ROLES | {"roles/storage.objectViewer"}
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
        assert project_grants["mig_reader"]["member"] == f"${{module.{call}.member}}"
    else:
        assert set(project_grants) == {f"module.{call}.project"} and roles == {}, "TPU VM hosts elect by worker number"
        vm = next(b for (t, _), b in mod.resources.items() if t == "google_tpu_v2_vm")
        assert {f"${{module.{call}}}", f"${{module.{name}_firewall}}"} <= set(vm["depends_on"])


@pytest.mark.parametrize("name", WORKER_MODULES)
def test_hosts_use_os_login_shielded_vm_and_their_own_account(name: str) -> None:
    mod, kind, host = _host(name)
    metadata_local = host["metadata"].removeprefix("${local.").removesuffix("}")
    metadata = {unquote(k): v for k, v in mod.locals[metadata_local].items()}
    assert unquote(metadata["enable-oslogin"]) == "TRUE"
    assert unquote(metadata["block-project-ssh-keys"]) == "TRUE"
    assert unquote(metadata["enable-guest-attributes"]) == "TRUE", "startup.sh publishes tpubuild/startup"
    assert "serial-port-enable" not in metadata
    assert metadata["startup-script"] == '${file("${path.module}/../../env_setup/scripts/startup.sh")}'
    _, blocks = body_parts(host)
    [(account, _)] = blocks["service_account"]
    call = f"{WORKER_MODULES[name]}_identity"
    assert account["email"] == _from_this_root(name, f"${{module.{call}.email}}", "service_account_email"), \
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
    assert set(re.findall(r'"(roles/[\w.]+)"', _text(mod))) == {"roles/logging.logWriter", "roles/storage.objectViewer"}
    assert "google_project_iam_custom_role" not in types
    _identity_call(mod, "seeder_identity")
    grants = {(t, n) for (t, n) in res if t.endswith("_iam_member")}
    assert grants == {("google_project_iam_member", "module.seeder_identity.project"),
                      ("google_storage_bucket_iam_member", "module.seeder_identity.dataset"),
                      ("google_storage_bucket_iam_member", "module.seeder_identity.workspace")}
    _grants(mod, "seeder_identity", {"roles/logging.logWriter"})
    assert mod.outputs["seeder_service_account_email"]["value"] == "${module.seeder_identity.email}"


def test_shared_pd_is_attached_read_only() -> None:
    mig_disks = body_parts(next(b for (t, _), b in load_module("tpu_mig").resources.items() if t == "google_compute_instance_template"))[1]["disk"]
    attached = [d for d, dynamic in mig_disks if dynamic]
    assert [unquote(d["mode"]) for d in attached] == ["READ_ONLY"]
    vm = next(b for (t, _), b in load_module("tpu_vm").resources.items() if t == "google_tpu_v2_vm")
    assert [unquote(d["mode"]) for d, _ in body_parts(vm)[1]["data_disks"]] == ["READ_ONLY"]


# ---- the checkers see what they should ----

BAD = '''
variable "public" {
  type    = bool
  default = true
}
resource "google_compute_firewall" "open" {
  name          = "a"
  network       = "default"
  source_ranges = ["0.0.0.0/0"]
  allow {
    protocol = "tcp"
    ports    = ["22"]
  }
}
resource "google_compute_firewall" "v6" {
  name          = "b"
  network       = "default"
  source_ranges = ["::/0"]
  allow {
    protocol = "udp"
  }
}
resource "google_compute_firewall" "nosource" {
  name    = "c"
  network = "default"
  allow {
    protocol = "icmp"
  }
}
resource "google_compute_firewall" "ssh_from_office" {
  name          = "d"
  network       = "default"
  source_ranges = ["10.0.0.0/8"]
  allow {
    protocol = "tcp"
    ports    = ["20-30"]
  }
}
resource "google_compute_instance_template" "static" {
  machine_type = "n1"
  network_interface {
    network = "default"
    access_config {
    }
  }
}
resource "google_compute_instance_template" "toggled" {
  machine_type = "n1"
  network_interface {
    network = "default"
    dynamic "access_config" {
      for_each = var.public ? [1] : []
      content {
      }
    }
  }
}
resource "google_tpu_v2_vm" "t" {
  name = "t"
  network_config {
    enable_external_ips = var.public
  }
}
'''


def test_firewall_checker_follows_module_calls(tmp_path: Path) -> None:
    """A root that passes an open range to host_firewall is caught (and host_firewall's own
    validation would refuse it too)."""
    root = write_caller(tmp_path, "fw", "host_firewall", {
        "network": "default", "name": "w", "network_tag": "w", "hosts": "workers",
        "internal_description": "x", "internal_source_ranges": ["0.0.0.0/0", "8.8.8.0/24"],
    })
    fw = "\n".join(firewall_problems(root))
    assert "module.fw.internal: source range 0.0.0.0/0 is the whole internet" in fw
    assert "module.fw.internal: source range 8.8.8.0/24 is public" in fw
    assert "iap_ssh" not in fw
    [validation] = load_module("host_firewall").variables["internal_source_ranges"]["validation"]
    assert '!endswith(r, \"/0\")' in validation["condition"]


def test_checkers_catch_open_ranges_and_external_ips(tmp_path: Path) -> None:
    mod = write_module(tmp_path / "bad", BAD)
    fw = "\n".join(firewall_problems(mod))
    assert "open: source range 0.0.0.0/0 is the whole internet" in fw
    assert "v6: source range ::/0 is the whole internet" in fw
    assert "nosource: an ingress rule without a source" in fw
    assert "ssh_from_office: SSH from 10.0.0.0/8" in fw
    ext = "\n".join(external_ip_problems(mod))
    assert "static: a static access_config" in ext
    assert "toggled: access_config is on by default (var.public)" in ext
    assert "google_tpu_v2_vm.t: enable_external_ips is True by default" in ext
