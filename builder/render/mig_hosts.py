"""How `tpubuild train/stop/logs/profile` reach the hosts; on TPU_ARCH="mig" the slice's TPU VMs.

The hosts are the instances of the slice's MIG: ``Settings.tpu_name`` or, after a
make-before-break update, ``<tpu_name>-b`` (the script finds which exists at run time:
:func:`runtime_listing`); PJRT worker N is the N-th name in C-locale order
(env_setup/scripts/startup.sh derives TPU_WORKER_ID the same way), so the list is sorted here too. Each host is reached with ``gcloud compute ssh --tunnel-through-iap`` (the
firewall allows tcp:22 only from IAP). :func:`access` gives models/hosts.py's ``SliceHosts`` (the
one host transport: ssh/scp lines, ready check, profile, detach, stop) this group's listing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from builder.config.model_registry import hosts as load_hosts
from builder.config.replace import group_filter, slot_names

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings


def list_argv(settings: Settings, group: str = "") -> list[str]:
    """gcloud argv that prints one instance name per line (the VMs of MIG ``group``, default
    ``Settings.tpu_name``; :func:`access` passes the group found at run time, ``"$TPUBUILD_TPU"``)."""
    return ["gcloud", "compute", "instance-groups", "managed", "list-instances", group or settings.tpu_name,
            f"--zone={settings.zone}", f"--project={settings.project_id}", "--format=value(instance.basename())"]


def groups_argv(settings: Settings) -> list[str]:
    """gcloud argv that prints the name of each of the slice's groups that exists (make-before-break's
    two slots, builder/config/replace.py ``group_filter``), one a line."""
    return ["gcloud", "compute", "instance-groups", "managed", "list", f"--zones={settings.zone}",
            f"--project={settings.project_id}", f"--filter={group_filter(settings)}", "--format=value(name)"]


def runtime_listing(settings: Settings, hosts_module: Any) -> dict[str, tuple[str, ...]]:
    """What ``hosts.for_arch`` takes to find the slice's hosts at run time: on mig with two slots
    the group listing (``groups``), the slots, and the instance listing of the group found
    (``"$TPUBUILD_TPU"``, models/hosts.py ``TPU_SLOT``); with one slot the fixed group's listing."""
    slots = slot_names(settings)
    if settings.arch != "mig" or len(slots) < 2:
        return {"listing": tuple(list_argv(settings)), "slots": slots, "groups": ()}
    return {"listing": tuple(list_argv(settings, hosts_module.TPU_SLOT)), "slots": slots,
            "groups": tuple(groups_argv(settings))}


def hosts(listing: str) -> list[str]:
    """The worker order: instance names from ``list_argv``'s output, sorted as startup.sh sorts."""
    return sorted({line.strip() for line in listing.splitlines() if line.strip()}, key=lambda n: n.encode())


def access(settings: Settings, hosts_module: Any = None) -> Any:
    """models/hosts.py's transport for the hosts of ``settings`` (IAP unless they have external
    IPs): on mig the ``SliceHosts`` of this slice, given its listings (:func:`runtime_listing`: it
    finds the live group of the two slots at run time); on vm the ``TpuVmHosts`` of the slice's two
    slots (builder/config/replace.py ``slot_names``: it finds the live one at run time); node's
    transport takes neither."""
    if hosts_module is None:
        hosts_module = load_hosts(settings.repo_root)
    external = settings.mig_external_ip if settings.arch == "node" else settings.tpu_external_ips
    return hosts_module.for_arch(settings.arch, settings.project_id, settings.zone, not external,
                                 settings.hosts, tpu_name=settings.tpu_name, mig_name=settings.mig_name,
                                 **runtime_listing(settings, hosts_module))


def ssh_argv(settings: Settings, host: str, command: str) -> list[str]:
    """gcloud argv that runs ``command`` (one argument, not re-split) on ``host``."""
    return access(settings).argv(host, command)
