"""The real ``gcloud storage`` against fake-gcs-server: a throwaway ``CLOUDSDK_CONFIG`` whose
``api_endpoint_overrides/storage`` is the fake's JSON API (a fake access token; nothing leaves the
machine). ``env(home, url)`` is the environment a host script runs gcloud with; ``bucket(client,
name)`` makes a bucket configured as builder/cloud/buckets.py configures the environment's
buckets (versioned), so deletions there behave as in the real state bucket.

fake-gcs-server does not serve ``storageLayout`` (the call a *recursive* ``gcloud storage cp``
makes first), which is one reason models/checkpoint_sync.sh copies file by file. And it answers a
delete of one object version with a body gcloud cannot read: the version is deleted, but ``gcloud
storage rm --all-versions`` prints ``'NoneType' object has no attribute 'items'`` and exits 1 (so
checkpoint_sync.sh logs "could not delete ... yet" there; the tests check what the bucket holds)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def env(home: Path, url: str, project: str = "my-tpu-project") -> dict[str, str]:
    config = home / "cloudsdk"
    (config / "configurations").mkdir(parents=True, exist_ok=True)
    token = home / "access-token"
    token.write_text("ya29.tpubuild-fake-token\n")
    (config / "configurations" / "config_default").write_text("\n".join([
        "[core]", f"project = {project}", "disable_usage_reporting = true", "check_gce_metadata = false",
        "account = tester@example.com", "[auth]", f"access_token_file = {token}",
        "[component_manager]", "disable_update_check = true",
        "[api_endpoint_overrides]", f"storage = {url}/storage/v1/", ""]))
    (config / "active_config").write_text("default")
    out = {k: v for k, v in os.environ.items() if not k.startswith(("CLOUDSDK_", "GOOGLE_"))}
    out.update({"CLOUDSDK_CONFIG": str(config), "HOME": str(home), "CLOUDSDK_CORE_DISABLE_PROMPTS": "1",
                "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
    return out


def bucket(client: Any, name: str) -> Any:
    b = client.bucket(name)
    b.versioning_enabled = True
    return client.create_bucket(b)
