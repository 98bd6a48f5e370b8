"""Accelerator type → generation, chips, TensorCores and hosts, and the MIG form of a slice.

Every fact comes from the generation's record (builder/facts/generations.py, the rows of
builder/data/tpu_offers.json): how its names count (v2, v3, v4, v5p and TPU7x names count
TensorCores, 2 per chip, so v3-32 = 16 chips; v5litepod (v5e) and v6e names count chips), the sizes
offered, how many chips fit one host (4; slices of up to 8 chips are one host on v5e/v6e) and the
MIG machine types and shapes. This module only does the arithmetic.

Only sizes that Cloud TPU actually offers are accepted; anything else is ``BadInput`` with the
valid sizes listed. A name the record knows under another name (``v5e-16``) is answered with the
name Google uses (``v5litepod-16``).
"""

from __future__ import annotations

import re

from builder.facts import generations
from builder.facts.errors import BadInput
from builder.facts.records import record

_NAME = re.compile(r"^(?P<family>[a-z0-9]+?)-(?P<size>\d+)$")


@record
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

    @property
    def record(self) -> generations.Generation:
        """The generation's record (builder/facts/generations.py): every other fact about it."""
        gen = generations.get(self.generation)
        assert gen is not None, self.generation  # parse() made this topology from that record
        return gen


def valid_types() -> list[str]:
    """Every accelerator type we accept, in the records' order."""
    return [t for g in generations.records() for t in g.types()]


def _unknown(accelerator_type: str, family: str, size: str) -> BadInput:
    """An unknown name: the record's own name when the family is one of its aliases (v5e-16 →
    v5litepod-16), else the closest valid type by spelling."""
    families = ", ".join(f"{g.prefix}-N" for g in generations.records())
    known = generations.get(family) if family else None
    if known is not None:
        what = f"unknown accelerator type {accelerator_type!r} (Cloud TPU names {known.name} types {known.prefix}-N)"
        if size.isdigit() and int(size) in known.sizes:
            return BadInput(f"{what}; did you mean {known.prefix}-{size}?")
        return BadInput(f"{what}; use one of {', '.join(known.types())}")
    import difflib  # only on a typo: not at start-up

    guess = difflib.get_close_matches(accelerator_type, valid_types(), n=1)
    hint = f"did you mean {guess[0]}? " if guess else ""
    return BadInput(f"unknown accelerator type {accelerator_type!r}; {hint}use one of {families}")


def parse(accelerator_type: str) -> Topology:
    """Map an accelerator type such as ``v3-32`` to its :class:`Topology`."""
    stripped = accelerator_type.strip()
    if re.fullmatch(r"\w+-\w+", stripped) and not re.fullmatch(r"[a-z0-9]+-[1-9][0-9]{0,5}", stripped, re.ASCII):
        # canonical ASCII only: '３２' and '032' would parse as 32 and then go into resource names
        raise BadInput(f"{accelerator_type!r} is not canonical (lowercase ASCII letters and digits, a size without "
                       "leading zeros); write it the way Cloud TPU names it, e.g. 'v3-32' or 'v5litepod-16'")
    match = _NAME.match(stripped)
    gen = generations.by_prefix(match.group("family")) if match else None
    if gen is None:
        raise _unknown(accelerator_type, match.group("family") if match else "", match.group("size") if match else "")
    size = int(match.group("size"))
    if size not in gen.sizes:
        listed = ", ".join(gen.types())
        raise BadInput(
            f"{accelerator_type!r} is not a size Cloud TPU offers; valid sizes are {listed}"
        )
    chips = gen.chips_of(size)
    return Topology(accelerator_type, gen.name, chips, chips * gen.cores_per_chip, gen.hosts_of(chips))


# ---- TPU_ARCH="mig": a slice as a Compute Engine managed instance group of TPU VMs ----
#
# The machine types, images, boot disks and shapes (with their sources) are the generation's
# ``mig`` record (builder/data/tpu_offers.json); tests/unit/test_mig_arch.py checks them against
# the documented shapes, written out once more by hand.


@record
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
    def generation_record(self) -> generations.Generation:
        gen = generations.get(self.generation)
        assert gen is not None and gen.mig is not None  # mig_shape made it from this record
        return gen

    @property
    def _mig(self) -> generations.MigFacts:
        assert self.generation_record.mig is not None
        return self.generation_record.mig

    @property
    def boot_disk_type(self) -> str:
        return self._mig.boot_disk_type

    @property
    def shared_pd_types(self) -> tuple[str, ...]:
        """SHARED_PD_DISK_TYPE values these VMs can attach READ_ONLY (empty: none)."""
        return self.generation_record.shared_pd_types

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
    gen = generations.get(topo.generation)
    if gen is None or gen.mig is None:
        offered = ", ".join(g.name for g in generations.on_path("mig"))
        raise BadInput(f"{topo.accelerator_type} is a {topo.generation} slice; TPU VMs in a managed instance "
                       f"group exist for {offered} only")
    mig = gen.mig
    size = int(topo.accelerator_type.rsplit("-", 1)[1])
    topology = mig.shapes.get(size)
    if topology is None:
        offered = ", ".join(f"{gen.prefix}-{n}" for n in mig.shapes)
        raise BadInput(f"{topo.accelerator_type} has no documented MIG slice shape; use one of {offered}")
    machine, per_vm, vms = mig.machine_type, mig.chips_per_vm, max(1, topo.chips // mig.chips_per_vm)
    if topo.chips in mig.single_host_machine_types:
        machine, per_vm, vms = mig.single_host_machine_types[topo.chips], topo.chips, 1
    return MigShape(topo.accelerator_type, topo.generation, machine, per_vm, vms, topology, mig.image_project,
                    mig.image_family)
