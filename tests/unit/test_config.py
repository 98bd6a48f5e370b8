"""values.env syntax (bash as users write it), seed-era compatibility, warnings and architecture
inference. The per-key validation rules are in test_config_rules.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.config import load, load_text
from builder.config.keys import IGNORED_KEYS
from builder.facts.errors import BadInput, ConfigError, ConfigErrors
from tests.conftest import EXAMPLES, SHIPPED

# The seed repository's values.env, key for key (only the project ID is ours).
SEED_VALUES = r"""#!/bin/bash
### training environment build id
ENV_BUILD_NAME="20200430"

### project
PROJECT_ID="tpu-seed-project"
ZONE="europe-west4-a"
REGION="europe-west4"
MOUNT_POINT="/mnt/common"

### gcs training dataset
GCS_DATASET="gs://tpu-demo-eu/dataset/*"
GCS_RAW_DATASET=""

### cloud tpu
TPU_ACCELERATOR_TYPE="v3-32"
TPU_PYTORCH_VERSION="pytorch-nightly"

### managed instance group
MACHINE_TYPE="n1-standard-16"
DOCKER_CONTAINER='false'
GCE_IMAGE_VERSION="20200527"
SOURCE_IMAGE_FAMILY="torch-xla"
SOURCE_IMAGE_PROJECT="ml-images"
SOURCE_IMAGE_BASE="debian-9-torch-xla-v${GCE_IMAGE_VERSION}"
BOOT_DISK_SIZE_GB="110"
NETWORK="default"
MIG_SETUP_SCRIPT='env_setup/scripts/setup_mig.sh'

### shared nfs
SHARED_FS="tpushare"
SHARED_FS_CAPACITY="1024"
SHARED_FS_TIER="STANDARD"

### shared persistent disk
SHARED_PD_DISK_ATTACH=false
SHARED_PD_DISK_SIZE="2055"
SHARED_PD_DISK_TYPE='pd-ssd'
MIG_SEED_DATA_PREP_SCRIPT='roberta/env_setup/data_prep_seed_shared_disk_pd.sh'

