"""The stand-in world of the convergence harness (tests/support/converge.py): ``terraform``,
``gcloud``, ``docker``, ``tpubuild`` and the seeder as small scripts that keep one world on disk
($STANDIN_WORLD), so a build stopped anywhere and run again can be compared with one that was not.

The world (every path relative to $STANDIN_WORLD):

* ``res/<name>``: a live resource (its content: its config, e.g. the slice's accelerator type);
* ``tf/<tfdir>/state.json``: the module's Terraform state ({"serial", "resources": {name: config}});
  ``tf/<tfdir>/lock.json``: its state lock while held, with Terraform's lock info (ID, Operation,
  Who, Created);
* ``desired/<tfdir>.json``: what the module's configuration asks for (the harness writes it from
  the values): ``resources`` {name: config}, ``data`` (names that hold data), ``slice`` (the slot
  names, the config, ``mbb``: make-before-break keeps the other slot until ``-var=release=true``),
  ``identity`` (the address of the hosts' account, which ``-target`` plans alone: the identity step)
  and ``runs_as`` (the accounts its slice runs as: creating the slice fails while one is not live);
* ``gcs/<bucket>/<object>``: objects (``gcloud storage cp/cat/rm``);
* ``attached/<vm>`` (a disk attached to a VM: it goes when the VM goes, with its slice's delete or a
  group's shrink, so a group taken through 0 and regrown needs its disk attached again),
  ``size/<group>`` (a group's target size, once gcloud resized it), ``policy/<group>`` (the workload
  policy Terraform made the group with, ``<group>-<topology>``: what mig-drain's ``describe`` reads),
  ``training`` (the slice the model trains on), ``copies/<name>`` (snapshots and
  backups), ``applied.json``, ``ttl.json`` (finalize), ``events`` (one line per create, delete,
  stop and launch, with the build).

``terraform apply`` dies (exit 137, its state lock left held) after its first change when the step
runs with STANDIN_DIE_IN_APPLY=1: a worker lost in the middle of an apply.

``gcloud`` is in tests/support/converge_gcloud.py. They can say no: a command none of them models fails (exit 3, one line naming it), so what the
harness covers shows; a schedule queues refusals (tests/support/converge_refusals.py: the quota at
the capacity check, a stockout at the slice's create, a slice not READY at the swap's ``describe``
or ``list-instances``), in the words Google uses. ``terraform plan`` writes ``terraform show -json``
as Terraform does, and ``tpubuild guard`` is the real one (``python -m builder guard``), its verdict
kept per distinct plan (the guard is pure: the same plan and flags get the same verdict).
"""

from __future__ import annotations

#: terraform: init and show in sh (show prints what plan wrote beside the plan), the rest in Python.
TERRAFORM_SH = """#!/bin/sh
case "$1" in
  init) exit 0 ;;
  show) exec cat "$3.show" ;;
esac
exec "$STANDIN_PYTHON" -S "$STANDIN_WORLD/bin/terraform.py" "$@"
"""

