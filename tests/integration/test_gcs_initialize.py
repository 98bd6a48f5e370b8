"""tpubuild initialize against fake-gcs-server: buckets, idempotence, adoption, workspace upload."""

from __future__ import annotations

from pathlib import Path


from tests.support.fakes.fixtures import Fakes, fakes, repo  # noqa: F401 - fixtures


def _settings(values: Path):
    from builder.config import load

    return load(values)


def test_initialize_creates_both_buckets_versioned_and_uploads_the_workspace(fakes: Fakes, repo: Path, cli) -> None:
    s = _settings(repo)
    code, out, err = cli("--values", repo, "initialize")
    assert code == 0, err
    assert f"gs://{s.state_bucket}: created in EUROPE-WEST4" in out
    assert f"gs://{s.dataset_bucket}: created in EUROPE-WEST4" in out
    client = fakes.storage()
    for name in (s.state_bucket, s.dataset_bucket):
        bucket = client.get_bucket(name)
        assert bucket.versioning_enabled is True
        assert bucket.location == "EUROPE-WEST4"
    state = client.bucket(s.state_bucket)
    top = f"workspace/{s.env_name}/"
    names = sorted(b.name[len(top):] for b in state.list_blobs(prefix=top))
    assert names == ["env_setup/scripts/startup.sh", "env_setup/seeder/run_seeder.sh",
                     "models/roberta/train.sh", "values.env", "workspace.json"]
    # byte for byte, including the comment line and non-ASCII/CRLF bytes
    assert state.blob(top + "values.env").download_as_bytes() == repo.read_bytes()
    assert state.blob(top + "models/roberta/train.sh").download_as_bytes() == \
        (repo.parent / "models/roberta/train.sh").read_bytes()


def test_initialize_twice_succeeds_and_uploads_only_what_changed(fakes: Fakes, repo: Path, cli) -> None:
    s = _settings(repo)
    assert cli("--values", repo, "initialize")[0] == 0
    (repo.parent / "models/roberta/train.sh").write_text("#!/bin/sh\necho v2\n")
    (repo.parent / "env_setup/seeder/run_seeder.sh").unlink()
    code, out, err = cli("--values", repo, "initialize")
    assert code == 0, err
    assert f"gs://{s.state_bucket}: exists" in out and f"gs://{s.dataset_bucket}: exists" in out
    assert "1 new or changed, 2 unchanged, 1 removed" in out
    state = fakes.storage().bucket(s.state_bucket)
    top = f"workspace/{s.env_name}/"
    assert state.blob(top + "models/roberta/train.sh").download_as_text() == "#!/bin/sh\necho v2\n"
    assert not state.blob(top + "env_setup/seeder/run_seeder.sh").exists()
    assert fakes.storage().get_bucket(s.state_bucket).versioning_enabled is True


def test_initialize_adopts_an_existing_bucket_and_turns_versioning_on(fakes: Fakes, repo: Path, cli) -> None:
    s = _settings(repo)
    fakes.storage().create_bucket(s.state_bucket)  # a seed-era bucket: no versioning
    assert fakes.storage().get_bucket(s.state_bucket).versioning_enabled is not True
    code, out, err = cli("--values", repo, "initialize")
    assert code == 0, err
    assert f"gs://{s.state_bucket}: exists, set versioning" in out
    assert fakes.storage().get_bucket(s.state_bucket).versioning_enabled is True


def test_existing_bucket_in_another_location_is_one_clear_line(fakes: Fakes, repo: Path, cli) -> None:
    assert cli("--values", repo, "initialize")[0] == 0
    moved = repo.parent / "moved.env"
    # v2-32 is offered in us-central1-a (v3-32 only in europe-west4-a: builder/data/tpu_offers.json)
    moved.write_text(repo.read_text().replace("europe-west4", "us-central1").replace('"v3-32"', '"v2-32"'))
    code, out, err = cli("--values", moved, "initialize")
    assert code == 1
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "exists in EUROPE-WEST4, but REGION is us-central1" in err


def test_bucket_settings_requested_are_the_secure_ones(fakes: Fakes, repo: Path) -> None:
    """fake-gcs-server does not keep labels or IAM configuration, so check what we ask for on the
    real client's Bucket object (the body a create or patch sends)."""
    from builder.cloud import buckets

    s = _settings(repo)
    spec = buckets.specs(s)[0]
    bucket = fakes.storage().bucket(spec.name)
    changed = buckets._configure(bucket, spec)
    assert set(changed) == {"versioning", "uniform bucket-level access", "public access prevention", "labels"}
    props = bucket._properties
    assert props["versioning"] == {"enabled": True}
    assert props["iamConfiguration"]["uniformBucketLevelAccess"]["enabled"] is True
    assert props["iamConfiguration"]["publicAccessPrevention"] == "enforced"
    assert props["labels"] == {"tpubuild-env": s.env_name, "managed-by": "tpubuild", "tpubuild-role": "state"}
    assert buckets._configure(bucket, spec) == []  # now right: nothing left to change


def test_a_bucket_owned_elsewhere_is_refused(fakes: Fakes, repo: Path, cli, monkeypatch) -> None:
    """A bucket we may not read (403 on get) belongs to someone else."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    import threading

    class Forbidden(BaseHTTPRequestHandler):
        def log_message(self, *a):  # noqa: ANN002
            pass

        def do_GET(self):  # noqa: N802
            body = b'{"error": {"code": 403, "message": "caller does not have storage.buckets.get access"}}'
            self.send_response(403)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Forbidden)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{server.server_address[1]}")
        code, out, err = cli("--values", repo, "initialize")
    finally:
        server.shutdown()
        server.server_close()
    assert code == 1
    assert len(err.strip().splitlines()) == 1
    assert "belongs to another project" in err and "ENV_BUILD_NAME" in err


def test_no_credentials_outside_emulator_mode_is_one_line(repo: Path, cli, monkeypatch, tmp_path: Path) -> None:
    from builder.cloud import clients

    for var in ("STORAGE_EMULATOR_HOST", "GOOGLE_APPLICATION_CREDENTIALS", "TPUBUILD_CLOUDBUILD_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    monkeypatch.setenv("NO_GCE_CHECK", "True")
    clients.credentials.cache_clear()
    try:
        for command in (["initialize"], ["submit", "--action", "create"], ["unlock", "--force"]):
            code, out, err = cli("--values", repo, *command)
            assert code == 1, command
            assert err.strip().splitlines() == [
                "tpubuild: error: no Google Cloud credentials found; run `gcloud auth application-default login` "
                "(or set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file)"]
    finally:
        clients.credentials.cache_clear()
