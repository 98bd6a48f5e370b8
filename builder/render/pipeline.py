"""Plan → the Cloud Build config that carries it out (a dict: steps, timeout, options, tags).

The plan decides every step, its order and what it waits for (``builder.planning.plan.steps``: Terraform
operations and the seed, snapshot, restore, backup, queue, drain and resize around them); this
module only renders each :class:`~builder.planning.plan.Step` by its kind: :data:`KINDS` maps a kind to its
builder image, script template and timeout, and ``_Steps._<kind>`` gives its template's context.
So ``tpubuild plan`` (which prints the same steps) and the rendered build cannot drift.

Per module operation the steps are, in order (docs/pipeline.md has the full anatomy):

* ``<module>-plan`` (Terraform image): ``init`` against the GCS backend with locking, ``plan``
  (``-destroy`` for destroy) to ``/workspace/plans/<module>.tfplan``, then ``terraform show
  -json`` of it to ``/workspace/plans/<module>.json``;
* ``<module>-guard`` (the tpubuild builder image): ``tpubuild guard`` reads that JSON and refuses
  data loss;
* ``<module>-apply`` (Terraform image): ``apply`` of the saved plan.

Around them: ``tpubuild-image`` (first: makes sure the builder image that guard and finalize run
in exists, building it once when it does not; builder/catalogue/builder_image.py),
``check-capacity`` (the TPU quota holds the slice: every guard waits for it, so nothing billed
is made before it passes),
``shared_pd-restore`` (SHARED_PD_RESTORE=latest: names the newest snapshot),
``shared_pd-snapshot`` / ``filestore-backup`` (before a full destroy), ``shared_pd-seed`` (copies
GCS_DATASET onto a freshly applied shared PD) and ``finalize`` (last). ``waitFor`` expresses the
plan's DAG, so independent modules run in parallel.

Step scripts are jinja2 templates in ``builder/templates/``; they are written as plain shell and
every ``$`` is doubled here, because Cloud Build substitutes ``$NAME``/``${NAME}`` in ``args``.
The only substitution a script uses on purpose is the built-in ``BUILD_ID`` (``sub("BUILD_ID")``
in a template). Scripts read their workspace root from ``$WORKSPACE`` (default ``/workspace``)
so tests can run them against a temporary folder.

jinja2 is imported only when a step is rendered (builder/inputs/templating.py), so ``tpubuild plan`` stays fast.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from builder.catalogue import builder_image, modules as catalogue
from builder.catalogue.module_parts import REFUSED_LEAVES, fails_over, mig_attach, settles_with_gcloud, tried
from builder.catalogue.step_kinds import (  # noqa: F401  (re-exported: step kinds, images, timeouts)
    ACQUIRE_TRY_S, ACQUIRE_WAIT_S, BUILD_TIMEOUT_SLACK, CALENDAR_STEP_S, check_duration, image, queue_wait_s, settling_apply,
    step_timeout, IMAGE_STEP_S, IMAGES, Kind, KINDS,
    LOCK_TIMEOUT, MAX_BUILD_TIMEOUT, MAX_PIPELINE_TIMEOUT, NFS_EXPORT_OBJECT, MAX_QUEUE_WAIT_S, QUEUE_SLACK_S, QUEUE_WAIT_S, RESIZE_STEP_S,
    SEED_STEP_S, SEED_TIMEOUT_S, SHELLS, SWAP_WAIT_S, DRAIN_WAIT_S, RESUME_TRIES, RESUME_WAIT_S, verdict_wait_s,
)
from builder.config.filestore import TIERS
from builder.config.candidates import region_of
from builder.config.later import script_refusals
from builder.config.offers import bulk_mode, calendar_name
from builder.config.scripts import repo_script
from builder.facts import capacity_errors
from builder.facts.actions import Action
from builder.facts.errors import BadInput, ConfigErrors
from builder.inputs import build_limits
from builder.inputs.templating import environment
from builder.planning import capacity, move_steps
from builder.planning.plan import Plan, Step, gates, module_dir, runs, runs_setup_script, seeds
from builder.render.yamlout import to_json, to_yaml  # render's output formats

__all__ = ["IMAGES", "KINDS", "Kind", "build_timeout", "check_duration", "preflight", "queue_wait_s", "render",
           "to_json", "to_yaml"]

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings


# ---- what the steps need beyond the plan ----

def preflight(settings: Settings, plan: Plan) -> None:
    """Refuse a plan whose pipeline would use a script that does not exist (the seed-era paths
    in MIG_SETUP_SCRIPT / MIG_SEED_DATA_PREP_SCRIPT are only warnings until then): the gate's
    ``scripts`` row's function (builder/config/later.py ``script_refusals``), asked only about the
    scripts this plan's steps run (the doors have asked the row about both already; a plan
    rendered directly, e.g. an update of the slice alone, needs only the one it runs)."""
    if not plan.operations:
        raise BadInput(f"{plan.action} runs no pipeline (no Terraform): nothing to render; "
                       f"run `tpubuild {plan.action}` instead")
    used = ({"MIG_SETUP_SCRIPT"} if any(runs_setup_script(settings, m) for m in plan.modules if plan.applies(m))
            else set()) | ({"MIG_SEED_DATA_PREP_SCRIPT"} if seeds(settings, plan) else set())
    if found := script_refusals(settings, used):
        raise ConfigErrors(found, ())


# ---- rendering ----

class _Steps:
    """Renders the steps of a plan, one :data:`KINDS` row and one context per kind."""

    def __init__(self, settings: Settings, plan: Plan, allow_data_loss: bool, allow_wipe: bool) -> None:
        self.s = settings
        self.plan = plan
        self.allow_data_loss = allow_data_loss
        self.allow_wipe = allow_wipe
        self.steps: list[dict[str, Any]] = []
        self.env = environment()

    def add(self, step: Step) -> None:
        kind = KINDS[step.kind]
        context = getattr(self, f"_{step.kind}")(step)
        template = kind.template.format(module=step.module)
        # mig's acquisition reads the group with gcloud: the gcloud image, the Terraform binary carried
        settles = settling_apply(self.s, step) and self._op(step) == "apply"
        key = "gcloud" if settles else kind.image
        script = self.env.get_template(template).render(step_id=step.id, **context).strip() + "\n"
        known = {st["id"] for st in self.steps}
        missing = [w for w in step.after if w not in known]
        if missing:  # a bug here, not bad input: waitFor must name earlier steps
            raise AssertionError(f"step {step.id} waits for unknown steps {missing}")
        # a script too long for one argument ships as a file of the source (build_limits.step_args)
        args, env = build_limits.step_args(step.id, SHELLS[key], script)
        out: dict[str, Any] = {
            "id": step.id,
            "name": image(self.s, key),
            "entrypoint": SHELLS[key],
            "args": args,
            "waitFor": list(step.after) or ["-"],
            "timeout": check_duration(f"{self._timeout(step)}s"),
        }
        if kind.image == "terraform":  # a settling apply too: it runs the carried Terraform
            env = ["TF_IN_AUTOMATION=1", *env]
        if env:
            out["env"] = env
        self.steps.append(out)

    def build(self) -> list[dict[str, Any]]:
        for step in self.plan.steps:
            self.add(step)
        return self.steps

    def _timeout(self, step: Step) -> int:
        return step_timeout(self.s, step)

    def _op(self, step: Step) -> str:
        op = self.plan.get(step.module)
        assert op is not None, step
        return op.op

    def labels(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.s.labels.items())

    # ---- one context per step kind ----

    def _image(self, step: Step) -> dict[str, Any]:
        return dict(image=image(self.s, "tpubuild"), base=IMAGES["python"], dockerfile=builder_image.DOCKERFILE,
                    repository=self.s.image_repository)

    def _capacity(self, step: Step) -> dict[str, Any]:
        return dict(beside=bool(runs(self.s, self.plan, "swap")), reads=capacity.reads(self.s), move_to=self.s.move_to)

    def _restore(self, step: Step) -> dict[str, Any]:
        s = self.s
        return dict(project=s.project_id, env=s.env_name, disk=s.shared_pd_name)

    def _moving(self, step: Step) -> tuple[str, str, str]:
        """(zone, region, moves_to) of a copy step: a destroy's takes it where values.env places the
        environment; a move's (an apply's) in the zone it leaves, the first copy only until the new
        zone's resource exists (``moves_to``), the final backup whenever the old share is there."""
        s = self.s
        if self._op(step) != "apply":
            return s.zone, s.region, ""
        return s.moving_from, region_of(s.moving_from), "" if step.id.endswith("-final-backup") else s.zone

    def _snapshot(self, step: Step) -> dict[str, Any]:
        s = self.s
        zone, region, moves_to = self._moving(step)
        return dict(project=s.project_id, zone=zone, region=region, disk=s.shared_pd_name, labels=self.labels(),
                    moves_to=moves_to, purpose="move-" if moves_to else "")

    def _backup(self, step: Step) -> dict[str, Any]:
        s = self.s
        zone, region, moves_to = self._moving(step)
        regional = TIERS[s.shared_fs_tier].regional
        new_location = "" if not moves_to else s.region if regional else s.zone
        last = self._op(step) == "apply" and not moves_to
        return dict(project=s.project_id, region=region, location=region if regional else zone,
                    instance_location_flag="--instance-location" if regional else "--instance-zone",
                    instance=s.filestore_name, share=s.shared_fs_name, tier=s.shared_fs_tier, labels=self.labels(),
                    moves_to=new_location, last=last, purpose="move-" if moves_to else "last-" if last else "")

    def _unqueue(self, step: Step) -> dict[str, Any]:
        s = self.s
        return dict(project=s.project_id, zone=s.zone, name=s.tpu_name)

    def _terraform(self, step: Step) -> dict[str, Any]:
        s, m = self.s, step.module
        return dict(module=m, op=self._op(step), tfdir=module_dir(s, m), bucket=s.state_bucket,
                    prefix=f"{s.env_name}/{m}", lock_timeout=LOCK_TIMEOUT)

    def _spec(self, step: Step) -> catalogue.ModuleSpec:
        spec = catalogue.spec(self.s.arch, step.module)
        assert spec is not None, step
        return spec

    def _plan(self, step: Step) -> dict[str, Any]:
        starts_from = self._spec(step).snapshot  # the snapshot an apply of this module starts from
        restore = starts_from(self.s) if starts_from and self._op(step) == "apply" else ""
        # the slice reads the storage's states only when there (reads_applied): its plan (a destroy's
        # too: Terraform reads data sources then) makes sure they exist (empty before their first apply)
        reads = self._spec(step).reads_applied
        # mig's acquisition runs in the gcloud image: its plan leaves the Terraform binary for it
        carries = settles_with_gcloud(self.s) and self._spec(step).accelerator and self._op(step) == "apply"
        moved = move_steps.copied(self.plan, {st.id for st in self.plan.steps}, step.module)
        copy_step, copy_var = move_steps.COPIES[step.module] if moved else ("", "")
        return dict(snapshot_file=restore == "latest", snapshot_name=restore if restore not in ("", "latest") else "",
                    reads_applied=reads, env=self.s.env_name, carries_terraform=carries,
                    move_copy=copy_var, copy_step=copy_step, **self._terraform(step))

    def _guard(self, step: Step) -> dict[str, Any]:
        # a move's <module>-release-guard checks the release plan (<module>-release.json)
        plan_name = f"{step.module}-release" if step.id.endswith("-release-guard") else step.module
        return dict(module=step.module, action=self.plan.action, allow_data_loss=self.allow_data_loss,
                    plan_name=plan_name)

    def _apply(self, step: Step) -> dict[str, Any]:
        # TPU_QUEUED: the plan's tpu-queue step reads the request this apply leaves
        s = self.s
        queued, swaps, publishes = (runs(s, self.plan, k) == step.module for k in ("queue", "swap", "publish"))
        spec = self._spec(step)
        slice_ = spec.accelerator and not spec.destroy_only and self._op(step) == "apply"
        # the failover loop (docs/capacity.md) where it applies, and the granted place either way
        candidates = [dict(index=i, zone=c.zone, mode=c.mode) for i, c in tried(s, self.plan.action)] \
            if slice_ and fails_over(s) else []
        settles = bool(candidates) and settles_with_gcloud(s)
        leaves = "^(" + "|".join(re.escape(p) for p in REFUSED_LEAVES.get(s.arch, ())) + ")"
        return dict(queued_request=queued, swaps=swaps, publishes=publishes, accelerator_type=s.accelerator_type,
                    candidates=candidates, candidate_count=len(s.candidates), no_capacity=capacity_errors.ere(),
                    slice_type=spec.slice_resource, zone=s.zone,
                    settles=settles, slice_resources=leaves, project=s.project_id,
                    slice_vms=s.mig_shape.vms if settles else 0,
                    acquire_wait_s=ACQUIRE_WAIT_S,
                    granted=dict(zone=s.zone, mode=s.provisioning) if slice_ else None,
                    **self._asks(step), **self._terraform(step))

    def _publish(self, step: Step) -> dict[str, Any]:
        s = self.s
        return dict(module=step.module, instance=s.filestore_name,
                    target=f"gs://{s.state_bucket}/{s.workspace_prefix}/{NFS_EXPORT_OBJECT}")

    def _release(self, step: Step) -> dict[str, Any]:
        # a move's storage release applies the plan its guard let go; the slice's plans and applies
        return dict(saved=step.module in move_steps.COPIES, zone=self.s.zone, **self._terraform(step))

    def _unslot(self, step: Step) -> dict[str, Any]:
        return dict(zone=self.s.zone, **self._terraform(step))

    def _identity(self, step: Step) -> dict[str, Any]:
        return dict(address=self._spec(step).identity, **self._terraform(step))

    def _swap(self, step: Step) -> dict[str, Any]:
        s = self.s
        return dict(project=s.project_id, zone=s.zone, accelerator_type=s.accelerator_type, wait_s=SWAP_WAIT_S,
                    model=s.model, module=step.module, vms=s.hosts)

    def _prepare(self, step: Step) -> dict[str, Any]:
        return dict(module=step.module, model=self.s.model)

    def _resume_url(self, step: Step) -> str:
        """Where <module>-checkpoint records, before it stops the training, the slice it moves to
        (<module>-resume removes it once launched): a rerun of a build that died between the two resumes."""
        return f"{self._workspace_url()}handover/{step.module}.resume"

    def _workspace_url(self) -> str:
        return f"gs://{self.s.state_bucket}/{self.s.workspace_prefix}/"

    def _checkpoint(self, step: Step) -> dict[str, Any]:
        return dict(module=step.module, model=self.s.model, wait_s=DRAIN_WAIT_S, resume_url=self._resume_url(step))

    def _resume(self, step: Step) -> dict[str, Any]:
        return dict(module=step.module, model=self.s.model, tries=RESUME_TRIES, wait_s=RESUME_WAIT_S,
                    resume_url=self._resume_url(step), workspace_url=self._workspace_url())

    def _slice(self, step: Step) -> dict[str, Any]:
        s = self.s
        shape = s.mig_shape
        return dict(module=step.module, project=s.project_id, zone=s.zone, group=s.tpu_name, vms=shape.vms,
                    topology=shape.topology, accelerator_type=s.accelerator_type,
                    # the workload policy's name (modules/tpu_mig: <name>-<topology>); none for one VM
                    policy=f"{s.tpu_name}-{shape.topology}" if shape.accelerator_topology else "",
                    wait_s=RESIZE_STEP_S - 300)

    _drain = _slice

    def _resize(self, step: Step) -> dict[str, Any]:
        # the group's size after the apply: bulk groups (multi-host, flex-start) grow only from 0,
        # a stopped Spot slice is restarted through 0 (docs/modules.md, "Google's rules for TPU
        # MIGs"); calendar: the VMs wait for the reservation its request delivers at the start time
        s = self.s
        calendar = s.provisioning == "calendar"
        return dict(flex=s.provisioning == "flex-start", spot=s.provisioning == "spot", bulk=bulk_mode(s),
                    calendar_start=s.calendar_start if calendar else "", reservation=calendar_name(s.tpu_name),
                    swaps=runs(s, self.plan, "swap") == step.module, **self._slice(step))

    def _calendar(self, step: Step) -> dict[str, Any]:
        s, shape = self.s, self.s.mig_shape
        facts = shape.generation_record.calendar
        assert facts is not None, step  # module_parts.calendar_by_gcloud
        return dict(project=s.project_id, zone=s.zone, env=s.env_name, name=calendar_name(s.tpu_name),
                    generation=shape.generation, accelerator_type=s.accelerator_type, tpu_version=facts.tpu_version,
                    chips=shape.vms * shape.chips_per_vm, start=s.calendar_start, days=s.calendar_days,
                    seconds=s.calendar_days * 86400, wait_s=CALENDAR_STEP_S - 300, module=step.module, **self._asks(step))

    def _asks(self, step: Step) -> dict[str, Any]:
        """A step that asks for the slice beside its gates (the slice's apply, an ASKS step): the
        verdict it waits for on a plan that changes what exists (_await_guard.sh.j2)."""
        gated_by = gates(self.s, self.plan, step.module)
        return dict(gate=gated_by[-1], gates=gated_by, verdict_wait_s=verdict_wait_s(gated_by),
                    asks_first=f"{step.module}-plan" in step.after)

    def _queue(self, step: Step) -> dict[str, Any]:
        s = self.s
        return dict(project=s.project_id, zone=s.zone, name=s.tpu_name, accelerator_type=s.accelerator_type,
                    runtime_version=s.runtime_version, valid_for=s.queued_valid_for, provisioning=s.provisioning,
                    network=s.network, subnetwork=s.subnetwork, external_ips=s.tpu_external_ips,
                    labels=self.labels(), wait_s=queue_wait_s(s),
                    replace=self.plan.action is not Action.CREATE)

    def _attach(self, step: Step) -> dict[str, Any]:  # _restore's project and disk, and the TPU's
        # make-before-break: the slice values.env asks for may be in the other slot (tpu-apply names it);
        # mig: the group's VMs, the device name startup.sh waits for, Hyperdisk ML's access mode
        return dict(self._restore(step), zone=self.s.zone, name=self.s.tpu_name, mount_point=self.s.mount_point,
                    swaps=runs(self.s, self.plan, "swap") == step.module, **mig_attach(self.s))

    def _seed(self, step: Step) -> dict[str, Any]:
        s = self.s
        prep = s.mig_seed_data_prep_script
        return dict(project=s.project_id, zone=s.zone, env=s.env_name, disk=s.shared_pd_name,
                    disk_type=s.shared_pd_type, dataset=s.gcs_dataset, workspace_gcs=f"gs://{s.state_bucket}/{s.workspace_prefix}",
                    prep_script=repo_script(s, "MIG_SEED_DATA_PREP_SCRIPT", prep) if prep else "",
                    allow_wipe="true" if self.allow_wipe else "false", seed_timeout_s=SEED_TIMEOUT_S,
                    network=s.network, subnet=s.subnetwork, service_account=s.seeder_service_account)

    def _finalize(self, step: Step) -> dict[str, Any]:
        return dict(action=self.plan.action)


