"""Plan → the Cloud Build config that carries it out (a dict: steps, timeout, options, tags).

Per module operation the steps are, in order (docs/pipeline.md has the full anatomy):

* ``<module>-plan`` (Terraform image): ``init`` against the GCS backend with locking, ``plan``
  (``-destroy`` for destroy) to ``/workspace/plans/<module>.tfplan``, then ``terraform show
  -json`` of it to ``/workspace/plans/<module>.json``;
* ``<module>-guard`` (Python image): ``tpubuild guard`` reads that JSON and refuses data loss;
* ``<module>-apply`` (Terraform image): ``apply`` of the saved plan.

Around them: ``tpubuild-wheel`` (builds tpubuild once for the guard and finalize steps),
``shared_pd-restore`` (SHARED_PD_RESTORE=latest: names the newest snapshot),
``shared_pd-snapshot`` / ``filestore-backup`` (before a full destroy), ``shared_pd-seed`` (copies
GCS_DATASET onto a freshly applied shared PD) and ``finalize`` (last). ``waitFor`` expresses the
plan's DAG, so independent modules run in parallel.

Step scripts are jinja2 templates in ``builder/templates/``; they are written as plain shell and
every ``$`` is doubled here, because Cloud Build substitutes ``$NAME``/``${NAME}`` in ``args``.
The only substitution a script uses on purpose is the built-in ``BUILD_ID`` (``sub("BUILD_ID")``
in a template). Scripts read their workspace root from ``$WORKSPACE`` (default ``/workspace``)
so tests can run them against a temporary folder.

This module imports jinja2 only inside :func:`render`, so ``tpubuild plan`` stays fast.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.config.validate import FS_BACKUP_TIERS
from builder.errors import BadInput, ConfigError
from builder.plan import Plan, hosts_module, module_dir

if TYPE_CHECKING:  # pragma: no cover
    from jinja2 import Environment

    from builder.config import Settings

#: Builder images, pinned by tag. The Terraform image has no bash: its steps run under its
#: BusyBox ``sh`` (which has ``pipefail``) and are written in the POSIX subset plus pipefail.
IMAGES: dict[str, str] = {
    "terraform": "hashicorp/terraform:1.9.8",
    "python": "python:3.11-slim",
    "gcloud": "gcr.io/google.com/cloudsdktool/google-cloud-cli:499.0.0-slim",
}
SHELLS: dict[str, str] = {"terraform": "sh", "python": "bash", "gcloud": "bash"}

#: Per-step timeouts, seconds.
TIMEOUTS: dict[str, int] = {
    "wheel": 900,
    "plan": 1200,
    "guard": 600,
    "apply:tpu": 3600,
    "apply:mig": 3600,
    "apply:filestore": 3600,
    "apply:shared_pd": 1800,
    "drain": 3600,
    "resize": 3600,
    "apply:dashboard": 600,
    "restore": 300,
    "snapshot": 3600,
    "backup": 7200,
    "seed": 14400,
    "finalize": 600,
    "unqueue": 1800,
}
#: TPU_QUEUED: how long tpu-queue waits for ACTIVE without TPU_QUEUED_VALID_FOR, and at most (a
#: Cloud Build build lasts at most 24 h); its step timeout adds QUEUE_SLACK_S to the wait.
QUEUE_WAIT_S = 4 * 3600
MAX_QUEUE_WAIT_S = 20 * 3600
QUEUE_SLACK_S = 900
#: Slack added to the longest path through the steps for the whole build's timeout.
BUILD_TIMEOUT_SLACK = 900
#: Cloud Build's maximum build timeout (24 h).
MAX_BUILD_TIMEOUT = 86400
#: How long the seeder itself may run: its step's timeout less room to clean up its VM.
SEED_TIMEOUT_S = TIMEOUTS["seed"] - 600
#: How long Terraform waits for the state lock that another build holds.
LOCK_TIMEOUT = "5m"
#: Where the wheel step leaves tpubuild and its dependencies (relative to the workspace).
WHEELS = ".tpubuild/wheels"
#: Filestore tiers whose instances are regional (located in REGION, not ZONE).
REGIONAL_FS_TIERS = frozenset({"REGIONAL", "ENTERPRISE"})

_DURATION = re.compile(r"^\d+s$")
_SUB_MARK = "\x00"


def check_duration(value: str) -> str:
    """A Cloud Build duration we accept: whole seconds, positive (``"1800s"``). The Build type
    itself takes ``"-5s"``, so we check."""
    if not _DURATION.fullmatch(value) or int(value[:-1]) <= 0:
        raise ValueError(f"{value!r} is not a positive duration in whole seconds like '600s'")
    return value


# ---- what a plan implies beyond Terraform (shared with `tpubuild plan`) ----

def attaches_disk(settings: Settings, module: str) -> bool:
    """Whether ``module``'s machines attach the shared PD (node: the MIG; vm: the TPU VM)."""
    return settings.shared_pd_attach and module == hosts_module(settings.arch)


