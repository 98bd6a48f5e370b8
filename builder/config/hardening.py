"""Rules that keep accepted values from failing in the cloud, each blaming the key
the user must change. Run by ``builder.config.load_text`` after the settings are built."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from typing import Any

from builder.config.filestore import TIERS

Fail = Callable[[str, str, str], None]

#: Filestore maximum capacity (GiB) per tier (builder/config/filestore.py).
FS_MAX_GB: dict[str, int] = {name: t.max_gb for name, t in TIERS.items()}

#: Ranges a VPC subnet (and so a TPU Node's /29) can never use: "this network" 0.0.0.0/8, loopback
#: 127.0.0.0/8, link-local 169.254.0.0/16 (the metadata server lives there), multicast and
#: reserved space. https://cloud.google.com/vpc/docs/subnets#valid-ranges (prohibited IPv4 ranges)
_PROHIBITED = tuple(ipaddress.IPv4Network(n) for n in (
    "0.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32"))

#: Compute Engine machine types: family, then dash-separated parts, never a trailing or double dash
#: (``n1-standard-16``, ``e2-custom-4-8192``). https://cloud.google.com/compute/docs/machine-resource
MACHINE_TYPE = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)+", re.ASCII)


def cross_checks(settings: Any, fail: Fail) -> None:
    tier, cap = settings.shared_fs_tier, settings.shared_fs_capacity_gb
    if cap > FS_MAX_GB[tier]:
        fail("SHARED_FS_CAPACITY", f"{cap} GiB is above the {tier} maximum of {FS_MAX_GB[tier]} GiB",
             f'set SHARED_FS_CAPACITY="{FS_MAX_GB[tier]}" or less, or choose a tier that holds more')
    net = ipaddress.IPv4Network(settings.tpu_cidr_block)
    for bad in _PROHIBITED:
        if net.overlaps(bad):
            fail("TPU_CIDR_BLOCK", f"{settings.tpu_cidr_block!r} lies in {bad}, which no VPC subnet may use "
                 "(this-network, loopback, link-local, multicast or reserved space)",
                 "use an RFC 1918 /29 such as '10.3.0.0/29'")
    if not MACHINE_TYPE.fullmatch(settings.machine_type):
        fail("MACHINE_TYPE", f"{settings.machine_type!r} is not a machine type (a trailing or doubled '-')",
             "write it like 'n1-standard-16'")
