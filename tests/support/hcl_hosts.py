"""Where the training hosts are in modules/, for the security tests (test_security.py: their
firewall, test_security_identity.py: their identity): the roots that give them their identity
and firewall, and what the hosts' module writes for a value of such a root."""

from __future__ import annotations

from typing import Any

from tests.support.hcl import Module, load_module

#: The roots that give the training hosts their identity and firewall → the child calls' prefix
#: (``module.<prefix>_identity``, ``module.<prefix>_firewall``). On vm the hosts are in the same
#: root; on mig they are modules/tpu_mig's instance template, which reads both from this root's
#: state (the node architecture's roots are destroy only and declare nothing).
WORKER_MODULES = {"tpu_vm": "tpu_vm", "tpu_mig_access": "slice"}
#: identity root → the root whose resource is the hosts (a TPU VM, or the MIG's instance template).
HOSTS_IN = {"tpu_vm": "tpu_vm", "tpu_mig_access": "tpu_mig"}
#: An output of an identity root whose hosts are elsewhere → what the hosts' root derives in its
#: stead (it reads no state of the identity root): (its local, the local's expression, the
#: identity root's expression that makes the same string).
DERIVED = {
    "service_account_email": ("service_account_email", "${var.service_account_id}@${var.project_id}.iam.gserviceaccount.com",
                              ("locals", "hosts_identity", "${module.slice_identity}")),
    "network_tag": ("network_tag", "${var.name}", ("locals", "tag", "${var.name}")),
}


def hosts_of(name: str) -> tuple[Module, str, dict[str, Any]]:
    """The hosts of identity root ``name``: (their module, resource type, resource body)."""
    mod = load_module(HOSTS_IN[name])
    [(kind, body)] = [(t, b) for (t, _), b in mod.resources.items() if t in ("google_compute_instance_template", "google_tpu_v2_vm")]
    return mod, kind, body


def from_this_root(name: str, expr: str, output: str) -> str:
    """What the hosts' module writes for this root's ``expr``: the expression itself when the hosts
    are here, else the local it derives the same value into (:data:`DERIVED`), this root's output
    ``output`` being ``expr`` and made from the same variables."""
    if HOSTS_IN[name] == name:
        return expr
    mine = load_module(name)
    assert mine.outputs[output]["value"] == expr, f"{name}: output {output} is not {expr}"
    local, derived, (_, mine_local, mine_expr) = DERIVED[output]
    assert mine.locals[mine_local] == mine_expr, f"{name}: local.{mine_local} is not {mine_expr}"
    hosts = load_module(HOSTS_IN[name])
    assert str(hosts.locals[local]).strip('"') == derived, f"{HOSTS_IN[name]}: local.{local} is not {derived}"
    assert not [n for t, n in hosts.data if t == "terraform_remote_state" and n != HOSTS_IN[name].removeprefix("tpu_")
                and n not in ("filestore", "shared_pd")], f"{HOSTS_IN[name]} reads another root's state for its hosts"
    return "${local.%s}" % local