def seeds(settings: Settings, plan: Plan) -> bool:
    """A ``shared_pd-seed`` step follows shared_pd's apply when there is a dataset to copy."""
    return plan.applies("shared_pd") and settings.shared_pd_attach and bool(settings.gcs_dataset)


def restore_snapshot(settings: Settings, plan: Plan) -> str:
    """The SHARED_PD_RESTORE of an apply of shared_pd ('' when none): 'latest' or a name."""
    return settings.shared_pd_restore if plan.applies("shared_pd") else ""


def snapshots_before_destroy(plan: Plan) -> bool:
    return plan.destroys("shared_pd")


def backs_up_before_destroy(settings: Settings, plan: Plan) -> bool:
    return plan.destroys("filestore") and settings.shared_fs_tier in FS_BACKUP_TIERS


def loses_share_on_destroy(settings: Settings, plan: Plan) -> bool:
    """Filestore is destroyed on a tier without backups: the share's data is gone for good."""
    return plan.destroys("filestore") and settings.shared_fs_tier not in FS_BACKUP_TIERS


def queues(settings: Settings) -> bool:
    """TPU_QUEUED on vm: the slice is a queued resource that tpu-queue requests with gcloud after
    tpu-apply (which then creates only the hosts' identity and firewall), and tpu-unqueue deletes
    before the tpu module's Terraform destroy."""
    return settings.arch == "vm" and settings.queued


def queue_wait_s(settings: Settings) -> int:
    """Seconds tpu-queue waits for ACTIVE: TPU_QUEUED_VALID_FOR (the request expires then
    anyway), else QUEUE_WAIT_S; at most MAX_QUEUE_WAIT_S."""
    from builder.config.keys import duration_seconds

    valid = duration_seconds(settings.queued_valid_for) if settings.queued_valid_for else QUEUE_WAIT_S
    return min(valid, MAX_QUEUE_WAIT_S)


def _repo_script(settings: Settings, key: str, rel: str) -> str:
    """Repo-relative path of a script named in values.env (relative to the repo or to models/);
    an error now, because a pipeline is about to use it."""
    root = settings.repo_root
    for candidate in (rel, f"models/{rel}"):
        if (root / candidate).is_file():
            return Path(candidate).as_posix()
    from builder.legacy import SEED_SCRIPTS

    if rel in SEED_SCRIPTS:  # the seed repository's own script, which this product replaced
        raise ConfigError(f"{rel!r} is {SEED_SCRIPTS[rel]}, not a script of this repository",
                          "run tpubuild migrate (it clears the seed's script paths)",
                          path=settings.source, line=settings.line_of(key), key=key)
    raise ConfigError(f"{rel!r} does not exist (looked in {root} and {root / 'models'})",
                      "add the script to the repository or clear the key",
                      path=settings.source, line=settings.line_of(key), key=key)


