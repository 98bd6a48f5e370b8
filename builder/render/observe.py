"""Watching a training: what ``tpubuild profile`` and ``tpubuild logs --metrics`` run, and the
parser of torch_xla's metrics report. Pure (no I/O); the commands are in builder/commands/observe.py.

Decisions (docs/observe.md, docs/models.md):

* The launch starts torch_xla's profiler server in the local master process of every host on
  :data:`PROFILER_PORT` (9012) through ``models/xla_observe.py``. The port is reached on the host
  itself: ``tpubuild profile`` runs the capture there over SSH (IAP), so no firewall rule opens.
* A capture goes to ``<MOUNT_POINT>/nfs_share/profiles/<env>/<UTC timestamp>/`` on Filestore,
  which ``torch_xla.debug.profiler.trace`` fills as ``plugins/profile/<run>/<host>.xplane.pb``:
  TensorBoard's (XProf's) layout with that folder as ``--logdir``. It is then copied, by the
  user's own credentials (the hosts may only read buckets), to
  ``gs://<state bucket>/profiles/<env>/<timestamp>/`` through the user's machine.
* The metrics report: each host's local master writes ``host-<N>.metrics.txt`` beside its log
  (at the end of the run; every ``--metrics`` seconds with ``tpubuild train --metrics``) and a
  snapshot ``host-<N>.metrics.warmup.txt`` once the warm-up is over (:data:`WARMUP_S`). "Compiles
  after warm-up" is the difference of their ``UncachedCompile`` counters; CPU fallbacks are the
  ``aten::*`` counters (torch_xla counts every op it ran on the CPU instead of the device).
"""

from __future__ import annotations

import re
import shlex
from string import Template
from typing import Any

from builder.config.model_registry import hosts
from builder.facts.errors import BadInput
from builder.facts.records import field, record

PROFILER_PORT = 9012
#: Longest capture accepted (a trace of minutes is gigabytes on a pod).
MAX_DURATION_S = 300
#: Seconds after the start of a run when the warm-up snapshot of the metrics report is taken.
WARMUP_S = 300
#: Seconds between reports with ``tpubuild train --metrics``.
METRICS_INTERVAL_S = 60
HELPER = "xla_observe.py"

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m)?$")


def parse_duration(raw: str) -> int:
    """``10s``, ``1500ms``, ``2m`` or a bare number of seconds → milliseconds (1 ms .. 5 min)."""
    m = _DURATION.fullmatch(raw.strip())
    if not m:
        raise BadInput(f"--duration {raw!r}: not a duration; write it like 10s, 1500ms or 2m")
    value, unit = float(m.group(1)), m.group(2) or "s"
    ms = int(value * {"ms": 1, "s": 1000, "m": 60000}[unit])
    if not 100 <= ms <= MAX_DURATION_S * 1000:
        raise BadInput(f"--duration {raw!r}: must be between 100ms and {MAX_DURATION_S}s")
    return ms


def check_host(host: int, hosts: int, accelerator: str) -> None:
    if not 0 <= host < hosts:
        raise BadInput(f"--host {host}: {accelerator} has {hosts} host(s); use --host 0 to {hosts - 1}")


def nfs(mount_point: str) -> str:
    return f"{mount_point.rstrip('/')}/nfs_share"


def profile_dir(mount_point: str, env: str, stamp: str) -> str:
    return f"{nfs(mount_point)}/profiles/{env}/{stamp}"


def profile_gcs(state_bucket: str, env: str, stamp: str) -> str:
    return f"gs://{state_bucket}/profiles/{env}/{stamp}"


@record
class Target:
    """Where the commands go: one environment's TPU VM hosts."""

    arch: str
    project: str
    zone: str
    tpu: str
    env: str
    iap: bool
    hosts: int
    accelerator: str
    mount_point: str
    #: the selected model's declaration (builder/config/model_registry.py DECLARED): where its folder is on
    #: the hosts, its capture helper there ("": it has none) and its profiler server's port
    code_dir: str = ""
    helper: str = HELPER
    port: int = PROFILER_PORT
    model: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _refuse_node(t: Target, what: str) -> None:
    if t.arch == "node":
        raise BadInput(f"{what} needs PJRT (torch_xla 2.x on TPU VMs); the node architecture is legacy XRT "
                       "(TPU Nodes): migrate to TPU_ARCH=vm")


def _reach(t: Target) -> Any:
    """How gcloud reaches the target's hosts (models/hosts.py, the one host transport):
    ``t.extra["reach"]`` as builder/commands/observe.py finds it (on mig the slice's
    ``SliceHosts``, whose hosts are listed at run time), else the TPU VM's ``TpuVmHosts``."""
    if "reach" in t.extra:
        return t.extra["reach"]

    return hosts().for_arch("vm", t.project, t.zone, t.iap, t.hosts, tpu_name=t.tpu, mig_name="")


