"""The bad-input corpus, extended: capped reads (/dev/zero, an endless stream, a
directory), 5,000-digit integers, non-UTF-8 and lone surrogates, Google's naming rules, canonical
accelerator names, errors on the key to change, CIDR, machine types, Filestore maximums,
credentials, and hypothesis over CLI flags and guard input.

Every case: exit 2, one line, the key/flag/file named, "what; fix", no "internal error" and no
Python message. Cases reuse ``tests/support/bad_input.py``'s ``Case`` and checks."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import SHIPPED, tpubuild_cmd
from tests.support.bad_input import MINIMAL, Case, run_console_script, run_in_process

pytestmark = pytest.mark.usefixtures("no_cloud")

#: Fragments of Python's own messages that must never reach a user.
PYTHON_MESSAGES = ("Traceback", "internal error", "set_int_max_str_digits", "Exceeds the limit", "codec can't",
                   "Errno", "object has no attribute", "invalid literal for int", "surrogates not allowed")


def _endless(tmp: Path) -> None:
    """A FIFO that a writer feeds forever (it stops when the reader closes its end)."""
    fifo = tmp / "endless.env"
    os.mkfifo(fifo)

    def feed() -> None:
        try:
            with open(fifo, "wb") as out:
                while True:
                    out.write(b"# more\n" * 8192)
        except OSError:
            pass

    threading.Thread(target=feed, daemon=True).start()


def _surrogate_plan(tmp: Path) -> None:
    (tmp / "sur.json").write_text('{"format_version": "1.2", "planned_values": {}, "resource_changes": '
                                  '[{"address": "a\\ud800", "type": "x", "change": {"actions": ["delete"]}}]}')


def _bigint_plan(tmp: Path) -> None:
    (tmp / "bigint.json").write_text('{"format_version": "1.2", "planned_values": {}, "x": ' + "9" * 5000 + "}")


CASES: list[Case] = [
    # ---------------------------------------------------------------- capped reads
    Case("values-dev-zero", None, args=("validate", "--values", "/dev/zero"), expect=("/dev/zero:", "too large", "under 1 MiB"), sub=True),
    Case("values-endless-stream", None, args=("validate", "--values", "{tmp}/endless.env"),
         expect=("{tmp}/endless.env:", "too large", "endless stream"), setup=_endless),
    Case("plan-dev-zero", None, args=("guard", "--plan-json", "/dev/zero", "--module", "tpu", "--action", "update"),
         expect=("/dev/zero:", "too large for a plan JSON")),
    Case("plan-lone-surrogate", None, args=("guard", "--plan-json", "{tmp}/sur.json", "--module", "tpu", "--action", "update"),
         expect=("{tmp}/sur.json:", "lone UTF-16 surrogate"), setup=_surrogate_plan, sub=True),
    Case("plan-5000-digit-int", None, args=("guard", "--plan-json", "{tmp}/bigint.json", "--module", "tpu", "--action", "update"),
         expect=("{tmp}/bigint.json:", "number too long"), setup=_bigint_plan),
    # ---------------------------------------------------------------- integers and text
    Case("int-5000-digits", {"SHARED_PD_DISK_SIZE": "9" * 5000}, expect=("SHARED_PD_DISK_SIZE:", "5000 digits", "use 10 to 65536"), sub=True),
    Case("int-full-width", {"BOOT_DISK_SIZE_GB": "２００"}, expect=("BOOT_DISK_SIZE_GB:", "not a whole number")),
    Case("int-arabic-indic", {"SHARED_PD_DISK_SIZE": "٢٠٠"}, expect=("SHARED_PD_DISK_SIZE:", "not a whole number")),
    Case("duration-5000-digits", {"TPU_QUEUED_VALID_FOR": "9" * 5000 + "h"}, expect=("TPU_QUEUED_VALID_FOR:", "not a duration")),
    Case("duration-full-width", {"TPU_QUEUED_VALID_FOR": "６h"}, expect=("TPU_QUEUED_VALID_FOR:", "not a duration")),
    Case("values-encoded-surrogate", MINIMAL.encode() + b'MOUNT_POINT="/mnt/\xed\xa0\x80"\n', expect=("{values}:6:", "not UTF-8")),
    # ---------------------------------------------------------------- accelerator names
    Case("accelerator-leading-zero", {"TPU_ACCELERATOR_TYPE": "v3-032"}, expect=("TPU_ACCELERATOR_TYPE:", "'v3-032' is not canonical", "'v3-32'"), sub=True),
    Case("accelerator-full-width", {"TPU_ACCELERATOR_TYPE": "v3-３２"}, expect=("TPU_ACCELERATOR_TYPE:", "not canonical")),
    Case("accelerator-uppercase", {"TPU_ACCELERATOR_TYPE": "V4-32"}, expect=("TPU_ACCELERATOR_TYPE:", "not canonical")),
    # ---------------------------------------------------------------- the key to change
    Case("runtime-typo-with-node-arch", MINIMAL.replace("pytorch-nightly", "pytroch-1.13") + 'TPU_ARCH="node"\n',
         expect=("{values}:5: TPU_PYTORCH_VERSION:", "'pytroch-1.13' is not a TPU runtime", "did you mean pytorch-1.13?")),
    Case("runtime-typo-with-vm-arch", {"TPU_ARCH": "vm", "TPU_PYTORCH_VERSION": "pytorch-nightlyy", "TPU_RUNTIME_VERSION": None},
         expect=("TPU_PYTORCH_VERSION:", "not a TPU runtime")),
    # ---------------------------------------------------------------- Google's naming rules
    Case("dataset-bucket-double-dot", {"GCS_DATASET": "gs://my..data/x"}, expect=("GCS_DATASET:", "'my..data'", "Google's rules")),
    Case("dataset-bucket-goog-prefix", {"GCS_DATASET": "gs://googdata/x"}, expect=("GCS_DATASET:", "begins with 'goog'")),
    Case("dataset-bucket-google", {"GCS_DATASET": "gs://my-google-data/x"}, expect=("GCS_DATASET:", "contains 'google'")),
    Case("dataset-bucket-g00gle", {"GCS_DATASET": "gs://my-g00gle-data/x"}, expect=("GCS_DATASET:", "misspelling")),
    Case("dataset-bucket-too-long", {"GCS_DATASET": "gs://" + "a" * 64 + "/x"}, expect=("GCS_DATASET:", "64 characters")),
    Case("dataset-bucket-ip", {"GCS_DATASET": "gs://192.168.5.4/x"}, expect=("GCS_DATASET:", "is an IP address")),
    Case("roberta-resume-word", {"ROBERTA_RESUME": "maybe"}, expect=("ROBERTA_RESUME:", "'maybe'", "exact, reset-data")),
    Case("roberta-bucket-goog", {"ROBERTA_DATA_SOURCE": "gs://googley/wiki"}, expect=("ROBERTA_DATA_SOURCE:", "begins with 'goog'")),
    # ---------------------------------------------------------------- values that would fail in the cloud
    Case("cidr-loopback", {"TPU_CIDR_BLOCK": "127.0.0.0/29"}, expect=("TPU_CIDR_BLOCK:", "127.0.0.0/8", "RFC 1918")),
    Case("cidr-link-local", {"TPU_CIDR_BLOCK": "169.254.169.248/29"}, expect=("TPU_CIDR_BLOCK:", "169.254.0.0/16")),
    Case("cidr-this-network", {"TPU_CIDR_BLOCK": "0.0.0.0/29"}, expect=("TPU_CIDR_BLOCK:", "0.0.0.0/8")),
    Case("machine-type-trailing-dash", {"MACHINE_TYPE": "n1-standard-"}, expect=("MACHINE_TYPE:", "'n1-standard-'", "n1-standard-16")),
    Case("machine-type-double-dash", {"MACHINE_TYPE": "n1--standard-16"}, expect=("MACHINE_TYPE:", "not a machine type")),
    Case("filestore-above-basic-max", {"SHARED_FS_TIER": "BASIC_HDD", "SHARED_FS_CAPACITY": "70000"},
         expect=("SHARED_FS_CAPACITY:", "above the BASIC_HDD maximum of 65434 GiB")),
    Case("filestore-above-enterprise-max", {"SHARED_FS_TIER": "ENTERPRISE", "SHARED_FS_CAPACITY": "20480"},
         expect=("SHARED_FS_CAPACITY:", "above the ENTERPRISE maximum of 10240 GiB")),
    # ---------------------------------------------------------------- flags
    Case("unlock-even-if-running-alone", args=("unlock", "--values", "{values}", "--even-if-running"),
         expect=("unlock:", "needs --force", "--even-if-running alone")),
]


def _clean(line: str) -> None:
    for fragment in PYTHON_MESSAGES:
        assert fragment not in line, line


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hardened_bad_input_in_process(cli, tmp_path: Path, case: Case) -> None:
    _clean(run_in_process(cli, tmp_path, case))


@pytest.mark.parametrize("case", [c for c in CASES if c.sub], ids=[c.id for c in CASES if c.sub])
def test_hardened_bad_input_console_script(tmp_path: Path, case: Case) -> None:
    _clean(run_console_script(tmp_path, case))


@pytest.mark.parametrize("target", ["dir", "/dev/zero", "binary", "empty", "missing"])
def test_credentials_file_is_checked(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str) -> None:
    values = tmp_path / "values.env"
    values.write_text(SHIPPED.read_text())
    path = {"dir": str(tmp_path), "/dev/zero": "/dev/zero", "binary": str(tmp_path / "key.bin"),
            "empty": "", "missing": str(tmp_path / "nope.json")}[target]
    (tmp_path / "key.bin").write_bytes(b"\x00\xff" * 100)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", path)
    code, out, err = cli("--values", values, "initialize")
    assert code == 2, err
    assert len(err.splitlines()) == 1 and "GOOGLE_APPLICATION_CREDENTIALS" in err and "; " in err
    _clean(err)


def test_non_utf8_argument_through_the_console_script(tmp_path: Path) -> None:
    proc = subprocess.run([*tpubuild_cmd(), "validate", "--values", os.fsdecode(b"\xffvalues.env")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert "argument 3 (\\udcffvalues.env) is not UTF-8 text; " in proc.stderr
    _clean(proc.stderr)


def test_a_repository_file_too_large_to_pack_is_one_line(tmp_path: Path) -> None:
    from builder.cloud import source
    from builder.facts.errors import BadInput
    from builder.facts.files import MAX_SOURCE_FILE

    big = tmp_path / "models" / "x" / "weights.bin"
    big.parent.mkdir(parents=True)
    with open(big, "wb") as fh:
        fh.truncate(MAX_SOURCE_FILE + 1)  # sparse: no disk used
    with pytest.raises(BadInput, match=r"weights\.bin: more than 64 MiB, too large for a repository file"):
        source.collect(tmp_path, b"", {})


# ---------------------------------------------------------------- hypothesis: CLI flags and guard input

COMMANDS = [
    ("validate",), ("plan", "--action"), ("render", "--action"), ("guard", "--module"), ("guard", "--action"),
    ("dispatch", "--action"), ("dispatch", "--tpu"), ("dispatch", "--allow-data-loss"), ("submit", "--action"),
    ("finalize", "--action"), ("trigger", "--repo-owner"), ("trigger", "--branch"),
]
NASTY = st.sampled_from(["", "-", "--", "9" * 5000, "v3-032", "３２", "\x00", "\ud800", "goog", "../..", "/dev/zero",
                         "a" * 300, "true", "bogus", "--values", "\u202e", "1e309"])
TEXT = NASTY | st.text(max_size=30)
BOUNDED = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                   suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _cli_line(cli, args: list[str]) -> tuple[int, str, str]:
    code, out, err = cli(*args)
    return code, out, err


@BOUNDED
@given(st.sampled_from(COMMANDS), TEXT, st.lists(TEXT, max_size=2))
def test_any_flag_value_is_one_line_exit_2(cli, tmp_path: Path, command: tuple[str, ...], value: str,
                                           extra: list[str]) -> None:
    values = tmp_path / "values.env"
    if not values.exists():
        values.write_text(SHIPPED.read_text())
    plan = tmp_path / "plan.json"
    if not plan.exists():
        plan.write_text(json.dumps({"format_version": "1.2", "planned_values": {}, "resource_changes": []}))
    required = {"guard": ["--plan-json", str(plan), "--module", "tpu", "--action", "update"],
                "finalize": ["--build-id", "b1", "--action", "update"],
                "trigger": ["--repo-owner", "o", "--repo-name", "r"],
                "plan": ["--action", "create"], "render": ["--action", "create"],
                "dispatch": ["--action", "create"], "submit": ["--action", "create"]}.get(command[0], [])
    args = [command[0], "--values", str(values), *required]
    if len(command) > 1:
        args += [command[1], value]
    else:
        args += [value]
    args += extra
    code, out, err = cli(*args)
    if code == 0:
        return  # a value that happens to be fine (e.g. --branch main) is fine
    if code == 1:  # accepted input, then the world: here, no credentials (no_cloud)
        assert err.strip().endswith("gcloud auth application-default login` (or set GOOGLE_APPLICATION_CREDENTIALS "
                                    "to a service-account key file)"), (args, err)
        return
    assert code == 2, (args, code, err)
    lines = err.splitlines()
    assert lines and lines[-1].startswith("tpubuild: error: "), (args, err)
    assert len([ln for ln in lines if not ln.startswith("tpubuild: warning:")]) == 1, (args, err)
    _clean(err)


PLAN_TEXT = st.one_of(
    st.binary(max_size=64).map(lambda b: b.decode("latin-1")),
    st.sampled_from(['{"format_version": "1.2", "planned_values": {}, "resource_changes": [{"address": "\\udc80", '
                     '"type": "google_compute_disk", "change": {"actions": ["forget"]}}]}',
                     '{"format_version": "1.' + "0" * 5000 + '", "planned_values": {}}',
                     '[' * 100000, '{"format_version": 1e999}', '{"format_version": "1.2", "resource_changes": '
                     '[{"address": "a", "type": "google_storage_bucket", "change": {"actions": ["create", "forget"]}}]}']),
)


@BOUNDED
@given(PLAN_TEXT, st.sampled_from(["create", "update", "auto", "destroy"]))
def test_any_guard_input_is_a_decision_or_one_line(cli, tmp_path: Path, text: str, action: str) -> None:
    plan = tmp_path / "plan.json"
    plan.write_bytes(text.encode("utf-8", "surrogatepass"))
    code, out, err = cli("guard", "--plan-json", plan, "--module", "filestore", "--action", action)
    assert code in (0, 2), err
    if code == 2:
        assert len(err.splitlines()) == 1 and err.startswith("tpubuild: error: "), err
        _clean(err)
