"""models/torchtpu: the launch of any PyTorch script with TorchTPU, proven offline.

* ``train torchtpu --dry-run`` for a mig v6e-16 and a vm v5p-32: four consistent ``host N`` blocks.
* The printed script's launch lines run through bash (gcloud a function that prints the command
  each host would get): the environment each host receives is launch.py ``host_env``'s.
* The agreement test: the real ``torch.tpu.distributed.set_tpu_launch_env`` (torch-tpu 0.2.0 with
  libtpu, .venv-torchtpu) once per simulated host, each in its own process, from exactly that
  environment: every host agrees, NODE_RANK is 0..3 in hostname order, nothing is overwritten.
* The shipped example trains under torchrun with 2 processes on CPU (gloo), from the same lines.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from builder.config import load
from builder.config import model_registry
from tests.conftest import EXAMPLES, REPO, run_tpubuild
from tests.support.side_venv import clean_env, torchtpu_python
from tests.support.torchrun_hosts import emitted, quiet_port, run_hosts

EXAMPLE = "models/torchtpu/examples/tiny_transformer.py"
LAUNCH = model_registry.load(model_registry.SOURCE_MODELS, "torchtpu.launch")
LAUNCHER = model_registry.load(model_registry.SOURCE_MODELS, "torchtpu.launcher")
#: the slice's hosts as the script lists them, in worker order (mig: VM names sorted in C order)
HOSTNAMES = ["v6e-slice-0a1b", "v6e-slice-2c3d", "v6e-slice-4e5f", "v6e-slice-6a7b"]


def _values(make_env, base: Path) -> Path:
    """A torchtpu values file whose TORCHTPU_SCRIPT exists beside it, as validate and train want."""
    values = make_env(base, MODEL="torchtpu", TORCHTPU_SCRIPT=EXAMPLE, TORCHTPU_ARGS="--steps 100 --name 'a b'")
    script = values.parent / EXAMPLE
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_bytes((REPO / EXAMPLE).read_bytes())
    return values


def _job(path: Path):
    job = LAUNCH.Job.from_settings(load(path))
    return dataclasses.replace(job, repo_root=str(REPO))  # the example is the repository's


def _blocks(out: str) -> list[tuple[dict[str, str], list[str]]]:
    """The ``# host N`` blocks of the dry-run header: (environment, command) each."""
    lines = out.splitlines()
    found = []
    for i, line in enumerate(lines):
        if line.startswith("# host "):
            assert line.startswith(f"# host {len(found)} (log ")
            env = dict(w.split("=", 1) for w in shlex.split(lines[i + 1].removeprefix("#   env ")))
            found.append((env, shlex.split(lines[i + 2].removeprefix("#   "))))
    return found


@pytest.mark.parametrize("example,topology", [("mig-v6e-16-spot.env", "4x4"), ("vm-v5p-32.env", "2x2x4")])
def test_dry_run_shows_four_consistent_hosts(make_env, example: str, topology: str) -> None:
    values = _values(make_env, EXAMPLES / example)
    r = run_tpubuild("train", "torchtpu", "--dry-run", "--values", values)
    assert r.returncode == 0, r.stderr
    blocks = _blocks(r.stdout)
    assert len(blocks) == 4
    shared = {k: v for k, v in blocks[0][0].items() if k not in ("NODE_RANK", "JOB_COMPLETION_INDEX")}
    assert shared["NNODES"] == "4" and shared["MASTER_PORT"] == "29500" and shared["TORCH_TPU_TOPOLOGY"] == topology
    assert shared["TPU_WORKER_HOSTNAMES"] == "$TPUBUILD_WORKER_HOSTNAMES"
    assert shared["MASTER_ADDR"] == "$TPUBUILD_MASTER_ADDR" and shared["TORCH_TPU_DEVICES_PER_HOST"] == "4"
    for rank, (env, command) in enumerate(blocks):
        assert list(env)[:4] == ["TPU_WORKER_HOSTNAMES", "NODE_RANK", "JOB_COMPLETION_INDEX", "NNODES"]  # one order
        assert env["NODE_RANK"] == env["JOB_COMPLETION_INDEX"] == str(rank)
        assert {k: v for k, v in env.items() if k in shared} == shared
        assert command[-4:] == [EXAMPLE, "--steps", "100", "--name", "a b"][-4:] and command == blocks[0][1]
    assert "# the hosts open TCP 8070-8073, 29500, 36423 to each other" in r.stdout
    assert subprocess.run(["bash", "-n"], input=r.stdout, text=True).returncode == 0


