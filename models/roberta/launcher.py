"""RoBERTa pretraining on fairseq across a TPU pod: the launch, as pure functions.

The package is split by job: models/roberta/keys.py (its values.env keys), rules.py (the rules on the
topology validate runs, and the arithmetic), recipe.py (Job, pins, paths, fairseq arguments), host_lines.py (what runs on a host), this file (the step
plans: which line goes to which host through models/hosts.py, the shared host transport), resume.py
(the resume position across world sizes, on the hosts). This
file is the ``Launcher`` tpubuild calls (builder/config/model_registry.py) and re-exports the names of
the other two that tpubuild and the tests use.

Standard library only, so it runs anywhere (the user's machine, a Cloud Build step, a TPU host).
``tpubuild train roberta`` imports this file (builder/config/model_registry.py: ``models/`` is not a
Python package of the install) and calls :func:`plan_train`, :func:`plan_stop` and :func:`plan_logs`, which return the
exact shell lines to run; ``--dry-run`` prints them. ``tpubuild stop --probe`` calls :func:`plan_probe`
(is it training, when was its checkpoint written: what a make-before-break build waits on before it
stops the training on the old slice).

What the launch derives from the topology (world size, ``--update-freq``, the shapes, the paths
on Filestore) is models/roberta/recipe.py's docstring.

The training runs detached on the hosts (``setsid nohup``): closing the terminal or Ctrl-C in
``gcloud`` never leaves half a pod running. ``plan_stop`` kills it on every host and frees the TPU.
"""

from __future__ import annotations

from typing import Any

from .. import hosts
from .host_lines import _sh, host_train_line, install_line, leader_launch_line, prepare_line
from .recipe import (MIG_TORCH_XLA, MODEL, PROFILER_PORT, RECIPE, TORCH_CPU_INDEX,  # noqa: F401
                     VM_FAIRSEQ, VM_TORCH_XLA, Job, LaunchError, code_dir, conda_env, data_bin, data_source,
                     fairseq_args, fairseq_requirement, host_arch, host_log, log_dir, nfs, pjrt, problems,
                     resume_problems, save_dir, sequences_per_update, torch_xla_version, train_env, update_freq,
                     wheelhouse, world_size)
from .resume import SAYS

# ---------------------------------------------------------------- on the hosts

#: What env_setup/scripts/startup.sh leaves on every host at each boot (models/hosts.py).
HOST_PROFILE = hosts.HOST_PROFILE
HOST_READY = hosts.HOST_READY
HOST_FAILED = hosts.HOST_FAILED
on_host = hosts.on_host
Step = hosts.Step


# ---------------------------------------------------------------- gcloud (models/hosts.py)

def access(job: Job) -> Any:
    """How gcloud reaches this job's hosts (models/hosts.py ``for_arch``)."""
    return hosts.for_arch(job.arch, job.project, job.zone, job.iap, job.hosts, tpu_name=job.tpu_name,
                          mig_name=job.mig_name, listing=job.listing, slots=job.slots,
                          groups=job.groups)


def vm_ssh(job: Job, worker: str, command: str, *, ready: bool = True) -> str:
    """``command`` on TPU VM worker ``worker`` (a number or ``all``), through :func:`on_host`."""
    return access(job).ssh(worker, command, ready=ready)


def _dirs_line(job: Job) -> str:
    dirs = [save_dir(job), data_bin(job), log_dir(job)]
    dirs += [f"{nfs(job)}/tpubuild/{job.env}"] if job.arch == "node" else [wheelhouse(job)]
    return hosts.dirs_line(nfs(job), dirs, spelling="model")


def _stage(job: Job, repo_models: str, *, stop: bool = False) -> list[Step]:
    """Copy the scripts to the hosts (and, to train, make the folders on Filestore). To stop on vm,
    only ~/.tpubuild is needed, so a host that is not ready (still booting, or failed) is staged
    and stopped too; on node the scripts live on Filestore, which the leader must have mounted."""
    src = hosts.code_sources(repo_models, MODEL)  # models/roberta and models/checkpoint_sync.sh
    reach = access(job)
    if pjrt(job):
        if stop:
            first = Step("~/.tpubuild on every host", (reach.ssh("all", "mkdir -p .tpubuild", ready=False),))
        else:
            first = Step("folders on Filestore and ~/.tpubuild on every host",
                         (reach.ssh("all", hosts.in_code_home(_dirs_line(job))),))
        return hosts.with_preamble(reach, [
            first,
            Step(f"copy models/{MODEL} to ~/{code_dir(job)} on every host", (reach.scp(src, ".tpubuild/"),)),
        ])
    return [
        Step("the leader: the first worker VM of the MIG", reach.leader()),
        Step("folders on Filestore", (reach.ssh(hosts.LEADER, _dirs_line(job)),)),
        Step(f"copy models/{MODEL} to Filestore ({code_dir(job)})",
             (reach.scp(src, f"{nfs(job)}/tpubuild/{job.env}/"),)),
    ]


