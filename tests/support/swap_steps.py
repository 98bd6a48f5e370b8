"""Make-before-break's rendered steps run in a sandbox (tests/shell/test_tpu_swap.py on vm,
test_mig_swap.py on mig): each step under its image's shell (``sh`` for the Terraform image's steps
under BusyBox, bash for gcloud's), with stand-ins for terraform and gcloud (the test's scripts) that
keep a journal of what happened to which slice, in the build's order, stopping at the first step
that fails, as Cloud Build does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, require
from tests.support.step_sandbox import ONLY_CREATES


def shell(entrypoint: str) -> list[str]:
    """The step's shell: bash, or for the Terraform image's ``sh`` BusyBox's (POSIX plus pipefail)."""
    if entrypoint == "bash":
        return ["bash"]
    busybox = shutil.which("busybox")
    require("busybox", busybox is not None, "apt-get install busybox")
    return [str(busybox), "sh"]


def sandbox(tmp: Path, module: str, tfdir: str, terraform: str, gcloud: str) -> dict[str, str]:
    """A workspace with ``module``'s saved plan and tfvars, ``modules/<tfdir>``, the stand-ins on
    PATH and the journal's folder; the environment the steps run with."""
    bin_dir, ws = tmp / "bin", tmp / "workspace"
    for d in (bin_dir, ws / "plans", ws / "tfvars", ws / "modules" / tfdir, tmp / "journal"):
        d.mkdir(parents=True)
    for name, text in (("terraform", terraform), ("gcloud", gcloud)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    (ws / "plans" / f"{module}.tfplan").write_text("saved plan\n")
    (ws / "plans" / f"{module}.json").write_text(ONLY_CREATES)  # a new slot beside the running one
    (ws / "tfvars" / f"{module}.tfvars.json").write_text("{}\n")
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp), "LANG": "C.UTF-8",
            "WORKSPACE": str(ws), "JOURNAL_DIR": str(tmp / "journal"), "TPUBUILD_SWAP_POLL_S": "0"}


def handover_sandbox(tmp: Path, module: str, tfdir: str, terraform: str, gcloud: str, *, values: str,
                     old: str) -> dict[str, str]:
    """:func:`sandbox` for the steps that run tpubuild (a stand-in that runs this checkout's), with the
    build's /workspace holding ``values`` and models/ beside it, and ``old`` the one live slice."""
    env = sandbox(tmp, module, tfdir, terraform, gcloud)
    tpubuild = tmp / "bin" / "tpubuild"
    tpubuild.write_text(f'#!/usr/bin/env bash\nexec {sys.executable} -m builder "$@"\n')
    tpubuild.chmod(0o755)
    ws = Path(env["WORKSPACE"])
    (ws / "values.env").write_text(values)
    (ws / "models").symlink_to(REPO / "models")
    Path(env["JOURNAL_DIR"], "live").write_text(f"{old}\n")
    return {**env, "PYTHONPATH": str(REPO), "TPUBUILD_DRAIN_POLL_S": "0", "TPUBUILD_RESUME_WAIT_S": "0",
            "TPUBUILD_RESUME_TRIES": "2"}


def run(steps: dict[str, tuple[str, str]], order: tuple[str, ...], env: dict[str, str], *, cwd: str | None = None,
        timeout: int = 60, **extra: str) -> tuple[list[subprocess.CompletedProcess[str]], list[str]]:
    """``steps`` (id → (entrypoint, script)) in ``order``, stopping at the first that fails; what
    each printed, and the journal."""
    done = []
    for sid in order:
        entrypoint, script = steps[sid]
        proc = subprocess.run([*shell(entrypoint), "-c", script], env={**env, **extra}, capture_output=True,
                              text=True, timeout=timeout, cwd=cwd)
        done.append(proc)
        if proc.returncode != 0:
            break
    return done, Path(env["JOURNAL_DIR"], "journal").read_text().splitlines()


#: terraform for the swap and handover tests: the make plan creates ``NEW`` beside ``OLD``, the
#: release plan deletes ``OLD``. The slots are $JOURNAL_DIR/slots.json (both slots before any apply)
#: and the live slices the lines of $JOURNAL_DIR/live, which the gcloud stand-ins list; ``output``
#: names the slots, or the new one. STANDIN_APPLY_FAILS makes the create fail with STOCKOUT, as
#: Google does when it has no capacity.
_TERRAFORM = r"""#!/usr/bin/env bash
set -u
state="$JOURNAL_DIR/slots.json"
echo "terraform $*" >> "$JOURNAL_DIR/journal"
case "$1" in
  plan) for a in "$@"; do case "$a" in -out=*) : > "${a#-out=}";; -var=release=true) : > "$JOURNAL_DIR/releasing";; esac; done ;;
  show) echo '{"format_version": "1.2"}' ;;
  apply)
    if [ -f "$JOURNAL_DIR/releasing" ]; then
      echo '{"b": {"name": "NEW"}}' > "$state"; printf '%s\n' NEW > "$JOURNAL_DIR/live"
      echo "deleted OLD" >> "$JOURNAL_DIR/journal"
    elif [ -n "${STANDIN_APPLY_FAILS:-}" ]; then
      echo "STOCKOUT" >&2; exit 1
    else
      echo '{"a": {"name": "OLD"}, "b": {"name": "NEW"}}' > "$state"; printf '%s\n' OLD NEW > "$JOURNAL_DIR/live"
      echo "created NEW" >> "$JOURNAL_DIR/journal"
    fi ;;
  output)
    if [ "$2" != "-json" ]; then echo -n "NEW"; elif [ -f "$state" ]; then cat "$state"
    else echo '{"a": {"name": "OLD"}, "b": {"name": "NEW"}}'; fi ;;
esac
"""


