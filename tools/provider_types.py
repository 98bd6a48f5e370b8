#!/usr/bin/env python3
"""List every resource type of the google and google-beta providers the modules pin, for the
guard's classification test (``tests/unit/test_guard_classes.py``): the union of 8.7.0 (every
root) and 6.50.0 (the legacy node roots, whose destroy plans hold ``google_tpu_node``), since the
guard reads the plans of both.

Reads the bindings the stand-in provider serves (``tools/tfstandin/install.py``: PyPI
``cdktn-provider-google(-beta)`` 21.1.0 and npm ``@cdktf/provider-google(-beta)`` 16.12.1, whose
jsii assemblies name each Terraform type) and writes a sorted JSON list of resource type names::

    python tools/provider_types.py --out tests/data/provider_resource_types.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from provider_schema import Assembly, _jsii_from, install  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    cache = install.cache_dir()
    try:
        assemblies = {(r.package_label(p), p): Assembly(_jsii_from(install.tarball(cache, r, p)))
                      for r in install.RELEASES for p in install.PROVIDERS}
    except install.InstallError as exc:
        raise SystemExit(f"provider_types: {exc}") from None
    types = sorted({t for a in assemblies.values() for kind, t in a.classes if kind == "resources"})
    body = {"_stamp": {"tool": "tools/provider_types.py v2",
                       "packages": sorted(label for label, _ in assemblies),
                       "providers": sorted(f"hashicorp/{p} {a.provider_version}" for (_, p), a in assemblies.items())},
            "resources": types}
    args.out.write_text(json.dumps(body, indent=0) + "\n")
    print(f"provider_types: wrote {args.out} ({len(types)} resource types)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
