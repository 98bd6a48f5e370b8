"""Network posture of modules/, checked on the parsed Terraform.

* no firewall source is 0.0.0.0/0 or ::/0, and no ingress rule leaves its source out (which GCP
  reads as 0.0.0.0/0); SSH reaches the hosts from outside the VPC only from IAP's 35.235.240.0/20;
* no instance template or TPU VM gets an access_config / external IP with the variables' default
  values.

The hosts' identity (service accounts, roles, OS Login, shielded VMs) is test_security_identity.py.
The firewall rules live in the child module host_firewall; a root is checked with its children
instantiated (``effective_resources``: each child resource with the call's arguments bound), and
each child alone with its defaults.

Each checker is also run on a deliberately bad module, so a checker that sees nothing fails.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.hcl import ALL_DIRS, Module, body_parts, effective_resources, load_module, unquote, write_caller, write_module
from tests.support.hcl_hosts import WORKER_MODULES, from_this_root, hosts_of

IAP_RANGE = "35.235.240.0/20"
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
    assert hosts_of(name)[2]["tags"] == [from_this_root(name, "${local.tag}", "network_tag")]
    internal = rules[f"module.{prefix}_firewall.internal"]
    assert internal["source_tags"] == internal["target_tags"] == ["${local.tag}"]
    assert internal["source_ranges"] is None, "only the hosts themselves reach each other"


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
