"""RoBERTa pretraining on fairseq: the recipe (models/roberta/launcher.py's first part).

The :class:`Job` (what the launch needs, copied out of tpubuild's Settings), the pins, the
arithmetic (world size, ``--update-freq``: models/roberta/rules.py, with the rules validate runs),
the paths on Filestore and the exact ``fairseq-train``
arguments. Standard library only; no shell here (models/roberta/host_lines.py turns this into the
per-host command lines).
What the launch derives from the topology:

* world size = the number of XLA devices = chips × the generation record's ``xla_devices_per_chip``
  (builder/data/tpu_offers.json; ``Job.from_settings`` copies it): v2/v3 count TensorCores (8 per
  host, on node and vm); v4 and v5p run megacore (1 device per chip, 4 per host); v5e and v6e have
  1 core per chip. A generation whose record has no proven count is refused.
* ``--update-freq`` = total batch / (world size × batch per device), so the global batch
  (sequences per optimizer update) is ``ROBERTA_TOTAL_BATCH`` whatever the pod size; when it does
  not divide, :class:`LaunchError` says which values would.
* few XLA shapes: masked_lm with ``--sample-break-mode none`` and a fixed ``--tokens-per-sample``
  cuts the token stream into blocks of exactly that length; ``--required-batch-size-multiple 1``
  and ``--skip-remainder-batch`` keep every training batch at ``--batch-size`` rows. (Upstream
  fairseq 0.12's ``--num-batch-buckets`` belongs to the translation and audio tasks; masked_lm
  rejects it, so it is not emitted. ``benchmarks/batch_shapes.py`` counts the shapes.)
* ``--save-dir <MOUNT_POINT>/nfs_share/checkpoints/<env>/roberta`` on Filestore with
  ``--restore-file checkpoint_last.pt``: a relaunch resumes from the last checkpoint; a first
  launch starts fresh (fairseq skips a restore file that does not exist).
* one log per host: ``<MOUNT_POINT>/nfs_share/logs/<env>/roberta/host-<N>.log`` (``train.sh``
  tees everything the host prints; N is the TPU worker number on vm, xla_dist's ordinal on node).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .rules import (  # noqa: F401 - the rules are the recipe's too (launcher.py, tests)
    MODEL,
    Facts,
    LaunchError,
    problems,
    resize_note,
    resume_problems,
    update_freq,
    warmup_error,
    world_size,
)
#: Port of torch_xla's profiler server on every host (builder/render/observe.py PROFILER_PORT).
PROFILER_PORT = 9012

#: vm: the torch / torch_xla release installed for each TPU VM runtime. The base images carry no
#: PyTorch; torch and torch_xla must be the same release, and these support Python 3.10 (Ubuntu
#: 22.04's) and the runtime's TPU generations. 2.9.0 is the newest that models/roberta/pjrt_compat.py
#: is proven with; its ``torch_xla[tpu]`` extra takes ``libtpu`` from PyPI (2.6.0's needed a
#: libtpu-nightly build only on Google's bucket). ROBERTA_TORCH_XLA_VERSION overrides it.
#: tests/models/test_pins.py resolves each set with pip for Python 3.10 / manylinux x86_64.
VM_TORCH_XLA: dict[str, str] = {
    "tpu-ubuntu2204-base": "2.9.0",  # v2, v3, v4
    "v2-alpha-tpuv5-lite": "2.9.0",  # v5e
    "v2-alpha-tpuv5": "2.9.0",  # v5p
    "v2-alpha-tpuv6e": "2.9.0",  # v6e
}

#: vm: fairseq for ROBERTA_FAIRSEQ_VERSION=auto (fairseq 0.12.2 pins omegaconf 2.0, which no
#: longer installs with current pip; the fork 0.12.3.1 is what the real-torch_xla tests run).
VM_FAIRSEQ = "fairseq-fixed==0.12.3.1"

#: vm: torch (and torchaudio, which fairseq requires) come from PyTorch's CPU wheel index: PyPI's
#: Linux torch is the CUDA build with ~2.6 GB of nvidia-* wheels that a TPU never uses.
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"

#: fairseq's RoBERTa pretraining recipe (examples/roberta/README.pretraining.md), upstream flags.
RECIPE: tuple[str, ...] = (
    "--task", "masked_lm", "--criterion", "masked_lm",
    "--optimizer", "adam", "--adam-betas", "(0.9,0.98)", "--adam-eps", "1e-06", "--clip-norm", "0.0",
    "--dropout", "0.1", "--attention-dropout", "0.1", "--weight-decay", "0.01",
)

@dataclass(frozen=True)
class Job:
    """Everything the launch needs, copied out of tpubuild's Settings (or written by hand)."""

    env: str
    project: str
    zone: str
    arch: str  # node | vm | mig
    accelerator_type: str
    generation: str
    chips: int
    cores: int
    hosts: int
    runtime: str
    tpu_name: str
    mig_name: str
    mount_point: str
    iap: bool  # ssh through IAP (hosts without external IPs)
    options: dict[str, Any] = field(default_factory=dict)
    #: mig: argv that lists the slice's VMs (tpubuild fills it from builder/render/mig_hosts.py)
    listing: tuple[str, ...] = ()
    #: vm and mig: the names the slice may have (``tpu-<env>``, ``tpu-<env>-b``; tpubuild fills it
    #: from builder/config/replace.py): the launch addresses whichever exists at run time
    slots: tuple[str, ...] = ()
    #: mig: argv that lists which of ``slots`` exist (tpubuild fills it from builder/render/mig_hosts.py)
    groups: tuple[str, ...] = ()
    #: XLA devices per chip under PyTorch/XLA: the generation record's xla_devices_per_chip
    #: (0: no proven count; the launch is refused)
    devices_per_chip: int = 0

    @classmethod
    def from_settings(cls, s: Any) -> Job:
        t = s.topology
        external = s.mig_external_ip if s.arch == "node" else s.tpu_external_ips
        return cls(
            **Facts.from_settings(s).fields(), project=s.project_id, zone=s.zone, arch=s.arch,
            accelerator_type=s.accelerator_type, cores=t.cores, hosts=t.hosts, runtime=s.runtime_version,
            tpu_name=s.tpu_name, mig_name=s.mig_name, mount_point=s.mount_point, iap=not external,
        )

    def opt(self, name: str) -> Any:
        return self.options[f"roberta_{name}"]