def _listed(reach: Any, line: str) -> list[str]:
    """``bash -c`` of the transport's preamble (mig: the listing of the slice's VMs in worker
    order; vm: which of the slice's two slots exists) and then ``line``."""
    return ["bash", "-c", "\n".join(["set -euo pipefail", reach.preamble(), line])]


def ssh(t: Target, worker: int, command: str) -> list[str]:
    """argv of an SSH to worker ``worker``. Through IAP the TPU VM flag exists only in ``gcloud
    alpha`` (gcloud 528). Hosts found at run time (a slice's MIG; the live slot of a TPU VM): a
    ``bash -c`` that finds them, then the ssh to the ``worker``-th."""
    reach = _reach(t)
    if getattr(reach, "resolved", False):  # vm: the same command as argv's, to the live slot
        return _listed(reach, reach.line(str(worker), command))
    if reach.preamble():
        return _listed(reach, reach.ssh(str(worker), command, ready=False))
    return reach.argv(str(worker), command)


def scp_back(t: Target, worker: int, remote: str, local: str) -> list[str]:
    reach = _reach(t)
    if reach.preamble():
        return _listed(reach, reach.scp_from(str(worker), remote, local))
    return reach.scp_from_argv(str(worker), remote, local)


#: Runs the helper on a host: the host's environment and the training Python (train.sh's) first.
_HOST_PYTHON = Template('if [ -r /etc/profile.d/tpubuild.sh ]; then . /etc/profile.d/tpubuild.sh; fi; '
                        'PATH="$$HOME/.local/bin:$$PATH" python3 $helper $args')


def host_python(code_dir: str, *args: str, helper: str = HELPER) -> str:
    """A POSIX sh line that runs on a host: load the host's environment and the training Python
    (train.sh's), then the helper with ``args`` (each quoted)."""
    return _HOST_PYTHON.substitute(helper=shlex.quote(f"{code_dir}/{helper}"), args=shlex.join(args))


def profile_commands(t: Target, host: int, duration_ms: int, stamp: str, state_bucket: str,
                     local_dir: str) -> list[list[str]]:
    """The capture on host ``host`` (into Filestore), the copy back to ``local_dir`` and the upload."""
    _refuse_node(t, "tpubuild profile")
    if not (t.code_dir and t.helper):
        what = f"the {t.model} model declares no profiler" if t.model else "MODEL is empty: no model is selected"
        raise BadInput(f"profile: {what} (CODE_DIR and PROFILER in its keys.py, "
                       "builder/config/model_registry.py DECLARED); profile a model that declares one")
    check_host(host, t.hosts, t.accelerator)
    remote = profile_dir(t.mount_point, t.env, stamp)
    capture = host_python(t.code_dir, "capture", "--port", str(t.port), "--duration-ms", str(duration_ms),
                          "--logdir", remote, helper=t.helper)
    return [
        ssh(t, host, capture),
        scp_back(t, host, remote, local_dir),
        ["gcloud", "storage", "cp", "--recursive", f"{local_dir}/{stamp}/*",
         profile_gcs(state_bucket, t.env, stamp) + "/", f"--project={t.project}"],
    ]


def open_hints(t: Target, host: int, stamp: str, state_bucket: str) -> list[str]:
    remote = profile_dir(t.mount_point, t.env, stamp)
    gcs = profile_gcs(state_bucket, t.env, stamp)
    board = f"python3 -m tensorboard.main --logdir {shlex.quote(remote)} --port 6006"
    reach = _reach(t)
    slots = getattr(reach, "slots", ()) if getattr(reach, "resolved", False) else ()
    listed = bool(reach.preamble()) and not slots  # worker 0 = the first VM name of the group in C-locale order
    if slots:  # vm: the slice is in whichever of its two slots exists (make-before-break alternates them)
        import dataclasses  # models/hosts.py: a dataclass of the launchers' own

        argv = dataclasses.replace(reach, tpu_name="TPU", slots=()).argv("0", board)
        where = [f"  TPU is whichever of {', '.join(slots)} exists (tpubuild status shows it)"]
    elif listed:
        argv = reach.argv("WORKER0", board)
        where = [f"  WORKER0 is the first name {reach.listing_line()} prints in C-locale order"]
        if getattr(reach, "slotted", False):  # mig: the group is whichever of its two slots exists
            where.append(f"  TPUBUILD_TPU is whichever of {', '.join(reach.slots)} exists (tpubuild status shows it)")
    else:
        argv, where = ssh(t, 0, board), []
    tunnel = shlex.join([*argv, "--", "-L", "6006:localhost:6006"])
    return [
        f"profile of host {host} ({t.tpu}): {remote} (Filestore) and {gcs}",
        "open it in TensorBoard's Profile tab (pip install tensorboard xprof):",
        f"  locally, from GCS:   tensorboard --logdir {gcs}",
        f"  on the pod, through IAP: {tunnel}   then http://localhost:6006",
        *where,
    ]


