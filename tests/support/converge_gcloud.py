"""The convergence harness's ``gcloud`` stand-in (the rest of its world: tests/support/converge_standins.py):
``bin/gcloud.py`` in a world, one Python script answering the commands the rendered steps run against
$STANDIN_WORLD as Google does: ``storage`` cat/cp/ls/rm on ``gcs/``; ``describe`` of a slice (its state),
a disk (its users, its access mode) or a group (its target size, its workload policy: ``policy/<group>``,
what Terraform made it with); ``resize`` of a group (``size/<group>``; a shrink takes the deleted VMs'
attachments with it; in bulk mode, STANDIN_BULK=1, a group grows only from 0, as about-bulk-mode says);
``list-instances`` (the value() fields asked: names, status, current action; while a not-ready refusal
is queued, VMs still being made); ``attach-disk``, snapshots and backups, and the ``standin-*`` words the
tpubuild stand-in's handover prints. Any other command fails (exit 3, one line naming it).
"""

GCLOUD = r'''
import json, os, sys
from pathlib import Path

world = Path(os.environ["STANDIN_WORLD"])
res = world / "res"
argv = sys.argv[1:]
fmt = next((a[len("--format="):] for a in argv if a.startswith("--format=")), "")
words = [a for a in argv if a == "-" or not a.startswith("-")]


def live(name):
    return (res / name).exists()


def event(line):
    with open(world / "events", "a") as f:
        f.write(f"{line} by {os.environ.get('STANDIN_BUILD', '?')}\n")


def flag(name):
    return next((a.split("=", 1)[1] for a in argv if a.startswith(f"--{name}=")), "")


def filtered():
    f = flag("filter")
    name = f.split('"')[1] if '"' in f else f.rsplit("/", 1)[-1].rstrip("$")
    return name if live(name) else ""


def size(group):
    """A group's target size: what gcloud last resized it to, else what Terraform made it with."""
    p = world / "size" / group
    return int(p.read_text()) if p.exists() else int(os.environ.get("STANDIN_VMS", "1"))


def vms(group):
    return [f"{group}-{i}" for i in range(size(group))] if live(group) else []


def unmodelled():
    """A command the stand-in does not model fails loudly: the harness's coverage shows."""
    print(f"gcloud stand-in: 'gcloud {' '.join(argv)}' is not modelled; model it in "
          "tests/support/converge_gcloud.py", file=sys.stderr)
    sys.exit(3)


def not_found(name):
    print(f"ERROR: (gcloud) NOT_FOUND: {name}", file=sys.stderr)
    sys.exit(1)


from standin_refusals import refused


if words[:1] == ["standin-probe"]:
    slice_ = os.environ.get("TPUBUILD_SLICE", "")
    training = (world / "training").read_text() if (world / "training").exists() else ""
    n = int((world / "probes").read_text()) + 1 if (world / "probes").exists() else 1
    (world / "probes").write_text(str(n))
    print(f"tpubuild-probe {int(training == slice_ and live(slice_))} {1000 + n}")
elif words[:1] == ["standin-stop"]:
    slice_ = os.environ.get("TPUBUILD_SLICE", "")
    if (world / "training").exists() and (world / "training").read_text() == slice_:
        (world / "training").unlink()
        event(f"stopped {slice_}")
elif words[:1] == ["standin-launch"]:
    slices = [n for d in (world / "desired").glob("*.json") for n in (json.loads(d.read_text()).get("slice") or {}).get("names", [])]
    on = [n for n in slices if live(n)]
    if len(on) != 1:
        print(f"launch: {len(on)} slices live, not one", file=sys.stderr)
        sys.exit(1)
    (world / "training").write_text(on[0])
    event(f"launched {on[0]}")
elif words[:1] == ["storage"]:
    def path(url):
        return world / "gcs" / url[len("gs://"):]
    if words[1] == "cat":
        p = path(words[2])
        if not p.exists():
            print(f"ERROR: (gcloud.storage.cat) The following URLs matched no objects or files:\n-{words[2]}", file=sys.stderr)
            sys.exit(1)
        sys.stdout.write(p.read_text())
    elif words[1] == "cp":
        src, dst = words[2], words[3]
        path(dst).parent.mkdir(parents=True, exist_ok=True)
        path(dst).write_text(sys.stdin.read() if src == "-" else Path(src).read_text())
    elif words[1] == "ls":
        p = path(words[2])
        if not p.is_dir() or not any(p.iterdir()):
            print(f"ERROR: (gcloud.storage.ls) One or more URLs matched no objects.", file=sys.stderr)
            sys.exit(1)
        for child in sorted(p.iterdir()):
            print(words[2].rstrip("/") + "/" + child.name + ("/" if child.is_dir() else ""))
    elif words[1] == "rm":
        p = path(words[2])
        if not p.exists() and "--continue-on-error" not in argv:
            sys.exit(1)
        p.unlink(missing_ok=True)
        while p.parent != world / "gcs" and not any(p.parent.iterdir()):  # a GCS folder is only a prefix
            p = p.parent
            p.rmdir()
    else:
        unmodelled()
elif "describe" in words:
    name = words[words.index("describe") + 1]
    if not live(name):
        not_found(name)
    if "state" in fmt:  # a slice not READY yet when the schedule says so (tpu-swap waits, then fails)
        refusal = refused("not-ready") if "resize-requests" not in words else None
        print(refusal["text"] if refusal else "READY" if "resize-requests" not in words else "SUCCEEDED")
    elif "sourceDisk" in fmt or "users" in fmt:
        print(",".join(f"projects/p/zones/z/disks/{d.name}" for d in (world / "attached").glob(f"{name}*")))
    elif "accessMode" in fmt:
        print("READ_ONLY_MANY")
    elif "targetSize" in fmt:
        print(len(vms(name)))
    elif "workloadPolicy" in fmt:  # the policy the group was made with (its config's topology), none for one VM
        policy = world / "policy" / name
        print(policy.read_text() if policy.exists() else "")
    else:
        unmodelled()
elif words[:4] == ["compute", "instance-groups", "managed", "resize"]:
    group, new = words[4], int(flag("size"))
    if not live(group):
        print(f"ERROR: (gcloud.compute.instance-groups.managed.resize) NOT_FOUND: {group}", file=sys.stderr)
        sys.exit(1)
    was = size(group)
    # Google's bulk mode (about-bulk-mode, "Configuration changes and resizing"; docs/modules.md):
    # a bulk group adds instances only while its target size is 0
    if os.environ.get("STANDIN_BULK") == "1" and 0 < was < new:
        print(f"ERROR: (gcloud.compute.instance-groups.managed.resize) A MIG in bulk mode adds instances only "
              f"while its target size is 0: {group} is at {was}, asked for {new}", file=sys.stderr)
        sys.exit(1)
    (world / "size").mkdir(exist_ok=True)
    (world / "size" / group).write_text(str(new))
    for i in range(new, was):  # the VMs a shrink deletes take their disks' attachments with them
        (world / "attached" / f"{group}-{i}").unlink(missing_ok=True)
elif "list-instances" in words:
    group = words[words.index("list-instances") + 1]
    fields = fmt[fmt.index("(") + 1:fmt.rindex(")")].split(",") if fmt.startswith("value(") else []
    # a not-ready refusal queued: the group's VMs are still being made, PROVISIONING with CREATING under
    # way, as Google lists them. Every question about their status is answered so (mig-resize's Spot
    # check asks instanceStatus alone: no VM stopped); the swap's (is every VM RUNNING with nothing
    # under way: instanceStatus and currentAction) takes it off the queue
    making = refused("not-ready", take="currentAction" in fields) if "instanceStatus" in fields else None
    status, action = making["text"].split() if making else ("RUNNING", "NONE")
    known = {"instanceStatus": status, "currentAction": action}
    if not fields or any(f not in known and f != "instance.basename()" for f in fields):
        unmodelled()
    print("\n".join("\t".join(v if f == "instance.basename()" else known[f] for f in fields) for v in vms(group)))
elif "list" in words:
    print(filtered())
elif "attach-disk" in words:
    vm = words[words.index("attach-disk") + 1]
    (world / "attached").mkdir(exist_ok=True)
    (world / "attached" / vm).write_text(flag("disk"))
elif "create" in words and ("snapshots" in words or "backups" in words):
    name = words[words.index("create") + 1]
    (world / "copies").mkdir(exist_ok=True)
    (world / "copies" / name).write_text(flag("source-disk") or flag("instance"))
    event(f"copied {flag('source-disk') or flag('instance')}")
# --- modelled as accepted where the resource exists: a group's wait (its size is the resize's, above),
# the disk the access mode describe answers (READ_ONLY_MANY)
elif words[:4] == ["compute", "instance-groups", "managed", "wait-until"]:
    live(words[4]) or not_found(words[4])
elif words[:3] == ["compute", "disks", "update"] and flag("access-mode"):
    live(words[3]) or not_found(words[3])
else:
    unmodelled()
sys.exit(0)
'''
