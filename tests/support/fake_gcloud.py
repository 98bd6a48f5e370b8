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
  describe <id>`` prints (no file: NOT_FOUND), ``builds/<id>.tags`` its tags (``;``-joined),
  ``builds/<id>.log`` what ``builds log <id>`` prints;
* ``disk_users``: the VMs that hold the dataset disk, one name a line (``disks describe`` prints
  their self links, ``;``-joined, as gcloud prints a list; ``instances attach-disk`` adds one);
  ``disk_mode``: its access mode (default READ_ONLY_MANY); ``attach_rc``: attach-disk's exit status;
* ``ssh_rc``: the exit status of ``compute ssh``/``scp``/``tpu-vm ssh``/``scp`` (default 0) to a
  host that exists.

With ``STORAGE_EMULATOR_HOST`` set, ``storage cat``, ``cp`` and ``rm`` go to that fake-gcs-server
instead (its JSON API), and with ``TPUBUILD_CLOUDBUILD_ENDPOINT`` set, ``builds describe`` and
``builds list --ongoing`` ask that Cloud Build fake (tests/support/fakes/gcp.py: GetBuild, and
ListBuilds with Cloud Build's filter), so what the real storage and Cloud Build clients of
``tpubuild`` wrote (the environment lock, the builds it created) is what the health build reads
(tests/shell/test_converge_recovery.py).

Every call is appended to ``calls.log`` (and its exact argv to ``argv.jsonl``). The command lines themselves are proven in the REAL
gcloud by tests/integration/test_gcloud_lines.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import urllib.parse
from pathlib import Path

STATE = Path(os.environ["FAKE_GCLOUD_STATE"])
GCS = os.environ.get("STORAGE_EMULATOR_HOST", "").rstrip("/")
CLOUDBUILD = os.environ.get("TPUBUILD_CLOUDBUILD_ENDPOINT", "").rstrip("/")


def _http(method: str, url: str, data: bytes | None = None) -> bytes | None:
    """The body of the answer; None on 404 (any other error fails the call loudly)."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.read()
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise


def _gcs_url(uri: str, *, upload: bool = False) -> str:
    assert uri.startswith("gs://"), uri
    bucket, _, name = uri[len("gs://"):].partition("/")
    if upload:
        return f"{GCS}/upload/storage/v1/b/{bucket}/o?uploadType=media&name={urllib.parse.quote(name, safe='')}"
    return f"{GCS}/storage/v1/b/{bucket}/o/{urllib.parse.quote(name, safe='')}"


def _cat(uri: str) -> bytes | None:
    if GCS:
        return _http("GET", _gcs_url(uri) + "?alt=media")
    path = _object(uri)
    return path.read_bytes() if path.exists() else None


def _cp(local: str, uri: str) -> None:
    if GCS:
        _http("POST", _gcs_url(uri, upload=True), Path(local).read_bytes())
        return
    dest = _object(uri)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(local, dest)


def _rm(uri: str) -> bool:
    if GCS:
        return _http("DELETE", _gcs_url(uri)) is not None
    path = _object(uri)
    if not path.exists():
        return False
    path.unlink()
    return True


def _build(build_id: str, project: str) -> dict | None:
    """The build as Cloud Build's GetBuild answers it (the fake, or ``builds/<id>`` on disk)."""
    if CLOUDBUILD:
        body = _http("GET", f"{CLOUDBUILD}/v1/projects/{project}/builds/{urllib.parse.quote(build_id)}")
        return None if body is None else json.loads(body)
    status = _read(f"builds/{build_id}")
    return None if status is None else {"status": status.strip(),
                                        "tags": [t for t in (_read(f"builds/{build_id}.tags") or "").split(";") if t]}


def _ongoing(argv: list[str]) -> list[str]:
    """``builds list --ongoing``: the QUEUED or WORKING builds, filtered by ``--filter=tags=TAG``."""
    if not CLOUDBUILD:
        return (_read("ongoing") or "").split()
    spec = next((a.split("=", 1)[1] for a in argv if a.startswith("--filter=")), "")
    match = re.fullmatch(r"tags=([\w.-]+)", spec)
    assert match and "--ongoing" in argv, f"fake gcloud: builds list {argv} is not stood in for"
    project = next(a.split("=", 1)[1] for a in argv if a.startswith("--project="))
    query = urllib.parse.quote(f'tags="{match.group(1)}" AND (status="QUEUED" OR status="WORKING")')
    body = json.loads(_http("GET", f"{CLOUDBUILD}/v1/projects/{project}/builds?filter={query}") or b"{}")
    return [b["id"] for b in body.get("builds", [])]


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
        print("".join(f"{i}\n" for i in _ongoing(argv)), end="")
        return 0
    if words[:2] == ["builds", "log"]:  # a build's log, as Cloud Logging gives it back: builds/<id>.log
        text = _read(f"builds/{words[2]}.log")
        if text is None:
            return _not_found(f"build {words[2]}")
        print(text, end="")
        return 0
    if words[:2] == ["builds", "describe"]:
        project = next((a.split("=", 1)[1] for a in argv if a.startswith("--project=")), "")
        build = _build(words[2], project)
        if build is None:
            return _not_found(f"build {words[2]}")
        tags = any("tags" in a for a in argv)
        print(";".join(build.get("tags", [])) if tags else build["status"])  # gcloud joins a list with ;
        return 0
    if words[:2] == ["storage", "cat"]:
        data = _cat(words[2])
        if data is None:
            print(f"ERROR: (gcloud.storage.cat) The following URLs matched no objects or files:\n{words[2]}",
                  file=sys.stderr)
            return 1
        sys.stdout.write(data.decode())
        return 0
    if words[:2] == ["storage", "cp"]:
        _cp(words[2], words[3])
        return 0
    if words[:2] == ["storage", "rm"]:
        return 0 if _rm(words[2]) else _not_found(words[2])
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