# ---------------------------------------------------------------- the hosts

def pjrt(job: Job) -> bool:
    """vm and mig hosts are both TPU VMs under PJRT (torch_xla from PyPI, ~/.tpubuild)."""
    return job.arch in ("vm", "mig")


def host_arch(job: Job) -> str:
    """The --arch the host scripts get: a mig VM is a TPU VM (the host side is the vm one)."""
    return "vm" if job.arch == "mig" else job.arch


# ---------------------------------------------------------------- paths

def nfs(job: Job) -> str:
    return f"{job.mount_point.rstrip('/')}/nfs_share"


def save_dir(job: Job) -> str:
    return f"{nfs(job)}/checkpoints/{job.env}/{MODEL}"


def data_bin(job: Job) -> str:
    return f"{nfs(job)}/data-bin/{job.env}/{MODEL}"


def log_dir(job: Job) -> str:
    return f"{nfs(job)}/logs/{job.env}/{MODEL}"


def host_log(job: Job, host: int) -> str:
    return f"{log_dir(job)}/host-{host}.log"


def code_dir(job: Job) -> str:
    """Where the scripts live on the hosts: each TPU VM's home (vm), or Filestore, which every
    MIG worker mounts (node: xla_dist runs the same path on every worker)."""
    if pjrt(job):
        return f".tpubuild/{MODEL}"
    return f"{nfs(job)}/tpubuild/{job.env}/{MODEL}"


def data_source(job: Job) -> str:
    src = job.opt("data_source")
    if src.startswith("gs://") or src.startswith("/"):
        return src
    base = f"{job.mount_point.rstrip('/')}/shared_pd"
    return f"{base}/{src}" if src else base


def conda_env(job: Job) -> str:
    """node: the image's conda env for the runtime (pytorch-1.13 → torch-xla-1.13)."""
    return f"torch-xla-{job.runtime.removeprefix('pytorch-')}"


#: mig: the torch_xla release per generation (a MIG of TPU VMs boots an accelerator OS image, no TPU runtime).
MIG_TORCH_XLA: dict[str, str] = {"v5p": "2.9.0", "v6e": "2.9.0"}


