"""Write builder/image/requirements.lock, the builder image's one lock (builder/builder_image.py):
every distribution that setup.cfg's install_requires pulls in, as pip resolves them for a fresh
install of this repository, one ``name==version`` a line.

    python tools/image_lock.py           # print the lock pip would write now
    python tools/image_lock.py --write   # write it (a new lock is a new image tag)

tests/unit/test_builder_image.py checks the lock against setup.cfg without running pip.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from builder.catalogue.builder_image import LOCK  # noqa: E402

HEADER = ("# The tpubuild builder image's lock (builder/builder_image.py): written by\n"
          "# `python tools/image_lock.py --write` from setup.cfg's install_requires. Its digest is in the tag.\n")


def resolve() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "-q",
                        "--report", str(report), str(REPO)], check=True)
        installs = json.loads(report.read_text())["install"]
    rows = sorted((i["metadata"]["name"], i["metadata"]["version"]) for i in installs
                  if i["metadata"]["name"] != "tpubuild")
    return HEADER + "".join(f"{name}=={version}\n" for name, version in sorted(rows, key=lambda r: r[0].lower()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {LOCK.relative_to(REPO)}")
    text = resolve()
    if parser.parse_args().write:
        LOCK.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
