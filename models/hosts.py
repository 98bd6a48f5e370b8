"""Host transport, shared by every model launcher (``models/<name>/launcher.py``) and by
``tpubuild run``: how a command reaches the hosts (gcloud ssh/scp, IAP), what wraps it there
(the host's XLA environment, the ready check), how it runs detached with a per-host log, and how
it is stopped. Standard library only (launchers load it by path, like themselves).

Every shell text is a :class:`string.Template` below whose fields are filled with
``shlex.quote``-d words (or with other rendered templates); nothing is built by concatenation.

Architectures supply their hosts through :class:`Hosts`: ``TpuVmHosts`` (vm: ``gcloud alpha
compute tpus tpu-vm ssh/scp --worker=…``; ``--tunnel-through-iap`` exists only in the alpha
track; the slice is in one of two slots, ``tpu-<env>`` or ``tpu-<env>-b``, which make-before-break
alternates, so its :meth:`~TpuVmHosts.preamble` finds at run time which one exists, into
``$TPUBUILD_TPU``, and every line addresses that; the slot names are passed in by tpubuild,
builder/config/replace.py ``slot_names``) and ``MigHosts`` (node: ``gcloud compute ssh`` to the instances of a managed instance
group, the leader being the first by name) and ``SliceHosts`` (mig: Compute Engine TPU VMs in a
MIG, listed at run time in PJRT worker order, one ``gcloud compute ssh`` line per worker; the MIG
is in one of the same two slots, found first the same way: models/slots.py). A new
architecture adds a subclass with ``ssh``/``scp``/``preamble``.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from string import Template

from .run_lines import (RUN_DIR, RUN_PIDFILE, SHARED_SCRIPTS, code_sources, run_line,  # noqa: F401 - re-exported
                        ship_dirs_line, ship_groups, stop_line)
from .slots import EACH_HOST as _EACH_HOST, SLICE_ENV, any_count, each_host, slot_preamble, slot_title  # noqa: F401

#: What env_setup/scripts/startup.sh leaves on every host at each boot (docs/env_setup.md).
HOST_PROFILE = "/etc/profile.d/tpubuild.sh"
HOST_READY = "/run/tpubuild/ready"
HOST_FAILED = "/run/tpubuild/failed"

_LOAD = Template("if [ -r $profile ]; then . $profile; fi; $command")
_READY = Template(
    'if [ ! -e $ready ]; then echo "tpubuild: $$(hostname) is not ready: $ready is missing '
    '($$(cat $failed 2>/dev/null || echo startup.sh has not finished)); check its serial console '
    '(docs/env_setup.md, Logs and debugging)" >&2; exit 1; fi; $command')
_DETACHED = Template("setsid nohup $command >/dev/null 2>&1 </dev/null &")


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
#: What the build's tpu-checkpoint step reads from worker 0 (:func:`probe_line`): one line
#: ``tpubuild-probe RUNNING MTIME``, RUNNING 1 when a process matches the model's training pattern
#: (``pgrep -f``), MTIME the checkpoint's modification time in epoch seconds (0: none yet).
PROBE_WORD = "tpubuild-probe"
_PROBE = Template('if pgrep -f $pattern >/dev/null; then r=1; else r=0; fi; '
                  'echo $word "$$r" "$$(stat -c %Y $checkpoint 2>/dev/null || echo 0)"')
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


def dirs_line(share: str, dirs: list[str], *, spelling: str = "run") -> str:
    """Make ``dirs`` on the Filestore share ``share`` (refused when it is not mounted)."""
    message = _NOT_MOUNTED[spelling].substitute(share=_q(share), text=_q(f"{share} is not mounted on "))
    return _DIRS.substitute(share=_q(share), message=message, dirs=shlex.join(dirs))


def probe_line(pattern: str, checkpoint: str) -> str:
    """Print :data:`PROBE_WORD`, whether a process matches ``pattern`` (a ``pgrep -f`` regex the
    model's stop also uses; write it so that it does not match itself, e.g. ``fairseq_cli[.]train``)
    and the modification time of ``checkpoint``."""
    return _PROBE.substitute(pattern=_q(pattern), word=_q(PROBE_WORD), checkpoint=_q(checkpoint))


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
    """``access.preamble()`` (mig: list the slice's VMs in worker order; vm: find the slot the
    slice is in) before ``steps``."""
    pre = access.preamble()
    return [Step(access.preamble_title(), (pre,)), *steps] if pre else steps


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

    def preamble_title(self) -> str:
        """What :meth:`preamble` does, as the title of its step."""
        return "the slice's VMs in PJRT worker order (TPUBUILD_HOSTS)"


#: The slot's name, as the script holds it once models/slots.py's preamble ran.
TPU_SLOT = Word('"$TPUBUILD_TPU"')


@dataclass(frozen=True)
class TpuVmHosts(Hosts):
    """vm: the workers of one TPU VM (pod slice), addressed by worker number or ``all``.

    ``slots``: the names the slice may have (builder/config/replace.py ``slot_names``: ``tpu-<env>``
    and ``tpu-<env>-b``, which make-before-break alternates). With two, :meth:`preamble` finds
    which one exists at run time (``gcloud compute tpus tpu-vm list``) into ``$TPUBUILD_TPU``, and
    every ssh/scp line addresses that; with none or one, ``tpu_name`` is written as is. While both
    exist (a make-before-break update between its tpu-apply and tpu-release) the script refuses,
    unless ``TPUBUILD_SLICE`` is preset to one of them: then it addresses that one (the build's
    tpu-checkpoint step stops the training on the old slot so; builder/templates/tpu_checkpoint.sh.j2)."""

    tpu_name: str = ""
    slots: tuple[str, ...] = ()

    def gcloud(self, verb: str) -> list[str]:
        # --tunnel-through-iap of tpu-vm ssh/scp exists only in gcloud's alpha track (gcloud 528)
        track = ["alpha"] if self.iap else []
        return ["gcloud", *track, "compute", "tpus", "tpu-vm", verb]

    @property
    def resolved(self) -> bool:
        """Whether the slot is found at run time (:meth:`preamble`)."""
        return len(self.slots) > 1

    def name(self) -> str:
        """The TPU's name in a line: ``"$TPUBUILD_TPU"`` (a :class:`Word`) when resolved at run time."""
        return TPU_SLOT if self.resolved else self.tpu_name

    def listing(self) -> list[str]:
        """argv that prints the name of every TPU VM of the zone, one a line."""
        return ["gcloud", "compute", "tpus", "tpu-vm", "list", *self.location(), "--format=value(name.basename())"]

    def preamble(self) -> str:
        if not self.resolved:
            return ""
        return slot_preamble(shlex.join(self.listing()), self.slots, what="TPU VM", zone=self.zone,
                             project=self.project)

    def preamble_title(self) -> str:
        return slot_title(self.slots)

    def argv(self, worker: str, command: str) -> list[str]:
        """``gcloud … tpu-vm ssh`` argv that runs ``command`` (one argument, as given) on ``worker``
        (resolved: the name is the :class:`Word` ``"$TPUBUILD_TPU"``: write it with :func:`join`)."""
        return [*self.gcloud("ssh"), self.name(), *self.location(), *self.tunnel(), f"--worker={worker}",
                f"--command={command}"]

    def ssh(self, worker: str, command: str, *, ready: bool = True) -> str:
        return join(self.argv(worker, on_host(command, ready=ready)))

    def line(self, worker: str, command: str) -> str:
        """:meth:`argv` as a line (after :meth:`preamble`): ``command`` as given, no host profile."""
        return join(self.argv(worker, command))

    def scp_from_argv(self, worker: str, path: str, local: str) -> list[str]:
        """argv that copies ``path`` on worker ``worker`` back to ``local`` here."""
        return [*self.gcloud("scp"), "--recurse", self._remote(path), local, *self.location(), *self.tunnel(),
                f"--worker={worker}"]

    def scp_from(self, worker: str, path: str, local: str) -> str:
        """:meth:`scp_from_argv` as a line (after :meth:`preamble`)."""
        return join(self.scp_from_argv(worker, path, local))

    def scp(self, src: str | Sequence[str], dest: str, *, worker: str = "all") -> str:
        return join([*self.gcloud("scp"), "--recurse", *_sources(src), self._remote(dest),
                     *self.location(), *self.tunnel(), f"--worker={worker}"])

    def _remote(self, path: str) -> str:
        return remote(TPU_SLOT, path) if self.resolved else f"{self.tpu_name}:{path}"


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
    "mapfile -t TPUBUILD_HOSTS < <(printf '%s\\n' \"$$tpubuild_listing\" | LC_ALL=C sort -u | sed '/^$$/d')")
