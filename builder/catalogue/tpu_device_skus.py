"""Billing Catalog SKUs of the Cloud TPU service (``E000-3F24-B8AA``) → the chip-hour records of v2, v3
and v4, by the one code path of builder/catalogue/skus.py (whose ``match`` calls :func:`records`).

That service prices TPU v2, v3 and v4 per *device* (the 8-TensorCore, 4-chip v2-8 / v3-8 / v4-8) and
per hour, in the regions its ``serviceRegions`` list (continent-scoped SKUs list several). As SkyPilot's
catalogue reads it (sky/clouds/service_catalog/data_fetchers/fetch_gcp.py): the description names the
generation ("Tpu-v3", any case), "Pod" marks a multi-host slice's rate (v2 and v3 price a device and a
Pod apart; v4 has the Pod rate only, which is its rate), and "Preemptible" marks the preemptible rate,
whose usage type is OnDemand like the on-demand one; a 1- or 3-year commitment carries usage type
Commit1Yr / Commit3Yr. A record is (generation × mode [× pod] × region); the chip-hour rate is the
device's divided by 4. The preemptible SKU prices both ``preemptible`` and ``spot`` (Cloud TPU bills a Spot TPU of
these generations at the preemptible rate). docs/plan_cost_ttl.md says which SKUs of the recording are real.
"""

from __future__ import annotations

import re
from typing import Any

from builder.catalogue.sku_fields import service, usage_type

SERVICE = "E000-3F24-B8AA"
#: Chips per device, the unit these SKUs price (v2-8, v3-8, v4-8).
CHIPS_PER_DEVICE = 4
GENERATIONS = ("v2", "v3", "v4")
_GENERATION = re.compile(r"\btpu-(v[234])\b", re.IGNORECASE)
_TERMS = {"Commit1Yr": "committed-1y", "Commit3Yr": "committed-3y"}


def records(sku: dict[str, Any]) -> list[tuple[str, str]]:
    """The (generation, mode path) records the SKU prices: mode path ``on-demand``, ``spot``,
    ``preemptible``, ``committed-1y``/``-3y``, or ``pod.<mode>`` for a v2/v3 Pod rate; [] for none."""
    if service(sku) != SERVICE:
        return []
    description = str(sku.get("description", ""))
    found = _GENERATION.search(description)
    usage = usage_type(sku)
    if found is None or usage not in ("OnDemand", *_TERMS):
        return []
    generation = found.group(1).lower()
    if usage in _TERMS:
        modes = [_TERMS[usage]]
    elif re.search(r"\bPreemptible\b", description):
        modes = ["preemptible", "spot"]
    else:
        modes = ["on-demand"]
    pod = "pod." if re.search(r"\bPod\b", description) and generation != "v4" else ""
    return [(generation, f"{pod}{mode}") for mode in modes]
