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
_FROM_ACCESS = "${data.terraform_remote_state.tpu.outputs.%s}"


def hosts_of(name: str) -> tuple[Module, str, dict[str, Any]]:
    """The hosts of identity root ``name``: (their module, resource type, resource body)."""
    mod = load_module(HOSTS_IN[name])
    [(kind, body)] = [(t, b) for (t, _), b in mod.resources.items() if t in ("google_compute_instance_template", "google_tpu_v2_vm")]
    return mod, kind, body


def from_this_root(name: str, expr: str, output: str) -> str:
    """What the hosts' module writes for this root's ``expr``: the expression itself when the hosts
    are here, else this root's output ``output`` (which must be ``expr``) read from its state."""
    if HOSTS_IN[name] == name:
        return expr
    assert load_module(name).outputs[output]["value"] == expr, f"{name}: output {output} is not {expr}"
    return _FROM_ACCESS % output
