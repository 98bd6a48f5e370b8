"""Bad input, everywhere: a corpus of broken inputs, each of which must exit 2 with
exactly one line on stderr that names the key or the line and says how to fix it, and no traceback.

Every case runs with no cloud reachable and no credentials (the ``no_cloud`` fixture): bad input
is refused before any client is built. Most cases run in-process through ``builder.cli.main``
(the `cli` fixture); the ones marked ``sub=True`` (a representative subset of every category) run
the real console script in a subprocess. The cases: bad_values.py (values.env syntax, values and
wrong types, impossible topologies, names that would be illegal downstream, provisioning and zones)
and bad_commands.py (flag combinations, each command's flags, missing or unreadable files); the
``Case`` and the checks: tests/support/bad_input.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import SHIPPED
from tests.corpus import bad_commands, bad_values
from tests.support.bad_input import Case, check_table, run_console_script, run_in_process

pytestmark = pytest.mark.usefixtures("no_cloud")

CASES: list[Case] = bad_values.CASES + bad_commands.CASES
check_table(CASES, at_least=60, console_at_least=10)


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
