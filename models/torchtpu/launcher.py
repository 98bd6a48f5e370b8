"""TorchTPU: any PyTorch script on every host of a TPU VM slice (vm or mig), as step plans.

This file is the ``Launcher`` tpubuild calls (builder/config/model_registry.py); what the launch computes
(the per-host environment, the pins, the ports) is models/torchtpu/launch.py. The script runs:

1. the slice's hosts are listed in worker order into ``$TPUBUILD_WORKER_HOSTNAMES`` (vm: the TPU
   VM's network endpoints; mig: the VM names models/hosts.py lists), checked to be one per host;
2. models/torchtpu is copied to ``~/.tpubuild/torchtpu`` and ``TORCHTPU_SCRIPT`` to
   ``~/.tpubuild/run/<its path>`` on every host (``tpubuild run``'s shipping);
3. install.sh installs torch, torch-tpu, libtpu (and XProf's capture client) from the Filestore
   wheelhouse on every host;
4. each host gets its own line: ``env`` with launch.py ``host_env`` (host N: ``NODE_RANK=N``) and
   train.sh, which runs ``torchrun`` detached and tees to ``host-N.log`` on Filestore.

Standard library only.
"""

from __future__ import annotations

import posixpath
import shlex
from string import Template
from typing import Any

from .. import hosts
from .launch import (HOSTNAMES_VAR, LIBTPU, MODEL, TORCH, TORCH_CPU_INDEX, TORCH_TPU, XPROF, Job,  # noqa: F401
                     LaunchError, host_env, host_log, log_dir, ports, problems, shipped, train_words)

Step = hosts.Step
CODE = f".tpubuild/{MODEL}"
#: The launch script's variables: the slice's hosts in worker order, comma-separated, and the first.
MASTER_VAR = "TPUBUILD_MASTER_ADDR"
#: Placeholders of those in a host's line: each ssh line is quoted as one word by models/hosts.py;
#: :func:`_expand` puts the variable's expansion where its placeholder is (no shell character, so
#: the quoting leaves it as written; a TORCHTPU_ARGS that contains one is refused).
_TOKENS = {HOSTNAMES_VAR: f"@{HOSTNAMES_VAR}@", MASTER_VAR: f"@{MASTER_VAR}@"}
_VM_LIST = Template('$var="$$($describe | paste -sd, -)"')
_MIG_LIST = Template('$var="$$(IFS=,; echo "$${TPUBUILD_HOSTS[*]}")"')
_CHECK = Template(
    'if ! [[ $$$var =~ ^[A-Za-z0-9._-]+(,[A-Za-z0-9._-]+)*$$ ]] || [ "$$(tr , "\\n" <<<"$$$var" | wc -l)" -ne $n ]; '
    'then echo "tpubuild: expected $n worker hostnames, listed: $$$var" >&2; exit 1; fi\n'
    '$master="$${$var%%,*}"\necho "tpubuild: TPU_WORKER_HOSTNAMES=$$$var" >&2')
_EXPANDED = Template("'\"$$$var\"'")


def access(job: Job) -> Any:
    return hosts.for_arch(job.arch, job.project, job.zone, job.iap, job.hosts, tpu_name=job.tpu_name,
                          mig_name="", listing=job.listing, slots=job.slots, groups=job.groups)


def _workers_line(job: Job, reach: Any) -> str:
    """The slice's hosts in worker order, comma-separated, into ``$TPUBUILD_WORKER_HOSTNAMES``,
    checked (one per host, hostname characters only), and the first into ``$TPUBUILD_MASTER_ADDR``.
    vm: the TPU VM's network endpoints (in worker order); mig: models/hosts.py SliceHosts' VM names."""
    if job.arch == "mig":
        listed = _MIG_LIST.substitute(var=HOSTNAMES_VAR)
    else:
        describe = hosts.join(["gcloud", "compute", "tpus", "tpu-vm", "describe", reach.name(), *reach.location(),
                               "--flatten=networkEndpoints", "--format=value(networkEndpoints.ipAddress)"])
        listed = _VM_LIST.substitute(var=HOSTNAMES_VAR, describe=describe)
    return "\n".join([listed, _CHECK.substitute(var=HOSTNAMES_VAR, n=job.hosts, master=MASTER_VAR)])


def env_words(job: Job, hostnames: str, master: str) -> list[list[str]]:
    """Each host's ``VAR=value`` words (launch.py ``host_env``), ``hostnames`` and ``master``
    standing for the list and its first host, which the script finds at run time."""
    envs = host_env(job, [master] + [hostnames] * (job.hosts - 1))
    return [[f"{k}={hostnames if k == 'TPU_WORKER_HOSTNAMES' else v}" for k, v in env.items()] for env in envs]


def host_line(job: Job, host: int) -> str:
    """What host ``host`` runs (with the placeholders): its environment, then train.sh."""
    env = env_words(job, _TOKENS[HOSTNAMES_VAR], _TOKENS[MASTER_VAR])[host]
    return shlex.join(["env", *env, *train_words(job, CODE, hosts.RUN_DIR)])