_SLICE_COUNT = Template(
    'if [ "$${#TPUBUILD_HOSTS[@]}" -ne $count ]; then echo "tpubuild: the MIG $group lists '
    '$${#TPUBUILD_HOSTS[@]} of $count VMs; wait until tpubuild status shows the slice $count/$count '
    'running, or run tpubuild update to recreate lost (spot) VMs" >&2; exit 1; fi')
_SLICE_SAID = 'echo "tpubuild: workers in order: ${TPUBUILD_HOSTS[*]}" >&2'
_WORKER = Template('"$${TPUBUILD_HOSTS[$n]}"')


@dataclass(frozen=True)
class SliceHosts(MigHosts):
    """mig: the TPU VMs of the slice's managed instance group. Worker N is the N-th instance
    name in C-locale order (the PJRT worker id startup.sh writes to /etc/profile.d/tpubuild.sh as
    TPU_WORKER_ID); :meth:`preamble` lists them at run time into ``TPUBUILD_HOSTS`` and each
    :meth:`ssh` line addresses one element, so ``all`` is one line per host in worker order (with
    two slots, a loop over the hosts listed: the old group a preset TPUBUILD_SLICE names may have
    another size, models/slots.py ``each_host``).
    ``listing`` is the list-instances argv (builder/render/mig_hosts.py builds it). With two
    ``slots`` (``tpu-<env>``, ``tpu-<env>-b``: make-before-break alternates them) and ``groups``,
    the argv that lists the zone's groups among them, the preamble first finds which one exists
    into ``$TPUBUILD_TPU``, exactly as :class:`TpuVmHosts` does (models/slots.py), and ``listing``
    names the group :data:`TPU_SLOT`; with none or one, ``listing`` names it."""

    listing: tuple[str, ...] = ()
    slots: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()

    @property
    def slotted(self) -> bool:
        """Whether the group is found at run time (:meth:`preamble`)."""
        return len(self.slots) > 1 and bool(self.groups)

    def listing_line(self) -> str:
        """``listing`` as a line (the group :data:`TPU_SLOT` expands)."""
        return join(TPU_SLOT if w == TPU_SLOT else w for w in self.listing)

    def preamble(self) -> str:
        group = '$TPUBUILD_TPU' if self.slotted else _q(self.mig_name)
        count = _SLICE_COUNT.substitute(count=self.count, group=group)
        listed = _SLICE.substitute(listing=self.listing_line())
        if not self.slotted:
            return "\n".join([listed, count, _SLICE_SAID])
        # a preset TPUBUILD_SLICE may name the old group, of another shape: its own VMs (models/slots.py)
        hosts = "\n".join([listed, any_count(count), _SLICE_SAID])
        found = slot_preamble(shlex.join(self.groups), self.slots, what="MIG", zone=self.zone, project=self.project)
        return "\n".join([found, hosts])

    def preamble_title(self) -> str:
        first = f"{slot_title(self.slots)}, then " if self.slotted else ""
        return f"{first}{Hosts.preamble_title(self)}"

    def workers(self, worker: str) -> list[int]:
        return list(range(self.count)) if worker == "all" else [int(worker)]

    def ssh(self, worker: str, command: str, *, ready: bool = True) -> str:
        if worker == "all" and self.slotted:  # every VM of the group found (another shape while preset)
            return each_host(MigHosts.ssh(self, Word(_EACH_HOST), command, ready=ready))
        return "\n".join(MigHosts.ssh(self, self.worker(n), command, ready=ready)
                         for n in self.workers(worker))

    def scp_from(self, worker: str, path: str, local: str) -> str:
        """Copy ``path`` (on worker ``worker``) back to ``local`` here."""
        return join(["gcloud", "compute", "scp", "--recurse", remote(self.worker(int(worker)), path), local,
                     *self.location(), *self.tunnel()])

    def scp(self, src: str | Sequence[str], dest: str, *, host: str = "", worker: str = "all") -> str:
        """``dest`` is a path; copied to every worker (or worker ``worker``), one line each."""
        if worker == "all" and self.slotted:
            return each_host(MigHosts.scp(self, src, dest, host=Word(_EACH_HOST)))
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
             listing: tuple[str, ...] = (), slots: tuple[str, ...] = (), groups: tuple[str, ...] = ()) -> Hosts:
    """How gcloud reaches the hosts of an architecture: vm a TPU VM's workers (in whichever of
    ``slots`` exists at run time), mig the VMs of the slice's MIG (named like the TPU, in whichever
    of ``slots`` ``groups`` lists at run time; worker order from ``listing``), node the MIG's workers."""
    if arch == "vm":
        return TpuVmHosts(project, zone, iap, count, tpu_name=tpu_name, slots=tuple(slots))
    if arch == "mig":
        return SliceHosts(project, zone, iap, count, mig_name=tpu_name, listing=tuple(listing), slots=tuple(slots),
                          groups=tuple(groups))
    return MigHosts(project, zone, iap, count, mig_name=mig_name)
