"""Sandbox shared by the env_setup tests (test_startup.py, test_seeder.py, test_run_seeder.py); it
holds no tests.

The scripts under test run in real bash. What a test cannot have (the GCE metadata server,
mount(8), apt-get, gcloud, blkid, mkfs) is replaced as follows:

* ``MetadataServer``: a real HTTP server on 127.0.0.1 (free port) that answers
  ``/computeMetadata/v1/<path>`` like the GCE one: 403 without ``Metadata-Flavor: Google``,
  404 for an unknown key, and it stores ``PUT .../guest-attributes/<ns>/<key>``.
* ``Sandbox``: a directory with ``bin/`` (executable stubs first on PATH), ``state/`` (what the
  stubs record and read) and ``root/`` (the fstab, profile.d, mount root, /dev and run dirs the
  scripts are redirected to through their ``TPUBUILD_*`` variables). Every stub appends one line
  ``<command> <args>`` to ``state/calls.log``, so tests can check what ran and in which order.
  ``gcloud storage cp`` copies from ``state/gcs/<bucket>/<path>`` (a local stand-in for GCS).
"""

from __future__ import annotations

import http.server
import socket
import stat
import subprocess
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STARTUP = REPO / "env_setup" / "scripts" / "startup.sh"
SEED_DISK = REPO / "env_setup" / "seeder" / "seed_disk.sh"
RUN_SEEDER = REPO / "env_setup" / "seeder" / "run_seeder.sh"
#: The seeder's workspace prefix, and run_seeder.sh's environment as the pipeline step sets it.
SEED_WORKSPACE = "gs://proj-env1-tf-backend/workspace/env1"
SEEDER_PIPELINE_ENV = {
    "PROJECT_ID": "proj", "ZONE": "europe-west4-a", "ENV_BUILD_NAME": "env1",
    "DISK_NAME": "pd-env1", "GCS_DATASET": "gs://proj-env1-dataset/a,b/*",
    "WORKSPACE_GCS": SEED_WORKSPACE, "SEED_PREP_SCRIPT": "", "ALLOW_WIPE": "false",
    "SEED_TIMEOUT_S": "30", "SEED_POLL_S": "0.01",
}


class MetadataServer:
    """A local stand-in for metadata.google.internal."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.guest: dict[str, str] = {}
        self.refused = 0
        #: When true, PUT instance/attributes/<key> sets an attribute (what `gcloud compute
        #: instances create --metadata` does in a test that plays the whole seeder).
        self.writable_attributes = False
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _path(self) -> str | None:
                if self.headers.get("Metadata-Flavor") != "Google":
                    owner.refused += 1
                    self.send_response(403)
                    self.end_headers()
                    return None
                prefix = "/computeMetadata/v1/"
                return self.path.split("?")[0][len(prefix):] if self.path.startswith(prefix) else ""

            def do_GET(self) -> None:  # noqa: N802
                path = self._path()
                if path is None:
                    return
                value = owner.values.get(path)
                if path.startswith("instance/guest-attributes/"):
                    value = owner.guest.get(path[len("instance/guest-attributes/"):])
                if value is None:
                    self.send_response(404)
                    self.end_headers()
                    return
                body = value.encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_PUT(self) -> None:  # noqa: N802
                path = self._path()
                if path is None:
                    return
                body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
                if path.startswith("instance/guest-attributes/"):
                    owner.guest[path[len("instance/guest-attributes/"):]] = body
                    self.send_response(200)
                elif owner.writable_attributes and path.startswith("instance/attributes/"):
                    owner.values[path] = body
                    self.send_response(200)
                else:
                    self.send_response(403)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host = f"127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()

    def attrs(self, **attributes: str) -> None:
        """Sets instance attributes; ``tpubuild_arch="node"`` becomes ``tpubuild-arch``."""
        for key, value in attributes.items():
            self.values[f"instance/attributes/{key.replace('_', '-')}"] = value

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def metadata_server() -> Iterator[MetadataServer]:
    server = MetadataServer()
    try:
        yield server
    finally:
        server.close()


def listening_port() -> socket.socket:
    """A TCP socket listening on 127.0.0.1 (a TPU endpoint that answers); close it when done."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    return sock


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (a TPU endpoint that does not answer)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


_LOG = 'printf "%s\\n" "$(basename "$0") $*" >>"$STUB_STATE/calls.log"'

