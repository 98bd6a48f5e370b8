"""What ``tpubuild status`` prints of each resource it reads: the catalogue entries' status rows.

Each :class:`builder.modules.StatusPart` names one of these as its ``row``; builder/cloud/status.py
reads the resource (``READERS[part.key]``) and prints ``row(part)`` when it exists. Pure: a
row only formats the dict its reader returned.
"""

from __future__ import annotations

from typing import Any


def tpu_row(tpu: dict[str, Any]) -> str:
    return (f"{tpu['name']}: {tpu['state']}, health {tpu['health']}, {tpu['accelerator_type']}, "
            f"{tpu['runtime_version']} ({tpu['api']})")


def queued_row(qr: dict[str, Any]) -> str:
    until = f", valid until {qr['valid_until']}" if qr["valid_until"] else ""
    return f"{qr['name']}: {qr['state']}, {qr['accelerator_type']}{until} (queued resource)"


def filestore_row(fs: dict[str, Any]) -> str:
    share = fs["shares"][0] if fs["shares"] else {"name": "?", "capacity_gb": 0}
    return (f"{fs['name']}: {fs['state']}, {fs['ip'] or 'no IP yet'}:/{share['name']} "
            f"({share['capacity_gb']} GiB, {fs['tier']})")


def slice_row(sl: dict[str, Any]) -> str:
    policy = f"policy {sl['policy']}" if sl["policy"] else "no workload policy"
    return (f"{sl['name']}: {sl['running']}/{sl['target_size']} running (values.env: {sl['vms']} x "
            f"{sl['machine_type']}, topology {sl['topology']}, {sl['provisioning']}), {policy}, {sl['state']}")


def workers_row(mig: dict[str, Any]) -> str:
    return (f"{mig['name']}: {mig['running']}/{mig['target_size']} running "
            f"(target {mig['target_size']}, {mig['expected_size']} TPU hosts), {mig['state']}")