TERRAFORM = r'''import datetime, json, os, sys, uuid
from pathlib import Path

world = Path(os.environ["STANDIN_WORLD"])
tfdir = Path.cwd().name
home = world / "tf" / tfdir
home.mkdir(parents=True, exist_ok=True)
state_file, lock_file = home / "state.json", home / "lock.json"
from standin_refusals import refused
args = sys.argv[1:]
cmd = args[0]


def vms_of(name):
    """The attachments of slice ``name``'s VMs (the TPU VM itself, a group's <name>-<i>)."""
    att = world / "attached"
    return [p for p in att.glob(f"{name}*") if p.name == name or p.name[len(name) + 1:].isdigit()] if att.exists() else []


def state():
    return json.loads(state_file.read_text()) if state_file.exists() else {"serial": 0, "resources": {}}


def save(st):
    st["serial"] += 1
    state_file.write_text(json.dumps(st, sort_keys=True))


def event(line):
    with open(world / "events", "a") as f:
        f.write(f"{line} by {os.environ.get('STANDIN_BUILD', '?')}\n")


def lock(op):
    if lock_file.exists():
        info = json.loads(lock_file.read_text())
        print("Error: Error acquiring the state lock\n\nError message: writing \"gs://state/%s/default.tflock\" "
              "failed: googleapi: Error 412: At least one of the pre-conditions you specified did not hold., "
              "conditionNotMet\nLock Info:\n  ID:        %s\n  Path:      %s\n  Operation: %s\n  Who:       %s\n"
              "  Version:   1.16.4\n  Created:   %s\n  Info:\n" % (tfdir, info["ID"], info["Path"], info["Operation"],
                                                                  info["Who"], info["Created"]), file=sys.stderr)
        sys.exit(1)
    lock_file.write_text(json.dumps({
        "ID": str(uuid.uuid4()), "Path": f"gs://state/{tfdir}/default.tflock", "Operation": op,
        "Who": "root@" + os.environ.get("STANDIN_HOST", "localhost"), "Version": "1.16.4",
        "Created": datetime.datetime.now(datetime.timezone.utc).isoformat(), "Info": ""}))


def unlock():
    lock_file.unlink()


def target(st, want):
    sl = want.get("slice")
    if not sl:
        return ""
    have = st["resources"]
    same = [n for n in sl["names"] if have.get(n) == sl["config"]]
    if same:
        return same[0]
    free = [n for n in sl["names"] if n not in have]
    return free[0] if sl["mbb"] and free else sl["names"][0]


def changes(st, destroy, release):
    have = st["resources"]
    if destroy:
        return [["delete", n, have[n]] for n in sorted(have)]
    want_doc = json.loads((world / "desired" / f"{tfdir}.json").read_text())
    want = dict(want_doc["resources"])
    t = target(st, want_doc)
    if t:
        want[t] = want_doc["slice"]["config"]
        if want_doc["slice"]["mbb"] and not release:
            want.update({n: have[n] for n in want_doc["slice"]["names"] if n in have and n != t})
    out = [["delete", n, have[n]] for n in sorted(have) if n not in want or want[n] != have[n]]
    return out + [["create", n, want[n]] for n in sorted(want) if have.get(n) != want[n]]


if cmd == "init":
    sys.exit(0)
if cmd == "plan":
    out = next(a[len("-out="):] for a in args if a.startswith("-out="))
    lock("OperationTypePlan")
    st = state()
    plan = {"serial": st["serial"], "changes": changes(st, "-destroy" in args, "-var=release=true" in args)}
    targets = [a[len("-target="):] for a in args if a.startswith("-target=")]
    if targets:  # only the targeted resources change
        plan["changes"] = [c for c in plan["changes"] if c[1] in targets]
    unlock()
    Path(out).write_text(json.dumps(plan))
    # `terraform show -json` of it, as Terraform writes it (standin_show.py; the real guard reads it)
    from standin_show import show
    want_doc = json.loads((world / "desired" / f"{tfdir}.json").read_text())
    Path(out + ".show").write_text(show(plan["changes"], st["resources"], want_doc, bool(targets)))
    sys.exit(0)
if cmd == "apply":
    plan = json.loads(Path(args[-1]).read_text())
    lock("OperationTypeApply")
    st = state()
    if st["serial"] != plan["serial"]:
        unlock()
        print("Error: Saved plan is stale", file=sys.stderr)
        sys.exit(1)
    want_doc = json.loads((world / "desired" / f"{tfdir}.json").read_text())
    for i, (action, name, config) in enumerate(plan["changes"]):
        if os.environ.get("STANDIN_DIE_IN_APPLY") and i == 1:
            os._exit(137)
        slices = (want_doc.get("slice") or {}).get("names", [])
        missing = [a for a in want_doc.get("runs_as", []) if not (world / "res" / a).exists()]
        refusal = refused("apply") if action == "create" and name in slices else None
        if refusal:  # Google refuses the slice (a stockout, a quota): Terraform saves what it made, unlocks
            unlock()
            print(refusal["text"], file=sys.stderr)
            sys.exit(1)
        if action == "create" and name in slices and missing:
            unlock()
            print(f"Error: creating {name}: the service account {missing[0]} its VMs run as does not exist", file=sys.stderr)
            sys.exit(1)
        (world / "size" / name).unlink(missing_ok=True)  # a group made anew has the size it was made with
        (world / "policy" / name).unlink(missing_ok=True)
        if action == "delete":
            (world / "res" / name).unlink(missing_ok=True)
            for vm in vms_of(name):  # its VMs are gone, and with them their disks' attachments
                vm.unlink()
            st["resources"].pop(name)
            training = world / "training"
            if training.exists() and training.read_text() == name:  # whatever ran there stops
                training.unlink()
                event(f"stopped {name} (deleted)")
        else:
            (world / "res").mkdir(exist_ok=True)
            (world / "res" / name).write_text(config)
            if name in slices and want_doc["slice"].get("topology"):  # modules/tpu_mig: <name>-<topology>
                (world / "policy").mkdir(exist_ok=True)
                (world / "policy" / name).write_text(f"{name}-{want_doc['slice']['topology']}")
            st["resources"][name] = config
        event(f"{action}d {name} {config}")
        save(st)
    if os.environ.get("STANDIN_DIE_IN_APPLY"):
        os._exit(137)
    unlock()
    sys.exit(0)
if cmd == "output":
    st = state()
    want = json.loads((world / "desired" / f"{tfdir}.json").read_text())
    raw = {"nfs_ip": "10.20.0.2", "share_name": "tpushare"}  # modules/filestore's outputs
    if args[-1] == "name":
        print(target(st, want), end="")
    elif "-raw" in args and args[-1] in raw and st["resources"]:
        print(raw[args[-1]], end="")
    else:
        names = want["slice"]["names"] if want.get("slice") else []
        print(json.dumps({"ab"[i]: {"name": n} for i, n in enumerate(names) if n in st["resources"]}))
    sys.exit(0)
print(f"terraform stand-in: {cmd} is not modelled", file=sys.stderr)
sys.exit(3)
'''

