"""Accelerator type → generation, chips, TensorCores and hosts.

The rules (from Cloud TPU's naming):

* v2, v3, v4 and v5p names count TensorCores: 2 cores per chip, 4 chips per host, so
  hosts = cores / 8 (v3-32 → 4 hosts).
* v5litepod (v5e) and v6e names count chips, 1 core per chip. Slices of 1, 4 and 8 chips are
  one host; larger slices have 4 chips per host (v5litepod-16 → 4 hosts).

Only sizes that Cloud TPU actually offers are accepted; anything else is ``BadInput`` with the
valid sizes listed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from builder.errors import BadInput

#: name prefix → (generation, sizes offered, whether the size counts cores (else chips))
_FAMILIES: dict[str, tuple[str, tuple[int, ...], bool]] = {
    "v2": ("v2", (8, 32, 128, 256, 512), True),
    "v3": ("v3", (8, 32, 64, 128, 256, 512, 1024, 2048), True),
    "v4": ("v4", (8, 16, 32, 64, 128, 256, 384, 512, 1024, 1536, 2048, 3072, 4096), True),
    "v5p": ("v5p", (8, 16, 32, 64, 128, 256, 384, 512, 1024, 2048, 4096, 6144, 8192, 12288), True),
    "v5litepod": ("v5e", (1, 4, 8, 16, 32, 64, 128, 256), False),
    "v6e": ("v6e", (1, 4, 8, 16, 32, 64, 128, 256), False),
    # TPU7x (Ironwood) is offered only as Compute Engine TPU VMs (TPU_ARCH="mig") or on GKE; like
    # v5p its names count TensorCores, 2 per chip (tpu7x-8 = 4 chips, 2x2x1). Sizes: MIG_SHAPES.
    "tpu7x": ("tpu7x", (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192), True),
}

#: Generations in release order; used by config to check runtime and architecture.
GENERATIONS: tuple[str, ...] = ("v2", "v3", "v4", "v5e", "v5p", "v6e", "tpu7x")

_NAME = re.compile(r"^(?P<family>[a-z0-9]+?)-(?P<size>\d+)$")

CORES_PER_CHIP_V2_V5P = 2
CHIPS_PER_HOST = 4


@dataclass(frozen=True)
class Topology:
    """The shape of one TPU slice."""

    accelerator_type: str
    generation: str
    chips: int
    cores: int
    hosts: int

    @property
    def cores_per_host(self) -> int:
        return self.cores // self.hosts


def valid_types() -> list[str]:
    """Every accelerator type we accept, in family order."""
    return [f"{family}-{size}" for family, (_, sizes, _) in _FAMILIES.items() for size in sizes]


def parse(accelerator_type: str) -> Topology:
    """Map an accelerator type such as ``v3-32`` to its :class:`Topology`."""
    stripped = accelerator_type.strip()
    if re.fullmatch(r"\w+-\w+", stripped) and not re.fullmatch(r"[a-z0-9]+-[1-9][0-9]{0,5}", stripped, re.ASCII):
        # canonical ASCII only: '３２' and '032' would parse as 32 and then go into resource names
        raise BadInput(f"{accelerator_type!r} is not canonical (lowercase ASCII letters and digits, a size without "
                       "leading zeros); write it the way Cloud TPU names it, e.g. 'v3-32' or 'v5litepod-16'")
    match = _NAME.match(stripped)
    family = match.group("family") if match else None
    if family not in _FAMILIES:
        import difflib  # only on a typo: not at start-up

        guess = difflib.get_close_matches(accelerator_type, valid_types(), n=1)
        hint = f"did you mean {guess[0]}? " if guess else ""
        families = ", ".join(f"{f}-N" for f in _FAMILIES)
        raise BadInput(
            f"unknown accelerator type {accelerator_type!r}; {hint}use one of {families}"
        )
    assert match is not None
    generation, sizes, counts_cores = _FAMILIES[family]
    size = int(match.group("size"))
    if size not in sizes:
        listed = ", ".join(f"{family}-{s}" for s in sizes)
        raise BadInput(
            f"{accelerator_type!r} is not a size Cloud TPU offers; valid sizes are {listed}"
        )
    if counts_cores:
        cores = size
        chips = cores // CORES_PER_CHIP_V2_V5P
        hosts = max(1, chips // CHIPS_PER_HOST)
    else:
        chips = cores = size
        hosts = 1 if chips <= 8 else chips // CHIPS_PER_HOST
    return Topology(accelerator_type, generation, chips, cores, hosts)


# ---- TPU_ARCH="mig": a slice as a Compute Engine managed instance group of TPU VMs ----
#
# Sources (Google Cloud docs, checked 2026-11-23):
# * https://docs.cloud.google.com/tpu/docs/tpus-and-migs: MIGs of TPU VMs exist "for TPU versions
#   v5p and later"; a multi-host slice is a MIG whose VMs are joined by ICI through a workload
#   policy (docs.cloud.google.com/compute/docs/tpus/create-tpu-mig-multi-host-slice).
# * https://docs.cloud.google.com/compute/docs/tpus/tpu-machines: Compute Engine supports TPU7x,
#   v6e and v5p; each machine type has a fixed number of chips (ct5p-hightpu-4t: 4,
#   ct6e-standard-1t/-4t/-8t: 1/4/8, tpu7x-standard-4t: 4). Multi-host slices use the 4-chip types.
# * v5p shapes: https://docs.cloud.google.com/tpu/docs/v5p (2x2x1 = v5p-8 on 1 host ... 16x16x24 =
#   v5p-12288 on 1536); v6e shapes: https://docs.cloud.google.com/tpu/docs/v6e (1x1, 2x2, 2x4 on
#   one host; 4x4 = v6e-16 on 4 hosts ... 16x16 = v6e-256 on 64); TPU7x shapes:
#   https://docs.cloud.google.com/tpu/docs/tpu7x (2x2x1 on one host ... cubes of 4x4x4 = 16 hosts).
# * OS images: project ubuntu-os-accelerator-images, families ubuntu-accel-2204-amd64-tpu-v5e-v5p-v6e
#   and ubuntu-accel-2404-amd64-tpu-tpu7x (https://docs.cloud.google.com/tpu/docs/tpu-os-images).
# * Cross-checked 2026-11-23 against Google's own provisioning tool, AI-Hypercomputer/xpk
#   (src/xpk/core/system_characteristics.py @367c838: TPU name = <prefix>-<chips x TensorCores per
#   chip>, 4 chips per VM, VMs = chips / 4, workload policy for multi-host TPU7x): every v5p and
#   tpu7x row below is xpk's default topology for that name (which is where v5p-384 = 4x4x12 and
#   v5p-6144 = 12x16x16 come from), and xpk's machine types are ct5p-hightpu-4t, ct6e-standard-1t
#   (1x1) / -4t and tpu7x-standard-4t. TPU7x names count TensorCores, 2 per chip (tpu7x doc:
#   "Each TPU7x chip contains two TensorCores"), so tpu7x-128 = 64 chips = 4x4x4 on 16 VMs.
#   Not confirmed: v6e-8 (2x4) as one ct6e-standard-8t (the v6e page's single-host row; xpk
#   instead builds 2x4 from two ct6e-standard-4t), tpu7x-2 / tpu7x-standard-1t (xpk has it, we
#   do not offer it), and the image families, which we could read only in public code that
#   boots these machine types (SkyPilot's GCP defaults, several launch scripts), not on the
#   tpu-os-images page itself.
# tests/unit/test_mig_arch.py checks rows against these tables, written out once more by hand.

#: accelerator type → accelerator_topology of the workload policy (the slice's chip grid).
MIG_SHAPES: dict[str, str] = {
    "v5p-8": "2x2x1", "v5p-16": "2x2x2", "v5p-32": "2x2x4", "v5p-64": "2x4x4", "v5p-128": "4x4x4",
    "v5p-256": "4x4x8", "v5p-384": "4x4x12", "v5p-512": "4x8x8", "v5p-1024": "8x8x8", "v5p-2048": "8x8x16",
    "v5p-4096": "8x16x16", "v5p-6144": "12x16x16", "v5p-8192": "16x16x16", "v5p-12288": "16x16x24",
    "v6e-1": "1x1", "v6e-4": "2x2", "v6e-8": "2x4", "v6e-16": "4x4", "v6e-32": "4x8", "v6e-64": "8x8",
    "v6e-128": "8x16", "v6e-256": "16x16",
    "tpu7x-8": "2x2x1", "tpu7x-16": "2x2x2", "tpu7x-32": "2x2x4", "tpu7x-64": "2x4x4",
    "tpu7x-128": "4x4x4", "tpu7x-256": "4x4x8", "tpu7x-512": "4x8x8", "tpu7x-1024": "8x8x8",
    "tpu7x-2048": "8x8x16", "tpu7x-4096": "8x16x16", "tpu7x-8192": "16x16x16",
}

#: generation → (machine type of a multi-host slice's VMs, chips per such VM, image project, family)
MIG_GENERATIONS: dict[str, tuple[str, int, str, str]] = {
    "v5p": ("ct5p-hightpu-4t", 4, "ubuntu-os-accelerator-images", "ubuntu-accel-2204-amd64-tpu-v5e-v5p-v6e"),
    "v6e": ("ct6e-standard-4t", 4, "ubuntu-os-accelerator-images", "ubuntu-accel-2204-amd64-tpu-v5e-v5p-v6e"),
    "tpu7x": ("tpu7x-standard-4t", 4, "ubuntu-os-accelerator-images", "ubuntu-accel-2404-amd64-tpu-tpu7x"),
}
#: generation → (boot disk type, disk types its VMs can attach READ_ONLY as the shared dataset
#: PD). https://cloud.google.com/tpu/docs/setup-persistent-disk: v5p takes Balanced Persistent
#: Disk only; v6e takes Hyperdisk Balanced and Hyperdisk ML only (no pd-*), and TPU7x VMs boot
#: from hyperdisk-balanced in every public launch we found (no page lists TPU7x disks: unconfirmed,
#: treated like v6e). modules/shared_pd makes pd-* disks, so ct6e/tpu7x slices cannot attach it.
MIG_DISKS: dict[str, tuple[str, tuple[str, ...]]] = {
    "v5p": ("pd-balanced", ("pd-balanced",)),
    "v6e": ("hyperdisk-balanced", ()),
    "tpu7x": ("hyperdisk-balanced", ()),
}
#: Single-host v6e slices smaller or larger than 4 chips use their own machine type.
_V6E_SINGLE_HOST: dict[int, str] = {1: "ct6e-standard-1t", 8: "ct6e-standard-8t"}


@dataclass(frozen=True)
class MigShape:
    """A slice as a MIG: ``vms`` VMs of ``machine_type`` with ``chips_per_vm`` chips each, joined
    by a workload policy with ``accelerator_topology`` (empty for a single-host slice, which needs
    no policy). ``host_bounds`` / ``chips_per_host_bounds`` are the ``x,y,z`` grids PJRT's
    TPU_HOST_BOUNDS / TPU_CHIPS_PER_HOST_BOUNDS expect (host grid × chips per host = topology)."""

    accelerator_type: str
    generation: str
    machine_type: str
    chips_per_vm: int
    vms: int
    topology: str
    image_project: str
    image_family: str

    @property
    def boot_disk_type(self) -> str:
        return MIG_DISKS[self.generation][0]

    @property
    def shared_pd_types(self) -> tuple[str, ...]:
        """SHARED_PD_DISK_TYPE values these VMs can attach READ_ONLY (empty: none)."""
        return MIG_DISKS[self.generation][1]

    @property
    def accelerator_topology(self) -> str:
        return self.topology if self.vms > 1 else ""

    @property
    def dims(self) -> tuple[int, int, int]:
        d = [int(x) for x in self.topology.split("x")]
        return (d + [1, 1])[0], (d + [1, 1])[1], (d + [1, 1, 1])[2]

    @property
    def chips_per_host_bounds(self) -> str:
        x, y, z = self.dims
        if self.chips_per_vm == 4:
            return "2,2,1"
        return f"{x},{y},{z}"  # single host: the whole grid is on it

    @property
    def host_bounds(self) -> str:
        x, y, z = self.dims
        cx, cy, cz = (int(v) for v in self.chips_per_host_bounds.split(","))
        return f"{x // cx},{y // cy},{z // cz}"


def mig_shape(topo: Topology) -> MigShape:
    """The MIG form of a parsed slice; ``BadInput`` (with the fix) for a generation or a size
    that Google does not offer as a MIG of TPU VMs."""
    if topo.generation not in MIG_GENERATIONS:
        offered = ", ".join(MIG_GENERATIONS)
        raise BadInput(f"{topo.accelerator_type} is a {topo.generation} slice; TPU VMs in a managed instance "
                       f"group exist for {offered} only")
    topology = MIG_SHAPES.get(topo.accelerator_type)
    if topology is None:
        offered = ", ".join(t for t in MIG_SHAPES if t.startswith(topo.accelerator_type.split("-")[0] + "-"))
        raise BadInput(f"{topo.accelerator_type} has no documented MIG slice shape; use one of {offered}")
    machine, per_vm, project, family = MIG_GENERATIONS[topo.generation]
    vms = max(1, topo.chips // per_vm)
    if topo.generation == "v6e" and topo.chips in _V6E_SINGLE_HOST:
        machine, per_vm, vms = _V6E_SINGLE_HOST[topo.chips], topo.chips, 1
    return MigShape(topo.accelerator_type, topo.generation, machine, per_vm, vms, topology, project, family)