# colours for the seed's echo lines
RED='\033[0;31m'
GREEN='\033[0;32m'
NC='\033[0m' # No Color
"""

MINIMAL = """ENV_BUILD_NAME="env1"
PROJECT_ID="my-tpu-project"
ZONE="europe-west4-a"
TPU_ACCELERATOR_TYPE="v3-8"
TPU_PYTORCH_VERSION="pytorch-nightly"
"""


def line_of(text: str, key: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith(f"{key}="))


def write(tmp_path: Path, text: str, name: str = "values.env") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


# ---------------------------------------------------------------- seed-era compatibility

def test_seed_file_loads_with_only_script_path_warnings(tmp_path: Path, cli) -> None:
    path = write(tmp_path, SEED_VALUES)
    s = load(path)
    assert (s.env_name, s.project_id, s.zone, s.region) == ("20200430", "tpu-seed-project", "europe-west4-a", "europe-west4")
    assert s.arch == "node"  # inferred from pytorch-nightly
    assert (s.accelerator_type, s.runtime_version, s.hosts) == ("v3-32", "pytorch-nightly", 4)
    assert s.gcs_dataset == "gs://tpu-demo-eu/dataset/*"
    assert s.shared_fs_tier == "BASIC_HDD"  # STANDARD
    assert (s.shared_fs_name, s.shared_fs_capacity_gb) == ("tpushare", 1024)
    assert (s.shared_pd_attach, s.shared_pd_size_gb, s.shared_pd_type) == (False, 2055, "pd-ssd")
    assert (s.gce_image_version, s.boot_disk_size_gb, s.machine_type) == ("20200527", 110, "n1-standard-16")
    assert s.mig_setup_script == "env_setup/scripts/setup_mig.sh"
    assert s.mig_seed_data_prep_script == "roberta/env_setup/data_prep_seed_shared_disk_pd.sh"
    # Ignored keys are kept raw, unexpanded where single-quoted, and never warned about.
    assert s.raw["RED"] == r"\033[0;31m" and s.raw["DOCKER_CONTAINER"] == "false"
    assert s.raw["SOURCE_IMAGE_BASE"] == "debian-9-torch-xla-v20200527"
    # The only warnings: the two seed script paths this repository replaced (none exist in tmp_path).
    assert len(s.warnings) == 2, s.warnings
    assert "MIG_SETUP_SCRIPT" in s.warnings[0] and f"{path}:{line_of(SEED_VALUES, 'MIG_SETUP_SCRIPT')}:" in s.warnings[0]
    assert "MIG_SEED_DATA_PREP_SCRIPT" in s.warnings[1]
    assert f"{path}:{line_of(SEED_VALUES, 'MIG_SEED_DATA_PREP_SCRIPT')}:" in s.warnings[1]
    assert all("seed repository's own script" in w and "run tpubuild migrate" in w for w in s.warnings)
    # Through the CLI: a node file builds nothing any more, so validate says what plan/create will
    # do, and that the seed's script paths (which submit refuses, for every action) are the seed's;
    # every line's fix is tpubuild migrate. Exit 2.
    code, out, err = cli("validate", "--values", path)
    errors = [ln for ln in err.splitlines() if ln.startswith("tpubuild: error:")]
    assert code == 2 and out == "" and len(errors) == 3, err
    assert "this seed-era file" in errors[0] and all("tpubuild migrate" in e for e in errors)
    assert "refuse create, update and auto" in errors[0] and "destroy and status still work" in errors[0]
    assert ": MIG_SETUP_SCRIPT: " in errors[1] and ": MIG_SEED_DATA_PREP_SCRIPT: " in errors[2]
    assert "Traceback" not in err


def test_existing_script_path_is_not_a_warning(tmp_path: Path) -> None:
    (tmp_path / "env_setup/scripts").mkdir(parents=True)
    (tmp_path / "env_setup/scripts/setup_mig.sh").write_text("#!/bin/bash\n")
    (tmp_path / "models/roberta/env_setup").mkdir(parents=True)
    (tmp_path / "models/roberta/env_setup/data_prep_seed_shared_disk_pd.sh").write_text("#!/bin/bash\n")
    s = load(write(tmp_path, SEED_VALUES))
    assert s.warnings == ()  # MIG_SEED_DATA_PREP_SCRIPT resolves under models/


@pytest.mark.parametrize("seed, tier, capacity", [
    ("STANDARD", "BASIC_HDD", 1024), ("PREMIUM", "BASIC_SSD", 2560),
    ("standard", "BASIC_HDD", 1024), ("BASIC_SSD", "BASIC_SSD", 2560),
])
def test_seed_tier_names_map(tmp_path: Path, seed: str, tier: str, capacity: int) -> None:
    text = MINIMAL + f'SHARED_FS_TIER="{seed}"\nSHARED_FS_CAPACITY="{capacity}"\n'
    assert load(write(tmp_path, text)).shared_fs_tier == tier


@pytest.mark.parametrize("path", [SHIPPED, *sorted(EXAMPLES.glob("*.env"))], ids=lambda p: p.name)
def test_shipped_files_validate_without_warnings(path: Path, cli) -> None:
    """No warning, but the one a calendar example's preview start (``+14d``) must carry: the builds
    refuse it until the user writes the start out (builder/config/gate.py ``calendar-relative``)."""
    s = load(path)
    assert s.warnings == ()
    code, out, err = cli("validate", "--values", path)
    preview = '"+14d"' in path.read_text()
    lines = err.splitlines()
    assert code == 0 and "ok:" in out and len(lines) == int(preview), err
    assert all("TPU_CALENDAR_START: '+14d' previews a start" in line and "dispatch refuse it" in line for line in lines)


# ---------------------------------------------------------------- bash syntax

def test_bash_syntax_quotes_comments_export_interpolation(tmp_path: Path) -> None:
    text = """# a comment line