def torch_xla_version(job: Job) -> str:
    pinned = job.opt("torch_xla")
    if pinned != "auto":
        return pinned
    pin = MIG_TORCH_XLA.get(job.generation) if job.arch == "mig" else VM_TORCH_XLA.get(job.runtime)
    if pin is None:  # a generation newer than these pins: the user names a release that supports it
        what = f"{job.generation} on mig" if job.arch == "mig" else f"runtime {job.runtime}"
        raise LaunchError("ROBERTA_TORCH_XLA_VERSION", f"the roberta launcher pins no torch_xla release for {what}",
                          "set ROBERTA_TORCH_XLA_VERSION to a torch_xla release that supports it, e.g. \"2.9.0\"")
    return pin


def fairseq_requirement(job: Job) -> str:
    """The fairseq pip requirement install.sh gets (``auto`` stays for node: it depends on the
    conda env's Python, which install.sh reads on the host)."""
    pinned = job.opt("fairseq")
    return VM_FAIRSEQ if pinned == "auto" and pjrt(job) else pinned


def wheelhouse(job: Job) -> str:
    """vm: the wheels of one environment on Filestore: the first host downloads torch/torch_xla
    and their dependencies and builds fairseq once; every host installs from here."""
    return f"{nfs(job)}/wheelhouse/{job.env}"


# ---------------------------------------------------------------- fairseq

def fairseq_args(job: Job) -> list[str]:
    """The exact ``fairseq-train`` arguments (upstream fairseq 0.12 flags only)."""
    world = world_size(job)
    per_device = job.opt("batch_per_device")
    freq = update_freq(job.opt("total_batch"), world, per_device)
    seq = str(job.opt("seq_len"))
    max_update = job.opt("max_updates")
    warmup = job.opt("warmup_updates")
    if warmup >= max_update:
        raise warmup_error(job)
    scheduler = job.opt("lr_scheduler")
    args = [
        data_bin(job),
        *RECIPE,
        "--arch", job.opt("arch"),
        "--sample-break-mode", "none", "--tokens-per-sample", seq, "--max-positions", seq,
        "--batch-size", str(per_device), "--required-batch-size-multiple", "1", "--skip-remainder-batch",
        "--update-freq", str(freq), "--max-update", str(max_update),
        "--lr-scheduler", scheduler, "--lr", repr(job.opt("lr")), "--warmup-updates", str(warmup),
    ]
    if scheduler == "polynomial_decay":
        args += ["--total-num-update", str(max_update)]
    if job.opt("resume") == "reset-data":
        args += ["--reset-dataloader"]
    if job.opt("bf16") and pjrt(job):
        # torch_xla 2.9 dropped XLA_USE_BF16: fairseq casts the model to bfloat16 itself and keeps
        # fp32 master weights in its optimizer wrapper.
        args += ["--bf16"]
    args += [
        "--tpu", "--distributed-world-size", str(world),
        "--save-dir", save_dir(job), "--restore-file", "checkpoint_last.pt",
        "--save-interval-updates", str(job.opt("save_interval_updates")),
        "--keep-interval-updates", str(job.opt("keep_checkpoints")), "--no-epoch-checkpoints",
        "--log-format", "simple", "--log-interval", "10", "--skip-invalid-size-inputs-valid-test",
    ]
    return args + list(job.opt("extra_args"))


def sequences_per_update(args: list[str]) -> int:
    """Read the global batch back out of an argument list (what the tests and docs check)."""
    def value(flag: str) -> int:
        return int(args[args.index(flag) + 1])
    return value("--distributed-world-size") * value("--batch-size") * value("--update-freq")


def train_env(job: Job) -> dict[str, str]:
    env = {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}  # fairseq 0.12's checkpoints under torch >= 2.6
    if job.opt("bf16") and job.arch == "node":  # XRT's torch_xla 1.x; vm: fairseq's --bf16 instead
        env["XLA_USE_BF16"] = "1"
    if pjrt(job):
        # models/xla_observe.py (train.sh runs fairseq through it): the profiler server that
        # `tpubuild profile` captures from, and the metrics report beside the host's log
        env = {"PJRT_DEVICE": "TPU", **env, "TPUBUILD_PROFILER_PORT": str(PROFILER_PORT)}
        if job.options.get("metrics_interval"):
            env["TPUBUILD_METRICS_INTERVAL"] = str(job.options["metrics_interval"])
    return env
