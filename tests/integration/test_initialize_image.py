"""`tpubuild initialize` makes the builder image: the Artifact Registry repository through the real
google-cloud-artifact-registry client (REST, against tests/support/fakes/registry.py), its one
grant, and the image build through the real google-cloud-build client (FakeGoogle); the build is
the pipelines' own tpubuild-image step and loads into the real Build type."""

from __future__ import annotations

import json
import tarfile
import io
from pathlib import Path

from tests.support.fakes.fixtures import Fakes, fakes, repo  # noqa: F401 - fixtures
from tests.support.pipeline import step_script


def _settings(values: Path):
    from builder.config import load

    return load(values)


def _repository(fakes: Fakes, s) -> dict:
    return fakes.registry.repositories[f"projects/{s.project_id}/locations/{s.region}/repositories/{s.image_repository}"]


def test_initialize_creates_the_repository_grants_only_the_builder_and_builds_the_image(fakes: Fakes, repo: Path, cli) -> None:
    from google.cloud.devtools.cloudbuild_v1.types import Build

    from builder.render.pipeline import IMAGES, image

    s = _settings(repo)
    fakes.registry.images_present = False
    code, out, err = cli("--values", repo, "initialize")
    assert code == 0, err
    ref = image(s, "tpubuild")
    assert ref.startswith(f"{s.region}-docker.pkg.dev/{s.project_id}/{s.image_repository}/tpubuild:")
    repository = _repository(fakes, s)
    assert repository["format"] == "DOCKER"
    assert repository["dockerConfig"] == {"immutableTags": True}
    assert repository["labels"] == {**s.labels, "tpubuild-role": "builder-image"}
    assert f"repository {s.image_repository} in {s.region}: created" in out
    # least privilege: the builder account may write this repository, nothing else is granted here
    [policy] = fakes.registry.policies.values()
    assert policy["bindings"] == [{"role": "roles/artifactregistry.writer",
                                   "members": [f"serviceAccount:{s.builder_service_account}"]}]
    # one image build: the tpubuild-image step alone, as the builder account, from the source tarball
    [body] = fakes.google.created
    build = Build.from_json(json.dumps(body), ignore_unknown_fields=False)
    assert [st.id for st in build.steps] == ["tpubuild-image"]
    assert build.steps[0].name == IMAGES["docker"] and build.service_account == s.builder_service_account_resource
    assert ref in step_script(body["steps"][0])
    obj = body["source"]["storageSource"]["object"]
    names = tarfile.open(fileobj=io.BytesIO(fakes.storage().bucket(s.state_bucket).blob(obj).download_as_bytes())).getnames()
    assert "builder/__init__.py" in names and "setup.cfg" in names
    assert f"builder image {ref}: pushed" in out


def test_initialize_again_builds_nothing_when_the_tag_is_there(fakes: Fakes, repo: Path, cli) -> None:
    from builder.catalogue.builder_image import tag

    s = _settings(repo)
    fakes.registry.images_present = False
    assert cli("--values", repo, "initialize")[0] == 0
    assert len(fakes.google.created) == 1
    fakes.google.created.clear()
    name = f"projects/{s.project_id}/locations/{s.region}/repositories/{s.image_repository}"
    fakes.registry.tags.add(f"{name}/packages/tpubuild/tags/{tag()}")
    code, out, err = cli("--values", repo, "initialize")
    assert code == 0, err
    assert fakes.google.created == []
    assert "exists, already configured" in out and ": exists" in out
    assert f"has roles/artifactregistry.writer" in out
    assert ("GET", f"/v1/{name}/packages/tpubuild/tags/{tag()}") in fakes.registry.requests


def test_an_existing_repository_is_adopted_and_hardened(fakes: Fakes, repo: Path, cli) -> None:
    s = _settings(repo)
    name = f"projects/{s.project_id}/locations/{s.region}/repositories/{s.image_repository}"
    fakes.registry.repositories[name] = {"name": name, "format": "DOCKER", "labels": {"team": "ml"}}
    code, out, err = cli("--values", repo, "initialize")
    assert code == 0, err
    assert "exists, set labels, immutable tags" in out
    repository = _repository(fakes, s)
    assert repository["labels"] == {"team": "ml", **s.labels, "tpubuild-role": "builder-image"}
    assert repository["dockerConfig"]["immutableTags"] is True


def test_a_repository_of_another_format_is_one_line(fakes: Fakes, repo: Path, cli) -> None:
    s = _settings(repo)
    name = f"projects/{s.project_id}/locations/{s.region}/repositories/{s.image_repository}"
    fakes.registry.repositories[name] = {"name": name, "format": "PYTHON"}
    code, out, err = cli("--values", repo, "initialize")
    assert code == 1 and fakes.google.created == []
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "holds PYTHON packages, not Docker images" in err and "gcloud artifacts repositories delete" in err


def test_a_failed_image_build_is_one_line_naming_the_step(fakes: Fakes, repo: Path, cli) -> None:
    fakes.registry.images_present = False
    fakes.google.next_outcome("FAILURE", "tpubuild-image")
    code, out, err = cli("--values", repo, "initialize")
    assert code == 1
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "FAILURE at step tpubuild-image" in err


def test_initialize_in_a_region_without_artifact_registry_stops_in_one_line_before_anything(fakes: Fakes, repo: Path,
                                                                                             cli) -> None:
    """The region must offer Artifact Registry (its locations API, read by the real client) before
    initialize makes a bucket, an account or the repository (docs/cloud.md, "Regional availability")."""
    s = _settings(repo)
    fakes.registry.offered = ["us-central1", "us-east1"]
    code, out, err = cli("--values", repo, "initialize")
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1, err
    assert f"Artifact Registry is not offered in {s.region}" in lines[0] and s.image_repository in lines[0]
    assert not fakes.registry.repositories and not fakes.iam.accounts
    assert not fakes.storage().bucket(s.state_bucket).exists()