def preflight(settings: Settings, plan: Plan) -> None:
    """Refuse a plan whose pipeline would use a script that does not exist (the seed-era paths
    in MIG_SETUP_SCRIPT / MIG_SEED_DATA_PREP_SCRIPT are only warnings until then)."""
    if not plan.operations:
        raise BadInput(f"{plan.action} runs no pipeline (no Terraform): nothing to render; "
                       f"run `tpubuild {plan.action}` instead")
    if settings.mig_setup_script and any(runs_setup_script(settings, m) for m in plan.modules if plan.applies(m)):
        _repo_script(settings, "MIG_SETUP_SCRIPT", settings.mig_setup_script)
    if settings.mig_seed_data_prep_script and seeds(settings, plan):
        _repo_script(settings, "MIG_SEED_DATA_PREP_SCRIPT", settings.mig_seed_data_prep_script)


def runs_setup_script(settings: Settings, module: str) -> bool:
    """Whether ``module``'s machines run the startup script (and so MIG_SETUP_SCRIPT)."""
    return module == hosts_module(settings.arch)


def resizes_slice(settings: Settings, plan: Plan) -> bool:
    """TPU_ARCH=mig and the slice (plan module mig) is applied: mig-drain runs before its apply
    and mig-resize after it (docs/pipeline.md, "Resize on mig")."""
    return settings.arch == "mig" and plan.applies("mig")


# ---- rendering ----

def _bytecode_cache(jinja2: Any) -> Any:
    try:
        return jinja2.FileSystemBytecodeCache()
    except (OSError, RuntimeError):  # no usable private temp folder: compile every time
        return None


@lru_cache(maxsize=1)
def _environment() -> Environment:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("builder", "templates"),
        # compiled templates are cached (in a private folder under the temp dir, keyed by the
        # template's source checksum), so a fresh `tpubuild render` skips jinja's compiler
        bytecode_cache=_bytecode_cache(jinja2),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["q"] = lambda v: shlex.quote(str(v))
    env.globals["sub"] = lambda name: f"{_SUB_MARK}{name}{_SUB_MARK}"
    return env


def _for_cloud_build(text: str) -> str:
    """Double every ``$`` (Cloud Build would substitute it), then turn ``sub()`` marks into the
    substitutions they name."""
    out = text.replace("$", "$$")
    return re.sub(f"{_SUB_MARK}([A-Z_][A-Z0-9_]*){_SUB_MARK}", r"${\1}", out)


