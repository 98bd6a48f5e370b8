"""validate reports every problem in one run; --strict; help hides the pipeline's verbs."""

from __future__ import annotations

import re

from tests.conftest import run_tpubuild

BAD = ('ENV_BUILD_NAME="Bad_Name"\nPROJECT_ID="my-tpu-project"\nZONE="europe-west4-a"\n'
       'TPU_ACCELERATOR_TYPE="v3-32"\nTPU_RUNTIME_VERSION="tpu-ubuntu2204-base"\nSHARED_PD_DISK_SIZE="lots"\n'
       'TPU_SPOT="maybe"\nMY_NOTE="n1-standard-8"\nSHARED_FS_TIER="FAST"\n')


def test_validate_reports_every_problem_one_line_each(tmp_path):
    values = tmp_path / "values.env"
    values.write_text(BAD)
    proc = run_tpubuild("validate", "--values", str(values))
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if line.startswith("tpubuild: error: ")]
    assert [e.split(":")[3] for e in errors] == ["1", "6", "7", "9"]  # file order, one line each
    assert "MY_NOTE" not in " ".join(errors) and "MY_NOTE is not a tpubuild key; it is ignored" in proc.stderr  # a warning
    assert "Traceback" not in proc.stderr
    strict = run_tpubuild("validate", "--strict", "--values", str(values))
    assert strict.returncode == 2 and "tpubuild: 5 problems" in strict.stderr
    assert any(":8: MY_NOTE: is not a tpubuild key; remove it" in line
               for line in strict.stderr.splitlines() if line.startswith("tpubuild: error: "))
    typo = tmp_path / "typo.env"  # a near miss of a known key is an error without --strict too
    typo.write_text(BAD.replace("MY_NOTE=", "MACHNE_TYPE="))
    proc = run_tpubuild("validate", "--values", str(typo))
    assert proc.returncode == 2 and "tpubuild: 5 problems" in proc.stderr
    assert ":8: MACHNE_TYPE: is not a tpubuild key but a near miss of MACHINE_TYPE" in proc.stderr


def test_other_commands_name_the_first_problem_and_the_count(tmp_path):
    values = tmp_path / "values.env"
    values.write_text(BAD)
    proc = run_tpubuild("plan", "--values", str(values))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert ":1: ENV_BUILD_NAME" in proc.stderr and "(and 3 more problems: run tpubuild validate)" in proc.stderr


def test_help_describes_and_hides_internal_verbs():
    proc = run_tpubuild("--help")
    assert proc.returncode == 0 and "Thin by design" not in proc.stdout and "examples:" in proc.stdout
    listed = re.findall(r"^ +(\w+) ", proc.stdout.split("options:")[0], re.M)
    for verb in ("dispatch", "guard", "finalize"):
        assert verb not in listed
    for verb in ("validate", "plan", "render", "status", "submit"):
        assert verb in listed
    assert run_tpubuild("guard", "--help").returncode == 0  # hidden, still there
    plan_help = run_tpubuild("plan", "--help").stdout
    assert "examples:" in plan_help and "--applied" in plan_help and "auto" in plan_help