def _emitted(job, hostnames: list[str], tmp_path: Path) -> list[dict[str, str]]:
    return emitted(LAUNCHER, job, hostnames, tmp_path)


def test_the_launch_lines_carry_host_env(make_env, tmp_path: Path) -> None:
    job = _job(_values(make_env, EXAMPLES / "mig-v6e-16-spot.env"))
    envs = _emitted(job, HOSTNAMES, tmp_path)
    assert envs == LAUNCH.host_env(job, HOSTNAMES)
    assert [e["NODE_RANK"] for e in envs] == ["0", "1", "2", "3"]
    assert {e["TPU_WORKER_HOSTNAMES"] for e in envs} == {",".join(HOSTNAMES)}


_PROBE = ("import json, os\nfrom torch.tpu.distributed import set_tpu_launch_env\nbefore = dict(os.environ)\n"
          "set_tpu_launch_env()\nprint('TPUBUILD-ENV ' + json.dumps({'before': before, 'after': dict(os.environ)}))\n")


ROBERTA = model_registry.load(model_registry.SOURCE_MODELS, "roberta_torchtpu.launcher")


def _model_job(make_env, model: str):
    """The launcher of ``model`` (torchtpu, or roberta_torchtpu built on it) and its job on the v6e-16 mig example."""
    if model == "torchtpu":
        return LAUNCHER, _job(_values(make_env, EXAMPLES / "mig-v6e-16-spot.env"))
    return ROBERTA, ROBERTA.Job.from_settings(load(make_env(EXAMPLES / "mig-v6e-16-spot.env", MODEL=model)))


@pytest.mark.slow  # four imports of torch-tpu (~15 s each on CI's 2 cores)
@pytest.mark.parametrize("model", ["torchtpu", "roberta_torchtpu"])
def test_real_set_tpu_launch_env_agrees_on_every_host(make_env, tmp_path: Path, model: str) -> None:
    python = torchtpu_python()
    launcher, job = _model_job(make_env, model)
    seen = emitted(launcher, job, HOSTNAMES, tmp_path)
    assert seen == LAUNCH.host_env(job, HOSTNAMES)

    def one(env: dict[str, str]) -> dict[str, dict[str, str]]:
        r = subprocess.run([str(python), "-c", _PROBE], capture_output=True, text=True, timeout=600,
                           env=clean_env(python, **env))
        assert r.returncode == 0, r.stderr[-3000:]
        line = next(ln for ln in r.stdout.splitlines() if ln.startswith("TPUBUILD-ENV "))
        return json.loads(line.removeprefix("TPUBUILD-ENV "))

    with ThreadPoolExecutor(4) as pool:  # each host its own process, as on the slice
        results = list(pool.map(one, seen))
    afters = [r["after"] for r in results]
    for env, result in zip(seen, results):
        assert {k: result["after"][k] for k in env} == env  # nothing the launcher set was overwritten
    agreed = ("TORCH_TPU_SLICEBUILDER_ADDRESSES", "NNODES", "MASTER_ADDR", "MASTER_PORT", "TORCH_TPU_XPROF_SESSION_ID",
              "TORCH_TPU_TOPOLOGY")
    for key in agreed:
        assert len({a[key] for a in afters}) == 1, key
    assert [int(a["NODE_RANK"]) for a in afters] == list(range(4))  # in hostname order
    addresses = afters[0]["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")
    assert addresses == [f"{h}:{8070 + i}" for h in HOSTNAMES for i in range(4)]
    ports = {int(a.rsplit(":", 1)[1]) for a in addresses}
    first, last = map(int, LAUNCH.ports(job)[0].split("-"))
    assert ports == set(range(first, last + 1))  # the firewall rule's range opens exactly these
    assert afters[0]["MASTER_ADDR"] == HOSTNAMES[0] and afters[0]["NNODES"] == "4"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: seconds both hosts get to train 3 steps (about 30 s on this 2-core machine)