class _Steps:
    def __init__(self, settings: Settings, plan: Plan, allow_data_loss: bool, allow_wipe: bool) -> None:
        self.s = settings
        self.plan = plan
        self.allow_data_loss = allow_data_loss
        self.allow_wipe = allow_wipe
        self.steps: list[dict[str, Any]] = []
        self.env = _environment()

    def add(self, step_id: str, image: str, template: str, wait_for: Iterable[str], timeout: int,
            **context: Any) -> str:
        script = self.env.get_template(template).render(step_id=step_id, **context).strip() + "\n"
        wait = list(dict.fromkeys(wait_for))
        known = {st["id"] for st in self.steps}
        missing = [w for w in wait if w not in known]
        if missing:  # a bug here, not bad input: waitFor must name earlier steps
            raise AssertionError(f"step {step_id} waits for unknown steps {missing}")
        step: dict[str, Any] = {
            "id": step_id,
            "name": IMAGES[image],
            "entrypoint": SHELLS[image],
            "args": ["-c", _for_cloud_build(script)],
            "waitFor": wait or ["-"],
            "timeout": check_duration(f"{timeout}s"),
        }
        if image == "terraform":
            step["env"] = ["TF_IN_AUTOMATION=1"]
        elif image == "python":
            step["env"] = ["PIP_ROOT_USER_ACTION=ignore", "PIP_DISABLE_PIP_VERSION_CHECK=1"]
        self.steps.append(step)
        return step_id

    def slice_context(self) -> dict[str, Any]:
        s = self.s
        shape = s.mig_shape
        return dict(project=s.project_id, zone=s.zone, group=s.tpu_name, vms=shape.vms,
                    topology=shape.topology, accelerator_type=s.accelerator_type,
                    # the workload policy's name (modules/tpu_mig: <name>-<topology>); none for one VM
                    policy=f"{s.tpu_name}-{shape.topology}" if shape.accelerator_topology else "",
                    wait_s=TIMEOUTS["resize"] - 300)

    def labels(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.s.labels.items())

    def build(self) -> list[dict[str, Any]]:
        s, plan = self.s, self.plan
        wheel = self.add("tpubuild-wheel", "python", "wheel.sh.j2", [], TIMEOUTS["wheel"], wheels=WHEELS)
        has_seed = seeds(s, plan)
        last: dict[str, str] = {}  # module → its last step, which the modules after it wait for
        for op in plan.operations:
            m = op.module
            deps = [last.get(a, f"{a}-apply") for a in op.after]
            if op.op == "apply" and has_seed and attaches_disk(s, m):
                deps.append("shared_pd-seed")
            pre: list[str] = []
            restore = restore_snapshot(s, plan) if m == "shared_pd" else ""
            if m == "shared_pd" and restore == "latest":
                pre.append(self.add("shared_pd-restore", "gcloud", "pd_restore.sh.j2", deps, TIMEOUTS["restore"],
                                    project=s.project_id, env=s.env_name, disk=s.shared_pd_name))
            if m == "shared_pd" and op.op == "destroy" and snapshots_before_destroy(plan):
                pre.append(self.add("shared_pd-snapshot", "gcloud", "pd_snapshot.sh.j2", deps, TIMEOUTS["snapshot"],
                                    project=s.project_id, zone=s.zone, disk=s.shared_pd_name,
                                    labels=self.labels()))
            if m == "filestore" and backs_up_before_destroy(s, plan):
                regional = s.shared_fs_tier in REGIONAL_FS_TIERS
                pre.append(self.add(
                    "filestore-backup", "gcloud", "fs_backup.sh.j2", deps, TIMEOUTS["backup"],
                    project=s.project_id, region=s.region, location=s.region if regional else s.zone,
                    instance_location_flag="--instance-location" if regional else "--instance-zone",
                    instance=s.filestore_name, share=s.shared_fs_name, tier=s.shared_fs_tier,
                    labels=self.labels()))
            queued = m == "tpu" and queues(s)
            if queued and op.op == "destroy":
                pre.append(self.add("tpu-unqueue", "gcloud", "tpu_unqueue.sh.j2", deps, TIMEOUTS["unqueue"],
                                    project=s.project_id, zone=s.zone, name=s.tpu_name))
            tf = dict(module=m, op=op.op, tfdir=module_dir(s, m), bucket=s.state_bucket,
                      prefix=f"{s.env_name}/{m}", lock_timeout=LOCK_TIMEOUT)
            self.add(f"{m}-plan", "terraform", "tf_plan.sh.j2", [*deps, *pre], TIMEOUTS["plan"],
                     snapshot_file=restore == "latest",
                     snapshot_name=restore if restore not in ("", "latest") else "", **tf)
            self.add(f"{m}-guard", "python", "guard.sh.j2", [f"{m}-plan", wheel], TIMEOUTS["guard"],
                     module=m, action=plan.action, allow_data_loss=self.allow_data_loss, wheels=WHEELS)
            slice_steps = m == "mig" and resizes_slice(s, plan)
            if slice_steps:
                self.add("mig-drain", "gcloud", "mig_drain.sh.j2", [f"{m}-guard"], TIMEOUTS["drain"],
                         **self.slice_context())
            last[m] = self.add(f"{m}-apply", "terraform", "tf_apply.sh.j2",
                               ["mig-drain" if slice_steps else f"{m}-guard"], TIMEOUTS[f"apply:{m}"],
                               queued_request=queued and op.op == "apply", **tf)
            if slice_steps:
                last[m] = self.add("mig-resize", "gcloud", "mig_resize.sh.j2", ["mig-apply"], TIMEOUTS["resize"],
                                   **self.slice_context())
            if queued and op.op == "apply":
                wait_s = queue_wait_s(s)
                last[m] = self.add(
                    "tpu-queue", "gcloud", "tpu_queue.sh.j2", [last[m]], wait_s + QUEUE_SLACK_S,
                    project=s.project_id, zone=s.zone, name=s.tpu_name, accelerator_type=s.accelerator_type,
                    runtime_version=s.runtime_version, valid_for=s.queued_valid_for, provisioning=s.provisioning,
                    network=s.network, subnetwork=s.subnetwork, external_ips=s.tpu_external_ips,
                    labels=self.labels(), shared_pd_attach=s.shared_pd_attach, wait_s=wait_s,
                    replace=plan.action != "create")
            if m == "shared_pd" and has_seed:
                prep = s.mig_seed_data_prep_script
                self.add("shared_pd-seed", "gcloud", "pd_seed.sh.j2", ["shared_pd-apply"], TIMEOUTS["seed"],
                         project=s.project_id, zone=s.zone, env=s.env_name, disk=s.shared_pd_name,
                         dataset=s.gcs_dataset, workspace_gcs=f"gs://{s.state_bucket}/{s.workspace_prefix}",
                         prep_script=_repo_script(s, "MIG_SEED_DATA_PREP_SCRIPT", prep) if prep else "",
                         allow_wipe="true" if self.allow_wipe else "false", seed_timeout_s=SEED_TIMEOUT_S,
                         network=s.network, subnet=s.subnetwork, service_account=s.seeder_service_account)
        waited = {w for st in self.steps for w in st["waitFor"]}
        sinks = [st["id"] for st in self.steps if st["id"] not in waited]
        self.add("finalize", "python", "finalize.sh.j2", sinks, TIMEOUTS["finalize"],
                 action=plan.action, wheels=WHEELS)
        return self.steps


