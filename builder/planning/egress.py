"""What the hosts need of their network before the slice is billed, and what a subnetwork and
its region's Cloud Routers answer to it; and which regional services the environment uses where
(:func:`services`, the regional-availability preflight) (pure: ``builder/cloud/network.py`` reads them, the
capacity check, ``tpubuild check-capacity``, asks; docs/cloud.md, "The hosts' network").

Decision: check, do not create. A Cloud NAT is per region and network, often shared with other
workloads and owned by whoever owns the network; Private Google Access is a setting of a subnet
that may be another team's. tpubuild creating either would change what it does not own, and a
NAT of its own beside an existing one is refused by nothing but costs money. So the preflight
reads them and stops with one line (exit 1) naming the gcloud command that fixes it.

What the hosts need (none of it with ``TPU_EXTERNAL_IPS=true``: an external IP reaches both):

* Private Google Access on the subnetwork: a VM with only an internal IP reaches Google APIs
  and services (``gs://``: the workspace, checkpoints, the dataset; Cloud Logging) only through it
  (cloud.google.com/vpc/docs/private-google-access: "VM instances that only have internal IP
  addresses ... can use Private Google Access"; it is enabled per subnet, off by default).
* Cloud NAT for the subnetwork: ``env_setup/scripts/startup.sh`` installs from the internet at
  boot (apt-get from the distribution's mirrors, pip from PyPI, the model's requirements), which a
  VM without an external IP reaches only through Cloud NAT (cloud.google.com/nat/docs/overview).
  tpubuild ships no mirror, so every slice needs the internet: there is no "no need" case today.
  A NAT serves the subnet when one of the region's Cloud Routers on the same network has a NAT
  whose ``sourceSubnetworkIpRangesToNat`` is ``ALL_SUBNETWORKS_ALL_IP_RANGES`` or
  ``ALL_SUBNETWORKS_ALL_PRIMARY_IP_RANGES``, or ``LIST_OF_SUBNETWORKS`` naming the subnet.
"""

from __future__ import annotations

from typing import Any

from builder.catalogue import modules as catalogue

ALL_SUBNETS = frozenset({"ALL_SUBNETWORKS_ALL_IP_RANGES", "ALL_SUBNETWORKS_ALL_PRIMARY_IP_RANGES"})


def subnet_name(network: str, subnetwork: str) -> str:
    """The subnetwork the hosts get an address in: SUBNETWORK, else the auto-mode network's subnet
    of the region, which has the network's name (the ``default`` network's is ``default``)."""
    return subnetwork or network


def _last(url: str) -> str:
    return str(url).rstrip("/").rsplit("/", 1)[-1]


def serves(nat: dict[str, Any], subnet: str) -> bool:
    """Whether the Cloud NAT ``nat`` translates the subnetwork named ``subnet``."""
    ranges = nat.get("sourceSubnetworkIpRangesToNat", "")
    if ranges in ALL_SUBNETS:
        return True
    return ranges == "LIST_OF_SUBNETWORKS" and any(
        _last(s.get("name", "")) == subnet for s in nat.get("subnetworks") or [] if isinstance(s, dict))


def refusal(project: str, region: str, network: str, subnetwork: str, subnet: dict[str, Any] | None,
            routers: list[dict[str, Any]]) -> tuple[str, str]:
    """(refusal, line): refusal is one line (empty when the network serves the hosts), line what
    was found. ``subnet``: the Subnetwork read (None: it does not exist); ``routers``: the region's."""
    name = subnet_name(network, subnetwork)
    fix_ips = "or set TPU_EXTERNAL_IPS=true"
    if subnet is None:
        return (f"subnetwork {name} does not exist in {region} of project {project}; create it, or set SUBNETWORK "
                f"to one of network {network}'s subnetworks in {region}", "")
    if _last(subnet.get("network", network)) != network:
        return (f"subnetwork {name} in {region} belongs to network {_last(subnet['network'])}, not NETWORK={network}; "
                "set NETWORK and SUBNETWORK to one network and its subnetwork", "")
    if not subnet.get("privateIpGoogleAccess"):
        return (f"subnetwork {name} in {region} has no Private Google Access: hosts without external IPs cannot "
                f"reach gs:// or Google APIs and would stop at boot after the slice is billed; run `gcloud compute "
                f"networks subnets update {name} --region={region} --enable-private-ip-google-access "
                f"--project={project}` ({fix_ips})", "")
    nats = [(r.get("name", ""), n.get("name", "")) for r in routers if _last(r.get("network", "")) == network
            for n in r.get("nats") or [] if isinstance(n, dict) and serves(n, name)]
    if not nats:
        return (f"no Cloud NAT serves subnetwork {name} in {region}: hosts without external IPs cannot install "
                "from the internet (apt, pip) and would stop at boot after the slice is billed; create one: "
                f"`gcloud compute routers create tpubuild-nat --network={network} --region={region} "
                f"--project={project}` then `gcloud compute routers nats create tpubuild-nat --router=tpubuild-nat "
                f"--region={region} --auto-allocate-nat-external-ips --nat-all-subnet-ip-ranges --project={project}` "
                f"({fix_ips})", "")
    router, nat = nats[0]
    return "", (f"the hosts reach Google APIs and the internet from subnetwork {name} in {region}: Private Google "
                f"Access on, Cloud NAT {nat} on router {router}")


#: service key (builder/cloud/regions.py) → how a line names it, and its locations page.
SERVICES = {"scheduler": ("Cloud Scheduler", "cloud.google.com/scheduler/docs/locations"),
            "filestore": ("Filestore", "cloud.google.com/filestore/docs/regions"),
            "artifactregistry": ("Artifact Registry", "cloud.google.com/artifact-registry/docs/repositories/repo-locations")}


#: The services a pipeline makes (check-capacity reads them), and the one initialize makes.
PIPELINE_SERVICES = ("filestore", "scheduler")
INITIALIZE_SERVICES = ("artifactregistry",)


def services(settings: Any, wanted: frozenset[str], keys: tuple[str, ...]) -> list[tuple[str, str, str]]:
    """(service key, region, what needs it) of the regional services of ``keys`` the environment
    makes: the builder image's Artifact Registry repository (initialize makes it) and Filestore
    (``wanted``: the modules a create makes) in REGION, the TTL's and the health check's Cloud
    Scheduler jobs in the region of every candidate (the slice's module makes them where it makes
    the slice)."""
    s = settings
    out = [("artifactregistry", s.region, f"the builder image's repository {s.image_repository}")]
    out += [(sp.region_service, s.region, f"the {sp.name} module ({sp.what(s)})")
            for sp in catalogue.specs(s.arch) if sp.region_service and sp.name in wanted]
    if s.env_ttl_hours or s.recovery:
        what = " and ".join(w for w, on in (("ENV_TTL_HOURS", s.env_ttl_hours), ("TPU_RECOVERY", s.recovery)) if on)
        for region in dict.fromkeys(c.region for c in s.candidates):
            out.append(("scheduler", region, f"the Cloud Scheduler jobs of {what}"))
    return [row for row in out if row[0] in keys]


def region_refusal(service: str, region: str, what: str, offered: frozenset[str]) -> str:
    """The line that refuses ``region`` for ``service`` (empty when ``offered`` has it)."""
    if region in offered:
        return ""
    name, page = SERVICES[service]
    return (f"{name} is not offered in {region} ({page}), where {what} would be made; choose a ZONE in a region "
            f"that offers it (it does in {', '.join(sorted(r for r in offered if r.count('-') == 1)[:6]) or 'none listed'}"
            f"{', ...' if len(offered) > 6 else ''})")
