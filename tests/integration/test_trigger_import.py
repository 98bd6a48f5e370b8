"""The GitOps command of docs/commands.md and docs/cloud.md, run for real: `tpubuild trigger ... | gcloud builds
triggers import --source=/dev/stdin` through bash, with the real gcloud offline
(tests/support/gcloud.py: throwaway config, fake token, every API at a local recording fake).
gcloud 528 reads --source as a path, so `--source=-` (the old README line) is the negative
control."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, run_tpubuild


def _pipe(gcloud, source: str) -> subprocess.CompletedProcess[str]:
    env = {**gcloud.env, "PATH": f"{Path(sys.executable).parent}:{gcloud.env.get('PATH', '')}"}
    command = ("set -euo pipefail; tpubuild --values values.env trigger --repo-owner acme --repo-name tpu-env "
               f"| gcloud builds triggers import --source={source}")
    return subprocess.run(["bash", "-c", command], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def test_trigger_pipes_into_the_real_gcloud_import(gcloud) -> None:
    gcloud.answer(r"/triggers(/[^/]+)?$", 200, {"id": "t-1", "name": "tpubuild-tpu-dev1-auto"})
    before = len(gcloud.fake.requests)
    proc = _pipe(gcloud, "/dev/stdin")
    assert proc.returncode == 0, proc.stderr
    sent = [r for r in gcloud.fake.requests[before:] if "/triggers" in r.path]
    assert sent, "gcloud sent no trigger request"
    body = sent[-1].body
    assert body["name"] == "tpubuild-tpu-dev1-auto" and body["filename"] == "cloudbuild.yaml"
    assert body["github"] == {"owner": "acme", "name": "tpu-env", "push": {"branch": "^main$"}}
    assert body["serviceAccount"] == ("projects/my-tpu-project/serviceAccounts/"
                                      "tb-tpu-dev1-cb@my-tpu-project.iam.gserviceaccount.com")
    assert body["substitutions"]["_BUILD_ACTION"] == "auto"


def test_the_old_dash_source_is_refused_by_gcloud(gcloud) -> None:
    proc = _pipe(gcloud, "-")
    assert proc.returncode != 0 and "Unable to read file [-]" in proc.stderr


def test_docs_and_help_use_the_command_gcloud_accepts() -> None:
    texts = {p: (REPO / p).read_text() for p in ("docs/commands.md", "docs/cloud.md")}
    proc = run_tpubuild("trigger", "--help")
    assert proc.returncode == 0
    texts["tpubuild trigger --help"] = " ".join(proc.stdout.split())
    for where, text in texts.items():
        assert "triggers import --source=-" not in text, where
    assert all(re.search(r"triggers import --source=/dev/stdin", t) for t in texts.values()), texts.keys()
