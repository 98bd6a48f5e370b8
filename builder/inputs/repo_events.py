"""Where and when the GitOps triggers start (``tpubuild trigger``): the GitHub repository, through
either kind of Cloud Build connection, and the files a change must touch. Pure.

Cloud Build knows two GitHub connections (https://cloud.google.com/build/docs/repositories):

* 1st gen, the Cloud Build GitHub App installed on the repository: the trigger names the
  repository as ``github: {owner, name, push|pullRequest}``; global or regional.
* 2nd gen, a connection (``gcloud builds connections create github NAME --region=R``) with the
  repository linked to it (``gcloud builds repositories create LINKED --connection=NAME
  --region=R --remote-uri=https://github.com/OWNER/REPO.git``): the trigger names the linked
  repository's resource, ``repositoryEventConfig: {repository:
  projects/P/locations/R/connections/NAME/repositories/LINKED, push|pullRequest}``
  (BuildTrigger.repositoryEventConfig), and lives in the connection's region, so it is imported
  with ``gcloud builds triggers import --region=R``.

``tpubuild trigger --connection NAME --region R [--linked-repository LINKED]`` emits the second;
without ``--connection``, the first. The push and pull-request filters are the same in both.
"""

from __future__ import annotations

import re
from typing import Any

from builder.facts.errors import BadInput
from builder.facts.records import record

#: The code every build runs: a change here plans and applies every environment.
SHARED_FILES: tuple[str, ...] = ("builder/**", "modules/**", "env_setup/**", "models/**", "setup.cfg",
                                 "pyproject.toml")
#: Never a reason to plan or apply: documentation, wherever it lies.
IGNORED_FILES: tuple[str, ...] = ("**/*.md", "docs/**")


def file_filter(path: str, *config: str) -> dict[str, list[str]]:
    """What a change must touch to start the triggers of the environment whose values file is
    ``path``: that file and the shared code, and the build config files the trigger reads
    (``config``: the root trigger's ``cloudbuild.yaml``); documentation never counts."""
    return {"includedFiles": [path, *SHARED_FILES, *config], "ignoredFiles": list(IGNORED_FILES)}


_OWNER = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")
_REPO = re.compile(r"[A-Za-z0-9._-]{1,100}")
_BRANCH = re.compile(r"[A-Za-z0-9._/-]{1,200}")
#: A connection's id; regions as Cloud Build's locations spell them.
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,62}")
_REGION = re.compile(r"[a-z]+-[a-z]+[0-9]+")


@record
class Repo:
    """The repository the triggers listen to: ``owner``/``name`` on GitHub, ``branch`` (exactly),
    and, for a 2nd-gen connection, its ``connection`` id, ``region`` and ``linked`` repository id
    (empty: ``name``)."""

    owner: str
    name: str
    branch: str = "main"
    connection: str = ""
    region: str = ""
    linked: str = ""

    def check(self) -> Repo:
        """Bad input (one line, the flag) unless every part is spelt as GitHub and Cloud Build spell it."""
        if not _OWNER.fullmatch(self.owner):
            raise BadInput(f"--repo-owner: {self.owner!r} is not a GitHub owner; write the user or organisation, "
                           "e.g. my-org")
        if not _REPO.fullmatch(self.name) or self.name in (".", ".."):
            raise BadInput(f"--repo-name: {self.name!r} is not a GitHub repository name; write it like tpu-env")
        b = self.branch
        if not _BRANCH.fullmatch(b) or ".." in b or b.startswith("/") or b.endswith("/"):
            raise BadInput(f"--branch: {b!r} is not a branch name; write it like main")
        if self.connection and not self.region:
            raise BadInput("--connection: a 2nd-gen connection lives in a region; add --region REGION (gcloud builds "
                           "connections list --region=REGION shows it)")
        for flag, value in (("--region", self.region), ("--linked-repository", self.linked)):
            if value and not self.connection:
                raise BadInput(f"{flag}: only with --connection (a 2nd-gen connection); add --connection NAME, or drop "
                               f"{flag} for the 1st-gen Cloud Build GitHub App")
        for flag, value, pattern, like in (("--connection", self.connection, _ID, "my-github"),
                                           ("--region", self.region, _REGION, "europe-west4"),
                                           ("--linked-repository", self.linked, _REPO, "acme-tpu-env")):
            if value and not pattern.fullmatch(value):
                raise BadInput(f"{flag}: {value!r} is not a Cloud Build {flag[2:].replace('-', ' ')} id; "
                               f"write it like {like}")
        return self

    def on(self, project: str, event: str, **options: str) -> dict[str, Any]:
        """The trigger's source for ``event`` (``push`` or ``pullRequest``) on the branch."""
        filt = {"branch": f"^{re.escape(self.branch)}$", **options}
        if not self.connection:
            return {"github": {"owner": self.owner, "name": self.name, event: filt}}
        repository = (f"projects/{project}/locations/{self.region}/connections/{self.connection}/repositories/"
                      f"{self.linked or self.name}")
        return {"repositoryEventConfig": {"repository": repository, event: filt}}
