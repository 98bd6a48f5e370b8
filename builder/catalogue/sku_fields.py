"""How a Cloud Billing Catalog SKU is read, whichever way it arrived: a field by its JSON (camelCase)
or proto (snake_case) name, the service it belongs to, its usage type. Shared by the matchers of
builder/catalogue/skus.py, storage_skus.py and tpu_device_skus.py. Pure."""

from __future__ import annotations

from typing import Any


def field(d: dict[str, Any], *names: str) -> Any:
    """A field by its JSON (camelCase) or proto (snake_case) name; None when it has neither."""
    for name in names:
        if name in d:
            return d[name]
    return None


def service(sku: dict[str, Any]) -> str:
    """The service id of the SKU (its ``name`` is ``services/<id>/skus/<sku id>``); "" for none."""
    parts = str(sku.get("name", "")).split("/")
    return parts[1] if len(parts) > 1 else ""


def usage_type(sku: dict[str, Any]) -> Any:
    """The SKU's ``category.usageType`` (OnDemand, Preemptible, Commit1Yr, ...)."""
    return field(sku.get("category") or {}, "usageType", "usage_type")