def plan_train(job: Job, repo_models: str) -> list[Step]:
    """Stage the scripts, install on every host, prepare the data once, launch on every host."""
    found = problems(job)  # the model's own rules, the ones `tpubuild validate` reports
    if found:
        raise found[0]
    steps = _stage(job, repo_models)
    reach = access(job)
    if pjrt(job):
        return steps + [
            Step("install fairseq and torch_xla on every host (idempotent)", (reach.ssh("all", install_line(job)),)),
            Step("prepare data-bin on Filestore once (skipped when it is current)",
                 (reach.ssh("0", prepare_line(job)),)),
            Step("launch on every host, detached; each host tees to its log on Filestore",
                 (reach.ssh("all", hosts.detached(host_train_line(job))),)),
        ]
    return steps + [
        Step("install fairseq into the image's conda env on every worker (idempotent)",
             (reach.each(install_line(job)),)),
        Step("prepare data-bin on Filestore once (skipped when it is current)",
             (reach.ssh(hosts.LEADER, prepare_line(job)),)),
        Step("launch xla_dist on the leader, detached; it runs train.sh on every worker",
             (reach.ssh(hosts.LEADER, hosts.detached(leader_launch_line(job))),)),
    ]


def plan_stop(job: Job, repo_models: str) -> list[Step]:
    """Kill the training on every host and free the TPU (vm: whatever holds /dev/accel*, /dev/vfio)."""
    stop = ["bash", f"{code_dir(job)}/stop.sh", "--arch", host_arch(job)]
    steps = _stage(job, repo_models, stop=True)
    reach = access(job)
    if pjrt(job):
        return steps + [Step("stop on every host and free the TPU", (reach.ssh("all", _sh(stop), ready=False),))]
    return steps + [
        Step("stop xla_dist on the leader (it stops its workers)",
             (reach.ssh(hosts.LEADER, _sh([*stop, "--leader"]), ready=False),)),
        Step("then make sure nothing is left on any worker", (reach.each(_sh(stop), ready=False),)),
    ]


#: What runs while RoBERTa trains (a ``pgrep -f`` regex that does not match itself): stop.sh's.
TRAINING = "fairseq_cli[.]train|roberta/train[.]sh"


def checkpoint_path(job: Job) -> str:
    """The checkpoint a relaunch resumes from (fairseq rewrites it at every save)."""
    return f"{save_dir(job)}/checkpoint_last.pt"


def plan_probe(job: Job, repo_models: str) -> list[Step]:
    """Whether the training runs (worker 0) and when :func:`checkpoint_path` was last written, as
    one ``tpubuild-probe RUNNING MTIME`` line (models/hosts.py ``probe_line``); the build's
    tpu-checkpoint step waits on it for a new checkpoint before it stops the training. TPU VMs only
    (node: the build does not move the training; make-before-break is vm's)."""
    if not pjrt(job):
        raise LaunchError("--probe", f'TPU_ARCH="{job.arch}" has no probe (the TPU VM architectures have)',
                          "run tpubuild logs to see whether it trains")
    reach = access(job)
    line = reach.ssh("0", hosts.probe_line(TRAINING, checkpoint_path(job)), ready=False)
    return hosts.with_preamble(reach, [Step("is it training, and when was checkpoint_last.pt written (worker 0)",
                                            (line,))])


def plan_logs(job: Job, host: int, *, follow: bool, lines: int = 200) -> list[Step]:
    if not 0 <= host < job.hosts:
        raise LaunchError("--host", f"host {host} does not exist on {job.accelerator_type} ({job.hosts} hosts)",
                          f"use --host 0 to {job.hosts - 1}")
    tail = hosts.tail_line(host_log(job, host), lines, follow=follow)
    reach = access(job)
    if pjrt(job):
        return hosts.with_preamble(reach, [Step(f"host {host}'s log (Filestore, read from worker 0)",
                                                (reach.ssh("0", tail),))])
    return [
        Step("the leader", reach.leader()),
        Step(f"host {host}'s log (Filestore, read on the leader)", (reach.ssh(hosts.LEADER, tail),)),
    ]


def header(job: Job, model: str) -> str:
    """The per-host command lines, as comments above the ``--dry-run`` script."""
    args = fairseq_args(job)
    world = int(args[args.index("--distributed-world-size") + 1])
    per = args[args.index("--batch-size") + 1]
    freq = args[args.index("--update-freq") + 1]
    lines = [
        f"# tpubuild train {model}: {job.accelerator_type} ({job.arch}), {job.hosts} host(s), {world} devices;",
        f"# global batch {sequences_per_update(args)} sequences = {world} devices x {per} x --update-freq {freq}",
    ]
    lines.append(resume_note(job, world))
    if job.arch == "node":
        lines.append(f"# the leader runs: {leader_launch_line(job)}")
    for host in range(job.hosts):
        lines.append(f"# host {host} (log {host_log(job, host)}) runs: {host_train_line(job)}")
    return "\n".join(lines)


def resume_note(job: Job, world: int) -> str:
    """How a relaunch continues (models/roberta/resume.py), in the words each host logs."""
    if job.opt("resume") == "reset-data":
        return ("# resume: ROBERTA_RESUME=reset-data: the model and optimizer resume from checkpoint_last.pt, the data "
                "order restarts (--reset-dataloader)")
    where = SAYS.format(updates="N", sample="S", epoch="E", old="A", new=world)
    return (f"# resume: from {save_dir(job)}/checkpoint_last.pt when there is one; each host logs "
            f"'{where}' (models/roberta/resume.py): no sequence skipped or repeated")


def render(steps: list[Step]) -> str:
    """A bash script: what ``--dry-run`` prints and what ``tpubuild`` runs."""
    return hosts.render(steps)
