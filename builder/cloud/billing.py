"""The Cloud Billing Catalog API (google-cloud-billing's ``CloudCatalogClient``, REST): the SKUs of one service.

Auth, in order: ``api_key`` (``tpubuild prices update --api-key``, else ``TPUBUILD_BILLING_API_KEY``): the
catalogue is public data and an API key reads it (https://cloud.google.com/billing/docs/how-to/get-pricing-information-api);
an ``http://`` ``endpoint`` (a local fake, a mirror): no credentials; otherwise Application Default
Credentials. ``endpoint`` (``--endpoint``, else ``TPUBUILD_BILLING_ENDPOINT`` as builder/cloud/clients.py's
other endpoints) replaces ``cloudbilling.googleapis.com``.
"""

from __future__ import annotations

from typing import Any

from builder.cloud import clients
from builder.cloud.errors import cloud_call
from builder.facts.errors import WorldError

API_KEY_VARIABLE = "TPUBUILD_BILLING_API_KEY"


def catalog(api_key: str | None = None, endpoint: str | None = None) -> Any:
    from google.cloud import billing_v1

    options: dict[str, Any] = {}
    endpoint = endpoint or clients.emulated("TPUBUILD_BILLING_ENDPOINT")
    if endpoint:
        options["api_endpoint"] = endpoint
    if endpoint and endpoint.startswith("http://"):
        from google.auth.credentials import AnonymousCredentials

        return billing_v1.CloudCatalogClient(transport="rest", credentials=AnonymousCredentials(),
                                             client_options=options)
    if api_key:
        options["api_key"] = api_key
        return billing_v1.CloudCatalogClient(transport="rest", client_options=options)
    try:
        credentials = clients.credentials()
    except WorldError as exc:
        raise WorldError(f"the Cloud Billing Catalog needs an API key or credentials: pass --api-key or set "
                         f"{API_KEY_VARIABLE} (a Google Cloud API key of a project with the Cloud Billing API enabled); else: {exc}") from None
    return billing_v1.CloudCatalogClient(transport="rest", credentials=credentials, client_options=options)


def list_skus(service: str, *, api_key: str | None = None, endpoint: str | None = None) -> list[dict[str, Any]]:
    """Every SKU of ``services/<service>`` (all pages), each as the API's JSON (camelCase) dict, in USD."""
    from google.cloud import billing_v1

    client = catalog(api_key, endpoint)
    out: list[dict[str, Any]] = []
    with cloud_call(f"reading the Cloud Billing Catalog's SKUs of services/{service}"):
        for sku in client.list_skus(request={"parent": f"services/{service}", "currency_code": "USD"}):
            out.append(billing_v1.Sku.to_dict(sku, preserving_proto_field_name=False))
    return out
