"""builder/render/mig_hosts.py: the gcloud lines that reach a mig slice's VMs parse in the REAL gcloud
(offline harness, tests/support/gcloud.py), the worker order is startup.sh's (C-locale sort), and
train/stop/logs refuse mig in one line instead of taking the node (xla_dist) path."""

from __future__ import annotations

from pathlib import Path

from builder.render import mig_hosts
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


def test_train_refuses_a_generation_without_a_device_count_in_one_line(cli, tmp_path: Path) -> None:
    """roberta on mig: v5p/v6e train (tests/shell/test_run_mig.py); tpu7x has no proven PyTorch/XLA device
    count in the launcher, so train stops in one line naming the key (stop/run still work)."""
    tpu7x = EXAMPLES / "mig-tpu7x-128.env"
    code, out, err = cli("--values", str(tpu7x), "train", "roberta", "--dry-run")
    assert code == 2 and out == "" and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "TPU_ACCELERATOR_TYPE" in err and "tpu7x" in err and "tpubuild run" in err
    code, out, err = cli("--values", str(tpu7x), "stop", "--dry-run")
    assert code == 0, err
