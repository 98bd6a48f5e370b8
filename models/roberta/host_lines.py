"""RoBERTa: the per-host command lines (models/roberta/launcher.py's second part).

What runs ON a host, as one shell line each, from the recipe (models/roberta/recipe.py): install,
prepare the data, train (vm: train.sh under PJRT; node: under xla_dist on the leader). Every line
is ``shlex.join`` of a word list; how a line reaches the hosts is models/hosts.py's job.
"""

from __future__ import annotations

import shlex

from .recipe import (TORCH_CPU_INDEX, Job, code_dir, conda_env, data_bin, data_source, fairseq_args,
                     fairseq_requirement, host_arch, log_dir, pjrt, torch_xla_version, train_env, wheelhouse)


def _sh(words: list[str]) -> str:
    return shlex.join(words)


def install_line(job: Job) -> str:
    code = code_dir(job)
    words = ["bash", f"{code}/install.sh", "--arch", host_arch(job), "--fairseq", fairseq_requirement(job)]
    if pjrt(job):
        words += ["--torch-xla", torch_xla_version(job), "--torch-index", TORCH_CPU_INDEX,
                  "--wheelhouse", wheelhouse(job)]
    else:
        words += ["--conda-env", conda_env(job)]
    return _sh(words)


def prepare_line(job: Job) -> str:
    code = code_dir(job)
    words = ["bash", f"{code}/prepare_data.sh", "--source", data_source(job),
             "--train-file", job.opt("train_file"), "--valid-file", job.opt("valid_file"),
             "--bpe", job.opt("bpe"), "--dest", data_bin(job)]
    if job.arch == "node":
        words += ["--conda-env", conda_env(job)]
    return _sh(words)


def host_train_line(job: Job) -> str:
    """What runs on every host: train.sh with the fairseq arguments (node: under xla_dist)."""
    code = code_dir(job)
    train = ["bash", f"{code}/train.sh", "--log-dir", log_dir(job), "--arch", host_arch(job)]
    if job.arch == "node":
        train += ["--conda-env", conda_env(job)]
    train += ["--", *fairseq_args(job)]
    if pjrt(job):
        env = [f"{k}={v}" for k, v in train_env(job).items()]
        return _sh(["env", *env, *train])
    return _sh(train)


def leader_launch_line(job: Job) -> str:
    """node: xla_dist on the leader runs :func:`host_train_line` on every MIG worker."""
    dist = ["bash", f"{code_dir(job)}/xla_dist.sh", "--conda-env", conda_env(job), "--log-dir", log_dir(job),
            "--", "python", "-m", "torch_xla.distributed.xla_dist", f"--tpu={job.tpu_name}",
            f"--conda-env={conda_env(job)}"]
    dist += [f"--env={k}={v}" for k, v in train_env(job).items()]
    return _sh([*dist, "--", *shlex.split(host_train_line(job))])
