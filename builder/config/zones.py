"""Which zone is nearest: the one rule the zone hints use (builder/config/offers.py for a zone
without the TPU, builder/config/calendar.py for a zone without calendar mode)."""

from __future__ import annotations

import re
from collections.abc import Sequence

_CONTINENTS = {"us": "america", "northamerica": "america", "southamerica": "south america", "europe": "europe",
               "asia": "asia", "australia": "oceania", "me": "middle east", "africa": "africa"}


def nearest(zone: str, offered: Sequence[str]) -> list[str]:
    """``offered`` ordered nearest to ``zone`` first: the same region, then the same part of a
    continent (``us-east1`` → ``us-east5``), then the same continent, then the rest; the table's
    order within each. A hint names the first, so a us-east1-d user is sent to us-east5, not Tokyo."""
    region = zone.rsplit("-", 1)[0]
    prefix = zone.split("-", 1)[0]
    area = re.sub(r"[0-9]+$", "", region)

    def rank(z: str) -> int:
        r = z.rsplit("-", 1)[0]
        if r == region:
            return 0
        if re.sub(r"[0-9]+$", "", r) == area:
            return 1
        p = z.split("-", 1)[0]
        return 2 if _CONTINENTS.get(p, p) == _CONTINENTS.get(prefix, prefix) else 3

    return sorted(offered, key=rank)
