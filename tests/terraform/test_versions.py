"""The versions docs/terraform.md states agree with the code: the pipeline's image tags
(builder.render.pipeline.IMAGES), the provider pins of modules/_shared and the releases the stand-in
provider serves (tools/tfstandin/install.py), and the Terraform the tests run."""

from __future__ import annotations

import re
import shutil
import subprocess

from builder.render.pipeline import IMAGES
from tests.conftest import REPO, require
from tests.support.terraform import CURRENT, LEGACY

DOC = (REPO / "docs" / "terraform.md").read_text()
SHARED = REPO / "modules" / "_shared"


def _pin(name: str) -> str:
    [pin] = re.findall(r'source\s*=\s*"hashicorp/google"\s*\n(?:\s*#.*\n)*\s*version\s*=\s*"([^"]+)"',
                       (SHARED / name).read_text())
    return pin


def test_the_doc_names_the_pipeline_images() -> None:
    for kind in ("terraform", "gcloud"):
        tag = IMAGES[kind].rsplit("/", 1)[1]
        assert f"`{IMAGES[kind]}`" in DOC or f"`{tag}`" in DOC, f"docs/terraform.md does not name {IMAGES[kind]}"


def test_the_stand_in_serves_what_the_modules_pin() -> None:
    major, minor, _ = CURRENT.provider_version.split(".")
    assert _pin("versions.tf") == _pin("versions_child.tf") == f"~> {major}.{minor}"
    assert _pin("versions_legacy_override.tf") == ">= 5, < 7" and LEGACY.provider_version.startswith("6.")
    assert f"**{CURRENT.provider_version}**" in DOC and f"**{LEGACY.provider_version}**" in DOC


def test_the_doc_names_the_terraform_the_tests_run() -> None:
    exe = shutil.which("terraform")
    require("terraform", exe is not None, "the HashiCorp release binary on PATH (CI's image has it; docs/terraform.md)")
    first = subprocess.run([exe, "version"], capture_output=True, text=True, timeout=60,
                           env={"CHECKPOINT_DISABLE": "1", "TF_CLI_CONFIG_FILE": "/dev/null"}).stdout.splitlines()[0]
    assert f"**{first}**" in DOC, f"docs/terraform.md should say the tests run {first!r}"