STUBS: dict[str, str] = {
    # mount [-t TYPE] [-o OPTS] SRC DIR; fails N times when state/mount_fail_<TYPE> holds N.
    "mount": _LOG + """
type=""; prev=""
for a in "$@"; do [[ $prev == -t ]] && type=$a; prev=$a; done
f="$STUB_STATE/mount_fail_$type"
if [[ -f $f ]]; then
  n=$(<"$f")
  if (( n > 0 )); then echo $((n - 1)) >"$f"; echo "mount.nfs: Connection timed out" >&2; exit 32; fi
fi
printf '%s\\n' "${*: -1}" >>"$STUB_STATE/mounted"
""",
    "umount": _LOG + """
grep -Fxv -- "${*: -1}" "$STUB_STATE/mounted" >"$STUB_STATE/mounted.new" || true
mv "$STUB_STATE/mounted.new" "$STUB_STATE/mounted"
""",
    "mountpoint": """
dir="${*: -1}"
[[ -f "$STUB_STATE/mounted" ]] && grep -Fxq -- "$dir" "$STUB_STATE/mounted"
""",
    # apt-get install nfs-common provides mount.nfs.
    "apt-get": _LOG + """
if [[ " $* " == *" install "* && " $* " == *" nfs-common "* ]]; then
  printf '#!/bin/sh\\nexit 0\\n' >"$(dirname "$0")/mount.nfs"; chmod +x "$(dirname "$0")/mount.nfs"
fi
""",
    # blkid reads what it reports from state/blkid/<device file name> (absent: no filesystem).
    "blkid": _LOG + """
dev="${*: -1}"; f="$STUB_STATE/blkid/$(basename "$dev")"
[[ -f $f ]] || exit 2
if [[ " $* " == *" -o export "* ]]; then cat "$f"; exit 0; fi
want=""; prev=""
for a in "$@"; do [[ $prev == -s ]] && want=$a; prev=$a; done
if [[ -n $want ]]; then sed -n "s/^${want}=//p" "$f"; else cat "$f"; fi
""",
    # mkfs.ext4 ... DEV: the device now holds an empty ext4 filesystem (its files are gone).
    "mkfs.ext4": _LOG + """
dev="${*: -1}"; mkdir -p "$STUB_STATE/blkid"
printf 'TYPE=ext4\\n' >"$STUB_STATE/blkid/$(basename "$dev")"
if [[ -n "${STUB_DISK_DIR:-}" ]]; then find "$STUB_DISK_DIR" -mindepth 1 -delete; fi
""",
    "sync": _LOG,
    # dpkg-query -W ... google-cloud-ops-agent: installed once state/ops-agent exists.
    "dpkg-query": _LOG + """
[[ -f "$STUB_STATE/ops-agent" ]] && { printf 'install ok installed'; exit 0; }
exit 1
""",
    "systemctl": _LOG,
}

# Stand-in for Google's add-google-cloud-ops-agent-repo.sh (fetched by curl from a file:// URL).
OPS_AGENT_REPO_SCRIPT = """#!/usr/bin/env bash
printf '%s\\n' "add-google-cloud-ops-agent-repo.sh $*" >>"$STUB_STATE/calls.log"
[[ -f "$STUB_STATE/ops_agent_fail" ]] && exit 1
[[ " $* " == *" --also-install "* ]] && touch "$STUB_STATE/ops-agent"
exit 0
"""

# `gcloud storage cp [-r] SRC... DEST` against the local GCS stand-in state/gcs/<bucket>/<path>
# (wildcards in SRC work as in GCS); a SRC matching nothing fails as gcloud does.
GCS_CP = """shift 2; recursive=0; args=()
for a in "$@"; do if [[ $a == -r ]]; then recursive=1; else args+=("$a"); fi; done
dest="${args[-1]}"
for src in "${args[@]:0:${#args[@]}-1}"; do
  local_src="$STUB_STATE/gcs/${src#gs://}"
  # shellcheck disable=SC2206
  matches=( $local_src )
  if [[ ! -e "${matches[0]}" ]]; then echo "ERROR: (gcloud.storage.cp) $src matched no objects" >&2; exit 1; fi
  if (( recursive )); then cp -r "${matches[@]}" "$dest"; else cp "${matches[@]}" "$dest"; fi
done
"""

# gcloud for the machines: lists the MIG from state/members, copies from state/gcs.
GCLOUD_MACHINE = _LOG + """
case "$1 $2" in
  "compute instance-groups")
    [[ -f "$STUB_STATE/members_fail" ]] && { echo "ERROR: (gcloud) permission denied" >&2; exit 1; }
    cat "$STUB_STATE/members"; exit 0 ;;
  "storage cp") exec "$(dirname "$0")/gcs-cp" "$@" ;;
  "storage cat")
    f="$STUB_STATE/gcs/${3#gs://}"
    [[ -f "$f" ]] || { echo "ERROR: (gcloud.storage.cat) The following URLs matched no objects or files: $3" >&2; exit 1; }
    cat "$f"; exit 0 ;;
esac
echo "gcloud stub: unexpected call: $*" >&2
exit 64
"""


