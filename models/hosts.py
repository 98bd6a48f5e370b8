"""Host transport, shared by every model launcher (``models/<name>/launcher.py``) and by
``tpubuild run``: how a command reaches the hosts (gcloud ssh/scp, IAP), what wraps it there
(the host's XLA environment, the ready check), how it runs detached with a per-host log, and how
it is stopped. Standard library only (launchers load it by path, like themselves).

Every shell text is a :class:`string.Template` below whose fields are filled with
``shlex.quote``-d words (or with other rendered templates); nothing is built by concatenation.

Architectures supply their hosts through :class:`Hosts`: ``TpuVmHosts`` (vm: ``gcloud alpha
compute tpus tpu-vm ssh/scp --worker=…``; ``--tunnel-through-iap`` exists only in the alpha
track) and ``MigHosts`` (node: ``gcloud compute ssh`` to the instances of a managed instance
group, the leader being the first by name) and ``SliceHosts`` (mig: Compute Engine TPU VMs in a
MIG, listed at run time in PJRT worker order, one ``gcloud compute ssh`` line per worker). A new
architecture adds a subclass with ``ssh``/``scp``/``preamble``.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from string import Template

#: What env_setup/scripts/startup.sh leaves on every host at each boot (docs/env_setup.md).
HOST_PROFILE = "/etc/profile.d/tpubuild.sh"
HOST_READY = "/run/tpubuild/ready"
HOST_FAILED = "/run/tpubuild/failed"
#: Where ``tpubuild run`` keeps the process-group id of the job it started on a host.
RUN_PIDFILE = ".tpubuild/run.pgid"

_LOAD = Template("if [ -r $profile ]; then . $profile; fi; $command")
_READY = Template(
    'if [ ! -e $ready ]; then echo "tpubuild: $$(hostname) is not ready: $ready is missing '
    '($$(cat $failed 2>/dev/null || echo startup.sh has not finished)); check its serial console '
    '(docs/env_setup.md, Logs and debugging)" >&2; exit 1; fi; $command')
_DETACHED = Template("setsid nohup $command >/dev/null 2>&1 </dev/null &")

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



#: The folders a job writes on Filestore: refused when the share is not mounted (never a boot
#: disk), created mode 1777 (Filestore's root belongs to root; hosts may use different uids).
_DIRS = Template("if ! mountpoint -q $share; then echo $message >&2; exit 1; fi; sudo mkdir -p $dirs && sudo chmod 1777 $dirs")
#: The refusal's message, in the two spellings the run and the model launchers have always emitted
#: (kept byte for byte: tests/data/golden_launch).
_NOT_MOUNTED = {
    "run": Template('$share" is not mounted on $$(hostname)"'),
    "model": Template('$text"$$(hostname)"'),
}
#: A model's first step on a TPU VM: its code folder in the home, then ``command``.
_CODE_HOME = Template("mkdir -p .tpubuild || exit 1; $command")
#: node: the leader (the MIG's first worker by name) into $LEADER; a command on every worker.
_LEADER = Template('LEADER="$$($listing)"')
_LEADER_CHECK = 'test -n "$LEADER"'
_EACH = Template("for vm in $$($listing); do $ssh; done")
#: ``host:path`` of scp where the host is a shell word (``"$LEADER"``).
_REMOTE = Template("$host:$path")


class Word(str):
    """A word that is already shell and stays as written, e.g. ``"$LEADER"`` (every other word
    of a line is ``shlex.quote``-d by :func:`join`)."""


#: node: the leader's name, as the script holds it; each worker in the ``for vm`` loop.
LEADER = Word('"$LEADER"')
EACH_VM = Word('"$vm"')


def join(words: Iterable[str]) -> str:
    """``shlex.join``, except that :class:`Word` words stay as written."""
    return " ".join(w if isinstance(w, Word) else shlex.quote(w) for w in words)


def _q(word: str) -> str:
    return shlex.quote(word)


def on_host(command: str, *, ready: bool = True) -> str:
    """``command`` as an ssh ``--command`` (POSIX sh): the host's profile sourced first (a
    non-login ssh shell reads no /etc/profile); with ``ready``, a host whose boot has not finished
    or failed stops first with one line naming it and the reason."""
    loaded = _LOAD.substitute(profile=HOST_PROFILE, command=command)
    if not ready:
        return loaded
    return _READY.substitute(ready=HOST_READY, failed=HOST_FAILED, command=loaded)


def detached(command: str) -> str:
    """Run ``command`` in a new session, immune to the ssh session ending."""
    return _DETACHED.substitute(command=command)


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


def dirs_line(share: str, dirs: list[str], *, spelling: str = "run") -> str:
    """Make ``dirs`` on the Filestore share ``share`` (refused when it is not mounted)."""
    message = _NOT_MOUNTED[spelling].substitute(share=_q(share), text=_q(f"{share} is not mounted on "))
    return _DIRS.substitute(share=_q(share), message=message, dirs=shlex.join(dirs))


def in_code_home(command: str) -> str:
    """``~/.tpubuild`` made on the host, then ``command``."""
    return _CODE_HOME.substitute(command=command)


def tail_line(path: str, lines: int, *, follow: bool) -> str:
    """The last ``lines`` lines of the log ``path`` (``follow``: and what is appended)."""
    return shlex.join(["tail", "-n", str(lines), *(["-F"] if follow else []), path])


# ---------------------------------------------------------------- scripts

@dataclass(frozen=True)
class Step:
    """One titled group of shell lines of a launch script."""

    title: str
    lines: tuple[str, ...]


def render(steps: list[Step], *, numbered: bool = True, first: bool = True) -> str:
    """A bash script: what ``--dry-run`` prints and what ``tpubuild`` runs (``first``: with the
    ``set -euo pipefail`` line; ``numbered``: ``# 1. title`` as the model launchers write it)."""
    out = ["set -euo pipefail"] if first else []
    for i, step in enumerate(steps, 1):
        out.append(f"# {i}. {step.title}" if numbered else f"# {step.title}")
        out.extend(step.lines)
    return "\n".join([*out, ""])


def with_preamble(access: Hosts, steps: list[Step]) -> list[Step]:
    """``access.preamble()`` (mig: list the slice's VMs in worker order) before ``steps``."""
    pre = access.preamble()
    return [Step("the slice's VMs in PJRT worker order (TPUBUILD_HOSTS)", (pre,)), *steps] if pre else steps


def stop_line() -> str:
    """``tpubuild stop`` on one host: the ``run`` job's process tree, then the TPU's holders."""
    return _STOP.substitute(pidfile=_q(RUN_PIDFILE))


# ---------------------------------------------------------------- gcloud

@dataclass(frozen=True)
class Hosts:
    """How gcloud reaches the hosts of one environment."""

    project: str
    zone: str
    iap: bool  # ssh through IAP (hosts without external IPs)
    count: int

    def location(self) -> list[str]:
        return [f"--zone={self.zone}", f"--project={self.project}"]

    def tunnel(self) -> list[str]:
        return ["--tunnel-through-iap"] if self.iap else []

    def ssh(self, worker: str, command: str, *, ready: bool = True) -> str:
        raise NotImplementedError

    def scp(self, src: str | Sequence[str], dest: str) -> str:
        """Copy ``src`` (a path, or several) here into the folder ``dest`` on every host (vm and
        mig take ``worker=`` to copy to one)."""
        raise NotImplementedError

    def preamble(self) -> str:
        """Shell that must run before :meth:`ssh` lines (empty: none)."""
        return ""


@dataclass(frozen=True)
class TpuVmHosts(Hosts):
    """vm: the workers of one TPU VM (pod slice), addressed by worker number or ``all``."""

    tpu_name: str = ""

    def gcloud(self, verb: str) -> list[str]:
        # --tunnel-through-iap of tpu-vm ssh/scp exists only in gcloud's alpha track (gcloud 528)
        track = ["alpha"] if self.iap else []
        return ["gcloud", *track, "compute", "tpus", "tpu-vm", verb]

    def argv(self, worker: str, command: str) -> list[str]:
        """``gcloud … tpu-vm ssh`` argv that runs ``command`` (one argument, as given) on ``worker``."""
        return [*self.gcloud("ssh"), self.tpu_name, *self.location(), *self.tunnel(), f"--worker={worker}",
                f"--command={command}"]

    def ssh(self, worker: str, command: str, *, ready: bool = True) -> str:
        return shlex.join(self.argv(worker, on_host(command, ready=ready)))

    def scp_from_argv(self, worker: str, path: str, local: str) -> list[str]:
        """argv that copies ``path`` on worker ``worker`` back to ``local`` here."""
        return [*self.gcloud("scp"), "--recurse", f"{self.tpu_name}:{path}", local, *self.location(), *self.tunnel(),
                f"--worker={worker}"]

    def scp(self, src: str | Sequence[str], dest: str, *, worker: str = "all") -> str:
        return shlex.join([*self.gcloud("scp"), "--recurse", *_sources(src), f"{self.tpu_name}:{dest}",
                           *self.location(), *self.tunnel(), f"--worker={worker}"])


@dataclass(frozen=True)
class MigHosts(Hosts):
    """node: the worker VMs of a managed instance group; ``instance`` may be a shell variable
    reference such as ``"$LEADER"`` (left unquoted so the script expands it)."""

    mig_name: str = ""

    def argv(self, instance: str, command: str) -> list[str]:
        """``gcloud compute ssh`` argv that runs ``command`` (one argument) on ``instance``."""
        return ["gcloud", "compute", "ssh", instance, *self.location(), *self.tunnel(), f"--command={command}"]

    def ssh(self, instance: str, command: str, *, ready: bool = True) -> str:
        return join(self.argv(Word(instance), on_host(command, ready=ready)))

    def scp(self, src: str | Sequence[str], dest: str, *, host: str = LEADER) -> str:
        """``src`` to the folder ``dest`` on ``host`` (a shell word; default the leader)."""
        return join(["gcloud", "compute", "scp", "--recurse", *_sources(src), remote(host, dest), *self.location(),
                     *self.tunnel()])

    def leader(self) -> tuple[str, str]:
        """node: the leader's name into ``$LEADER`` (the first worker by name), and its check."""
        return _LEADER.substitute(listing=self.instances(limit=1)), _LEADER_CHECK

    def each(self, command: str, *, ready: bool = True) -> str:
        """node: ``command`` on every worker VM, one after the other."""
        return _EACH.substitute(listing=self.instances(), ssh=self.ssh(EACH_VM, command, ready=ready))

    def instances(self, *, limit: int | None = None) -> str:
        words = ["gcloud", "compute", "instance-groups", "managed", "list-instances", self.mig_name,
                 *self.location(), "--format=value(instance.basename())", "--sort-by=instance"]
        if limit:
            words.append(f"--limit={limit}")
        return shlex.join(words)


#: mig: the slice's VMs in PJRT worker order, into the bash array TPUBUILD_HOSTS (the names sorted
#: in the C locale, as env_setup/scripts/startup.sh derives TPU_WORKER_ID); refused unless the group
#: lists exactly the slice's VM count (a resize or a spot preemption in progress).
_SLICE = Template(
    "tpubuild_listing=$$($listing)\n"
    "mapfile -t TPUBUILD_HOSTS < <(printf '%s\\n' \"$$tpubuild_listing\" | LC_ALL=C sort -u | sed '/^$$/d')\n"
    'if [ "$${#TPUBUILD_HOSTS[@]}" -ne $count ]; then echo "tpubuild: the MIG $group lists '
    '$${#TPUBUILD_HOSTS[@]} of $count VMs; wait until tpubuild status shows the slice $count/$count '
    'running, or run tpubuild update to recreate lost (spot) VMs" >&2; exit 1; fi\n'
    'echo "tpubuild: workers in order: $${TPUBUILD_HOSTS[*]}" >&2')
_WORKER = Template('"$${TPUBUILD_HOSTS[$n]}"')


@dataclass(frozen=True)
class SliceHosts(MigHosts):
    """mig: the TPU VMs of the slice's managed instance group. Worker N is the N-th instance
    name in C-locale order (the PJRT worker id startup.sh writes to /etc/profile.d/tpubuild.sh as
    TPU_WORKER_ID); :meth:`preamble` lists them at run time into ``TPUBUILD_HOSTS`` and each
    :meth:`ssh` line addresses one element, so ``all`` is one line per host in worker order.
    ``listing`` is the list-instances argv (builder/cloud/mig_hosts.py builds it)."""

    listing: tuple[str, ...] = ()

    def preamble(self) -> str:
        return _SLICE.substitute(listing=shlex.join(self.listing), count=self.count, group=_q(self.mig_name))

    def workers(self, worker: str) -> list[int]:
        return list(range(self.count)) if worker == "all" else [int(worker)]

    def ssh(self, worker: str, command: str, *, ready: bool = True) -> str:
        return "\n".join(MigHosts.ssh(self, self.worker(n), command, ready=ready)
                         for n in self.workers(worker))

    def scp_from(self, worker: str, path: str, local: str) -> str:
        """Copy ``path`` (on worker ``worker``) back to ``local`` here."""
        return join(["gcloud", "compute", "scp", "--recurse", remote(self.worker(int(worker)), path), local,
                     *self.location(), *self.tunnel()])

    def scp(self, src: str | Sequence[str], dest: str, *, host: str = "", worker: str = "all") -> str:
        """``dest`` is a path; copied to every worker (or worker ``worker``), one line each."""
        return "\n".join(MigHosts.scp(self, src, dest, host=self.worker(n)) for n in self.workers(worker))

    @staticmethod
    def worker(n: int) -> Word:
        """Worker ``n``'s name, as the script holds it (``"${TPUBUILD_HOSTS[n]}"``)."""
        return Word(_WORKER.substitute(n=n))


def _sources(src: str | Sequence[str]) -> list[str]:
    return [src] if isinstance(src, str) else list(src)


def remote(host: str, path: str) -> Word:
    """scp's ``host:path``; ``host`` a :class:`Word` (``"$LEADER"``) stays as written."""
    return Word(_REMOTE.substitute(host=host if isinstance(host, Word) else _q(host), path=_q(path)))


def for_arch(arch: str, project: str, zone: str, iap: bool, count: int, *, tpu_name: str, mig_name: str,
             listing: tuple[str, ...] = ()) -> Hosts:
    """How gcloud reaches the hosts of an architecture: vm a TPU VM's workers, mig the VMs of the
    slice's MIG (named like the TPU; worker order from ``listing``), node the MIG's workers."""
    if arch == "vm":
        return TpuVmHosts(project, zone, iap, count, tpu_name=tpu_name)
    if arch == "mig":
        return SliceHosts(project, zone, iap, count, mig_name=tpu_name, listing=listing)
    return MigHosts(project, zone, iap, count, mig_name=mig_name)
