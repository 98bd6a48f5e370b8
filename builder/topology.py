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
}

#: Generations in release order; used by config to check runtime and architecture.
GENERATIONS: tuple[str, ...] = ("v2", "v3", "v4", "v5e", "v5p", "v6e")

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
    match = _NAME.match(accelerator_type.strip())
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
