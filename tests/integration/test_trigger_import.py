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


def _pipe(gcloud, source: str, flags: str = "", gflags: str = "") -> subprocess.CompletedProcess[str]:
    env = {**gcloud.env, "PATH": f"{Path(sys.executable).parent}:{gcloud.env.get('PATH', '')}"}
    command = ("set -euo pipefail; tpubuild --values values.env trigger --repo-owner acme --repo-name tpu-env "
               f"{flags} | gcloud builds triggers import --source={source} {gflags}")
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


def test_a_second_gen_connection_trigger_imports_in_its_region(gcloud) -> None:
    """--connection/--region: the trigger names the linked repository (repositoryEventConfig), loads
    into the real BuildTrigger type, and the real gcloud imports it into the connection's region."""
    import json

    import yaml
    from google.cloud.devtools import cloudbuild_v1

    flags = "--connection my-github --region europe-west4 --linked-repository acme-tpu-env"
    proc = run_tpubuild("--values", "values.env", "trigger", "--repo-owner", "acme", "--repo-name", "tpu-env",
                        *flags.split())
    assert proc.returncode == 0, proc.stderr
    body = yaml.safe_load(proc.stdout)
    repository = "projects/my-tpu-project/locations/europe-west4/connections/my-github/repositories/acme-tpu-env"
    assert "github" not in body
    assert body["repositoryEventConfig"] == {"repository": repository, "push": {"branch": "^main$"}}
    trigger = cloudbuild_v1.BuildTrigger.from_json(json.dumps(body))
    assert trigger.repository_event_config.repository == repository
    gcloud.answer(r"/triggers(/[^/]+)?$", 200, {"id": "t-2", "name": "tpubuild-tpu-dev1-auto"})
    before = len(gcloud.fake.requests)
    proc = _pipe(gcloud, "/dev/stdin", flags, "--region=europe-west4")
    assert proc.returncode == 0, proc.stderr
    sent = [r for r in gcloud.fake.requests[before:] if "/triggers" in r.path]
    assert sent and all("/locations/europe-west4/triggers" in r.path for r in sent), [r.path for r in sent]
    assert sent[-1].body["repositoryEventConfig"]["repository"] == repository


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
