#!/usr/bin/env python3
"""A stateful local gcloud for the shell sandbox (tests/shell/test_recovery_sandbox.py): the few commands
the health build runs, against files under ``$FAKE_GCLOUD_STATE``:

* ``gcs/<bucket>/<object>``: Cloud Storage (``storage cat``, ``cp``, ``rm``);
* ``tpus/<name>``: each TPU VM of the zone and its state (``tpu-vm list`` prints them; a name with
  no file is NOT_FOUND to ``describe``, ``delete``, ``ssh`` and ``scp``; ``delete`` removes it);
* ``migs/<name>``: each managed instance group of the zone and what its ``instance-groups managed
  list-instances`` prints (``instanceStatus currentAction``; with ``--format`` of
  ``instance.basename()`` the names ``<name>-0000``, ...); ``instance-groups managed list`` prints
  the names its ``--filter=name~"REGEX"`` matches; a group with no file is NOT_FOUND; ``delete``
  removes it; ``resize --size=N`` makes its listing N VMs ``RUNNING NONE`` (a bulk group: every VM
  at once), refused from a non-zero size up (Google's bulk mode grows only from 0; the sandbox's
  groups are multi-host TPU slices), ``wait-until`` returns at once;
  ``mig_errors/<name>``: what its ``list-errors`` prints (``code<TAB>message`` lines);
* ``ttl``: what ``scheduler jobs describe`` prints (absent file: NOT_FOUND);
* ``ongoing``: the ids ``builds list --ongoing`` prints; ``builds/<id>``: the status ``builds
  describe <id>`` prints (no file: NOT_FOUND), ``builds/<id>.tags`` its tags (``;``-joined);
* ``disk_users``: the VMs that hold the dataset disk, one name a line (``disks describe`` prints
  their self links, ``;``-joined, as gcloud prints a list; ``instances attach-disk`` adds one);
  ``disk_mode``: its access mode (default READ_ONLY_MANY); ``attach_rc``: attach-disk's exit status;
* ``ssh_rc``: the exit status of ``compute ssh``/``scp``/``tpu-vm ssh``/``scp`` (default 0) to a
  host that exists.

Every call is appended to ``calls.log`` (and its exact argv to ``argv.jsonl``). The command lines themselves are proven in the REAL
gcloud by tests/integration/test_gcloud_lines.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

STATE = Path(os.environ["FAKE_GCLOUD_STATE"])


def _object(uri: str) -> Path:
    assert uri.startswith("gs://"), uri
    return STATE / "gcs" / uri[len("gs://"):]


def _read(name: str) -> str | None:
    path = STATE / name
    return path.read_text() if path.exists() else None


def _not_found(what: str) -> int:
    print(f"ERROR: (gcloud) NOT_FOUND: {what} was not found", file=sys.stderr)
    return 1


def main(argv: list[str]) -> int:
    with (STATE / "calls.log").open("a") as log:
        log.write("gcloud " + " ".join(argv) + "\n")
    with (STATE / "argv.jsonl").open("a") as log:  # exactly what bash handed gcloud
        log.write(json.dumps(argv) + "\n")
    words = [a for a in argv if not a.startswith("-")]
    if words[:2] == ["builds", "list"]:
        print(_read("ongoing") or "", end="")
        return 0
    if words[:2] == ["builds", "describe"]:
        status = _read(f"builds/{words[2]}")
        if status is None:
            return _not_found(f"build {words[2]}")
        tags = any("tags" in a for a in argv)
        print((_read(f"builds/{words[2]}.tags") or "") if tags else status.strip())
        return 0
    if words[:2] == ["storage", "cat"]:
        path = _object(words[2])
        if not path.exists():
            print(f"ERROR: (gcloud.storage.cat) The following URLs matched no objects or files:\n{words[2]}",
                  file=sys.stderr)
            return 1
        sys.stdout.write(path.read_text())
        return 0
    if words[:2] == ["storage", "cp"]:
        dest = _object(words[3])
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(words[2], dest)
        return 0
    if words[:2] == ["storage", "rm"]:
        path = _object(words[2])
        if not path.exists():
            return _not_found(words[2])
        path.unlink()
        return 0
    if words[:3] == ["scheduler", "jobs", "describe"]:
        ttl = _read("ttl")
        if ttl is None:
            return _not_found(words[3])
        print(ttl)
        return 0
    tpu = words[words.index("tpu-vm"):] if "tpu-vm" in words else []
    if tpu[:1] == ["tpu-vm"] and len(tpu) > 1 and tpu[1] == "list":
        fields = next((a for a in argv if a.startswith("--format=")), "")
        for path in sorted((STATE / "tpus").glob("*")):
            print(f"{path.name}\t{path.read_text().strip()}" if "state" in fields else path.name)
        return 0
    if tpu[1:2] in (["describe"], ["delete"], ["ssh"], ["scp"]):
        name = tpu[2] if tpu[1] != "scp" else next(w.split(":", 1)[0] for w in tpu[2:] if ":" in w)
        path = STATE / "tpus" / name
        if not path.exists():
            return _not_found(f"TPU VM {name}")
        if tpu[1] == "describe":
            print(path.read_text().strip())
        elif tpu[1] == "delete":
            path.unlink()
        else:
            return int(_read("ssh_rc") or 0)
        return 0
    if words[:4] == ["compute", "instance-groups", "managed", "list"]:
        spec = next((a.split("=", 1)[1] for a in argv if a.startswith("--filter=")), "")
        match = re.fullmatch(r'name~"(.*)"', spec)
        assert match or not spec, f"fake gcloud: filter {spec!r} is not stood in for"
        for path in sorted((STATE / "migs").glob("*")):
            if match is None or re.search(match.group(1), path.name):
                print(path.name)
        return 0
    if words[:4] == ["compute", "instance-groups", "managed", "list-errors"]:
        if _read(f"migs/{words[4]}") is None:
            return _not_found(f"MIG {words[4]}")
        print(_read(f"mig_errors/{words[4]}") or "", end="")
        return 0
    if words[:4] == ["compute", "instance-groups", "managed", "delete"]:
        if _read(f"migs/{words[4]}") is None:
            return _not_found(f"MIG {words[4]}")
        (STATE / "migs" / words[4]).unlink()
        return 0
    if words[:4] == ["compute", "instance-groups", "managed", "resize"]:
        mig = _read(f"migs/{words[4]}")
        if mig is None:
            return _not_found(f"MIG {words[4]}")
        size, now = int(next(a.split("=", 1)[1] for a in argv if a.startswith("--size="))), len(mig.splitlines())
        if 0 < now < size:
            print(f"ERROR: (gcloud.compute.instance-groups.managed.resize) A MIG in bulk mode adds instances only "
                  f"while its target size is 0: {words[4]} is at {now}", file=sys.stderr)
            return 1
        (STATE / "migs" / words[4]).write_text("RUNNING NONE\n" * size)
        return 0
    if words[:4] == ["compute", "instance-groups", "managed", "wait-until"]:
        return 0 if _read(f"migs/{words[4]}") is not None else _not_found(f"MIG {words[4]}")
    if words[:4] == ["compute", "instance-groups", "managed", "list-instances"]:
        mig = _read(f"migs/{words[4]}")
        if mig is None:
            return _not_found(f"MIG {words[4]}")
        if any("instance.basename()" in a for a in argv):  # the launch's host listing
            print("\n".join(f"{words[4]}-{i:04d}" for i, _ in enumerate(mig.splitlines())))
        else:
            print(mig, end="")
        return 0
    if words[:3] == ["compute", "disks", "describe"]:
        if any("accessMode" in a for a in argv):
            print((_read("disk_mode") or "READ_ONLY_MANY").strip())
        else:
            users = (_read("disk_users") or "").split()
            print(";".join(f"https://www.googleapis.com/compute/v1/projects/p/zones/z/instances/{u}" for u in users))
        return 0
    if words[:3] == ["compute", "instances", "attach-disk"]:
        if int(_read("attach_rc") or 0):
            print(f"ERROR: (gcloud.compute.instances.attach-disk) {words[3]}: the disk is in use", file=sys.stderr)
            return 1
        with (STATE / "disk_users").open("a") as users:
            users.write(words[3] + "\n")
        return 0
    if "ssh" in words or "scp" in words:
        return int(_read("ssh_rc") or 0)
    print(f"fake gcloud: unexpected command {argv}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