TRAIN_DEADLINE_S = 300


@pytest.mark.slow
def test_the_example_trains_under_torchrun_on_cpu_from_the_launch_lines(make_env, tmp_path: Path) -> None:
    """Two hosts on this machine, one process each (gloo): each runs train.sh with its
    ``host_env`` and launch.py ``train_words``, as a host of the slice does."""
    python = torchtpu_python()
    job = dataclasses.replace(_job(_values(make_env, EXAMPLES / "mig-v6e-16-spot.env")), hosts=2,
                              args=("--steps", "3"), mount_point=str(tmp_path))
    words = LAUNCH.train_words(job, str(REPO / "models/torchtpu"), str(REPO))
    at = words.index("--profiler-port") + 1
    assert words[at] == str(LAUNCH.PROFILER_PORT)

    def on_this_machine() -> list[str]:  # each host serves its profiler on its own port here (one per VM on a slice)
        return [*words[:at], str(quiet_port()), *words[at + 1:]]

    # both hosts are this machine: gloo on the loopback, whatever this machine's hostname resolves to
    hosts = [(on_this_machine(), env) for env in LAUNCH.host_env(job, ["127.0.0.1", "127.0.0.1"])]
    runs = run_hosts(python, hosts, tmp_path / "out", TRAIN_DEADLINE_S, lambda r: Path(LAUNCH.host_log(job, r)))
    for rank, r in enumerate(runs):
        assert r.returncode == 0, r.stdout[-3000:]
        log = Path(LAUNCH.host_log(job, rank)).read_text()
        assert f"tpubuild-step rank={rank}/2 step=3" in log
    assert "tpubuild-done steps=3 world=2" in Path(LAUNCH.host_log(job, 0)).read_text()


_SERVE = ("import time, torch, tpu_observe\nassert tpu_observe.serve()\nx = torch.randn(256, 256)\n"
          "end = time.time() + 60\nwhile time.time() < end:\n    (x @ x).sum()\n")


@pytest.mark.slow
def test_tpubuild_profile_captures_from_the_torchtpu_server(tmp_path: Path) -> None:
    """The capture line ``tpubuild profile`` runs on a host (builder/render/observe.py ``host_python`` with
    torchtpu's declared helper and port) against a process that called ``tpu_observe.serve()``,
    as the example does under train.sh: an XProf trace in TensorBoard's layout. No server: exit 3."""
    from builder.render import observe

    python = torchtpu_python()
    code = REPO / "models/torchtpu"
    port = _free_port()
    helper = model_registry.declared(None, "torchtpu", "PROFILER")
    env = clean_env(python, HOME=str(tmp_path), PYTHONPATH=str(code))

    def capture(logdir: Path) -> subprocess.CompletedProcess[str]:
        line = observe.host_python(str(code), "capture", "--port", str(port), "--duration-ms", "1500",
                                   "--logdir", str(logdir), helper=helper)
        return subprocess.run(["sh", "-c", line], capture_output=True, text=True, timeout=300, env=env)

    nobody = capture(tmp_path / "none")
    assert nobody.returncode == 3 and "no profile from port" in nobody.stderr, nobody.stderr[-2000:]
    said = tmp_path / "server.log"
    with said.open("w") as out:
        server = subprocess.Popen([str(python), "-c", _SERVE], env={**env, "TPUBUILD_PROFILER_PORT": str(port)},
                                  stdout=subprocess.DEVNULL, stderr=out)
    try:
        for _ in range(600):  # the server is up once it says so (torch-tpu's import takes a while)
            if "profiler server on port" in said.read_text() or server.poll() is not None:
                break
            time.sleep(0.5)
        r = capture(tmp_path / "profile")
        assert r.returncode == 0, r.stderr[-3000:]
    finally:
        server.kill()
        server.wait()
    traces = list((tmp_path / "profile/plugins/profile").glob("*/*.xplane.pb"))
    assert len(traces) == 1 and traces[0].stat().st_size > 0
