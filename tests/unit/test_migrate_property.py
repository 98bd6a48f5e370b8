"""Property test for `tpubuild migrate`: whatever way a TPU Node file writes its lines
(quotes, `export`, comments after values, the runtime under either key, the arch inferred or
declared, node-only keys present or not), the migrated text loads as a TPU VM file with the same
environment, and migrating it again changes nothing. Bounded and derandomized like
tests/unit/test_property.py."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builder.config import load_text
from builder.config.migrate import NODE_ONLY, migrate_text

BOUNDED = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                   suppress_health_check=[HealthCheck.too_slow])
PATH = Path("values.env")

quote = st.sampled_from(['"{}"', "'{}'", "{}"])
comment = st.sampled_from(["", " # a comment", "  #no space", " # node only: /29 # two hashes"])
export = st.sampled_from(["", "export "])


def _line(key: str, value: str, q: str, c: str, e: str) -> str:
    if value == "" and q == "{}":
        q = '"{}"'
    return f"{e}{key}={q.format(value)}{c}"


@st.composite
def node_files(draw: st.DrawFn) -> tuple[str, dict[str, str]]:
    accel = draw(st.sampled_from(["v2-8", "v2-32", "v3-8", "v3-32", "v3-128"]))
    zone = {"v2-8": "europe-west4-a", "v2-32": "europe-west4-a", "v3-8": "europe-west4-a"}.get(accel, "europe-west4-a")
    runtime = draw(st.sampled_from(["pytorch-1.13", "pytorch-nightly", "pytorch-2.1", "pytorch-1.8"]))
    values = {"ENV_BUILD_NAME": draw(st.from_regex(r"[a-z][a-z0-9]{2,10}", fullmatch=True)),
              "PROJECT_ID": "my-tpu-project", "ZONE": zone, "TPU_ACCELERATOR_TYPE": accel,
              "SHARED_FS_TIER": draw(st.sampled_from(["STANDARD", "BASIC_HDD"])),
              "SHARED_PD_DISK_SIZE": str(draw(st.integers(10, 4000)))}
    keys = list(values)
    if draw(st.booleans()):
        values["TPU_ARCH"] = "node"
        keys.insert(3, "TPU_ARCH")
    runtime_key = draw(st.sampled_from(["TPU_PYTORCH_VERSION", "TPU_RUNTIME_VERSION"]))
    values[runtime_key] = runtime
    keys.append(runtime_key)
    for key, value in (("MACHINE_TYPE", "n1-standard-16"), ("GCE_IMAGE_VERSION", "20200527"),
                       ("SOURCE_IMAGE_FAMILY", "torch-xla"), ("BOOT_DISK_SIZE_GB", "110"),
                       ("TPU_CIDR_BLOCK", "10.3.0.0/29"), ("MIG_EXTERNAL_IP", "false"),
                       ("MIG_SETUP_SCRIPT", "env_setup/scripts/setup_mig.sh")):
        if draw(st.booleans()):
            values[key] = value
            keys.append(key)
    if "GCE_IMAGE_VERSION" in values and draw(st.booleans()):
        values["SOURCE_IMAGE_BASE"] = "debian-9-torch-xla-v${GCE_IMAGE_VERSION}"
        keys.append("SOURCE_IMAGE_BASE")
    lines = ["#!/bin/bash", "### a seed-era file"]
    for key in keys:
        q = '"{}"' if "${" in values[key] else draw(quote)
        lines.append(_line(key, values[key], q, draw(comment), draw(export)))
    return "\n".join(lines) + "\n", values


@BOUNDED
@given(node_files())
def test_migrated_node_file_loads_as_vm_and_a_second_migrate_is_a_no_op(case: tuple[str, dict[str, str]]) -> None:
    text, values = case
    before = load_text(text, PATH)
    assert before.arch == "node"
    first = migrate_text(text, PATH)
    assert first.changed
    after = load_text(first.text, PATH)
    assert after.arch == "vm" and after.runtime_version == "tpu-ubuntu2204-base"
    assert (after.env_name, after.zone, after.accelerator_type, after.shared_fs_tier, after.shared_pd_size_gb) == \
        (before.env_name, before.zone, before.accelerator_type, before.shared_fs_tier, before.shared_pd_size_gb)
    assert not set(after.lines) & set(NODE_ONLY)
    assert after.mig_setup_script == ""
    for line in text.splitlines():
        if line.startswith("#"):
            assert line in first.text
    second = migrate_text(first.text, PATH)
    assert not second.changed and second.text == first.text
