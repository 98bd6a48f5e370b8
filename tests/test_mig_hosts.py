"""builder/cloud/mig_hosts.py: the gcloud lines that reach a mig slice's VMs parse in the REAL gcloud
(offline harness, tests/support/gcloud.py), the worker order is startup.sh's (C-locale sort), and
train/stop/logs refuse mig in one line instead of taking the node (xla_dist) path."""

from __future__ import annotations

from pathlib import Path

from builder.cloud import mig_hosts
from builder.config import load
from tests.conftest import EXAMPLES

V6E = EXAMPLES / "mig-v6e-16-spot.env"


def test_list_and_ssh_lines_parse_in_real_gcloud(gcloud) -> None:
    s = load(V6E)
    listed = gcloud.parse(mig_hosts.list_argv(s))
    assert listed.ok, listed.why()
    assert any(s.tpu_name in r.path and "listManagedInstances" in r.path for r in listed.requests)
    ssh = gcloud.parse(mig_hosts.ssh_argv(s, f"{s.tpu_name}-b2c3", "bash -c 'echo $HOSTNAME; exit 0'"))
    assert ssh.ok, ssh.why()


def test_hosts_are_in_worker_order() -> None:
    listing = "slice-zz9\nslice-Ab1\n\nslice-ab1\nslice-zz9\n"
    assert mig_hosts.hosts(listing) == ["slice-Ab1", "slice-ab1", "slice-zz9"]


def test_train_refuses_mig_in_one_line(cli, tmp_path: Path) -> None:
    for command in (("train", "roberta", "--dry-run"), ("logs", "--dry-run")):  # stop/run: tests/test_run_mig.py
        code, out, err = cli("--values", str(V6E), *command)
        assert code == 2, (command, out, err)
        assert 'TPU_ARCH="mig"' in err and "tpubuild run -- COMMAND" in err and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1