def metrics_command(t: Target, log_dir: str) -> list[str]:
    """Print every host's metrics reports (read on worker 0 from Filestore), each after a
    ``==> <path>`` line."""
    _refuse_node(t, "tpubuild logs --metrics")
    script = (f"for f in {shlex.quote(log_dir)}/host-*.metrics*.txt; do "
              "[ -e \"$f\" ] || { echo 'no metrics report yet' >&2; exit 3; }; echo \"==> $f\"; cat \"$f\"; done")
    return ssh(t, 0, script)


# ---------------------------------------------------------------- the metrics report

_ENTRY = re.compile(r"^(Metric|Counter): (\S+)\s*$")
_FIELD = re.compile(r"^\s+(\w+): (.*)$")


def warmup_ready(report: Any) -> bool:
    """Whether the warm-up snapshot beside ``report`` (a Path) exists (models/xla_observe.py)."""
    return report.with_name(report.name.replace(".metrics.txt", ".metrics.warmup.txt")).exists()


def parse_report(text: str) -> dict[str, dict[str, dict[str, str]]]:
    """torch_xla's ``metrics_report()`` → ``{"metrics": {name: fields}, "counters": {name: fields}}``
    (fields as written: ``TotalSamples``, ``Accumulator``, ``Value``, ...)."""
    out: dict[str, dict[str, dict[str, str]]] = {"metrics": {}, "counters": {}}
    current: dict[str, str] | None = None
    for line in text.splitlines():
        if m := _ENTRY.match(line):
            current = out["metrics" if m.group(1) == "Metric" else "counters"].setdefault(m.group(2), {})
        elif current is not None and (f := _FIELD.match(line)):
            current[f.group(1)] = f.group(2).strip()
    return out


def _int(fields: dict[str, str] | None, key: str) -> int:
    try:
        return int(float((fields or {}).get(key, "0")))
    except ValueError:
        return 0


def compiles(report: dict[str, dict[str, dict[str, str]]]) -> int:
    """Graphs compiled: the UncachedCompile counter (CompileTime's samples when absent)."""
    if "UncachedCompile" in report["counters"]:
        return _int(report["counters"]["UncachedCompile"], "Value")
    return _int(report["metrics"].get("CompileTime"), "TotalSamples")


def fallbacks(report: dict[str, dict[str, dict[str, str]]]) -> dict[str, int]:
    return {name: _int(f, "Value") for name, f in report["counters"].items() if name.startswith("aten::")}


def split_dump(text: str) -> dict[str, str]:
    """The output of :func:`metrics_command` → ``{file name: report text}``."""
    files: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("==> "):
            current = files.setdefault(line[4:].rsplit("/", 1)[-1], [])
        elif current is not None:
            current.append(line)
    return {name: "\n".join(lines) for name, lines in files.items()}


_HOST_FILE = re.compile(r"^host-(.+?)\.metrics(\.warmup)?\.txt$")


def summarise(files: dict[str, str]) -> list[str]:
    """One line per host, then the CPU fallbacks across hosts."""
    hosts: dict[str, dict[str, Any]] = {}
    for name, text in files.items():
        m = _HOST_FILE.match(name)
        if m:
            hosts.setdefault(m.group(1), {})["warmup" if m.group(2) else "last"] = parse_report(text)
    if not any("last" in h for h in hosts.values()):
        return ["no metrics report yet: the hosts write one at the end of the run, or every minute with "
                "'tpubuild train --metrics'"]
    lines = []
    ops: dict[str, list[tuple[str, int]]] = {}
    for host in sorted(hosts, key=lambda h: (len(h), h)):
        rep = hosts[host]
        if "last" not in rep:
            continue
        total = compiles(rep["last"])
        after = (f"{total - compiles(rep['warmup'])} after warm-up" if "warmup" in rep
                 else "warm-up snapshot not taken yet")
        falls = fallbacks(rep["last"])
        for op, n in falls.items():
            ops.setdefault(op, []).append((host, n))
        lines.append(f"host {host}: {total} compiles ({after}); {sum(falls.values())} CPU fallback calls "
                     f"in {len(falls)} op(s)")
    if ops:
        lines.append("ops that fell back to the CPU (calls, summed over hosts):")
        for op, seen in sorted(ops.items(), key=lambda kv: -sum(n for _, n in kv[1])):
            lines.append(f"  {op}: {sum(n for _, n in seen)} on {len(seen)} host(s)")
    else:
        lines.append("no op fell back to the CPU")
    return lines
