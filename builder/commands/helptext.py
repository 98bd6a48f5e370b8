"""Descriptions and examples for the commands whose modules register them without (one place,
so ``tpubuild COMMAND --help`` always says what the command does and how it is used).
``builder.cli`` applies them after registration, to sub-parsers that have none of their own."""

from __future__ import annotations

import argparse

from builder.model_registry import DEFAULT_MODEL

#: command → (description, examples epilog)
HELP: dict[str, tuple[str, str]] = {
    "initialize": (
        "Create the environment's state bucket (Terraform state, lock, applied snapshot) and dataset "
        "bucket, versioned with uniform access and public access prevention, and upload the workspace "
        "the hosts read at boot; then the builder image the pipelines run their tpubuild steps in: its "
        "Artifact Registry repository and, unless this version's tag is there, a Cloud Build build of it "
        "(waited for). No Terraform; safe to run again.",
        "examples:\n  tpubuild initialize\n  tpubuild initialize --values examples/vm-v4-32.env"),
    "submit": (
        "Pack the source (content-addressed tarball in the state bucket) and run an action's pipeline "
        "on Cloud Build under the environment lock. Without --wait it returns once the build is created.",
        "examples:\n  tpubuild submit --action create --wait\n  tpubuild submit --action update --tpu --wait\n"
        "  tpubuild submit --action auto          apply what values.env changed since the last build\n"
        "  tpubuild submit --action destroy --wait  no --allow-data-loss: destroy snapshots the shared PD and "
        "backs up Filestore (on tiers with backups) itself\n\n"
        "Run `tpubuild plan` with the same flags first: it shows before -> after and the cost."),
    "dispatch": (
        "The step of the root cloudbuild.yaml (run by Cloud Build, not by people): takes the raw "
        "substitution strings, checks them, and runs the action like `submit --wait`.",
        "example (what cloudbuild.yaml runs):\n  tpubuild dispatch --action \"$_BUILD_ACTION\" --tpu \"$_TPU\" "
        "--mig \"$_MIG\" --allow-data-loss \"$_ALLOW_DATA_LOSS\" --allow-wipe \"$_ALLOW_WIPE\""),
    "finalize": (
        "The pipeline's last step (run by Cloud Build): record the applied snapshot and release the lock.",
        "example (what the pipeline runs):\n  tpubuild finalize --build-id \"$BUILD_ID\" --action create"),
    "check-capacity": (
        "The pipeline's first step (run by Cloud Build, before anything billed): read the TPU quota of the "
        "slice's generation, path and provisioning model (Cloud Quotas) and, on mig, the reservation or "
        "calendar-mode request it consumes (Compute Engine), and refuse (exit 1, one line) when they cannot "
        "hold the slice. `tpubuild plan --check` runs the same check from a workstation.",
        "example (what the pipeline runs):\n  tpubuild check-capacity"),
    "guard": (
        "Read a saved Terraform plan (terraform show -json) and refuse it (exit 1) when it destroys or "
        "replaces Filestore or the shared PD without --allow-data-loss (run by the pipeline).",
        "example (what the pipeline runs):\n  tpubuild guard --plan-json plans/filestore.json --module filestore "
        "--action update"),
    "unlock": (
        "Remove the environment lock left by a build that is gone. Only with --force: make sure no build "
        "of this environment is running (Cloud Build console, or `tpubuild status`).",
        "examples:\n  tpubuild status                 who holds the lock, and since when\n"
        "  tpubuild unlock --force"),
    "status": (
        "Ask the APIs what is running: the TPU (on mig: the slice, its MIG and workload policy), Filestore, "
        "the workers' MIG of a legacy node, the Terraform state, the dashboard's URL, the lock, "
        "the applied snapshot and, with ENV_TTL_HOURS, when the TTL destroys the TPU. Exit 1 when a part "
        "could not be read (everything readable is still shown).",
        "examples:\n  tpubuild status\n  tpubuild status --format json | jq .ttl"),
    "bootstrap": (
        "Write the root cloudbuild.yaml, the file users submit with `gcloud builds submit` (its one "
        "step runs `tpubuild dispatch`).",
        "examples:\n  tpubuild bootstrap\n  tpubuild bootstrap --check       exit 1 when cloudbuild.yaml is stale\n"
        "  tpubuild bootstrap --output -     print it"),
    "trigger": (
        "Print Cloud Build GitHub triggers for `gcloud builds triggers import`: one push trigger that runs "
        "`auto` for the root values.env alone; a plan (pull request) and auto (push) pair per environment "
        "in a repository with environments/<name>/values.env.",
        "examples:\n  tpubuild trigger --repo-owner me --repo-name tpu-env > trigger.yaml\n"
        "  gcloud builds triggers import --source=trigger.yaml\n"
        "(in a repository with environments/<name>/values.env: every environment's plan/apply pair; "
        "docs/cloud.md)"),
    "train": (
        "Launch a model (models/<MODEL>/launcher.py) on every host of the TPU: its software, its data "
        "preparation and the training itself (docs/models.md).",
        f"examples:\n  tpubuild train {DEFAULT_MODEL} --dry-run   the exact per-host command lines\n"
        f"  tpubuild train {DEFAULT_MODEL}\n  tpubuild logs --host 0 -f"),
    "run": (
        "Run your own command on every TPU host (or host N) with the host's XLA/PJRT environment, "
        "detached (closing the terminal leaves it running), logged per host on Filestore at "
        "<MOUNT_POINT>/nfs_share/logs/<env>/run/host-N.log. Hosts that are not ready are refused. "
        "Every word of the command that names a file or folder under the current folder (and every "
        "--ship PATH) is copied first to ~/.tpubuild/run on those hosts, at the same relative path, "
        "and the command runs there; absolute paths are the hosts' own. "
        "`tpubuild stop` ends it and frees the TPU; `tpubuild logs --run` shows its log.",
        "examples:\n  tpubuild run -- python3 models/examples/torch_xla_launch.py --steps 50   (the script is copied)\n"
        "  tpubuild run --ship models/examples -- python3 models/examples/torch_xla_launch.py --batch 32\n"
        "  tpubuild run --hosts 0 -- df -h /mnt/common     (any command)\n"
        "  tpubuild run --dry-run -- python3 models/examples/torch_xla_launch.py --steps 10"),
    "stop": (
        "Stop the training on every host and free the TPU (the environment stays up).",
        "examples:\n  tpubuild stop\n  tpubuild stop --dry-run\n"
        "  tpubuild stop --probe          is it training, and when it last wrote its checkpoint (stops nothing)"),
    "logs": (
        "Show one host's training log, kept on Filestore.",
        "examples:\n  tpubuild logs                  host 0, last 200 lines\n  tpubuild logs --host 3 -f"),
    "migrate": (
        "Rewrite a values.env onto the path Google recommends for its generation: a TPU Node file "
        "(v2/v3) becomes its TPU VM equivalent (the runtime mapped to the generation's TPU VM runtime, "
        "node-only keys commented out with the reason); a TPU VM file of a generation Compute Engine "
        "offers (v5p, v6e, TPU7x) that does not say TPU_ARCH=\"vm\" becomes TPU_ARCH=\"mig\" (a file that "
        "says vm keeps it). Same environment, project, zone, Filestore and disk settings and comments. "
        "Keeps a .bak (or writes --output); prints a before/after summary; running it twice changes nothing.",
        "examples:\n  tpubuild migrate                          rewrite ./values.env (values.env.bak kept)\n"
        "  tpubuild migrate --values old.env --output new.env"),
    "profile": (
        "Capture an XLA profile of the running training on one host (torch_xla's profiler server, port "
        "9012) into <MOUNT_POINT>/nfs_share/profiles/<env>/<timestamp>/ and the state bucket, in "
        "TensorBoard's plugins/profile layout, and print how to open it.",
        "examples:\n  tpubuild profile                          10 s on host 0\n"
        "  tpubuild profile --host 2 --duration 30s\n  tpubuild profile --dry-run"),
}


def apply(sub: argparse._SubParsersAction) -> None:
    """Give every registered sub-parser without a description or examples the ones above."""
    for name, parser in sub.choices.items():
        description, examples = HELP.get(name, (None, None))
        if description and not parser.description:
            parser.description = description
        if examples and not parser.epilog:
            parser.epilog = examples
            parser.formatter_class = argparse.RawDescriptionHelpFormatter