class Sandbox:
    """Directories, stubs and the environment that run one script under test."""

    def __init__(self, base: Path, metadata: MetadataServer) -> None:
        self.base = base
        self.md = metadata
        self.bin = base / "bin"
        self.state = base / "state"
        self.root = base / "root"
        for d in (self.bin, self.state, self.root, self.state / "gcs", self.root / "etc"):
            d.mkdir(parents=True, exist_ok=True)
        for name, body in STUBS.items():
            self.write_stub(name, body)
        self.write_stub("gcloud", GCLOUD_MACHINE)
        self.write_stub("gcs-cp", GCS_CP)
        (self.state / "add-ops-agent-repo.sh").write_text(OPS_AGENT_REPO_SCRIPT)
        self.fstab = self.root / "etc" / "fstab"
        self.profile_d = self.root / "etc" / "profile.d"
        self.run_dir = self.root / "run" / "tpubuild"
        self.log = self.base / "console.log"
        self.extra_env: dict[str, str] = {}

    def write_stub(self, name: str, body: str) -> None:
        path = self.bin / name
        path.write_text("#!/usr/bin/env bash\nset -euo pipefail\n" + body)
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)

    def gcs(self, uri: str, content: str = "") -> Path:
        """Creates an object in the local GCS stand-in and returns its file."""
        path = self.state / "gcs" / uri.removeprefix("gs://")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        return path

    def calls(self) -> list[str]:
        log = self.state / "calls.log"
        return log.read_text().splitlines() if log.exists() else []

    def reboot(self) -> None:
        """Forget every mount (what a reboot does); files on disk stay."""
        (self.state / "mounted").unlink(missing_ok=True)

    def env(self, **extra: str) -> dict[str, str]:
        return {
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "HOME": str(self.base),
            "LANG": "C.UTF-8",
            "STUB_STATE": str(self.state),
            "TPUBUILD_METADATA_HOST": self.md.host,
            "TPUBUILD_FSTAB": str(self.fstab),
            "TPUBUILD_PROFILE_D": str(self.profile_d),
            "TPUBUILD_MOUNT_ROOT": str(self.root),
            "TPUBUILD_DEV_ROOT": str(self.root),
            "TPUBUILD_RUN_DIR": str(self.run_dir),
            "TPUBUILD_LOG": str(self.log),
            "TPUBUILD_BACKOFF_S": "0.01",
            "TPUBUILD_BACKOFF_MAX_S": "0.05",
            "TPUBUILD_NFS_ATTEMPTS": "5",
            "TPUBUILD_TPU_ATTEMPTS": "2",
            "TPUBUILD_ATTEMPTS": "2",
            "TPUBUILD_PD_WAIT_S": "1",
            "TPUBUILD_PD_POLL_S": "0.05",
            "TPUBUILD_NFS_WAIT_S": "1",
            "TPUBUILD_TCP_TIMEOUT_S": "2",
            "TPUBUILD_CONF_ROOT": str(self.root),
            "TPUBUILD_OPS_AGENT_SCRIPT_URL": (self.state / "add-ops-agent-repo.sh").as_uri(),
            **self.extra_env,
            **extra,
        }

    def run(self, script: Path, env: Mapping[str, str] | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", str(script)], env=dict(env or self.env()), cwd=self.base,
                              capture_output=True, text=True, timeout=timeout)

    def console(self) -> str:
        return self.log.read_text() if self.log.exists() else ""


def make_device(root: Path, name: str) -> Path:
    """Creates ``<root>/dev/disk/by-id/google-<name>`` (an attached persistent disk)."""
    dev = root / "dev" / "disk" / "by-id" / f"google-{name}"
    dev.parent.mkdir(parents=True, exist_ok=True)
    dev.touch()
    return dev


def source_profile(profile: Path, shell: str = "sh", **env: str) -> dict[str, str]:
    """The environment a login shell gets after reading ``profile`` (dash by default)."""
    out = subprocess.run([shell, "-c", f'. "{profile}" && env'], capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin", **env}, check=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


__all__ = ["MetadataServer", "Sandbox", "closed_port", "listening_port", "make_device",
           "metadata_server", "source_profile"]


def calls_of(box: Sandbox, prefix: str) -> list[str]:
    """The stub calls of ``box`` that start with ``prefix``, in order."""
    return [c for c in box.calls() if c.startswith(prefix)]
