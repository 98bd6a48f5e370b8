"""Sandboxed hosts that a printed ``tpubuild run``/launch script really reaches: a stand-in
``gcloud`` on PATH that runs ``ssh --command`` in the named host's sandbox (``sh``, its home as the
working folder) and copies ``scp`` sources into that home, as the real gcloud does over the wire.

Each host is a folder ``<box>/<name>/`` with ``run/ready``, ``profile.d/tpubuild.sh`` (what
startup.sh writes: the worker number and the XLA environment) and ``home/``. The absolute host
paths of the scripts (``/run/tpubuild/``, ``/etc/profile.d/``) are moved into the host's folder.
vm: ``gcloud compute tpus tpu-vm list`` prints ``<box>/slices`` (the TPU VMs of the zone), and
``gcloud [alpha] compute tpus tpu-vm ssh|scp TPU ... --worker=all|N`` reaches the hosts in worker
order when TPU is one of them (else NOT_FOUND, exit 1), appending TPU to ``<box>/tpus``; mig:
``gcloud compute ssh|scp NAME`` the host called NAME, ``instance-groups managed list`` prints the
groups of ``<box>/groups/`` its ``--filter=name~"REGEX"`` matches, and ``list-instances GROUP``
prints ``<box>/groups/GROUP`` (NOT_FOUND when absent; appending GROUP to ``<box>/listed``), or
``<box>/listing`` when no groups are given. Every call is appended to ``<box>/calls`` as ``verb host``. ``pgrep``/``pkill``
see only the processes the hosts started (:data:`FAKE_PROCESSES`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

FAKE_GCLOUD = r'''#!{python}
import os, shutil, subprocess, sys
from pathlib import Path

box = Path(os.environ["SANDBOX"])
args = sys.argv[1:]
flags = dict(a[2:].split("=", 1) if "=" in a else (a[2:], "") for a in args if a.startswith("--"))
pos = [a for a in args if not a.startswith("--")]
if "list-instances" in pos:
    group = pos[pos.index("list-instances") + 1]
    if (box / "groups").is_dir():
        with open(box / "listed", "a") as f:
            f.write(group + "\n")
        if not (box / "groups" / group).exists():
            sys.exit(f"ERROR: (gcloud.compute.instance-groups.managed.list-instances) NOT_FOUND: MIG {group}")
        sys.stdout.write((box / "groups" / group).read_text())
        sys.exit(0)
    sys.stdout.write((box / "listing").read_text())
    sys.exit(0)
if "instance-groups" in pos and "list" in pos:
    import re
    match = re.fullmatch(r'name~"(.*)"', flags.get("filter", ""))
    for group in sorted(os.listdir(box / "groups")):
        if match is None or re.search(match.group(1), group):
            print(group)
    sys.exit(0)
if "tpu-vm" in pos and "list" in pos:
    sys.stdout.write((box / "slices").read_text())
    sys.exit(0)
verb = next(a for a in pos if a in ("ssh", "scp"))
rest = pos[pos.index(verb) + 1:]
workers = (box / "workers").read_text().split()
if "tpu-vm" in pos:
    tpu = rest[0] if verb == "ssh" else rest[-1].split(":", 1)[0]
    with open(box / "tpus", "a") as f:
        f.write(tpu + "\n")
    if tpu not in (box / "slices").read_text().split():
        sys.exit(f"ERROR: (gcloud.compute.tpus.tpu-vm.{verb}) NOT_FOUND: TPU VM {tpu} was not found")


def targets(name):
    if "tpu-vm" in pos:
        w = flags["worker"]
        return workers if w == "all" else [workers[int(w)]]
    return [name]


def log(host):
    with open(box / "calls", "a") as f:
        f.write(f"{verb} {host}\n")


if verb == "ssh":
    rc = 0
    for host in targets(rest[0]):
        log(host)
        root = box / host
        cmd = flags["command"].replace("/run/tpubuild/", f"{root}/run/").replace("/etc/profile.d/", f"{root}/profile.d/")
        env = {**os.environ, "HOME": str(root / "home")}
        rc = subprocess.run(["sh", "-c", cmd], cwd=root / "home", env=env).returncode or rc
    sys.exit(rc)
*sources, dest = rest
name, path = dest.split(":", 1)
for host in targets(name):
    log(host)
    target = box / host / "home" / path
    if path.endswith("/") and not target.is_dir():
        sys.exit(f"scp: {path}: No such file or directory")
    for src in sources:
        into = target / Path(src).name if target.is_dir() else target
        if Path(src).is_dir():
            shutil.copytree(src, into, dirs_exist_ok=True)
        else:
            shutil.copy2(src, into)
'''


#: ``pgrep``/``pkill`` on the sandbox's hosts: they see only the processes a sandboxed host started
#: (``SANDBOX=<box>`` in their environment), as a host sees only its own; the real ones would see,
#: and pkill would signal, the training of tests running beside this one.
FAKE_PROCESSES = r'''#!{python}
import os, re, signal, sys

kill = os.path.basename(sys.argv[0]) == "pkill"
sig, full, words = signal.SIGTERM, False, []
for a in sys.argv[1:]:
    if a == "-f":
        full = True
    elif kill and a[:1] == "-" and a[1:].isdigit():
        sig = int(a[1:])
    elif kill and a[:1] == "-" and a[1:].isalpha():
        sig = getattr(signal, "SIG" + a[1:])
    elif a[:1] == "-":
        sys.exit(f"sandbox {os.path.basename(sys.argv[0])}: flag {a} is not stood in for")
    else:
        words.append(a)
pattern, mark, found = re.compile(words[0]), ("SANDBOX=" + os.environ["SANDBOX"]).encode(), []
for pid in filter(str.isdigit, os.listdir("/proc")):
    if int(pid) == os.getpid():
        continue
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            if mark not in f.read().split(b"\0"):
                continue
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            line = f.read().rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace")
        with open(f"/proc/{pid}/comm") as f:
            comm = f.read().strip()
    except OSError:
        continue
    if pattern.search(line if full else comm):
        found.append(int(pid))
for pid in found:
    if kill:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    else:
        print(pid)
sys.exit(0 if found else 1)
'''


def sandbox(box: Path, names: list[str], profile: str = "", *, listing: list[str] | None = None,
            slices: list[str] = (), groups: dict[str, list[str]] | None = None) -> dict[str, str]:
    """Hosts ``names`` (worker order) under ``box``; ``profile`` is added to each host's
    /etc/profile.d/tpubuild.sh after its worker number; vm: ``slices``, the TPU VMs of the zone
    (the hosts are those of each); mig: ``groups``, the zone's MIGs and the VMs each lists (none
    given: any ``list-instances`` prints ``listing``, default ``names``). Returns the environment to run a printed
    script in (``bash -c``)."""
    bin_dir = box / "bin"
    bin_dir.mkdir(parents=True)
    stand_ins = {"gcloud": FAKE_GCLOUD.replace("{python}", sys.executable),
                 "sudo": '#!/bin/sh\nexec "$@"\n', "mountpoint": "#!/bin/sh\nexit 0\n",
                 "pgrep": FAKE_PROCESSES.replace("{python}", sys.executable),
                 "pkill": FAKE_PROCESSES.replace("{python}", sys.executable)}
    for name, text in stand_ins.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    for worker, name in enumerate(names):
        root = box / name
        for d in ("run", "profile.d", "home"):
            (root / d).mkdir(parents=True)
        (root / "run/ready").write_text("")
        (root / "profile.d/tpubuild.sh").write_text(
            f"export TPU_WORKER_ID={worker}\nexport TPUBUILD_WORKER_NUMBER={worker}\n{profile}")
    (box / "workers").write_text("\n".join(names) + "\n")
    (box / "listing").write_text("\n".join(listing if listing is not None else names) + "\n")
    (box / "slices").write_text("".join(f"{s}\n" for s in slices))
    if groups is not None:
        (box / "groups").mkdir()
        for group, vms in groups.items():
            (box / "groups" / group).write_text("".join(f"{n}\n" for n in vms))
    return {**os.environ, "SANDBOX": str(box), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def tpus(box: Path) -> list[str]:
    """vm: the TPU VM each ``tpu-vm ssh``/``scp`` so far addressed."""
    path = box / "tpus"
    return path.read_text().splitlines() if path.exists() else []


def calls(box: Path) -> list[str]:
    """``verb host`` of every gcloud call so far."""
    path = box / "calls"
    return path.read_text().splitlines() if path.exists() else []


def listed(box: Path) -> list[str]:
    """mig: the group each ``list-instances`` so far listed."""
    path = box / "listed"
    return path.read_text().splitlines() if path.exists() else []


#: The host scripts that find the slice before they reach a host: ``stop --probe`` and ``train roberta``
#: (:func:`refused_in_one_line`'s default), and with ``run`` and ``stop`` every script that does.
PROBE_AND_TRAIN = (("stop", "--probe"), ("train", "roberta"))
EVERY_SCRIPT = (("run",), ("stop",), ("train", "roberta"))


def refused_in_one_line(run: Any, values: str, says: str, box: Path,
                        scripts: tuple[tuple[str, ...], ...] = PROBE_AND_TRAIN) -> None:
    """Each of ``scripts`` (dry-run scripts, run by ``run(*args)``; ``run`` runs ``true``) fails with
    the one line ``says`` and reaches no host, nor lists any group."""
    for script in scripts:
        args = [*script, "--dry-run", "--values", values, *(["--", "true"] if script == ("run",) else [])]
        r = run(*args)
        assert r.returncode == 1 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)
        assert calls(box) == [] and listed(box) == [], args


def preset_refused_in_one_line(cli: Any, make_env: Any, tmp_path: Path, monkeypatch: Any, example: Path,
                               names: list[str], preset: str, says: str, **slots: Any) -> None:
    """A preset ``TPUBUILD_SLICE`` that is not a live slot of the sandbox (``slots``: :func:`sandbox`'s
    ``groups`` on mig, ``slices`` on vm) is refused by :func:`refused_in_one_line`."""
    monkeypatch.chdir(tmp_path)
    values = make_env(example, MOUNT_POINT=str(tmp_path / "mnt"))
    box = tmp_path / "hosts"
    env = {**sandbox(box, names, **slots), "TPUBUILD_SLICE": preset}
    refused_in_one_line(lambda *args: bash(printed(cli, *args), env, tmp_path), values, says, box)


def printed(cli: Any, *args: str) -> str:
    """What ``tpubuild ARGS`` prints (a script), once it exits 0."""
    code, out, err = cli(*args)
    assert code == 0, err
    return out


def bash(script: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``script`` under bash in ``env`` (a sandbox's), from ``cwd``."""
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def wait_until(predicate: Any, timeout: float = 30, poll: float = 0.2) -> bool:
    """Whether ``predicate()`` came true within ``timeout`` seconds (looked at every ``poll``)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(poll)
    return False
