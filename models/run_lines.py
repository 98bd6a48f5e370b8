"""What ``tpubuild run`` and ``tpubuild stop`` run on a host (models/hosts.py re-exports every
name): the user's command detached in its own session and logged per host, the folder the shipped
files land in, and the stop of that job and of whatever holds the TPU. Standard library only;
templates filled with ``shlex.quote``-d words, as everywhere in models/."""

from __future__ import annotations

import posixpath
import shlex
from string import Template

#: Where ``tpubuild run`` keeps the process-group id of the job it started on a host.
RUN_PIDFILE = ".tpubuild/run.pgid"

#: Where ``tpubuild run`` ships the user's files on a host (relative to the home, where ssh
#: starts): a mirror of the local folder ``run`` was started in, as far as it is shipped, emptied
#: before each shipping ``run``; the command then runs in it, so its relative paths mean there what
#: they meant here.
RUN_DIR = ".tpubuild/run"

#: ``tpubuild run`` on one host: a new session (its process group id = the shell's pid, saved for
#: ``stop``), everything appended to the host's log on Filestore, then in ``$workdir`` (``.``: the
#: home) the user's words exec'd as given.
_RUN = Template(
    "mkdir -p .tpubuild && setsid nohup sh -c $script tpubuild-run $log_dir $pidfile $workdir $words "
    ">/dev/null 2>&1 </dev/null &")
_RUN_SCRIPT = (
    'log="$1/host-${TPUBUILD_WORKER_NUMBER:-$(hostname)}.log"; echo $$ >"$2"; exec >>"$log" 2>&1; '
    'cd "$3" || exit 1; shift 3; echo "[tpubuild run $(date -u +%FT%TZ) $(hostname)] $*"; exec "$@"')
#: The run folder emptied and its sub-folders made, before the shipped files are copied in.
_SHIP_DIRS = Template("rm -rf $root && mkdir -p $dirs")

#: ``tpubuild stop`` on one host: the run's whole process group (TERM, 20 s, KILL), then whatever
#: still holds the TPU (/dev/accel*, /dev/vfio/*: TERM, 10 s, KILL, by fuser), then libtpu's lock
#: file once nothing holds the devices; fails (exit 1) when the TPU is still held.
#: TPUBUILD_TPU_DEVICES replaces the device list (tests), as TPUBUILD_RUN_DIR does for startup.sh.
_STOP = Template(
    'pidfile=$pidfile; if [ -s "$$pidfile" ]; then pg=$$(cat "$$pidfile"); if kill -0 "-$$pg" 2>/dev'
    '/null; then echo "tpubuild: stopping process group $$pg on $$(hostname)"; kill -TERM "-$$pg" 2>'
    '/dev/null || true; i=0; while kill -0 "-$$pg" 2>/dev/null && [ $$i -lt 20 ]; do sleep 1; i=$$(('
    'i + 1)); done; kill -KILL "-$$pg" 2>/dev/null || true; fi; rm -f "$$pidfile"; fi; devs=$$(ls $$'
    '{TPUBUILD_TPU_DEVICES:-/dev/accel* /dev/vfio/[0-9]*} 2>/dev/null || true); if [ -n "$$devs" ]; '
    'then if sudo fuser -s $$devs 2>/dev/null; then echo "tpubuild: freeing the TPU on $$(hostname):'
    ' $$(sudo fuser $$devs 2>&1 | tr -s \' \')"; sudo fuser -k -TERM $$devs >/dev/null 2>&1 || true; i'
    '=0; while sudo fuser -s $$devs 2>/dev/null && [ $$i -lt 10 ]; do sleep 1; i=$$((i + 1)); done; '
    'sudo fuser -k -KILL $$devs >/dev/null 2>&1 || true; sleep 1; fi; if sudo fuser -s $$devs 2>/dev'
    '/null; then echo "tpubuild: the TPU on $$(hostname) is still held" >&2; exit 1; fi; fi; sudo rm'
    ' -f /tmp/libtpu_lockfile; echo "tpubuild: $$(hostname) is free"')


def _q(word: str) -> str:
    return shlex.quote(word)


def run_line(words: list[str], log_dir: str, *, workdir: str = ".") -> str:
    """``tpubuild run``'s command on one host: ``words`` detached, run in ``workdir`` (relative to
    the home), logged to ``<log_dir>/host-<worker>.log``, its process group id saved in
    ``~/.tpubuild/run.pgid``."""
    return _RUN.substitute(script=_q(_RUN_SCRIPT), log_dir=_q(log_dir), pidfile=_q(RUN_PIDFILE),
                           workdir=_q(workdir), words=shlex.join(words))


def ship_groups(paths: list[str], root: str = RUN_DIR) -> list[tuple[str, list[str]]]:
    """Where each shipped path goes: ``(folder under root on the host, [local paths])``, one entry
    per local parent folder, so ``a/b/c.py`` lands at ``<root>/a/b/c.py``. ``paths`` are relative,
    normalised, with no ``..``."""
    groups: dict[str, list[str]] = {}
    for path in paths:
        parent = posixpath.dirname(path)
        groups.setdefault(posixpath.join(root, parent) if parent else root, []).append(path)
    return [(f"{dest}/", groups[dest]) for dest in sorted(groups)]


def ship_dirs_line(paths: list[str], root: str = RUN_DIR) -> str:
    """Empty ``root`` on the host and make the folders :func:`ship_groups` copies into."""
    return _SHIP_DIRS.substitute(root=_q(root), dirs=shlex.join(d.rstrip("/") for d, _ in ship_groups(paths, root)))


def stop_line() -> str:
    """``tpubuild stop`` on one host: the ``run`` job's process tree, then the TPU's holders."""
    return _STOP.substitute(pidfile=_q(RUN_PIDFILE))


#: The host scripts of models/ that every plug-in's launch copies beside its own folder (so a
#: plug-in's train.sh finds them at ``$(dirname "$here")/<name>``): the checkpoint copy to the
#: bucket (docs/recovery.md, "Checkpoints in the bucket").
SHARED_SCRIPTS = ("checkpoint_sync.sh",)


def code_sources(repo_models: str, model: str) -> list[str]:
    """What a launch copies to the hosts' code folder: ``models/<model>`` and :data:`SHARED_SCRIPTS`."""
    root = repo_models.rstrip("/")
    return [f"{root}/{model}", *(f"{root}/{name}" for name in SHARED_SCRIPTS)]
