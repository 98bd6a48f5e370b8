"""``tpubuild ttl show`` and ``tpubuild ttl extend DURATION``: the environment's TTL job.

The work is in builder/cloud/ttl.py (imported inside the commands: no ``google.*`` at import time).
"""

from __future__ import annotations

import argparse
import json

from builder.cloud import ttl as cloud_ttl
from builder.commands import load_settings
from builder.facts.errors import BadInput
from builder.inputs import ttl

def run_ttl(args: argparse.Namespace) -> int:
    settings = load_settings(args)
    if args.verb == "show" and args.duration is not None:
        raise BadInput(f"ttl show: takes no duration (got {args.duration!r}); use `tpubuild ttl extend {args.duration}`")
    if args.verb == "extend" and args.duration is None:
        raise BadInput("ttl extend: how long? add a duration like 4h or 2d")
    by = ttl.parse_extension(args.duration) if args.verb == "extend" else None
    if not settings.env_ttl_hours:
        raise BadInput(f"{settings.source}: ENV_TTL_HOURS is not set, so the environment has no TTL; "
                       'add ENV_TTL_HOURS="8" (hours) and apply to have one')

    info = cloud_ttl.read(settings) if by is None else cloud_ttl.extend(settings, by)
    if args.format == "json":
        print(json.dumps(info, indent=2, sort_keys=True))
    elif by is not None:
        print(f"{info['name']}: the TPU is now destroyed at {info['fires']} (in {info['in']}; was {info['was']})")
    elif info["state"] == "ABSENT":
        print(f"{info['name']}: absent (the TPU is not created yet, or the TTL already fired)")
    else:
        print(f"{info['name']}: {info['state'].lower()}, destroys the TPU at {info['fires']} (in {info['in']})")
    return 0
