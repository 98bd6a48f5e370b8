"""TorchTPU: what the launch computes, as pure functions (models/torchtpu/launcher.py's first part).

One record per fact: :func:`host_env` is the environment every host's ``torchrun`` starts with, in
one order for all hosts; the ``--dry-run`` header, the per-host ssh lines and the offline agreement
test (tests/models/test_torchtpu_agreement.py, the real ``torch.tpu.distributed.set_tpu_launch_env``
once per simulated host) all read it. Standard library only.

Decisions (docs/models.md "TorchTPU"):

* ``TPU_WORKER_HOSTNAMES``: the slice's hosts in worker order, listed by the launch script at run
  time (vm: the TPU VM's ``networkEndpoints`` IP addresses, which are in worker order; mig: the
  slice's VM names in C-locale order, which is env_setup/scripts/startup.sh's TPU_WORKER_ID order;
  Compute Engine's internal DNS resolves them). ``NODE_RANK`` is the host's index in that list and
  ``JOB_COMPLETION_INDEX`` the same number, so ``set_tpu_launch_env`` never needs the chip
  coordinates (whose order need not match the hostname order). ``MASTER_ADDR`` is the first host,
  ``MASTER_PORT`` 29500.
* ``TORCH_TPU_XPROF_SESSION_ID``: one value per launch, ``<env>-<UTC time>``, the same on every host
  (torch-tpu's default is a timestamp taken on each host, different on every host).
* ``TORCH_TPU_TOPOLOGY``: the slice's chip grid (builder/data/tpu_offers.json ``mig.shapes``; the
  same grid whichever path made the slice). A generation whose record has no grid (v4, v5e) gets
  none: torch-tpu then reads the host-local topology, and ``NODE_RANK`` still comes from here.
* ``TORCH_TPU_DEVICES_PER_HOST``: the generation's chips per host, so the address list torch-tpu
  builds (``host:8070+i``) is the same on every host and matches the firewall rule.
* one ``torchrun`` process per host (``--nproc-per-node 1``): the TorchTPU runtime of that process
  drives every chip of its host.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ..launch_error import LaunchError
from .facts import PROFILER_PORT, STEP_WORD  # noqa: F401

MODEL = "torchtpu"
#: Ports the slice's hosts open to each other (env_setup firewall rule, modules/network):
#: torch-tpu's slice builder (base port, one per device of a host), torchrun's rendezvous, and
#: the handshake rank 0 opens.
BASE_PORT = 8070
MASTER_PORT = 29500
HANDSHAKE_PORT = 36423
#: What the hosts install (from the Filestore wheelhouse): torch-tpu 0.2.0 needs torch 2.11 to 2.15.
TORCH = "torch==2.13.0"
TORCH_TPU = "torch-tpu==0.2.0"
LIBTPU = "libtpu==0.0.52"
#: XProf's capture client (``tpubuild profile``), installed without its dependencies (its client
#: needs none; the package's own pull a server stack the hosts do not use).
XPROF = "xprof==2.24.2"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
#: Generations torch-tpu supports (its README); v2/v3 are refused.
GENERATIONS = ("v4", "v5e", "v5p", "v6e", "tpu7x")
ARCHS = ("vm", "mig")
#: Placeholders for what the launch script lists at run time (:func:`host_env`'s hostnames).
HOSTNAMES_VAR = "TPUBUILD_WORKER_HOSTNAMES"

#: The variables of :func:`host_env`, in the order every host gets them.
ORDER = ("TPU_WORKER_HOSTNAMES", "NODE_RANK", "JOB_COMPLETION_INDEX", "NNODES", "MASTER_ADDR", "MASTER_PORT",
         "TORCH_TPU_XPROF_SESSION_ID", "TORCH_TPU_TOPOLOGY", "TORCH_TPU_DEVICES_PER_HOST", "TORCH_TPU_BASE_PORT")


@dataclass(frozen=True)
class Job:
    """Everything the launch needs, copied out of tpubuild's Settings (or written by hand)."""

    env: str
    project: str
    zone: str
    arch: str
    accelerator_type: str
    generation: str
    chips: int
    hosts: int
    chips_per_host: int
    tpu_name: str
    mount_point: str
    iap: bool
    script: str
    args: tuple[str, ...] = ()
    topology: str = ""  # the chip grid, e.g. 4x4; "" when the generation record has none
    session: str = ""  # TORCH_TPU_XPROF_SESSION_ID; from_settings stamps it
    repo_root: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    listing: tuple[str, ...] = ()
    slots: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    #: files shipped beside ``script`` (paths relative to repo_root): modules the script imports
    #: from its own folder (models/roberta_torchtpu ships its data reader and model so)
    ship: tuple[str, ...] = ()
    #: the plug-in that runs (MODEL): its checkpoints' folder, on Filestore and in the bucket (train.sh --model)
    model: str = MODEL

    @classmethod
    def from_settings(cls, s: Any) -> Job:
        t = s.topology
        rec = t.record
        size = int(s.accelerator_type.rsplit("-", 1)[1])
        shapes = rec.mig.shapes if rec.mig is not None else {}
        o = s.model_options
        return cls(env=s.env_name, project=s.project_id, zone=s.zone, arch=s.arch,
                   accelerator_type=s.accelerator_type, generation=t.generation, chips=t.chips, hosts=t.hosts,
                   chips_per_host=t.chips // t.hosts, tpu_name=s.tpu_name, mount_point=s.mount_point,
                   iap=not s.tpu_external_ips, script=str(o.get("torchtpu_script", "")),
                   args=tuple(o.get("torchtpu_args", ())), topology=shapes.get(size, ""),
                   session=session_id(s.env_name), repo_root=str(s.repo_root or ""), options=dict(o))


