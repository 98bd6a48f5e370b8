#!/usr/bin/env python3
"""List every resource type of the google and google-beta providers (6.50.0), for the guard's
classification test (``tests/unit/test_guard_classes.py``).

Reads the same npm packages as ``tools/provider_schema.py`` (``@cdktf/provider-google(-beta)``
16.12.1, whose jsii assembly names each Terraform type) and writes a sorted JSON list of
resource type names. Usage::

    python tools/provider_types.py --out tests/data/provider_resource_types.json
    python tools/provider_types.py --packages-dir /tmp/npm --out ...
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from provider_schema import CDKTF_VERSION, PACKAGES, load_assemblies  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--packages-dir", type=Path)
    args = ap.parse_args(argv)
    assemblies = load_assemblies(args.packages_dir)
    types = sorted({t for a in assemblies.values() for kind, t in a.classes if kind == "resources"})
    body = {"_stamp": {"tool": "tools/provider_types.py v1",
                       "packages": {PACKAGES[p]: CDKTF_VERSION for p in PACKAGES},
                       "providers": {p: f"hashicorp/{p} {a.provider_version}" for p, a in assemblies.items()}},
            "resources": types}
    args.out.write_text(json.dumps(body, indent=0) + "\n")
    print(f"provider_types: wrote {args.out} ({len(types)} resource types)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
