"""Bad input to ``dispatch`` and ``submit`` is refused before any cloud client exists.

Every case runs with no emulator and no credentials (the ``no_cloud`` fixture): had tpubuild
built a client first, it would stop with exit 1 "no Google Cloud credentials found" (the last
tests show that this environment really does that for good input). Each case must instead exit
2 with one error line, print nothing on stdout (dispatch's "dispatch: ..." line comes after the
checks), and never call ``builder.cloud.clients.credentials`` (its cache counts every call). Two
cases also run the console script and check that no ``google.auth``/``google.cloud`` module was
even imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, NODE, rewrite_env
from tests.support.fakes.fixtures import make_repo, unique_env

NO_CREDENTIALS = ("tpubuild: error: no Google Cloud credentials found; run `gcloud auth application-default login` "
                  "(or set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file)")
# (id, arch, values.env overrides, command, fragments of the one error line)
CASES = [
    ("dispatch-initialize-tpu", "node", {}, ["dispatch", "--action", "initialize", "--tpu", "true"],
     ["_TPU/_MIG: initialize takes no scope flags", "drop the flags"]),
    ("dispatch-initialize-mig", "node", {}, ["dispatch", "--action", "Initialize", "--mig", "TRUE"],
     ["_TPU/_MIG: initialize takes no scope flags"]),
    ("dispatch-initialize-data-loss", "node", {}, ["dispatch", "--action", "initialize", "--allow-data-loss", "true"],
     ["_ALLOW_DATA_LOSS: initialize applies no Terraform", "drop _ALLOW_DATA_LOSS"]),
    ("dispatch-initialize-wipe", "vm", {}, ["dispatch", "--action", "initialize", "--allow-wipe", "true"],
     ["_ALLOW_WIPE: initialize applies no Terraform", "drop _ALLOW_WIPE"]),
    ("dispatch-auto-mig", "vm", {}, ["dispatch", "--action", "auto", "--mig", "true"],
     ["_MIG: auto decides the modules itself", "drop _MIG"]),
    ("dispatch-update-mig-on-vm", "vm", {}, ["dispatch", "--action", "update", "--mig", "true"],
     ["_MIG: the vm architecture", "has no MIG", "use _TPU"]),
    ("dispatch-destroy-mig-on-vm", "vm", {}, ["dispatch", "--action", "destroy", "--tpu", "true", "--mig", "true"],
     ["_MIG: the vm architecture", "has no MIG"]),
    ("dispatch-wipe-without-seeder", "vm", {}, ["dispatch", "--action", "update", "--tpu", "true",
                                                  "--allow-wipe", "true"],
     ["_ALLOW_WIPE: this update (apply tpu) does not apply shared_pd", "drop _ALLOW_WIPE"]),
    ("dispatch-wipe-on-destroy", "vm", {}, ["dispatch", "--action", "destroy", "--allow-wipe", "true"],
     ["_ALLOW_WIPE: this destroy (destroy tpu, destroy filestore, destroy shared_pd, destroy dashboard)", "nothing to wipe"]),
    ("dispatch-flag-maybe", "node", {}, ["dispatch", "--action", "create", "--mig", "maybe"],
     ["_MIG: 'maybe' is not a flag value"]),
    ("dispatch-bogus-action", "node", {}, ["dispatch", "--action", "apply"], ["_BUILD_ACTION: 'apply' is not an action"]),
    ("dispatch-bad-values", "node", {"SHARED_FS_CAPACITY": "lots"}, ["dispatch", "--action", "create"],
     ["SHARED_FS_CAPACITY:", "not a whole number"]),
    ("dispatch-pipeline-refuses", "vm", {"MIG_SETUP_SCRIPT": "env_setup/scripts/setup_mig.sh"},
     ["dispatch", "--action", "create"], ["MIG_SETUP_SCRIPT"]),
    ("submit-initialize-tpu", "node", {}, ["submit", "--action", "initialize", "--tpu"],
     ["initialize takes no scope flags"]),
    ("submit-initialize-data-loss", "node", {}, ["submit", "--action", "initialize", "--allow-data-loss"],
     ["--allow-data-loss: initialize applies no Terraform", "drop --allow-data-loss"]),
    ("submit-auto-tpu", "vm", {}, ["submit", "--action", "auto", "--tpu", "--wait"],
     ["--tpu: auto decides the modules itself", "drop --tpu"]),
    ("submit-update-mig-on-vm", "vm", {}, ["submit", "--action", "update", "--mig"], ["--mig: the vm architecture"]),
    ("submit-wipe-without-seeder", "vm", {}, ["submit", "--action", "update", "--tpu", "--allow-wipe"],
     ["--allow-wipe: this update (apply tpu) does not apply shared_pd"]),
    # TPU Node is read-only legacy: anything that would apply one is refused first
    ("dispatch-node-create", "node", {}, ["dispatch", "--action", "create"],
     ['TPU_ARCH: TPU_ARCH="node"', "2025-04-25", "tpubuild migrate"]),
    ("submit-node-update", "node", {}, ["submit", "--action", "update", "--tpu"], ["2025-04-25", "tpubuild migrate"]),
    ("submit-node-auto", "node", {}, ["submit", "--action", "auto"], ["2025-04-25", "tpubuild migrate"]),
    ("submit-bogus-action", "node", {}, ["submit", "--action", "deploy"], ["--action: 'deploy' is not an action"]),
]


def _values(tmp_path: Path, arch: str, overrides: dict[str, str]) -> Path:
    """values.env of a throw-away repository: the shipped node file, or the v4-32 vm example."""
    values = make_repo(tmp_path / "repo", unique_env(), base=NODE, **overrides)
    if arch == "vm":
        values.write_text(rewrite_env((EXAMPLES / "vm-v4-32.env").read_text(), ENV_BUILD_NAME=unique_env(),
                                      **overrides))
    return values


def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if not line.startswith("tpubuild: warning: ")]


@pytest.mark.parametrize("arch, overrides, command, fragments", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_dispatch_and_submit_exit_2_before_any_client(no_cloud, cli, tmp_path: Path, monkeypatch,
                                                          arch, overrides, command, fragments) -> None:
    from builder.cloud import clients

    values = _values(tmp_path, arch, overrides)
    monkeypatch.chdir(values.parent)
    calls = clients.credentials.cache_info()
    code, out, err = cli("--values", values, *command)
    assert code == 2, err
    [line] = _error_lines(err)
    assert line.startswith("tpubuild: error: ") and "; " in line and "Traceback" not in err
    for fragment in fragments:
        assert fragment in line, (fragment, line)
    assert out == ""  # not even "dispatch: create of ..."
    assert clients.credentials.cache_info() == calls  # no client asked for credentials


def test_good_input_without_credentials_stops_at_the_first_client(no_cloud, cli, tmp_path: Path,
                                                                  monkeypatch) -> None:
    """The same environment with good input: the refusals above are not luck."""
    values = _values(tmp_path, "vm", {})
    monkeypatch.chdir(values.parent)
    for command in (["dispatch", "--action", "initialize"], ["dispatch", "--action", "update", "--tpu", "true"],
                    ["submit", "--action", "auto"]):
        code, out, err = cli("--values", values, *command)
        assert code == 1, (command, err)
        assert _error_lines(err) == [NO_CREDENTIALS], command


_PROBE = """
import json, sys
from builder.cli import main
code = main(sys.argv[1:])
loaded = sorted(m for m in sys.modules if m.startswith(("google.auth", "google.cloud", "google.api_core")))
print(json.dumps({"code": code, "loaded": loaded}))
"""


@pytest.mark.parametrize("command, expect_code", [
    (["dispatch", "--action", "initialize", "--tpu", "true"], 2),
    (["dispatch", "--action", "update", "--mig", "default", "--tpu", "true", "--allow-wipe", "true"], 2),
    (["dispatch", "--action", "initialize"], 1),
], ids=["initialize-tpu", "wipe-without-seeder", "good-input"])
def test_bad_input_loads_no_google_library(no_cloud, tmp_path: Path, command: list[str], expect_code: int) -> None:
    """In a fresh interpreter: refused input never even imports google-auth or a client library;
    good input does (and stops for want of credentials)."""
    values = _values(tmp_path, "node", {})
    # -I: the throw-away repository's builder/ (cwd) must not shadow the installed package
    proc = subprocess.run([sys.executable, "-I", "-c", _PROBE, "--values", str(values), *command],
                          cwd=values.parent, capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert proc.stdout.strip(), proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["code"] == expect_code, proc.stderr
    if expect_code == 2:
        assert result["loaded"] == [], result
        assert len(_error_lines(proc.stderr)) == 1 and "Traceback" not in proc.stderr
    else:
        assert "google.auth" in result["loaded"] and _error_lines(proc.stderr) == [NO_CREDENTIALS]
