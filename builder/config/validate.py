"""Rules that involve more than one key: region vs zone, architecture vs generation, runtime,
Filestore tier minimums, scheduling options, and the length of every derived resource name."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from builder.config import offers
from builder.config.filestore import TIERS
from builder.facts import generations
from builder.facts.errors import BadInput
from builder.facts.topology import MigShape, Topology, mig_shape

#: vm runtimes and the generations each one serves.
#: (One place: each generation's record, builder/facts/generations.py, through builder.config.offers.)
VM_RUNTIMES: dict[str, tuple[str, ...]] = offers.vm_runtimes()
NODE_RUNTIME = re.compile(r"pytorch-(nightly|1\.\d{1,2}|2\.0|2\.1)", re.ASCII)
#: The generations a TPU Node can be (their records' paths include node): v2 and v3.
NODE_GENERATIONS = tuple(g.name for g in generations.on_path("node"))
_NODE_WORDS = "/".join(NODE_GENERATIONS)

#: Filestore tier facts live in builder/config/filestore.py.
FS_MIN_GB: dict[str, int] = {name: t.min_gb for name, t in TIERS.items()}

MAX_ENV_NAME = 24
MAX_GCE_NAME = 63
MAX_BUCKET_NAME = 63
MIG_SUFFIX = 5  # "-abcd" that a MIG appends to each instance name

Fail = Callable[[str, str, str], None]  # (key, what, fix) -> raises


def runtime_for(runtime: str, arch: str, topo: Topology, fail: Fail, *,
                runtime_key: str = "TPU_PYTORCH_VERSION", arch_declared: bool = True) -> None:
    """The runtime suits the architecture and the generation; node is v2/v3 only.

    ``runtime_key`` is the key the user wrote the runtime under (TPU_PYTORCH_VERSION or its alias
    TPU_RUNTIME_VERSION); when TPU_ARCH was inferred, the runtime is what chose node, so a
    generation node can't run is blamed on the runtime's line.
    """
    key = runtime_key
    if arch == "node":
        if topo.generation not in NODE_GENERATIONS:
            want = [r for r, g in VM_RUNTIMES.items() if topo.generation in g]
            if arch_declared:
                fail("TPU_ARCH", f"node architecture (TPU Node + MIG) supports {' and '.join(NODE_GENERATIONS)} only, not "
                     f"{topo.generation} ({topo.accelerator_type})",
                     f'set TPU_ARCH="vm" with a TPU VM runtime, or choose a {_NODE_WORDS} accelerator')
            fail(key, f"{runtime!r} is a TPU Node runtime, and TPU Nodes are {_NODE_WORDS} only, not "
                 f"{topo.generation} ({topo.accelerator_type})",
                 f"use the TPU VM runtime {want[0]}" if want else f"choose a {_NODE_WORDS} accelerator")
        if not NODE_RUNTIME.fullmatch(runtime):
            fail(key, f"{runtime!r} is not a TPU Node runtime",
                 "use pytorch-1.13 (any pytorch-1.x), pytorch-2.0, pytorch-2.1 or pytorch-nightly; XRT ended after 2.1")
        return
    if not vm_generation(topo):
        # no TPU VM runtime serves the generation (TPU7x: Compute Engine TPU VMs only): the
        # architecture is the root, not the runtime
        where = "TPU_ARCH" if arch_declared else key
        offered = topo.record.mig is not None
        fail(where, f"{topo.generation} ({topo.accelerator_type}) has no TPU VM runtime: the TPU API does not offer it"
             + (", only Compute Engine TPU VMs do" if offered else ""),
             f'set TPU_ARCH="mig" and remove {key}' if offered else "choose another accelerator type")
    gens = VM_RUNTIMES.get(runtime)
    if gens is None:
        want = [r for r, g in VM_RUNTIMES.items() if topo.generation in g]
        fail(key, f"{runtime!r} is not a TPU VM runtime",
             f"use {want[0]} for {topo.accelerator_type}" if want else "use a TPU VM runtime")
    elif topo.generation not in gens:
        want = [r for r, g in VM_RUNTIMES.items() if topo.generation in g]
        fail(key, f"runtime {runtime} does not run on {topo.generation} ({topo.accelerator_type})",
             f"use {want[0]}")


def vm_generation(topo: Topology) -> bool:
    """Whether some TPU VM runtime serves the generation (the TPU API offers it)."""
    return any(topo.generation in g for g in VM_RUNTIMES.values())


def _known_runtime(runtime: str) -> bool:
    return runtime in VM_RUNTIMES or bool(NODE_RUNTIME.fullmatch(runtime))


def infer_arch(declared: str, runtime: str, fail: Fail, *, runtime_key: str = "TPU_PYTORCH_VERSION") -> str:
    """``pytorch-*`` runtimes mean node, anything else vm; a declared TPU_ARCH must agree."""
    inferred = "node" if runtime.startswith("pytorch-") else "vm"
    if declared and declared != inferred and not _known_runtime(runtime):
        # a runtime that is no runtime at all (a typo) is what the user must change, not TPU_ARCH
        import difflib  # only on a typo: not at start-up

        known = [*VM_RUNTIMES, "pytorch-1.13", "pytorch-2.0", "pytorch-2.1", "pytorch-nightly"]
        guess = difflib.get_close_matches(runtime, known, n=1, cutoff=0.6)
        hint = f"did you mean {guess[0]}?" if guess else f"use a {declared} runtime"
        fail(runtime_key, f"{runtime!r} is not a TPU runtime", hint)
    if declared and declared != inferred:
        fail("TPU_ARCH", f'TPU_ARCH="{declared}" contradicts runtime {runtime!r}, which means {inferred}',
             f'set TPU_ARCH="{inferred}" or pick a {declared} runtime')
    return declared or inferred


def _region(v: dict[str, Any], fail: Fail, lines: dict[str, int]) -> None:
    """REGION follows the zone: empty, each candidate zone's own region; set, it must hold every
    zone of ZONE (a list spanning regions leaves it empty)."""
    zones = v.get("zones") or (v["zone"],)
    regions = list(dict.fromkeys(z.rsplit("-", 1)[0] for z in zones))
    if v["region"] and len(regions) > 1:
        fail("REGION", f"is {v['region']!r}, but ZONE's candidates span regions {', '.join(regions)}",
             "leave REGION empty (each candidate's region is its zone's) or list zones of one region")
    zone_region = regions[0]
    if v["region"] and v["region"] != zone_region:
        fail("REGION", f"{v['region']!r} does not contain zone {v['zone']!r}",
             f'set REGION="{zone_region}" or leave it empty')


def _zone_list(v: dict[str, Any], fail: Fail, lines: dict[str, int]) -> None:
    """A TPU Node environment has one zone: candidate lists are a TPU VM feature."""
    zones = v.get("zones") or ()
    if len(zones) > 1 and v["arch"] == "node":
        fail("ZONE", f"lists {len(zones)} zones ({', '.join(zones)}), but a TPU Node environment has one: "
             "candidate lists are a TPU VM feature (vm, mig)",
             f'keep one zone, e.g. ZONE="{zones[0]}", or migrate to TPU VM with `tpubuild migrate`')


def _queued_candidates(v: dict[str, Any], fail: Fail, lines: dict[str, int]) -> None:
    """TPU_QUEUED with several candidates: a queued request waits for capacity in the one zone and
    mode it names, so it cannot fail over; the list would be dropped by every build (an error,
    never a silent first pick: docs/capacity.md, "Queued resources and candidates")."""
    zones, modes = v.get("zones") or (), v.get("modes") or ()
    if not v["queued"] or (len(zones) < 2 and len(modes) < 2) or v["arch"] == "mig":  # mig: no queue at all
        return
    key, items = ("ZONE", zones) if len(zones) > 1 else ("TPU_PROVISIONING", modes)
    fail(key, f"lists {len(items)} candidates ({', '.join(items)}), but TPU_QUEUED=\"true\" asks for the slice "
         "with one queued request, which waits for capacity in its own zone and mode and never tries another",
         f'keep one, e.g. {key}="{items[0]}", or remove TPU_QUEUED (the build then tries each candidate in order)')


def _filestore_minimum(v: dict[str, Any], fail: Fail, lines: dict[str, int]) -> None:
    tier, cap = v["shared_fs_tier"], v["shared_fs_capacity_gb"]
    if cap < FS_MIN_GB[tier]:
        if "SHARED_FS_CAPACITY" not in lines and "SHARED_FS_TIER" in lines:
            fail("SHARED_FS_TIER", f"{tier} needs at least {FS_MIN_GB[tier]} GiB but SHARED_FS_CAPACITY is "
                 f"{cap} GiB (the default)", f'add SHARED_FS_CAPACITY="{FS_MIN_GB[tier]}" or more')
        fail("SHARED_FS_CAPACITY", f"{cap} GiB is below the {tier} minimum of {FS_MIN_GB[tier]} GiB",
             f'set SHARED_FS_CAPACITY="{FS_MIN_GB[tier]}" or more')


def _share_name(v: dict[str, Any], fail: Fail, lines: dict[str, int]) -> None:
    tier = v["shared_fs_tier"]
    share, share_max = v["shared_fs_name"], TIERS[tier].share_max
    if len(share) > share_max:
        fail("SHARED_FS", f"{share!r} is {len(share)} characters; a {tier} file share name allows at most {share_max}",
             f"shorten SHARED_FS to {share_max} characters or fewer")


def _scheduling_flags(v: dict[str, Any], fail: Fail, lines: dict[str, int]) -> None:
    flags = [k for k in ("tpu_preemptible", "tpu_spot", "tpu_reserved") if v[k]]
    if len(flags) > 1:
        names = " and ".join(f.upper() for f in flags)
        fail(flags[1].upper(), f"{names} are both true", "choose one scheduling option")


def _node_options(v: dict[str, Any], fail: Fail, lines: dict[str, int]) -> None:
    if v["arch"] != "node":
        return
    if v["tpu_spot"]:
        fail("TPU_SPOT", "spot TPUs exist only as TPU VMs", 'use TPU_PREEMPTIBLE="true" on node, or TPU_ARCH="vm"')
    if v["tpu_reserved"]:
        fail("TPU_RESERVED", "reserved scheduling is a TPU VM option (google_tpu_node has none, "
             "google_tpu_v2_vm has scheduling_config.reserved)",
             'use TPU_PREEMPTIBLE="true" on node, or TPU_ARCH="vm" with a TPU VM runtime')


def _external_ips(v: dict[str, Any], fail: Fail, lines: dict[str, int]) -> None:
    arch = v["arch"]
    if arch == "node" and v["tpu_external_ips"]:
        fail("TPU_EXTERNAL_IPS", "is a TPU VM option; a TPU Node has no host VMs to give IPs to",
             'remove it (MIG_EXTERNAL_IP="true" gives the node workers external IPs)')
    if arch == "vm" and v["mig_external_ip"]:
        fail("MIG_EXTERNAL_IP", "is a node option; the vm architecture has no MIG",
             'use TPU_EXTERNAL_IPS="true" to give TPU VM hosts external IPs')


def _restore(v: dict[str, Any], fail: Fail, lines: dict[str, int]) -> None:
    if v["shared_pd_restore"] and not v["shared_pd_attach"]:
        fail("SHARED_PD_RESTORE", "restoring the shared PD needs the disk",
             'set SHARED_PD_DISK_ATTACH="true" or remove SHARED_PD_RESTORE')


def _dataset_disk(v: dict[str, Any], fail: Fail, lines: dict[str, int]) -> None:
    """The shared dataset disk is a type the hosts of both paths (vm, mig) attach read-only to
    every host: the generation record's ``shared_pd_types`` (pd-balanced where they attach
    Persistent Disk, hyperdisk-ml where they attach only Hyperdisk)."""
    if v["arch"] not in ("vm", "mig") or not v["shared_pd_attach"]:
        return
    topo = v["topology"]
    attachable = topo.record.shared_pd_types
    if v["shared_pd_type"] not in attachable:
        fail("SHARED_PD_DISK_TYPE", f"{topo.generation} TPU VMs attach only {generations.disk_words(attachable)} "
             f"as a disk shared read-only by every host, so a {v['shared_pd_type']} dataset disk cannot be attached "
             f"to them", f'set SHARED_PD_DISK_TYPE="{attachable[0]}" (or leave it empty for that default)')


def _node_ttl(v: dict[str, Any], fail: Fail, lines: dict[str, int]) -> None:
    if v["arch"] == "node" and v.get("env_ttl_hours"):
        fail("ENV_TTL_HOURS", "the TTL (modules/ttl) is created with a TPU VM; the legacy node architecture "
             "has none", 'remove ENV_TTL_HOURS or use TPU_ARCH="vm"')


Rule = Callable[[dict[str, Any], Fail, dict[str, int]], None]

#: The rules between keys, each independent of the others: the loader runs each on its own, so
#: one failing rule never hides another (and a rule that reads a value that did not parse is
#: skipped: that value's own error is the root cause). A rule reads the slice as v["topology"].
CROSS_RULES: tuple[Rule, ...] = (_region, _zone_list, _queued_candidates, _filestore_minimum, _share_name, _scheduling_flags, _node_options,
                                 _external_ips, _restore, _dataset_disk, _node_ttl)


def cross_checks(v: dict[str, Any], topo: Topology, fail: Fail, lines: dict[str, int] | None = None) -> None:
    """Rules between keys (:data:`CROSS_RULES`, in order; the first failure raises). ``lines``
    (key → line) tells which keys the file sets, so a rule that trips on a default blames the key
    the user did write."""
    for rule in CROSS_RULES:
        rule({**v, "topology": topo}, fail, lines if lines is not None else {})


def name_lengths(v: dict[str, Any], fail: Fail) -> None:
    env, project = v["env_name"], v["project_id"]
    if len(env) > MAX_ENV_NAME:
        fail("ENV_BUILD_NAME", f"{env!r} is {len(env)} characters; at most {MAX_ENV_NAME} keep every "
             "derived bucket, TPU, disk and VM name legal", f"shorten ENV_BUILD_NAME to {MAX_ENV_NAME} characters or fewer")
    for key, name in (("PROJECT_ID", project), ("ENV_BUILD_NAME", env)):
        if "goog" in name:
            fail(key, f"{name!r} contains 'goog', which Cloud Storage forbids in bucket names "
                 f"(the state bucket is named {project}-{env}-tf-backend)", f"choose a {key} without 'goog'")
    bucket = f"{project}-{env}-tf-backend"
    if len(bucket) > MAX_BUCKET_NAME:
        room = MAX_BUCKET_NAME - len(project) - len("--tf-backend")
        fail("ENV_BUILD_NAME", f"bucket name {bucket!r} would be {len(bucket)} characters (max {MAX_BUCKET_NAME})",
             f"shorten ENV_BUILD_NAME to at most {room} characters")
    worker = f"worker-{env}"
    if len(worker) + MIG_SUFFIX > MAX_GCE_NAME:
        fail("ENV_BUILD_NAME", f"{len(env)} characters makes worker VM names longer than {MAX_GCE_NAME}",
             f"shorten ENV_BUILD_NAME to at most {MAX_GCE_NAME - MIG_SUFFIX - len('worker-')} characters")


def mig_shape_for(topo: Topology, fail: Fail) -> MigShape:
    """TPU_ARCH="mig": a generation and size Google offers as a MIG of TPU VMs (the shapes of the
    generation record's ``mig``). This is the root of every other mig rule: a generation that has
    no MIG is reported alone (not also the TPU runtime a TPU VM of that generation would need)."""
    try:
        return mig_shape(topo)
    except BadInput as exc:
        fix = ('set TPU_ARCH="vm" (the TPU API, with a TPU runtime) for this generation'
               if topo.record.mig is None else "choose a size from that list")
        fail("TPU_ACCELERATOR_TYPE", str(exc), fix)
        raise  # fail raises; this line keeps type checkers content


def _mig_queued(v: dict[str, Any], shape: MigShape, fail: Fail) -> None:
    # Provisioning (TPU_PROVISIONING, TPU_RESERVATION) is checked by offers.resolve_provisioning
    # against the generation's record like every TPU VM: v5p/v6e/tpu7x offer on-demand, spot
    # and reservation (preemptible is refused there). A queued resource is a TPU API object:
    if v["queued"]:
        fail("TPU_QUEUED", "a queued resource (google_tpu_v2_queued_resource) creates TPU API VMs, not the "
             "Compute Engine VMs of a MIG", 'remove TPU_QUEUED (the MIG retries creating its VMs until capacity is free)')


def _mig_external_ip(v: dict[str, Any], shape: MigShape, fail: Fail) -> None:
    if v["mig_external_ip"]:
        fail("MIG_EXTERNAL_IP", "is a node option; on mig the hosts' external IPs are TPU_EXTERNAL_IPS",
             'use TPU_EXTERNAL_IPS="true" (off by default)')


#: The mig rules that hold once the slice has a MIG shape; independent of each other.
MIG_RULES: tuple[Callable[[dict[str, Any], MigShape, Fail], None], ...] = (_mig_queued, _mig_external_ip)


def mig_for(v: dict[str, Any], topo: Topology, fail: Fail) -> None:
    """Every mig rule in order (the first failure raises): the shape, then :data:`MIG_RULES`."""
    shape = mig_shape_for(topo, fail)
    for rule in MIG_RULES:
        rule(v, shape, fail)
