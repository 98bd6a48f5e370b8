"""Filestore service tiers: every fact tpubuild uses about a tier, in one table.

Sources: https://cloud.google.com/filestore/docs/service-tiers ,
https://cloud.google.com/filestore/docs/service-tiers-zonal ,
https://cloud.google.com/filestore/docs/service-tiers-regional , and the backups page
https://cloud.google.com/filestore/docs/backups (High Scale SSD has no backups).
"""

from __future__ import annotations

from builder.facts.records import record


@record
class Tier:
    name: str
    min_gb: int  # the smallest instance, GiB
    max_gb: int  # the largest instance, GiB
    backups: bool  # a backup is taken before destroy
    regional: bool  # the instance lives in REGION, not ZONE
    share_max: int  # file-share name length


#: Basic tiers: 63.9 TiB at most, 16-character share names; Zonal and Regional (higher range) and
#: High Scale SSD: 100 TiB; Enterprise: 10 TiB. Longer share names are allowed off the basic
#: tiers; tpubuild allows 32.
TIERS: dict[str, Tier] = {t.name: t for t in (
    Tier("BASIC_HDD", 1024, 65434, backups=True, regional=False, share_max=16),
    Tier("BASIC_SSD", 2560, 65434, backups=True, regional=False, share_max=16),
    Tier("ZONAL", 1024, 102400, backups=True, regional=False, share_max=32),
    Tier("REGIONAL", 1024, 102400, backups=True, regional=True, share_max=32),
    Tier("ENTERPRISE", 1024, 10240, backups=True, regional=True, share_max=32),
    Tier("HIGH_SCALE_SSD", 10240, 102400, backups=False, regional=False, share_max=32),
)}
#: What SHARED_FS_TIER takes (seed names STANDARD and PREMIUM are aliases: builder.config.keys).
NAMES: tuple[str, ...] = tuple(TIERS)
