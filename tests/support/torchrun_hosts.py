"""Simulated TorchTPU hosts on this machine (tests/models/test_torchtpu.py, test_roberta_torchtpu.py):

* :func:`emitted`: a launcher's host listing and launch lines run through bash, gcloud a function
  that records each ssh command; the environment each host's command carries;
* :func:`run_hosts`: each host's train.sh words with its environment, one process group per host,
  all on the loopback (gloo), stopped together when one fails or the deadline passes.
"""

from __future__ import annotations

import os
import random
import shlex
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

from tests.conftest import REPO
from tests.support.side_venv import clean_env

#: gcloud as a bash function: each ssh appends the command it would run on its host to $SEEN.
_FAKE_GCLOUD = r'''gcloud() {
  local a
  for a; do case $a in --command=*) printf '%s\n' "${a#--command=}" >>"$SEEN" ;; esac; done
}'''


def emitted(launcher: Any, job: Any, hostnames: list[str], tmp_path: Path) -> list[dict[str, str]]:
    """Run the script's host listing and launch lines through bash (TPUBUILD_HOSTS preset, as the
    mig preamble leaves it) and read back the environment each host's command carries."""
    steps = launcher.plan_train(job, str(REPO / "models"))
    wanted = [s for s in steps if s.title.startswith(("the slice's hosts in worker order", "launch on every host"))]
    assert len(wanted) == 2
    seen = tmp_path / "seen"
    script = "\n".join(["set -euo pipefail", f"SEEN={shlex.quote(str(seen))}", _FAKE_GCLOUD,
                        f"TPUBUILD_HOSTS=({shlex.join(hostnames)})", *(line for s in wanted for line in s.lines)])
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    envs = []
    for line in seen.read_text().splitlines():
        words = shlex.split(line.split("setsid nohup ", 1)[1])
        assert words[0] == "env"
        envs.append(dict(w.split("=", 1) for w in words[1:] if "=" in w and w.split("=", 1)[0].isupper()))
    return envs


def quiet_port() -> int:
    """A free port below the kernel's ephemeral range: no other test's ``bind(0)`` server and no
    outgoing connection is handed it between this check and torchrun's bind. (CI, stop 41: with an
    ephemeral port, host 0 could not bind its store and host 1 waited on whoever held the port.)"""
    import socket

    ranges = Path("/proc/sys/net/ipv4/ip_local_port_range")
    low = int(ranges.read_text().split()[0]) if ranges.exists() else 32768
    for port in random.sample(range(20000, max(20001, min(low, 32768))), 500):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("no free port between 20000 and the ephemeral range")


def tail(path: Path) -> str:
    return path.read_text(errors="replace")[-2000:] if path.exists() else "(no log)"


def run_hosts(python: Path, hosts: list[tuple[list[str], dict[str, str]]], out_dir: Path, deadline_s: float,
              logs: Callable[[int], Path], *, meanwhile: Callable[[], None] | None = None,
              ) -> list[subprocess.CompletedProcess[str]]:
    """Each host's ``(words, env)`` as its own process group on this machine (MASTER_PORT a quiet
    port: the launcher's 29500 may be taken here; gloo on the loopback), until all exit; one
    failing or the deadline passing stops the others (a host alone waits forever). ``logs(rank)``:
    the host's log, shown when the deadline passes. ``meanwhile`` is called while they run
    (every half second; a stop sent from it)."""
    port = str(quiet_port())
    outs = [out_dir / f"host-{rank}.out" for rank in range(len(hosts))]
    out_dir.mkdir(parents=True, exist_ok=True)
    procs = [subprocess.Popen(words, stdout=out.open("w"), stderr=subprocess.STDOUT, start_new_session=True,
                              env=clean_env(python, **{**env, "MASTER_PORT": port}, TPUBUILD_PYTHON=str(python),
                                            GLOO_SOCKET_IFNAME="lo"))
             for (words, env), out in zip(hosts, outs)]
    deadline = time.monotonic() + deadline_s
    while any(proc.poll() is None for proc in procs):
        failed = any(proc.returncode not in (None, 0) for proc in procs)
        if failed or time.monotonic() > deadline:
            for proc in procs:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
            if not failed:
                said = {r: tail(logs(r)) for r in range(len(procs))}
                raise AssertionError(f"the hosts still ran after {deadline_s} s (port {port}); their logs: {said}")
        if meanwhile is not None:
            meanwhile()
        time.sleep(0.5)
    return [subprocess.CompletedProcess(words, proc.returncode, out.read_text(errors="replace"), "")
            for (words, _), proc, out in zip(hosts, procs, outs)]
