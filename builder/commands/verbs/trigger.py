"""Print Cloud Build GitHub triggers as YAML. With the root values.env alone: one push trigger
(_BUILD_ACTION=auto). In a repository with environments/<name>/values.env: for every environment
(the root values.env too, when there is one) a pull-request trigger that plans and a push trigger
that runs auto, the latter waiting for an approval where ENV_PROTECTED="true" (--values
environments/<name>/values.env: that one's pair only). Import it with: tpubuild trigger
--repo-owner O --repo-name N | gcloud builds triggers import --source=/dev/stdin (gcloud reads
--source as a path, so --source=- does not work)

examples:
  tpubuild trigger --repo-owner me --repo-name tpu-env > trigger.yaml
  gcloud builds triggers import --source=trigger.yaml
  tpubuild trigger --repo-owner me --repo-name tpu-env --connection my-github --region europe-west4 > t2.yaml
  gcloud builds triggers import --source=t2.yaml --region=europe-west4
(in a repository with environments/<name>/values.env: every environment's plan/apply pair; docs/cloud.md)
"""

from __future__ import annotations

import argparse

from builder.commands.verb import Group, Verb, work


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repo-owner", required=True, metavar="OWNER", help="the GitHub user or organisation")
    p.add_argument("--repo-name", required=True, metavar="NAME", help="the GitHub repository holding values.env")
    p.add_argument("--plan-service-account", default="", metavar="EMAIL",
                   help="with environments/: the account the pull-request plan triggers run as (one that can only "
                        "read the state buckets and write their plans/ objects); default: each environment's "
                        "read-only plan account tb-<ENV>-pl, which tpubuild initialize makes")
    p.add_argument("--connection", default="", metavar="NAME",
                   help="listen through this 2nd-gen Cloud Build connection to GitHub (gcloud builds connections "
                        "list --region=REGION) instead of the 1st-gen Cloud Build GitHub App; needs --region")
    p.add_argument("--region", default="", metavar="REGION",
                   help="with --connection: its region; import the triggers with gcloud builds triggers import "
                        "--region=REGION")
    p.add_argument("--linked-repository", default="", metavar="ID",
                   help="with --connection: the id the GitHub repository is linked under (gcloud builds "
                        "repositories list --connection=NAME --region=REGION); default: --repo-name")
    p.add_argument("--branch", default="main",
                   help="the branch whose pushes run auto, and whose pull requests are planned (exactly this "
                        "branch; default: main)")


VERB = Verb.of(__doc__, "trigger", Group.ADMIN, 3, "print the GitOps triggers (plan on pull requests, auto on push) for gcloud builds triggers import",
               arguments, work("builder.commands.bootstrap", "cmd_trigger"))
