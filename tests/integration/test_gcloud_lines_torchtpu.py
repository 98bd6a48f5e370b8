"""Every gcloud command line of models/torchtpu, parsed by the REAL gcloud offline
(``tests/support/gcloud.py``): ``tpubuild train torchtpu``, ``stop``, ``logs``, ``profile`` and
``run --runtime torchtpu`` (``--dry-run``) for vm with and without IAP, and mig. Each script runs
under real bash with a recording ``gcloud`` on PATH that answers each listing as the cloud would
(the slice's slot, its 4 hosts, the TPU VM's 4 network endpoints), so every line up to the launch
on the fourth host runs and is recorded exactly as bash hands it to gcloud."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from builder.config import load
from tests.conftest import EXAMPLES, run_tpubuild

pytestmark = pytest.mark.slow

EXAMPLE = "models/torchtpu/examples/tiny_transformer.py"
#: gcloud: records its argv (NUL-separated), answers a listing as the cloud would.
RECORDER = r"""#!/usr/bin/env bash
n=$(ls "$RECORD_DIR" | wc -l)
printf '%s\0' "$@" > "$RECORD_DIR/call-$n"
case " $* " in
  *" tpu-vm list "*|*" instance-groups managed list "*) echo "$RECORD_SLICE" ;;
  *" tpu-vm describe "*) printf '10.0.0.%s\n' 2 3 4 5 ;;
  *" list-instances "*) printf '%s\n' "$RECORD_SLICE-a1" "$RECORD_SLICE-b2" "$RECORD_SLICE-c3" "$RECORD_SLICE-d4" ;;
esac
exit 0
"""
COMMANDS = [
    ("train", "torchtpu", "--dry-run"),
    ("stop", "--model", "torchtpu", "--dry-run"),
    ("logs", "--model", "torchtpu", "--host", "1", "--dry-run"),
    ("profile", "--host", "1", "--dry-run"),
    ("run", "--dry-run", "--runtime", "torchtpu", "--", EXAMPLE, "--steps", "10"),
]


def record(script: str, tmp: Path, slice_name: str) -> list[tuple[str, ...]]:
    bindir, rec = tmp / "bin", tmp / "calls"
    bindir.mkdir()
    rec.mkdir()
    (bindir / "gcloud").write_text(RECORDER)
    (bindir / "gcloud").chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "RECORD_DIR": str(rec),
           "RECORD_SLICE": slice_name, "HOME": str(tmp)}
    r = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return [tuple(call.read_bytes().decode().split("\0")[:-1])
            for call in sorted(rec.iterdir(), key=lambda p: int(p.name.split("-")[1]))]


@pytest.mark.parametrize("variant", ["vm-iap", "vm-external", "mig"])
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:3]))
def test_torchtpu_lines_parse(gcloud, make_env, tmp_path: Path, variant: str, command: tuple[str, ...]) -> None:
    base = {"vm-iap": EXAMPLES / "vm-v5p-32.env", "vm-external": EXAMPLES / "vm-v5p-32.env",
            "mig": EXAMPLES / "mig-v6e-16-spot.env"}[variant]
    extra = {"TPU_EXTERNAL_IPS": "true"} if variant == "vm-external" else {}
    folder = tmp_path / "repo"
    (folder / "models/torchtpu/examples").mkdir(parents=True)
    (folder / EXAMPLE).write_text("print('hi')\n")
    values = folder / "values.env"
    values.write_text(make_env(base, MODEL="torchtpu", TORCHTPU_SCRIPT=EXAMPLE, **extra).read_text())
    cut = command.index("--") if "--" in command else len(command)
    r = run_tpubuild(*command[:cut], "--values", values, *command[cut:], cwd=folder)
    assert r.returncode == 0, r.stderr
    argvs = record(r.stdout, tmp_path, load(values).tpu_name)
    on_hosts = [a for a in argvs if "ssh" in a or "scp" in a]
    assert on_hosts, r.stdout
    if command[0] in ("train", "run"):
        launches = [a for a in argvs if any("setsid nohup env TPU_WORKER_HOSTNAMES=" in w for w in a)]
        assert len(launches) == 4  # one line per host, each reached
        names = "10.0.0.2,10.0.0.3,10.0.0.4,10.0.0.5" if variant != "mig" else None
        if names:
            assert all(f"TPU_WORKER_HOSTNAMES={names} " in a[-1] for a in launches)
    if variant == "vm-iap":
        assert all("--tunnel-through-iap" in a for a in on_hosts)
    failures = [p.why() for p in (gcloud.parse(list(a)) for a in dict.fromkeys(argvs)) if not p.ok]
    assert not failures, "\n\n".join(failures)


ROBERTA_COMMANDS = [("train", "roberta_torchtpu", "--dry-run"), ("stop", "--dry-run"), ("stop", "--probe", "--dry-run"),
                    ("logs", "--host", "1", "--dry-run")]


@pytest.mark.parametrize("variant", ["vm-iap", "mig"])
@pytest.mark.parametrize("command", ROBERTA_COMMANDS, ids=" ".join)
def test_roberta_torchtpu_lines_parse(gcloud, make_env, tmp_path: Path, variant: str, command: tuple[str, ...]) -> None:
    """models/roberta_torchtpu's lines (its data-bin check, its stop with a grace period, its probe) parse too."""
    base = EXAMPLES / ("vm-v5p-32-roberta-torchtpu.env" if variant == "vm-iap" else "mig-v6e-16-roberta-torchtpu.env")
    values = make_env(base)
    r = run_tpubuild(*command, "--values", values)
    assert r.returncode == 0, r.stderr
    argvs = record(r.stdout, tmp_path, load(values).tpu_name)
    on_hosts = [a for a in argvs if "ssh" in a or "scp" in a]
    assert on_hosts, r.stdout
    said = "\n".join(a[-1] for a in on_hosts)
    wanted = {"train": "dict.txt train.idx train.bin", "stop": "stop.sh --pattern", "logs": "tail -n 200"}[command[0]]
    assert (wanted if "--probe" not in command else "tpubuild-probe") in said
    failures = [p.why() for p in (gcloud.parse(list(a)) for a in dict.fromkeys(argvs)) if not p.ok]
    assert not failures, "\n\n".join(failures)