export ENV_BUILD_NAME=env1   # unquoted, exported, comment after
PROJECT_ID='my-tpu-project' # single quotes
ZONE="europe-west4-a"
REGION="${ZONE%-a}"
TPU_ACCELERATOR_TYPE=v3-8
TPU_PYTORCH_VERSION="pytorch-nightly" # node runtime
GCS_DATASET="gs://${PROJECT_ID}-${ENV_BUILD_NAME}-dataset/x/*"
SHARED_FS="${SHARE_NAME:-tpushare}"
MIG_SETUP_SCRIPT='scripts/${NOT_EXPANDED}.sh'
"""
    # REGION uses a bash operator we don't support; it is refused, naming the line.
    with pytest.raises(ConfigError) as exc:
        load_text(text, "v.env")
    assert exc.value.line == 5 and exc.value.key == "REGION"
    text = text.replace('REGION="${ZONE%-a}"', 'REGION="europe-west4"')
    s = load_text(text, "v.env")
    assert s.env_name == "env1" and s.project_id == "my-tpu-project" and s.zone == "europe-west4-a"
    assert s.accelerator_type == "v3-8" and s.runtime_version == "pytorch-nightly"
    assert s.gcs_dataset == "gs://my-tpu-project-env1-dataset/x/*"
    assert s.shared_fs_name == "tpushare"  # ${UNSET:-default}
    assert s.mig_setup_script == "scripts/${NOT_EXPANDED}.sh"  # single quotes are literal
    assert s.lines["GCS_DATASET"] == 8 and s.lines["ENV_BUILD_NAME"] == 2


def test_interpolation_sees_only_earlier_keys(tmp_path: Path) -> None:
    text = MINIMAL.replace('ENV_BUILD_NAME="env1"\n', 'ENV_BUILD_NAME="${LATER}"\n') + 'LATER="x"\n'
    with pytest.raises(ConfigError) as exc:
        load_text(text, "v.env")
    assert exc.value.line == 1 and exc.value.key == "ENV_BUILD_NAME"
    assert "${LATER}" in str(exc.value) and "define LATER earlier" in str(exc.value)


def test_interpolation_never_reads_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TPUBUILD_TEST_SECRET", "leaked")
    text = MINIMAL + 'MOUNT_POINT="/mnt/${TPUBUILD_TEST_SECRET}"\n'
    with pytest.raises(ConfigError, match="not set above this line"):
        load_text(text, "v.env")


def test_later_value_wins_with_a_warning() -> None:
    s = load_text(MINIMAL + 'ZONE="europe-west4-b"\n', "v.env")
    assert s.zone == "europe-west4-b" and s.lines["ZONE"] == 6
    assert any("v.env:6: ZONE is set again (first on line 3)" in w for w in s.warnings)


def test_crlf_and_bom_are_accepted(tmp_path: Path) -> None:
    p = tmp_path / "values.env"
    p.write_bytes(b"\xef\xbb\xbf" + MINIMAL.replace("\n", "\r\n").encode())
    s = load(p)
    assert s.env_name == "env1" and s.runtime_version == "pytorch-nightly" and s.lines["ZONE"] == 3


def test_multiline_double_quoted_value_keeps_line_numbers() -> None:
    text = 'UNUSED_NOTE="first\nsecond"\n' + MINIMAL
    s = load_text(text, "v.env")
    assert s.lines["ENV_BUILD_NAME"] == 3


@pytest.mark.parametrize("line, fragment", [
    ('MOUNT_POINT="/mnt/$HOME"', "uses $HOME without braces"),
    ("MOUNT_POINT=/mnt/$(whoami)", "command substitution"),
    ("MOUNT_POINT=`pwd`", "command substitution"),
    ("MOUNT_POINT=/mnt/my data", "space outside quotes"),
    ('MOUNT_POINT="/mnt/${ENV_BUILD_NAME"', "not closed"),
    ('MOUNT_POINT="/mnt/common', "is not closed"),
    ("MOUNT_POINT='/mnt/a'b", "cannot parse"),
    ("mount_point=/mnt", "not a valid key name"),
    ("MOUNT_POINT", "has no value"),
])
def test_syntax_errors_name_the_line(line: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as exc:
        load_text(MINIMAL + line + "\n", "v.env")
    msg = str(exc.value)
    assert msg.startswith("v.env:6: ") and fragment in msg and "\n" not in msg
    assert "; " in msg  # what is wrong; how to fix it


@pytest.mark.parametrize("written, value", [
    (r'"gs://b/\training/*"', r"gs://b/\training/*"),  # in double quotes "\t" is a backslash and a t
    (r'"a\nb\'c"', r"a\nb\'c"),
    (r'"a\\b \"c\" \`d\` \${ZONE}"', r'a\b "c" `d` ${ZONE}'),  # bash removes it before \ " ` $ only
    (r"'a\\b\tc'", r"a\\b\tc"),  # single quotes keep every character
    (r"a\tb\\c\$d", r"atb\c$d"),  # outside quotes bash removes every backslash
    ('"${UNSET:-x}${ZONE:-y}"', "xeurope-west4-a"),
    ('"${EMPTY:-fallback}"', "fallback"),  # ':-' takes the default for an empty value too, as bash does
])
def test_values_mean_what_bash_makes_of_them(written: str, value: str) -> None:
    from builder.config.loader import parse

    entries = parse(MINIMAL + 'EMPTY=""\n' + f"UNUSED_NOTE={written}\n", Path("v.env"))
    assert entries[-1].key == "UNUSED_NOTE" and entries[-1].value == value


def test_a_value_knows_the_keys_it_was_made_of() -> None:
    s = load_text(MINIMAL + 'GCS_DATASET="gs://${PROJECT_ID}-${ENV_BUILD_NAME}/x"\nNOTE="${GCS_DATASET}"\n', "v.env")
    assert s.refs["GCS_DATASET"] == {"PROJECT_ID", "ENV_BUILD_NAME"}
    assert s.refs["NOTE"] == {"GCS_DATASET", "PROJECT_ID", "ENV_BUILD_NAME"}


def test_escaped_dollar_in_double_quotes_is_a_literal_dollar() -> None:
    s = load_text(MINIMAL + 'UNUSED_NOTE="costs \\$5"\n', "v.env")
    assert s.raw["UNUSED_NOTE"] == "costs $5"


# ---------------------------------------------------------------- unknown keys

@pytest.mark.parametrize("key, hint", [
    ("SHARED_FS_TEIR", "did you mean SHARED_FS_TIER?"),
    ("TPU_ACCELERATOR_TPYE", "did you mean TPU_ACCELERATOR_TYPE?"),
    ("MOUNTPOINT", "did you mean MOUNT_POINT?"),
    # the four: each would change what is built or billed, had it been ignored
    ("TPU_PROVISONING", "did you mean TPU_PROVISIONING?"),
    ("ENV_TTL_HOUR", "did you mean ENV_TTL_HOURS?"),
    ("TPU_RECOVER", "did you mean TPU_RECOVERY?"),
    ("ROBERTA_MAX_UPDATE", "did you mean ROBERTA_MAX_UPDATES?"),  # a model plug-in's key (models/roberta/keys.py)
])
def test_a_near_miss_of_a_known_key_is_an_error(key: str, hint: str) -> None:
    with pytest.raises(ConfigErrors) as exc:
        load_text(MINIMAL + f'{key}="x"\n', "v.env")
    [error] = exc.value.errors
    assert error.message.startswith(f"v.env:6: {key}: is not a tpubuild key but a near miss of ")
    assert error.fix.startswith(hint) and "rename the key" in error.fix


def test_a_near_miss_beside_the_right_key_says_which_value_counts() -> None:
    with pytest.raises(ConfigErrors) as exc:
        load_text(MINIMAL + 'MOUNT_POINT="/mnt/a"\nMOUNTPOINT="/mnt/b"\n', "v.env")
    assert "MOUNT_POINT keeps line 6's value" in exc.value.message and "or remove this line" in exc.value.message


def test_a_key_unlike_any_known_one_stays_a_warning() -> None:
    s = load_text(MINIMAL + 'COMPLETELY_DIFFERENT="x"\n', "v.env")
    assert s.warnings == ("v.env:6: COMPLETELY_DIFFERENT is not a tpubuild key; it is ignored (an error with --strict)",)


def test_a_helper_key_read_through_a_reference_is_no_typo() -> None:
    """DATASET is close to GCS_DATASET, but GCS_DATASET reads it: the user named it on purpose."""
    s = load_text(MINIMAL + 'DATASET="gs://my-bucket/d"\nGCS_DATASET="${DATASET}/*"\n', "v.env")
    assert s.gcs_dataset == "gs://my-bucket/d/*"
    assert s.warnings == ("v.env:6: DATASET is not a tpubuild key; did you mean GCS_DATASET? (an error with --strict)",)


def test_applied_values_read_a_near_miss_as_it_was_built() -> None:
    """Values applied before near misses were refused stay readable: the key was ignored then."""
    s = load_text(MINIMAL + 'ENV_TTL_HOUR="8"\nZONE= "europe-west4-a"\n', "v.env", applied=True)
    assert s.env_ttl_hours == 0 and s.warnings[0].startswith("v.env:6: ENV_TTL_HOUR is not a tpubuild key")


def test_seed_era_files_keep_loading() -> None:
    """The node fixture (a seed-era file) and every seed key that never meant anything: no error."""
    from tests.conftest import NODE

    node = load_text(NODE.read_text(), NODE)
    assert node.warnings == () and node.arch == "node"
    seed = "".join(f'{key}="x"\n' for key in sorted(IGNORED_KEYS))
    assert load_text(MINIMAL + seed, "v.env").warnings == ()


@pytest.mark.parametrize("key", ["DOCKER_CONTAINER", "GCS_RAW_DATASET", "SOURCE_IMAGE_BASE", "RED", "GREEN", "NC"])
def test_meaningless_seed_keys_are_silent(key: str) -> None:
    assert load_text(MINIMAL + f"{key}='x'\n", "v.env").warnings == ()


# ---------------------------------------------------------------- TPU_ARCH inference

@pytest.mark.parametrize("accel, runtime, arch", [
    ("v3-8", "pytorch-nightly", "node"), ("v2-32", "pytorch-1.13", "node"), ("v3-32", "pytorch-2.1", "node"),
    ("v3-8", "tpu-ubuntu2204-base", "vm"), ("v4-32", "tpu-ubuntu2204-base", "vm"),
    ("v5litepod-16", "v2-alpha-tpuv5-lite", "vm"), ("v5p-32", "v2-alpha-tpuv5", "vm"), ("v6e-8", "v2-alpha-tpuv6e", "vm"),
])
def test_arch_is_inferred_from_the_runtime(accel: str, runtime: str, arch: str) -> None:
    from builder.config.offers import zones_for
    from builder.facts.topology import parse

    text = MINIMAL.replace('"v3-8"', f'"{accel}"').replace('"pytorch-nightly"', f'"{runtime}"')
    if arch == "vm":  # a zone that offers the generation (builder/data/tpu_offers.json)
        text = text.replace('"europe-west4-a"', f'"{zones_for(parse(accel))[0]}"')
    assert load_text(text, "v.env").arch == arch
    assert load_text(text + f'TPU_ARCH="{arch}"\n', "v.env").arch == arch


@pytest.mark.parametrize("declared, runtime, accel", [
    ("vm", "pytorch-nightly", "v3-8"), ("node", "tpu-ubuntu2204-base", "v3-8"),
])
def test_arch_contradiction_is_an_error_on_tpu_arch(declared: str, runtime: str, accel: str) -> None:
    text = MINIMAL.replace('"pytorch-nightly"', f'"{runtime}"') + f'TPU_ARCH="{declared}"\n'
    with pytest.raises(ConfigError) as exc:
        load_text(text, "v.env")
    assert exc.value.key == "TPU_ARCH" and exc.value.line == 6 and "contradicts" in str(exc.value)


def test_runtime_alias_is_accepted_and_blamed_by_its_own_name() -> None:
    text = MINIMAL.replace('TPU_PYTORCH_VERSION="pytorch-nightly"', 'TPU_RUNTIME_VERSION="tpu-ubuntu2204-base"')
    assert load_text(text, "v.env").runtime_version == "tpu-ubuntu2204-base"
    bad = text.replace('"v3-8"', '"v5p-8"')
    with pytest.raises(ConfigErrors) as exc:
        load_text(bad, "v.env")
    # (and, on its own line, ZONE: europe-west4-a offers no v5p; every problem is reported at once)
    runtime = [e for e in exc.value.errors if e.key == "TPU_RUNTIME_VERSION"]
    assert len(runtime) == 1 and runtime[0].line == 5 and "v2-alpha-tpuv5" in str(runtime[0])
    assert [e.key for e in exc.value.errors] == ["ZONE", "TPU_RUNTIME_VERSION"]


# ---------------------------------------------------------------- files

def test_load_reports_unreadable_files_as_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="no such file"):
        load(tmp_path / "missing.env")
    with pytest.raises(BadInput, match="is a directory"):
        load(tmp_path)
    p = tmp_path / "latin1.env"
    p.write_bytes(MINIMAL.encode() + b'NOTE="caf\xe9"\n')
    with pytest.raises(ConfigError) as exc:
        load(p)
    assert exc.value.line == 6 and "UTF-8" in str(exc.value)


def test_derived_names_are_legal_for_the_longest_allowed_names() -> None:
    import re
    text = MINIMAL.replace('"env1"', '"' + "e" * 24 + '"').replace('"my-tpu-project"', '"p' + "x" * 26 + '"')
    s = load_text(text, "v.env")
    assert len(s.project_id) == 27 and len(s.env_name) == 24
    for bucket in (s.state_bucket, s.dataset_bucket):
        assert 3 <= len(bucket) <= 63 and re.fullmatch(r"[a-z0-9][a-z0-9._-]*[a-z0-9]", bucket)
    for name in (s.tpu_name, s.filestore_name, s.shared_pd_name, s.mig_name + "-abcd"):
        assert len(name) <= 63 and re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", name), name
