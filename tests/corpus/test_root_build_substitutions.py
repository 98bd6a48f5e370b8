"""Bad input to the root build: a misspelled ``--substitutions`` key is refused before anything runs.

The root cloudbuild.yaml declares every substitution the dispatch step reads and leaves
``options.substitutionOption`` at Cloud Build's default, MUST_MATCH. The real gcloud parses each
line below into the Build it would create (the request body, at the offline fake); that body loads
into the real ``cloudbuild_v1.Build`` type, and Cloud Build's MUST_MATCH check
(``tests.support.pipeline.unmatched_substitutions``) then refuses a key the file does not use.
With ``ALLOW_LOOSE`` (the negative control) ``_TPUU=true`` was dropped and the build ran an update
of every module.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.conftest import REPO
from tests.support.pipeline import unmatched_substitutions

#: (--substitutions, the key Cloud Build refuses): the bad-input corpus of the root build.
BAD = [
    ("_BUILD_ACTION=update,_TPUU=true", "_TPUU"),
    ("_BUILD_ACTOIN=destroy", "_BUILD_ACTOIN"),
    ("_BUILD_ACTION=update,_ALLOW_DATA_LOS=true", "_ALLOW_DATA_LOS"),
    ("_BUILD_ACTION=update,_MGI=true", "_MGI"),
    ("_BUILD_ACTION=update,_MOVETO=us-east5-b", "_MOVETO"),
]
GOOD = ["_BUILD_ACTION=create", "_BUILD_ACTION=update,_TPU=true", "_BUILD_ACTION=destroy,_MIG=true,_TPU=true",
        "_BUILD_ACTION=update,_ALLOW_DATA_LOSS=true,_ALLOW_WIPE=true", "_BUILD_ACTION=update,_MOVE_TO=us-east5-b"]


def _submitted(gcloud: Any, substitutions: str) -> dict[str, Any]:
    """The Build that `gcloud builds submit --config=cloudbuild.yaml` sends with these substitutions."""
    result = gcloud.parse(["builds", "submit", "--no-source", f"--config={REPO / 'cloudbuild.yaml'}",
                           f"--substitutions={substitutions}"])
    assert result.ok, result.why()
    [create] = [r for r in result.requests if r.method == "POST" and r.path.split("?")[0].endswith("/builds")]
    return create.body


def _must_match(body: dict[str, Any]) -> None:
    from google.cloud.devtools import cloudbuild_v1

    build = cloudbuild_v1.Build.from_json(json.dumps(body))
    assert build.options.substitution_option == cloudbuild_v1.BuildOptions.SubstitutionOption.MUST_MATCH


@pytest.mark.parametrize("substitutions, key", BAD, ids=[b[1] for b in BAD])
def test_a_misspelled_substitution_is_refused_before_anything_runs(gcloud, substitutions: str, key: str) -> None:
    body = _submitted(gcloud, substitutions)
    _must_match(body)
    assert key in body["substitutions"], "gcloud sends the key as written"
    assert unmatched_substitutions(body) == [f"key {key!r} in the substitution data is not matched in the template"]
    loose = {**body, "options": {**body["options"], "substitutionOption": "ALLOW_LOOSE"}}
    assert unmatched_substitutions(loose) == [], "negative control: ALLOW_LOOSE drops the typo"


@pytest.mark.parametrize("substitutions", GOOD)
def test_the_declared_substitutions_are_accepted(gcloud, substitutions: str) -> None:
    body = _submitted(gcloud, substitutions)
    _must_match(body)
    assert unmatched_substitutions(body) == []
    for pair in substitutions.split(","):
        key, _, value = pair.partition("=")
        assert body["substitutions"][key] == value


def test_the_root_build_uses_every_substitution_it_declares() -> None:
    """MUST_MATCH also fails a build whose map holds a key no step uses: every default is read."""
    config = yaml.safe_load((REPO / "cloudbuild.yaml").read_text())
    assert "substitutionOption" not in config["options"]
    assert unmatched_substitutions(config) == []