def _expand(line: str) -> str:
    """A quoted ssh line with each placeholder's single-quoted stretch closed, the variable's
    double-quoted expansion, and reopened: the script's variables reach the host's command."""
    for var, token in _TOKENS.items():
        line = _EXPANDED.substitute(var=var).join(line.split(token))
    return line


def stage(job: Job, repo_models: str, *, stop: bool = False) -> list[Step]:
    """The steps before the launch: the hosts listed, the folders, models/torchtpu and the shipped
    files copied, the install (``stop``: only models/torchtpu copied, for stop.sh). A launcher
    built on this one (models/roberta_torchtpu) adds its own steps after these."""
    reach = access(job)
    src = hosts.code_sources(repo_models, MODEL)  # models/torchtpu and models/checkpoint_sync.sh
    if stop:
        return hosts.with_preamble(reach, [
            Step("~/.tpubuild on every host", (reach.ssh("all", "mkdir -p .tpubuild", ready=False),)),
            Step(f"copy models/{MODEL} to ~/{CODE} on every host", (reach.scp(src, ".tpubuild/"),))])
    share = f"{job.mount_point.rstrip('/')}/nfs_share"
    wheels = f"{share}/wheels/{job.env}/{MODEL}"
    root = job.repo_root.rstrip("/") or "."
    copies = tuple(reach.scp([posixpath.join(root, p) for p in paths], dest)
                   for dest, paths in hosts.ship_groups(shipped(job)))  # as `tpubuild run` ships
    steps = [
        Step("the slice's hosts in worker order (TPU_WORKER_HOSTNAMES)", (_workers_line(job, reach),)),
        Step("folders on Filestore and ~/.tpubuild on every host",
             (reach.ssh("all", hosts.in_code_home(hosts.dirs_line(share, [log_dir(job), wheels]))),)),
        Step(f"copy models/{MODEL} to ~/{CODE} on every host", (reach.scp(src, ".tpubuild/"),)),
        Step(f"copy {' '.join(shipped(job))} to ~/{hosts.RUN_DIR} on every host",
             (reach.ssh("all", hosts.ship_dirs_line(shipped(job))), *copies)),
        Step("install torch, torch-tpu and libtpu on every host (Filestore wheelhouse; idempotent)",
             (reach.ssh("all", shlex.join(["bash", f"{CODE}/install.sh", "--wheelhouse", wheels, "--torch-index",
                                           TORCH_CPU_INDEX, "--no-deps", XPROF, "--", TORCH, TORCH_TPU, LIBTPU])),)),
    ]
    return hosts.with_preamble(reach, steps)


def _refuse(job: Job) -> None:
    found = problems(job)
    if found:
        raise found[0]
    if any(token in word for word in job.args for token in _TOKENS.values()):
        raise LaunchError("TORCHTPU_ARGS", f"the arguments contain one of {', '.join(_TOKENS.values())}, "
                          "which the launch uses for the hosts' names", "remove it")


def plan_train(job: Job, repo_models: str) -> list[Step]:
    _refuse(job)
    reach = access(job)
    launch = tuple(_expand(reach.ssh(str(h), hosts.detached(host_line(job, h)))) for h in range(job.hosts))
    return stage(job, repo_models) + [
        Step("launch on every host, detached, each with its own NODE_RANK; each tees to its log on Filestore",
             launch)]


def plan_stop(job: Job, repo_models: str) -> list[Step]:
    reach = access(job)
    stop = shlex.join(["bash", f"{CODE}/stop.sh"])
    return stage(job, repo_models, stop=True) + [
        Step("stop on every host and free the TPU", (reach.ssh("all", stop, ready=False),))]


def plan_logs(job: Job, host: int, *, follow: bool, lines: int = 200) -> list[Step]:
    if not 0 <= host < job.hosts:
        raise LaunchError("--host", f"host {host} does not exist on {job.accelerator_type} ({job.hosts} hosts)",
                          f"use --host 0 to {job.hosts - 1}")
    reach = access(job)
    tail = hosts.tail_line(host_log(job, host), lines, follow=follow)
    return hosts.with_preamble(reach, [Step(f"host {host}'s log (Filestore, read from worker 0)",
                                            (reach.ssh("0", tail),))])


def header(job: Job, model: str) -> str:
    """Per host, a block ``# host N`` with the exact environment and command it runs."""
    _refuse(job)
    lines = [f"# tpubuild train {model}: {job.accelerator_type} ({job.arch}), {job.hosts} host(s), "
             f"{job.chips} chips; {job.script} under torchrun, one process per host",
             f"# ${HOSTNAMES_VAR}: the slice's hosts in worker order, listed by the script; ${MASTER_VAR}: the first",
             f"# the hosts open TCP {', '.join(ports(job))} to each other (the slice's firewall rule)"]
    shown = env_words(job, f"${HOSTNAMES_VAR}", f"${MASTER_VAR}")
    for host in range(job.hosts):
        lines += [f"# host {host} (log {host_log(job, host)})", f"#   env {' '.join(shown[host])}",
                  f"#   {shlex.join(train_words(job, CODE, hosts.RUN_DIR))}"]
    return "\n".join(lines)


def render(steps: list[Step]) -> str:
    return hosts.render(steps)
