"""RoBERTa pretraining on TorchTPU, as step plans: the ``Launcher`` ``tpubuild train/stop/logs``
call (builder/config/model_registry.py) for ``MODEL="roberta_torchtpu"``.

models/torchtpu's launch (hosts in worker order, models/torchtpu and the shipped files copied, the
install, one detached ``torchrun`` per host with launch.py ``host_env``), with pretrain.py as the
script (plan.py: its arguments from the ``ROBERTA_*`` keys), after a check on worker 0 that the
data-bin is there. ``stop`` sends SIGTERM and waits for the checkpoint pretrain.py writes then;
``stop --probe`` says whether it trains and when ``checkpoint_last.pt`` was written (a
make-before-break build waits on it). Standard library only.
"""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import replace as with_fields  # a copy of the Job (no string is edited here)
from string import Template

from .. import hosts
from ..torchtpu import launcher as base
from .plan import (FOLDER, MODEL, Job, LaunchError, checkpoint_path, data_bin, problems, save_dir,  # noqa: F401
                   update_freq)

Step = hosts.Step
log_dir = base.log_dir
plan_logs = base.plan_logs
render = base.render
#: What runs while it trains (a ``pgrep -f`` regex that does not match itself): pretrain.py as torchrun
#: starts it (``python -u SCRIPT``), not train.sh or torchrun, whose command lines name it too: stop.sh
#: sends SIGTERM to the workers first, which checkpoint and exit; torchrun's own SIGTERM would kill
#: them after its shutdown timeout.
TRAINING = "[-]u models/roberta_torchtpu/pretrain[.]py"
#: Seconds stop.sh gives the training to write its checkpoint after SIGTERM before it kills it.
STOP_GRACE_S = 300
_DATA_CHECK = Template(
    'for f in dict.txt train.idx train.bin; do if [ ! -s $data/$$f ]; then echo "tpubuild: $data/$$f is missing: '
    'prepare the data-bin first (tpubuild train roberta prepares it from ROBERTA_DATA_SOURCE; '
    'docs/models.md, RoBERTa on TorchTPU)" >&2; exit 1; fi; done')


def _job(job: Job, repo_models: str) -> Job:
    """The job with the repository root the shipped files are read from (the models/ folder's parent)."""
    return with_fields(job, repo_root=posixpath.dirname(repo_models.rstrip("/")) or ".")


def _refuse(job: Job) -> None:
    found = problems(job)
    if found:
        raise found[0]


def plan_train(job: Job, repo_models: str) -> list[Step]:
    _refuse(job)
    job = _job(job, repo_models)
    steps = base.plan_train(job, repo_models)
    reach = base.access(job)
    check = Step("the data-bin on Filestore (models/roberta/prepare_data.py's output), checked from worker 0",
                 (reach.ssh("0", _DATA_CHECK.substitute(data=shlex.quote(data_bin(job)))),))
    return steps[:-1] + [check, steps[-1]]


def plan_stop(job: Job, repo_models: str) -> list[Step]:
    reach = base.access(job)
    stop = shlex.join(["bash", f"{base.CODE}/stop.sh", "--pattern", TRAINING, "--grace", str(STOP_GRACE_S)])
    return base.stage(job, repo_models, stop=True) + [
        Step("stop on every host (SIGTERM: rank 0 writes checkpoint_last.pt at the update boundary)",
             (reach.ssh("all", stop, ready=False),))]


def plan_probe(job: Job, repo_models: str) -> list[Step]:
    """``tpubuild-probe RUNNING MTIME`` from worker 0 (models/hosts.py ``probe_line``)."""
    reach = base.access(job)
    line = reach.ssh("0", hosts.probe_line(TRAINING, checkpoint_path(job)), ready=False)
    return hosts.with_preamble(reach, [Step("is it training, and when was checkpoint_last.pt written (worker 0)",
                                            (line,))])


def header(job: Job, model: str) -> str:
    """The batch arithmetic and the resume, then models/torchtpu's per-host blocks."""
    _refuse(job)
    first, *rest = base.header(job, model).splitlines()
    per = job.opt("batch_per_device") * job.chips_per_host
    return "\n".join([
        first,
        f"# global batch {job.opt('total_batch')} sequences = {job.hosts} process(es) x {per} "
        f"({job.opt('batch_per_device')} per chip x {job.chips_per_host} chips) x {update_freq(job)} micro-steps",
        f"# data {data_bin(job)}; resume: from {save_dir(job)}/checkpoint_last.pt when there is one, at the next "
        "sequence ('tpubuild-resume ... next_position=P' on every host), whatever the world size",
        *rest])