def build_timeout(steps: list[dict[str, Any]]) -> int:
    """Seconds: the longest path through the steps' timeouts plus slack, at most 24 h."""
    finish: dict[str, int] = {}
    for st in steps:
        start = max((finish[w] for w in st["waitFor"] if w != "-"), default=0)
        finish[st["id"]] = start + int(st["timeout"][:-1])
    return min(max(finish.values(), default=0) + BUILD_TIMEOUT_SLACK, MAX_BUILD_TIMEOUT)


def render(settings: Settings, plan: Plan, *, allow_data_loss: bool = False, allow_wipe: bool = False) -> dict[str, Any]:
    """The Cloud Build config (a JSON-able dict in the REST field names) of ``plan``.

    ``allow_data_loss`` adds ``--allow-data-loss`` to every guard (``_ALLOW_DATA_LOSS``);
    ``allow_wipe`` is passed to the seeder as ALLOW_WIPE (``_ALLOW_WIPE``). Raises ``BadInput``
    for a plan with no operations (initialize) and for scripts the pipeline would need but that
    do not exist.
    """
    preflight(settings, plan)
    steps = _Steps(settings, plan, allow_data_loss, allow_wipe).build()
    return {
        "steps": steps,
        "timeout": check_duration(f"{build_timeout(steps)}s"),
        # a user-specified service account requires logs in Cloud Logging (or a logs bucket)
        "serviceAccount": settings.builder_service_account_resource,
        "options": {"logging": "CLOUD_LOGGING_ONLY"},
        "tags": ["tpubuild", f"tpubuild-env-{settings.env_name}", f"tpubuild-{plan.action}"],
    }


# ---- output formats ----

def to_json(config: dict[str, Any]) -> str:
    import json

    return json.dumps(config, indent=2) + "\n"


def to_yaml(config: dict[str, Any]) -> str:
    """YAML with scripts as literal blocks, so `tpubuild render` output reads like a hand-written
    cloudbuild.yaml: builder/yamlout.py (no PyYAML import: start-up time), else PyYAML."""
    from builder import yamlout

    try:
        return yamlout.dump(config)
    except yamlout.Unsupported:
        pass
    import yaml

    class Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]  # libyaml when present
        pass

    def text(dumper: Any, value: str) -> yaml.ScalarNode:
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, text)
    return yaml.dump(config, Dumper=Dumper, sort_keys=False, default_flow_style=False, width=1000)