#: tpubuild: the real guard and the handover scripts in sh; check-capacity and finalize in Python.
TPUBUILD_SH = """#!/bin/sh
case "$1" in
  stop) case "$*" in *--probe*) echo "gcloud standin-probe" ;; *) echo "gcloud standin-stop" ;; esac; exit 0 ;;
  train) echo "gcloud standin-launch"; exit 0 ;;
  guard)  # the real guard (python -m builder guard), once per distinct plan and flags: it is pure
    key="$( { sed 's/"timestamp":"[^"]*"//' "$3"; shift 3; echo "$*"; } | sha256sum | cut -c1-40)"
    seen="$STANDIN_CACHE/guard-$key"
    if [ ! -f "$seen.rc" ]; then
      rc=0
      PYTHONPATH="$STANDIN_REPO" "$STANDIN_PYTHON" -m builder "$@" > "$seen.out.$$" 2> "$seen.err.$$" || rc=$?
      echo "$rc" > "$seen.rc.$$"
      mv "$seen.out.$$" "$seen.out"; mv "$seen.err.$$" "$seen.err"; mv "$seen.rc.$$" "$seen.rc"
    fi
    cat "$seen.out"; cat "$seen.err" >&2
    exit "$(cat "$seen.rc")" ;;
esac
exec "$STANDIN_PYTHON" -S "$STANDIN_WORLD/bin/tpubuild.py" "$@"
"""

TPUBUILD = r'''import json, os, sys
from pathlib import Path

world = Path(os.environ["STANDIN_WORLD"])
argv = sys.argv[1:]


def arg(name):
    return argv[argv.index(name) + 1]


if argv[0] == "check-capacity":  # the quota or reservation refuses the slice when the schedule says so
    from standin_refusals import refused
    refusal = refused("check-capacity")
    if refusal:
        print(refusal["text"], file=sys.stderr)
        sys.exit(1)
elif argv[0] == "stop":
    print("gcloud standin-probe" if "--probe" in argv else "gcloud standin-stop")
elif argv[0] == "train":
    print("gcloud standin-launch")
elif argv[0] == "finalize":
    live = sorted(p.name for p in (world / "res").glob("*")) if (world / "res").exists() else []
    (world / "applied.json").write_text(json.dumps({"action": arg("--action"), "live": live, "build": arg("--build-id")}))
    if arg("--action") == "destroy":
        (world / "ttl.json").unlink(missing_ok=True)
    else:
        (world / "ttl.json").write_text(json.dumps({"destroys": live}))
    lock = Path(os.environ["STANDIN_ENV_LOCK"])
    if lock.exists() and json.loads(lock.read_text())["build_id"] == arg("--build-id"):
        lock.unlink()
else:
    print(f"tpubuild stand-in: 'tpubuild {' '.join(argv)}' is not modelled", file=sys.stderr)
    sys.exit(3)
sys.exit(0)
'''

DOCKER = ('#!/bin/sh\ncase "$1" in manifest|build|push) exit 0 ;; esac\n'
          'echo "docker stand-in: \'docker $*\' is not modelled" >&2\nexit 3\n')

#: env_setup/seeder/run_seeder.sh in the build's source (the seeder itself, its marker written last
#: and an interrupted copy resumed, runs in tests/shell/test_seeder.py and test_run_seeder.py).
SEEDER = r'''#!/usr/bin/env bash
set -euo pipefail
[ -e "$STANDIN_WORLD/res/$DISK_NAME" ] || { echo "no disk $DISK_NAME" >&2; exit 1; }
mkdir -p "$STANDIN_WORLD/seeded"
echo "$GCS_DATASET" > "$STANDIN_WORLD/seeded/$DISK_NAME"
'''
