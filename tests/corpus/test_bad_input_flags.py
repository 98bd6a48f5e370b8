"""Bad input on the command line and in files: flag combinations, each command's own flags,
and missing or unreadable files. Each case must exit 2 with exactly one line on stderr that names
the flag, the key or the file and says how to fix it, and no traceback. The values-file corpus is
test_bad_input_corpus.py; the machinery (``Case``, the checks) is tests/support/bad_input.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, NODE, SHIPPED
from tests.support.bad_input import (
    Case, a_directory, check_table, other_env_file, plan_files, run_console_script, run_in_process, symlink_loop,
)

pytestmark = pytest.mark.usefixtures("no_cloud")

VM = EXAMPLES / "vm-v4-32.env"


CASES: list[Case] = [
    # ---------------------------------------------------------------- flag combinations
    Case("plan-initialize-tpu", args=("plan", "--values", "{values}", "--action", "initialize", "--tpu"),
         expect=("--tpu/--mig", "initialize takes no scope flags", "drop the flags"), sub=True),
    Case("render-initialize-mig", args=("render", "--values", "{values}", "--action", "initialize", "--mig"),
         expect=("--tpu/--mig", "initialize takes no scope flags")),
    Case("plan-bogus-action", args=("plan", "--values", "{values}", "--action", "bogus"), expect=("--action", "'bogus' is not an action", "use initialize, create, update, destroy or auto")),
    Case("render-mig-on-vm", base=VM, args=("render", "--values", "{values}", "--action", "update", "--mig"),
         expect=("--mig", "has no MIG", "use --tpu"), sub=True),
    Case("render-format-xml", args=("render", "--values", "{values}", "--format", "xml"), expect=("--format: 'xml' is not a format of 'tpubuild render'", "use yaml or json")),
    Case("plan-format-yaml", args=("plan", "--values", "{values}", "--format", "yaml"), expect=("--format: 'yaml' is not a format", "use text or json")),
    Case("only-on-create", args=("plan", "--values", "{values}", "--only", "tpu"), expect=("only:", "applies to update")),
    Case("only-unknown", args=("plan", "--values", "{values}", "--action", "update", "--only", "gpu"), expect=("only:", "gpu", "filestore, shared_pd, tpu")),
    Case("only-with-tpu", args=("render", "--values", "{values}", "--action", "update", "--only", "tpu", "--tpu"),
         expect=("only:", "cannot be combined", "--tpu/--mig")),
    Case("only-empty", args=("plan", "--values", "{values}", "--action", "update", "--only", ","), expect=("only:", "selection is empty")),
    Case("unknown-flag", args=("validate", "--values", "{values}", "--frobnicate"), expect=("--frobnicate: 'tpubuild validate' has no such option", "--help")),
    Case("no-command", args=(), expect=("no command given", "--help")),
    Case("unknown-command", args=("frobnicate",), expect=("unknown command 'frobnicate'", "'frobnicate'", "use one of"), sub=True),
    Case("guard-no-module", args=("guard", "--plan-json", "x.json", "--action", "update"), expect=("--module",)),
    Case("guard-initialize", args=("guard", "--plan-json", "x.json", "--module", "tpu", "--action", "initialize"),
         expect=("--action", "initialize runs no Terraform")),
    Case("guard-module-typo", args=("guard", "--plan-json", "x.json", "--module", "filestor", "--action", "update"),
         expect=("--module", "'filestor' is not a plan module", "filestore")),
    Case("dispatch-flag-maybe", args=("dispatch", "--values", "{values}", "--action", "create", "--tpu", "maybe"),
         expect=("_TPU", "'maybe'", "true, false, default"), sub=True),
    Case("dispatch-bogus-action", args=("dispatch", "--values", "{values}", "--action", "bogus"), expect=("_BUILD_ACTION", "'bogus'")),
    Case("submit-bogus-action", args=("submit", "--values", "{values}", "--action", "bogus"), expect=("--action", "'bogus'")),
    # dispatch/submit refuse a bad combination before building any client (no credentials here: no_cloud)
    Case("dispatch-initialize-tpu", args=("dispatch", "--values", "{values}", "--action", "initialize", "--tpu", "true"),
         expect=("_TPU/_MIG", "initialize takes no scope flags", "drop the flags"), sub=True),
    Case("dispatch-initialize-allow-wipe", args=("dispatch", "--values", "{values}", "--action", "initialize",
                                                 "--allow-wipe", "true"), expect=("_ALLOW_WIPE", "initialize applies no Terraform")),
    Case("dispatch-auto-mig", args=("dispatch", "--values", "{values}", "--action", "auto", "--mig", "true"),
         expect=("_MIG: auto decides the modules itself", "drop _MIG")),
    Case("dispatch-mig-on-vm", base=VM, args=("dispatch", "--values", "{values}", "--action", "destroy", "--mig", "true"),
         expect=("_MIG", "has no MIG")),
    Case("dispatch-wipe-without-seeder", args=("dispatch", "--values", "{values}", "--action", "update", "--tpu", "true",
                                               "--allow-wipe", "true"), expect=("_ALLOW_WIPE", "does not apply shared_pd")),
    Case("submit-auto-tpu", args=("submit", "--values", "{values}", "--action", "auto", "--tpu"),
         expect=("--tpu: auto decides the modules itself", "drop --tpu")),
    Case("submit-initialize-allow-data-loss", args=("submit", "--values", "{values}", "--action", "initialize",
                                                    "--allow-data-loss"), expect=("--allow-data-loss", "initialize applies no Terraform")),
    Case("finalize-bogus-action", args=("finalize", "--values", "{values}", "--build-id", "x", "--action", "bogus"),
         expect=("--action", "'bogus'")),
    Case("unlock-without-force", args=("unlock", "--values", "{values}"), expect=("--force",)),
    Case("train-unknown-model", args=("train", "--values", "{values}", "gpt5", "--dry-run"), expect=("'gpt5'", "roberta")),
    Case("logs-host-out-of-range", args=("logs", "--values", "{values}", "--host", "99", "--dry-run"), expect=("--host", "99", "0 to 3")),
    Case("logs-lines-not-int", args=("logs", "--values", "{values}", "--lines", "abc"), expect=("--lines: 'abc' is not a whole number",)),
    # ---------------------------------------------------------------- watch it
    Case("profile-bad-duration", VM.read_text(), args=("profile", "--values", "{values}", "--duration", "10x", "--dry-run"),
         expect=("--duration", "'10x'", "10s")),
    Case("profile-duration-too-long", VM.read_text(), args=("profile", "--values", "{values}", "--duration", "2h", "--dry-run"),
         expect=("--duration", "'2h'")),
    Case("profile-host-out-of-range", VM.read_text(), args=("profile", "--values", "{values}", "--host", "7", "--dry-run"),
         expect=("--host 7", "0 to 3")),
    Case("profile-node-legacy", base=NODE, args=("profile", "--values", "{values}", "--dry-run"), expect=("node architecture", "TPU_ARCH=vm")),
    Case("logs-metrics-follow", VM.read_text(), args=("logs", "--values", "{values}", "--metrics", "--follow", "--dry-run"),
         expect=("--metrics", "--follow")),
    Case("trigger-missing-flag", args=("trigger", "--values", "{values}", "--repo-owner", "a"), expect=("--repo-name",)),
    Case("trigger-node-file", base=NODE, args=("trigger", "--values", "{values}", "--repo-owner", "a", "--repo-name", "b"),
         expect=("TPU_ARCH:", "auto is refused", "tpubuild migrate")),
    Case("run-ship-missing", args=("run", "--values", "{values}", "--dry-run", "--ship", "nope.py", "--", "python3", "x.py"),
         expect=("--ship nope.py: does not exist", "under the folder you run tpubuild in")),
    Case("run-ship-outside", args=("run", "--values", "{values}", "--dry-run", "--ship", "/etc/passwd", "--", "true"),
         expect=("--ship /etc/passwd: is not under the current folder",)),
    Case("bootstrap-unwritable", args=("bootstrap", "--values", "{values}", "--output", "{tmp}/no/such/dir/cloudbuild.yaml"),
         expect=("{tmp}/no/such/dir/cloudbuild.yaml", "--output")),
    # ---------------------------------------------------------------- missing and unreadable files
    Case("plan-applied-missing", args=("plan", "--values", "{values}", "--applied", "{tmp}/nope.env"),
         expect=("--applied: {tmp}/nope.env: no such file", "values.env last applied", "--applied none"), sub=True),
    Case("plan-applied-other-env", args=("plan", "--values", "{values}", "--applied", "{tmp}/other.env"),
         expect=("--applied: {tmp}/other.env:", "another environment", "ENV_BUILD_NAME 'other-env'", "'tpu-dev1'",
                 "--applied none"), setup=other_env_file),
    Case("render-auto-applied-other-env", args=("render", "--values", "{values}", "--action", "auto", "--applied",
                                                "{tmp}/other.env"), expect=("--applied: {tmp}/other.env:", "another environment"),
         setup=other_env_file),
    Case("values-missing", args=("validate", "--values", "{tmp}/nope.env"), expect=("{tmp}/nope.env: no such file", "--values PATH"), sub=True),
    Case("values-missing-before-command", args=("--values", "{tmp}/nope.env", "plan"), expect=("{tmp}/nope.env: no such file",)),
    Case("values-directory", args=("validate", "--values", "{tmp}/values.env.d"), expect=("{tmp}/values.env.d: is a directory",), setup=a_directory, sub=True),
    Case("values-symlink-loop", args=("validate", "--values", "{tmp}/loop.env"), expect=("{tmp}/loop.env: cannot read",), setup=symlink_loop),
    Case("values-dev-null", args=("validate", "--values", "/dev/null"), expect=("/dev/null: ENV_BUILD_NAME:", "is required")),
    Case("plan-json-missing", args=("guard", "--plan-json", "{tmp}/plans/tpu.json", "--module", "tpu", "--action", "update"),
         expect=("{tmp}/plans/tpu.json: no such file", "terraform show -json"), setup=plan_files),
    Case("plan-json-directory", args=("guard", "--plan-json", "{tmp}/plans", "--module", "tpu", "--action", "update"),
         expect=("{tmp}/plans: is a directory",), setup=plan_files),
    Case("plan-json-is-binary-plan", args=("guard", "--plan-json", "{tmp}/plan.tfplan", "--module", "tpu", "--action", "create"),
         expect=("{tmp}/plan.tfplan:", "not UTF-8", "not the binary plan file"), setup=plan_files, sub=True),
]

check_table(CASES, at_least=20, console_at_least=5)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_in_process(cli, tmp_path: Path, case: Case) -> None:
    run_in_process(cli, tmp_path, case)


@pytest.mark.parametrize("case", [c for c in CASES if c.sub], ids=[c.id for c in CASES if c.sub])
def test_bad_input_console_script(tmp_path: Path, case: Case) -> None:
    run_console_script(tmp_path, case)


def test_unreadable_file(cli, tmp_path: Path) -> None:
    """chmod 000 blocks reads for ordinary users; root reads anyway, so there the test uses a file
    that no one can read: /proc/self/mem (reading offset 0 fails with EIO)."""
    values = tmp_path / "values.env"
    values.write_text(SHIPPED.read_text())
    values.chmod(0)
    try:
        if os.access(values, os.R_OK):  # root: chmod does not block reads
            target, fragment = Path("/proc/self/mem"), "cannot read"
            if not target.exists():
                pytest.skip("running as root without /proc: no file is unreadable to us")
        else:
            target, fragment = values, "permission denied; make the file readable"
        code, out, err = cli("validate", "--values", target)
        assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
        assert err.startswith(f"tpubuild: error: {target}: ") and fragment in err
    finally:
        values.chmod(0o644)


def test_script_missing_when_a_pipeline_uses_it(cli, make_env) -> None:
    """A seed-era MIG_SETUP_SCRIPT path is a warning when the file loads and an error when the
    pipeline would use it: render exits 2 with one error line (after the load's warning), and
    validate, which reports what render would refuse, gives that same line."""
    path = make_env(SHIPPED, MIG_SETUP_SCRIPT="env_setup/scripts/setup_mig.sh")
    code, out, err = cli("validate", "--values", path)
    assert code == 2
    validate_errors = [line for line in err.splitlines() if line.startswith("tpubuild: error: ")]
    code, out, err = cli("render", "--values", path, "--action", "create")
    assert code == 2 and out == ""
    errors = [line for line in err.splitlines() if line.startswith("tpubuild: error: ")]
    others = [line for line in err.splitlines() if not line.startswith("tpubuild: error: ")]
    assert len(errors) == 1 and "MIG_SETUP_SCRIPT" in errors[0] and validate_errors == errors
    assert all(line.startswith("tpubuild: warning: ") and "MIG_SETUP_SCRIPT" in line for line in others)
