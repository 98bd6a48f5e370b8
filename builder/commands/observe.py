"""``tpubuild profile`` (an XLA profile of the running training) and ``tpubuild logs --metrics``
(torch_xla's metrics report summarised across hosts). The commands themselves are made in
builder/render/observe.py; this file runs them (``--dry-run`` prints them)."""

from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import tempfile
import time
from typing import Any

from builder.render import mig_hosts
from builder.commands import load_settings
from builder.config import Settings
from builder.config import model_registry
from builder.facts.errors import BadInput, WorldError
from builder.render import observe


def target(settings: Settings) -> observe.Target:
    s = settings

    external = s.mig_external_ip if s.arch == "node" else s.tpu_external_ips
    # how gcloud reaches the hosts (models/hosts.py; on mig the slice's VMs in worker order)
    extra: dict[str, Any] = {"reach": mig_hosts.access(s)}
    # the selected model's own declaration (builder/config/model_registry.py DECLARED)
    declared = {name: model_registry.declared(s.repo_root, s.model, name)
                for name in ("CODE_DIR", "PROFILER", "PROFILER_PORT")}
    return observe.Target(arch=s.arch, project=s.project_id, zone=s.zone, tpu=s.tpu_name, env=s.env_name,
                          iap=not external, hosts=s.hosts, accelerator=s.accelerator_type,
                          mount_point=s.mount_point, code_dir=declared["CODE_DIR"], helper=declared["PROFILER"] or "",
                          port=declared["PROFILER_PORT"] or observe.PROFILER_PORT, model=s.model, extra=extra)


#: The longest word of a failed command that its one-line error quotes (a ``bash -c`` script is not quoted).
_SHOWN = 80


def _run(argv: list[str], what: str, capture: bool = False) -> str:
    if shutil.which(argv[0]) is None:
        raise WorldError(f"{argv[0]} is not on PATH; install the Google Cloud CLI to {what}, "
                         "or add --dry-run to see the commands")
    proc = subprocess.run(argv, check=False, text=True, stdout=subprocess.PIPE if capture else None)
    if proc.returncode == 3:
        raise WorldError(f"could not {what}: no training is running with a profiler server / metrics report "
                         "(the host said why above); start one with 'tpubuild train'")
    if proc.returncode != 0:
        shown = shlex.join(w if len(w) <= _SHOWN else "SCRIPT" for w in argv[:6])  # never a whole script on the line
        raise WorldError(f"could not {what}: {shown} ... failed with exit code {proc.returncode} "
                         "(its output is above); rerun with --dry-run to see each command")
    return proc.stdout or ""


def run_profile(args: argparse.Namespace) -> int:
    settings = load_settings(args)
    duration_ms = observe.parse_duration(args.duration)
    t = target(settings)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    local = tempfile.mkdtemp(prefix="tpubuild-profile-") if not args.dry_run else f"/tmp/tpubuild-profile-{stamp}"
    commands = observe.profile_commands(t, args.host, duration_ms, stamp, settings.state_bucket, local)
    if args.dry_run:
        print(f"# tpubuild profile: host {args.host} of {t.tpu}, {duration_ms} ms")
        for argv in commands:
            print(shlex.join(argv))
        return 0
    try:
        for argv, what in zip(commands, ("capture the profile", "copy the profile back", "upload the profile")):
            _run(argv, what)
    finally:
        shutil.rmtree(local, ignore_errors=True)
    print("\n".join(observe.open_hints(t, args.host, stamp, settings.state_bucket)))
    return 0


def run_logs_metrics(settings: Settings, log_dir: str, dry_run: bool) -> int:
    """``tpubuild logs --metrics``: every host's report, read on worker 0, summarised here."""
    t = target(settings)
    argv = observe.metrics_command(t, log_dir)
    if dry_run:
        print(shlex.join(argv))
        return 0
    out = _run(argv, "read the metrics reports", capture=True)
    print("\n".join(observe.summarise(observe.split_dump(out))))
    return 0


def refuse_flags(args: Any, *names: str) -> None:
    bad = [n for n in names if getattr(args, n, False)]
    if bad:
        raise BadInput(f"--metrics cannot be combined with --{bad[0].replace('_', '-')}; drop one of them (the reports are files, not a stream)")