def session_id(env: str, now: float | None = None) -> str:
    """One XProf session id for every host of a launch: ``<env>-<UTC time>``."""
    return f"{env}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(now))}"


def problems(job: Job) -> list[LaunchError]:
    """Every setting this launch refuses, each once (keys.py ``check`` hands them to validate)."""
    found = []
    if job.arch not in ARCHS:
        found.append(LaunchError("TPU_ARCH", f'MODEL="torchtpu" runs on TPU VMs; TPU_ARCH="{job.arch}" is a TPU Node',
                                 'use TPU_ARCH="vm" or "mig" (tpubuild migrate rewrites a node file)'))
    elif job.generation not in GENERATIONS:
        found.append(LaunchError("TPU_ACCELERATOR_TYPE", f"torch-tpu does not support {job.generation} "
                                 f"({job.accelerator_type}); it supports {', '.join(GENERATIONS)}",
                                 'choose one of those generations, or MODEL="roberta" (torch_xla) on '
                                 f"{job.generation}"))
    if not job.script:
        found.append(LaunchError("TORCHTPU_SCRIPT", 'MODEL="torchtpu" needs a script to run',
                                 'set TORCHTPU_SCRIPT to a .py file in this repository, e.g. '
                                 '"models/torchtpu/examples/tiny_transformer.py"'))
    return found


def shipped(job: Job) -> list[str]:
    """What the launch copies to the run folder on every host: the script and :attr:`Job.ship`."""
    return [job.script, *job.ship]


def log_dir(job: Job) -> str:
    return f"{job.mount_point.rstrip('/')}/nfs_share/logs/{job.env}/{MODEL}"


def host_log(job: Job, host: int) -> str:
    return f"{log_dir(job)}/host-{host}.log"


def host_env(job: Job, hostnames: list[str]) -> list[dict[str, str]]:
    """The environment of every host's ``torchrun``, host ``i`` at index ``i``; each dict in
    :data:`ORDER`. ``hostnames``: the slice's hosts in worker order (one per host)."""
    if len(hostnames) != job.hosts:
        raise ValueError(f"{len(hostnames)} hostnames for {job.hosts} hosts")
    joined = ",".join(hostnames)
    out = []
    for rank in range(job.hosts):
        env = {"TPU_WORKER_HOSTNAMES": joined, "NODE_RANK": str(rank), "JOB_COMPLETION_INDEX": str(rank),
               "NNODES": str(job.hosts), "MASTER_ADDR": hostnames[0], "MASTER_PORT": str(MASTER_PORT),
               "TORCH_TPU_XPROF_SESSION_ID": job.session, "TORCH_TPU_TOPOLOGY": job.topology,
               "TORCH_TPU_DEVICES_PER_HOST": str(job.chips_per_host), "TORCH_TPU_BASE_PORT": str(BASE_PORT)}
        out.append({k: env[k] for k in ORDER if env[k]})
    return out


def ports(job: Job) -> list[str]:
    """The TCP ports the slice's hosts open to each other (the firewall rule's, as gcloud/Terraform write them)."""
    return [f"{BASE_PORT}-{BASE_PORT + job.chips_per_host - 1}", str(MASTER_PORT), str(HANDSHAKE_PORT)]


def train_words(job: Job, code: str, workdir: str) -> list[str]:
    """What every host runs after its environment: train.sh, which runs ``torchrun`` (one process
    per host) in ``workdir``, where the script was shipped at its path in the repository, with the
    environment's NNODES/NODE_RANK/MASTER_ADDR/MASTER_PORT."""
    return ["bash", f"{code}/train.sh", "--log-dir", log_dir(job), "--env", job.env, "--workdir", workdir,
            "--nproc-per-node", "1", "--profiler-port", str(PROFILER_PORT), "--model", job.model,
            "--", job.script, *job.args]
