"""``tpubuild run/stop/logs --run`` on TPU_ARCH="mig" (models/hosts.py ``SliceHosts``, listing from
builder/render/mig_hosts.py): the dry run prints the group listing, then one ``gcloud compute ssh
--tunnel-through-iap`` line per host in PJRT worker order; every gcloud line parses in the REAL
gcloud (offline harness); and the printed script, executed by bash against sandboxed hosts (a
stand-in ``gcloud`` that lists the group shuffled and runs ``--command`` in the named host's
sandbox, as tests/shell/test_run.py runs the vm lines), sends worker N's line to the N-th name in C-locale
order, i.e. the host whose /etc/profile.d/tpubuild.sh says TPU_WORKER_ID=N (startup.sh's order)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from builder.config import load
from tests.conftest import EXAMPLES
from tests.shell.test_run import _wait, command_of, gcloud_lines

pytestmark = pytest.mark.slow

MIG = EXAMPLES / "mig-v6e-16-spot.env"
NAMES = ["tpu-v6e-slice-q7xd", "tpu-v6e-slice-Zb2c", "tpu-v6e-slice-a2bc", "tpu-v6e-slice-k9m1"]  # as listed
ORDER = sorted(NAMES, key=str.encode)  # startup.sh: LC_ALL=C sort

HOST = re.compile(r'^\$\{TPUBUILD_HOSTS\[(\d+)\]\}$')  # shlex.split drops the quotes


def unrolled(out: str, count: int = 4) -> str:
    """``out`` with each loop over every host of the group (models/slots.py ``each_host``: a command
    for all workers, whatever the group's size) written out as one line per worker, in worker order,
    as the assertions below read the script's lines (the script itself runs the loop)."""
    lines, res, i = out.splitlines(), [], 0
    while i < len(lines):
        if lines[i] == 'for tpubuild_host in "${TPUBUILD_HOSTS[@]}"; do' and lines[i + 2] == "done":
            res += [lines[i + 1].strip().replace('"$tpubuild_host"', f'"${{TPUBUILD_HOSTS[{n}]}}"') for n in range(count)]
            i += 3
        else:
            res.append(lines[i])
            i += 1
    return "\n".join(res)


def lines_of(out: str) -> list[list[str]]:
    return gcloud_lines(unrolled(out))


def target(words: list[str]) -> str:
    """The host word of a gcloud line: ssh's instance, or scp's destination (its last positional word,
    after every source: the plug-in's folder and the shared scripts beside it, models/run_lines.py
    SHARED_SCRIPTS), without its ':path'."""
    if words[2] == "ssh":
        return words[3]
    return [w for w in words[3:] if not w.startswith("--")][-1].split(":")[0]


def workers(out: str) -> list[int]:
    return [int(HOST.match(words[3]).group(1)) for words in lines_of(out) if words[:3] == ["gcloud", "compute", "ssh"]]


def test_dry_runs_list_the_group_then_one_line_per_host_in_worker_order(cli, gcloud):
    code, out, err = cli("run", "--dry-run", "--values", MIG, "--", "python3", "train.py", "--lr", "0.1 0.2")
    assert code == 0, err
    assert workers(out) == [0, 0, 1, 2, 3]  # the log folder once (worker 0), then every host in order
    groups = next(line for line in out.splitlines() if line.startswith("tpubuild_slices=$("))
    groups = shlex.split(groups[len("tpubuild_slices=$("):-1])  # which of the two slots exists
    assert groups[:5] == ["gcloud", "compute", "instance-groups", "managed", "list"]
    assert '--filter=name~"^(tpu\\-v6e\\-slice|tpu\\-v6e\\-slice\\-b)$"' in groups
    listing = next(line for line in out.splitlines() if line.startswith("tpubuild_listing=$("))
    listed = shlex.split(listing[len("tpubuild_listing=$("):-1])
    assert listed[:6] == ["gcloud", "compute", "instance-groups", "managed", "list-instances", "$TPUBUILD_TPU"]
    for argv in (groups, [w.replace("$TPUBUILD_TPU", "tpu-v6e-slice-b") for w in listed]):
        parsed = gcloud.parse(argv)
        assert parsed.ok, parsed.why()
    for words in lines_of(out):
        assert "--tunnel-through-iap" in words and "--zone=us-east5-b" in words
        concrete = [ORDER[int(HOST.match(w).group(1))] if HOST.match(w) else w for w in words]
        parsed = gcloud.parse(concrete)
        assert parsed.ok, (concrete[:5], parsed.why())
    assert "python3 train.py --lr '0.1 0.2'" in command_of(lines_of(out)[-1])

    code, out, _ = cli("run", "--dry-run", "--hosts", "2", "--values", MIG, "--", "true")
    assert code == 0 and workers(out) == [0, 2]
    code, out, _ = cli("stop", "--dry-run", "--values", MIG)  # the model's stop (MODEL=roberta), then run's
    assert code == 0 and workers(out) == [0, 1, 2, 3] * 3
    assert "pidfile=.tpubuild/run.pgid" in command_of(lines_of(out)[-1])
    code, out, _ = cli("logs", "--run", "--host", "3", "--dry-run", "--values", MIG)
    assert code == 0 and workers(out) == [0]
    assert command_of(lines_of(out)[0]).endswith("tail -n 200 /mnt/common/nfs_share/logs/v6e-slice/run/host-3.log")
    code, _, err = cli("run", "--dry-run", "--hosts", "4", "--values", MIG, "--", "true")
    assert code == 2 and "--hosts 4: the slice has 4 host(s)" in err and len(err.strip().splitlines()) == 1


FAKE_GCLOUD = r"""#!/bin/bash
set -euo pipefail
if [ "$2" = instance-groups ] && [ "$4" = list ]; then echo tpu-v6e-slice-bx; echo tpu-v6e-slice; exit 0; fi
if [ "$2" = instance-groups ]; then [ "$5" = tpu-v6e-slice ] || exit 1; cat "$SANDBOX/listing"; exit 0; fi
host="$3"; cmd=""
for a in "$@"; do case "$a" in --command=*) cmd="${a#--command=}";; esac; done
echo "$host" >>"$SANDBOX/calls"
root="$SANDBOX/$host"
cd "$root/home"
cmd="${cmd//\/run\/tpubuild\//$root/run/}"
cmd="${cmd//\/etc\/profile.d\//$root/profile.d/}"
HOME="$root/home" exec sh -c "$cmd"
"""


def sandbox(tmp_path: Path, listing: list[str]) -> dict[str, str]:
    box = tmp_path / "hosts"
    bin_dir = box / "bin"
    bin_dir.mkdir(parents=True)
    for name, text in (("gcloud", FAKE_GCLOUD), ("sudo", '#!/bin/sh\nexec "$@"\n'), ("mountpoint", "#!/bin/sh\nexit 0\n")):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    for worker, name in enumerate(ORDER):  # what startup.sh writes on each VM of the group
        root = box / name
        for d in ("run", "profile.d", "home"):
            (root / d).mkdir(parents=True)
        (root / "run/ready").write_text("")
        (root / "profile.d/tpubuild.sh").write_text(
            f"export TPU_WORKER_ID={worker}\nexport TPUBUILD_WORKER_NUMBER={worker}\n"
            f"export TPU_WORKER_HOSTNAMES={','.join(ORDER)}\n")
    (box / "listing").write_text("\n".join(listing) + "\n")
    return {**os.environ, "SANDBOX": str(box), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def test_printed_run_script_reaches_every_host_in_worker_order(cli, make_env, tmp_path):
    mount = tmp_path / "mnt"
    values = make_env(MIG, MOUNT_POINT=str(mount))
    code, out, _ = cli("run", "--dry-run", "--values", values, "--", "sh", "-c", 'echo "worker=$TPU_WORKER_ID of $TPU_WORKER_HOSTNAMES"')
    assert code == 0
    log_dir = mount / "nfs_share/logs/v6e-slice/run"
    env = sandbox(tmp_path, NAMES + [""])
    r = subprocess.run(["bash", "-c", out], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert f"workers in order: {' '.join(ORDER)}" in r.stderr
    calls = (tmp_path / "hosts/calls").read_text().split()
    assert calls == [ORDER[0], *ORDER]  # mkdir on worker 0, then workers 0..3
    for worker in range(4):
        log = log_dir / f"host-{worker}.log"
        # the log's first line echoes the command (its text holds "worker="): wait for the output itself
        want = f"worker={worker} of {','.join(ORDER)}"
        assert _wait(lambda: log.exists() and want in log.read_text(), 30), log.read_text() if log.exists() else ""

    # a group that lists fewer VMs than the slice (a spot VM lost) starts nothing, in one line
    env = sandbox(tmp_path / "short", NAMES[:3])
    r = subprocess.run(["bash", "-c", out], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and not (tmp_path / "short/hosts/calls").exists()
    assert r.stderr.strip().splitlines() == [
        "tpubuild: the slice is tpu-v6e-slice",
        'tpubuild: the MIG tpu-v6e-slice lists 3 of 4 VMs; wait until tpubuild status shows the slice 4/4 running, '
        "or run tpubuild update to recreate lost (spot) VMs"]


# ---------------------------------------------------------------- roberta on mig (models/roberta/launcher.py)

def _steps(out: str) -> dict[str, list[list[str]]]:
    """The script's gcloud lines grouped by their '# N. title' step."""
    steps: dict[str, list[list[str]]] = {}
    title = ""
    for line in out.splitlines():
        if line.startswith("# ") and line[2:3].isdigit():
            title = line.split(". ", 1)[1]
            steps[title] = []
        elif line.startswith("gcloud ") and title:
            steps[title].append(shlex.split(line))
    return steps


def test_train_stop_logs_of_the_model_reach_every_host_in_worker_order(cli, gcloud):
    code, out, err = cli("train", "roberta", "--dry-run", "--values", MIG)
    assert code == 0, err
    assert "# tpubuild train roberta: v6e-16 (mig), 4 host(s), 16 devices;" in out
    steps = _steps(unrolled(out))
    titles = list(steps)
    assert titles[0].startswith("the slice: whichever of tpu-v6e-slice, tpu-v6e-slice-b exists")
    assert titles[0].endswith("then the slice's VMs in PJRT worker order (TPUBUILD_HOSTS)") and steps[titles[0]] == []
    for title in titles[1:]:
        order = [int(HOST.match(target(w)).group(1)) for w in steps[title]]
        expect = [0] if title.startswith("prepare") else [0, 1, 2, 3]
        assert order == expect, (title, order)
    for words in lines_of(out):
        assert "--tunnel-through-iap" in words
        concrete = [HOST.sub(lambda m: ORDER[int(m.group(1))], w.split(":")[0]) + w[len(w.split(":")[0]):]
                    if HOST.match(w.split(":")[0]) else w for w in words]
        parsed = gcloud.parse(concrete)
        assert parsed.ok, (concrete[:5], parsed.why())
    copies = [w for title in titles for w in steps[title] if w[2] == "scp"]
    assert copies and all([Path(p).name for p in w[4:-4]] == ["roberta", "checkpoint_sync.sh"] for w in copies)
    assert all(w[-4].endswith(":.tpubuild/") for w in copies)  # train.sh finds ../checkpoint_sync.sh
    launch = steps[titles[-1]][0]
    assert "--arch vm" in command_of(launch) and "PJRT_DEVICE=TPU" in command_of(launch)
    assert "--distributed-world-size 16" in command_of(launch)

    code, out, err = cli("stop", "--dry-run", "--values", MIG)
    assert code == 0, err
    stop = [w for w in lines_of(out) if w[2] == "ssh" and "stop.sh --arch vm" in command_of(w)]
    assert [int(HOST.match(w[3]).group(1)) for w in stop] == [0, 1, 2, 3]
    assert "pidfile=.tpubuild/run.pgid" in command_of(lines_of(out)[-1])  # then run's jobs
    code, out, err = cli("logs", "--host", "2", "--dry-run", "--values", MIG)
    assert code == 0 and workers(out) == [0]
    assert command_of(lines_of(out)[0]).endswith("/mnt/common/nfs_share/logs/v6e-slice/roberta/host-2.log")


def test_a_mig_host_runs_exactly_the_vm_host_side():
    """The host side of mig is the vm one (TPU VMs under PJRT), which tests/models/test_roberta_e2e.py runs
    under real torch_xla: same train/install lines for the same slice, only the transport differs."""
    import dataclasses

    from builder.commands.train import _job, load_launcher

    s = load(MIG)
    launcher, _ = load_launcher(s, "roberta")
    job = _job(s, launcher)
    assert job.listing and job.listing[:5] == ("gcloud", "compute", "instance-groups", "managed", "list-instances")
    as_vm = dataclasses.replace(job, arch="vm", runtime="v2-alpha-tpuv6e")
    for line in ("host_train_line", "install_line", "prepare_line"):
        assert getattr(launcher, line)(job) == getattr(launcher, line)(as_vm), line


# ---------------------------------------------------------------- profile, logs --metrics (builder/render/observe.py)

def _script_lines(argv: list[str]) -> list[list[str]]:
    assert argv[:2] == ["bash", "-c"]
    return lines_of(argv[2])


def test_profile_and_metrics_reach_the_right_worker_and_parse(cli, gcloud):
    from builder.render import observe
    from builder.commands.observe import target

    t = target(load(MIG))
    capture, back, upload = observe.profile_commands(t, 3, 5000, "20261123T000000Z", "b-tf-backend", "/tmp/x")
    metrics = observe.metrics_command(t, "/mnt/common/nfs_share/logs/v6e-slice/roberta")
    for argv, worker in ((capture, 3), (back, 3), (metrics, 0)):
        [words] = _script_lines(argv)
        ref = words[3] if words[2] == "ssh" else words[4].split(":")[0]
        assert HOST.match(ref).group(1) == str(worker)
        concrete = [w.replace(ref, ORDER[worker]) for w in words]
        parsed = gcloud.parse(concrete)
        assert parsed.ok, (concrete[:5], parsed.why())
        assert "--tunnel-through-iap" in words and "tpu-vm" not in words
    assert gcloud.parse(upload).ok
    code, out, err = cli("profile", "--values", str(MIG), "--host", "3", "--dry-run")
    assert code == 0 and "gcloud compute ssh \"${TPUBUILD_HOSTS[3]}\"" in out and "--port 9012" in out
    code, out, err = cli("profile", "--values", str(MIG), "--host", "4", "--dry-run")
    assert code == 2 and len(err.strip().splitlines()) == 1


def test_metrics_script_reads_the_reports_on_worker_0(make_env, tmp_path):
    from builder.render import observe
    from builder.commands.observe import target

    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    (log_dir / "host-1.metrics.txt").write_text("Metric: CompileTime\n  TotalSamples: 3\n")
    argv = observe.metrics_command(target(load(MIG)), str(log_dir))
    env = sandbox(tmp_path, NAMES)
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "hosts/calls").read_text().split() == [ORDER[0]]
    assert observe.split_dump(r.stdout) == {"host-1.metrics.txt": "Metric: CompileTime\n  TotalSamples: 3"}
    (log_dir / "host-1.metrics.txt").unlink()  # no report yet: exit 3, which tpubuild turns into one line
    r = subprocess.run(argv, env=sandbox(tmp_path / "again", NAMES), capture_output=True, text=True, timeout=120)
    assert r.returncode == 3 and "no metrics report yet" in r.stderr


# ---------------------------------------------------------------- run ships local files (tests/support/host_sandbox.py)

def test_run_ships_to_every_host_in_worker_order_and_each_line_parses(cli, gcloud, make_env, tmp_path, monkeypatch):
    from tests.support import host_sandbox

    project = tmp_path / "project"
    (project / "job").mkdir(parents=True)
    (project / "job/hello.sh").write_text('echo "worker=$TPU_WORKER_ID pwd=$(pwd)"\n')
    monkeypatch.chdir(project)
    mount = tmp_path / "mnt"
    code, out, err = cli("run", "--dry-run", "--values", make_env(MIG, MOUNT_POINT=str(mount)), "--", "sh", "job/hello.sh")
    assert code == 0, err
    scp = [w for w in lines_of(out) if w[:3] == ["gcloud", "compute", "scp"]]
    assert [HOST.match(target(w)).group(1) for w in scp] == ["0", "1", "2", "3"]
    for words in lines_of(out):
        concrete = [HOST.sub(lambda m: ORDER[int(m.group(1))], w.split(":")[0]) + w[len(w.split(":")[0]):]
                    if HOST.match(w.split(":")[0]) else w for w in words]
        parsed = gcloud.parse(concrete)
        assert parsed.ok, (concrete[:6], parsed.why())
    box = tmp_path / "hosts"
    env = host_sandbox.sandbox(box, ORDER, groups={"tpu-v6e-slice": NAMES})  # shuffled; worker N: N-th in C order
    r = subprocess.run(["bash", "-c", out], cwd=project, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    for worker, name in enumerate(ORDER):
        assert (box / name / "home/.tpubuild/run/job/hello.sh").exists()
        log = mount / f"nfs_share/logs/v6e-slice/run/host-{worker}.log"
        want = f"worker={worker} pwd={box / name}/home/.tpubuild/run"
        assert _wait(lambda: log.exists() and want in log.read_text(), 30), log.read_text() if log.exists() else ""