def slot_terraform(old: str, new: str, stockout: str = "Error: no capacity") -> str:
    """The terraform stand-in of a move from slice ``old`` to ``new`` (names: [a-z0-9-])."""
    return _TERRAFORM.replace("OLD", old).replace("NEW", new).replace("STOCKOUT", stockout)


def gcloud(body: str) -> str:
    """A gcloud stand-in that journals its argv, then runs ``body`` (bash: a ``case "$*" in``)."""
    return '#!/usr/bin/env bash\nset -u\necho "gcloud $*" >> "$JOURNAL_DIR/journal"\n' + body


#: The gcloud stand-in of the handover tests (test_tpu_handover.py on vm, test_mig_handover.py on
#: mig): it journals its argv; ``HEAD`` (the test's) answers the listings of the slices; an ssh or scp
#: to a host of a slice that is not live fails as gcloud does; on one that is: the probe answers
#: ``tpubuild-probe RUNNING MTIME`` (training while $JOURNAL_DIR/training-<slice> exists; the
#: checkpoint's mtime moves after STANDIN_CKPT_AFTER probes; STANDIN_PROBE_FAILS: the ssh times out),
#: the stop ends the slice's training, the detached launch starts it (STANDIN_LAUNCH_FAILS: refused).
_HANDOVER_GCLOUD = r"""#!/usr/bin/env python3
import os, sys
from pathlib import Path

j = Path(os.environ["JOURNAL_DIR"])
argv = sys.argv[1:]
def log(line):
    with open(j / "journal", "a") as f:
        f.write(line + "\n")
log("gcloud " + " ".join(argv))
live = (j / "live").read_text().split() if (j / "live").exists() else []
HEAD
verb = "ssh" if "ssh" in argv else "scp" if "scp" in argv else ""
if verb:
    target = argv[argv.index(verb) + 1] if verb == "ssh" else next(a.split(":")[0] for a in argv if ":" in a)
    slice_ = SLICE_OF
    if slice_ not in live:
        print(f"ERROR: (gcloud.GROUP.{verb}) NOT_FOUND: {target}", file=sys.stderr)
        sys.exit(1)
    command = next((a[len("--command="):] for a in argv if a.startswith("--command=")), "")
    if "tpubuild-probe" in command:
        if os.environ.get("STANDIN_PROBE_FAILS"):
            print(f"ERROR: (gcloud.GROUP.ssh) {target}: connection timed out", file=sys.stderr)
            sys.exit(255)
        n = int((j / "probes").read_text()) + 1 if (j / "probes").exists() else 1
        (j / "probes").write_text(str(n))
        mtime = 2000 if n > int(os.environ.get("STANDIN_CKPT_AFTER", "2")) else 1000
        print(f"tpubuild-probe {int((j / f'training-{slice_}').exists())} {mtime}")
        log(f"probe {target}")
    elif "stop.sh" in command:
        (j / f"training-{slice_}").unlink(missing_ok=True)
        log(f"stopped on {target}")
    elif "setsid nohup" in command and "train.sh" in command:
        if os.environ.get("STANDIN_LAUNCH_FAILS"):
            print(f"ERROR: (gcloud.GROUP.ssh) {target}: connection refused", file=sys.stderr)
            sys.exit(255)
        (j / f"training-{slice_}").write_text("")
        log(f"launched on {target}")
sys.exit(0)
"""


def handover_gcloud(head: str, *, slice_of: str, group: str) -> str:
    """:data:`_HANDOVER_GCLOUD` with the test's listing ``head`` (Python at the script's top level,
    with ``j``, ``argv``, ``log`` and ``live`` defined), ``slice_of`` (a Python expression: the
    slice a ``target`` host belongs to) and ``group`` (gcloud's command group in its errors)."""
    return _HANDOVER_GCLOUD.replace("HEAD\n", head).replace("SLICE_OF", slice_of).replace("GROUP", group)


def run_in_workspace(steps: dict[str, tuple[str, str]], order: tuple[str, ...], env: dict[str, str], **extra: str
                     ) -> tuple[dict[str, subprocess.CompletedProcess[str]], list[str]]:
    """:func:`run` from the build's /workspace (the steps that run tpubuild read values.env there),
    by step id; the journal."""
    done, journal = run(steps, order, env, cwd=env["WORKSPACE"], timeout=120, **extra)
    return dict(zip(order, done)), journal


def events(journal: list[str]) -> list[str]:
    """What happened to the slices and their training, in order."""
    return [line for line in journal if line.split(" ", 1)[0] in ("created", "deleted", "stopped", "launched")]