def build_timeout(steps: list[dict[str, Any]]) -> int:
    """Seconds: the longest path through the steps' timeouts plus slack, at most MAX_PIPELINE_TIMEOUT
    (Cloud Build's 24 h less what the builds that wait for a pipeline do around it: timeouts nest)."""
    finish: dict[str, int] = {}
    for st in steps:
        start = max((finish[w] for w in st["waitFor"] if w != "-"), default=0)
        finish[st["id"]] = start + int(st["timeout"][:-1])
    return min(max(finish.values(), default=0) + BUILD_TIMEOUT_SLACK, MAX_PIPELINE_TIMEOUT)


def render(settings: Settings, plan: Plan, *, allow_data_loss: bool = False, allow_wipe: bool = False) -> dict[str, Any]:
    """The Cloud Build config (a JSON-able dict in the REST field names) of ``plan``.

    ``allow_data_loss`` adds ``--allow-data-loss`` to every guard (``_ALLOW_DATA_LOSS``);
    ``allow_wipe`` is passed to the seeder as ALLOW_WIPE (``_ALLOW_WIPE``). Raises ``BadInput``
    for a plan with no operations (initialize) and for scripts the pipeline would need but that
    do not exist.
    """
    preflight(settings, plan)
    return _build(settings, _Steps(settings, plan, allow_data_loss, allow_wipe).build(), f"tpubuild-{plan.action}")


def _build(settings: Settings, steps: list[dict[str, Any]], tag: str) -> dict[str, Any]:
    return build_limits.check({
        "steps": steps,
        "timeout": check_duration(f"{build_timeout(steps)}s"),
        # a user-specified service account requires logs in Cloud Logging (or a logs bucket)
        "serviceAccount": settings.builder_service_account_resource,
        "options": {"logging": "CLOUD_LOGGING_ONLY"},
        "tags": ["tpubuild", f"tpubuild-env-{settings.env_name}", tag],
    }, f"the {tag} build of {settings.env_name}")


def render_image_build(settings: Settings) -> dict[str, Any]:
    """The build ``tpubuild initialize`` submits to make the builder image: the pipelines'
    ``tpubuild-image`` step alone (it checks the tag, builds and pushes)."""
    steps = _Steps(settings, Plan("initialize", settings.arch, ()), False, False)
    steps.add(Step("tpubuild-image", "image"))
    return _build(settings, steps.steps, "tpubuild-image")
