"""Self-healing slices (``TPU_RECOVERY``): the health check's build, which a Cloud Scheduler job
(``modules/health``, called by the module that holds the TTL's job, so it lives and dies with the
slice) creates every :data:`INTERVAL_MIN` minutes, as the TTL's job creates the TTL's build.

The build has three steps (docs/recovery.md has the loop as a diagram), each a template of
builder/templates, talking through files under ``/workspace/.tpubuild-recovery``:

1. ``health-check`` (gcloud): does nothing while another health build of the environment runs,
   while the environment lock is held (a person's build, or a recovery's own dispatch), once the
   TTL has fired or when it fires within :data:`TTL_MARGIN_S`, or after the recovery gave up;
   else reads the slice (vm: the state of the TPU VM in whichever of its two slots exists,
   ``tpu-<env>`` or ``tpu-<env>-b``, which make-before-break alternates; mig: how many of the MIG's
   VMs run). A slice that is PREEMPTED, TERMINATED or gone (vm) is deleted and marked for
   recreation (the update recreates the slot its Terraform state holds, so the live one); a MIG that
   is not whole is left to the MIG, which recreates its VMs, and marked, unless it is short for want
   of capacity and its zone has another mode in the list (:func:`mig_failover`: the group is
   deleted and marked for recreation, whose failover loop asks those modes); a whole slice with a
   mark is marked for relaunch. On a MIG whose hosts get the shared PD from the pipeline's
   mig-attach step (its instance template does not carry it), a whole slice's VMs that lack the
   disk (recreated by the MIG since) get it here, before the relaunch, as mig-attach gives it
   (templates/_mig_attach.sh.j2); such a VM means the run lost a host, so it is marked and relaunched.
2. ``health-prepare`` (python): installs tpubuild from the kept source, recreates a vm slice
   with ``tpubuild dispatch --action update`` scoped to the TPU (lock, plan, guard, apply,
   finalize, as any build), and prints the launch with ``tpubuild train MODEL --dry-run`` (and
   ``tpubuild stop --dry-run``): the same script a person's ``tpubuild train`` runs, which
   resumes from checkpoint_last.pt, and finds the live slot when it runs (models/hosts.py).
3. ``health-relaunch`` (gcloud): stops what is left of the old run and launches, retrying while
   the new hosts finish their start-up; writes the recovery's record (:func:`record_object`) and
   the mark: the consecutive failures, and after ``TPU_RECOVERY_MAX_TRIES`` the word that it gave up.

Pure: the request is a dict in the REST (camelCase) form, checked by the tests against the real
``google.cloud.devtools.cloudbuild_v1.types.Build``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from builder.catalogue import cost
from builder.catalogue.module_parts import fails_over, mig_attach, tried
from builder.catalogue.modules import accelerator_module, ttl_scope
from builder.catalogue.step_kinds import ACQUIRE_WAIT_S, BUILD_ENDED, IMAGES, MAX_BUILD_TIMEOUT
from builder.config.applied_objects import record_object
from builder.catalogue.durations import duration
from builder.config.candidates import at, split
from builder.config.offers import bulk_mode
from builder.config.recovery import log_prefix
from builder.config.replace import group_filter, slot_names
from builder.facts import capacity_errors
from builder.facts.actions import Action
from builder.inputs import build_limits
from builder.inputs.templating import environment
from builder.inputs.ttl import job_name as ttl_job, source_object

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings

#: Minutes between two health checks (the Scheduler job's ``*/10 * * * *``): the longest a lost
#: slice waits before the loop sees it.
INTERVAL_MIN = 10
SCHEDULE = f"*/{INTERVAL_MIN} * * * *"
#: A TTL that fires within this many seconds is left to fire: a recovery takes longer than that.
TTL_MARGIN_S = 3600
#: How often health-relaunch tries the launch while the recreated hosts finish start-up, and the
#: seconds between tries (about 30 minutes in all).
LAUNCH_TRIES = 15
LAUNCH_WAIT_S = 120
#: The health build: the check, a recreate (the dispatch waits for the TPU's pipeline, up to
#: step_kinds.MAX_PIPELINE_TIMEOUT) and the launch; it outlives the update it waits for (timeouts
#: nest, docs/pipeline.md): Cloud Build's 24 h. A build that ends sooner is billed for what it ran.
TIMEOUT_S = MAX_BUILD_TIMEOUT
#: Where the steps leave their decisions for the next step (under /workspace).
WORKDIR = ".tpubuild-recovery"
#: Cloud Build tag of the health builds of an environment (so one does not overlap another).
TAG = "tpubuild-{env}-health"


def job_name(settings: Settings) -> str:
    return f"projects/{settings.project_id}/locations/{settings.region}/jobs/tpubuild-{settings.env_name}-health"


def objects(settings: Settings) -> dict[str, str]:
    """The health build's objects in the state bucket: ``lock``, the environment lock
    (builder/cloud/lock.py writes it; the check only reads whether it exists); ``mark``, a recovery
    under way (when the loss was seen, why, the failed tries, gave-up); ``records``, the folder of
    the recovery records (one JSON object per try)."""
    w = settings.workspace_prefix
    return {"lock": f"{w}/lock.json", "mark": f"{w}/recovery.state", "records": f"{w}/recoveries/"}


def hourly_usd(settings: Settings) -> float | None:
    """What the slice's chips cost an hour (the price ``tpubuild plan`` gives the module that holds
    them, builder/catalogue/cost.py): the value of an hour of training lost. It reads only the slice's own
    keys, so editing another module's values never changes the health build. None where a price
    is unknown (a generation builder/data/prices.json lacks): the record then says the cost is unknown."""
    estimate = cost.estimate(settings, (accelerator_module(settings.arch),))
    return None if estimate.unknown else round(estimate.known, 4)


def context(settings: Settings) -> dict[str, Any]:
    """What the three templates are rendered with (``slots``: the names the slice may have; on vm
    make-before-break alternates ``tpu-<env>`` and ``tpu-<env>-b``, so the check finds the live one)."""
    return {
        "env": settings.env_name, "project": settings.project_id, "zone": settings.zone,
        "log_prefix": log_prefix(settings.env_name),
        "region": settings.region, "arch": settings.arch, "hosts": settings.hosts,
        "slice": settings.tpu_name, "slots": list(slot_names(settings)),
        "group_filter": group_filter(settings), "bucket": settings.state_bucket,
        **{what: f"gs://{settings.state_bucket}/{name}" for what, name in objects(settings).items()},
        "ttl_job": ttl_job(settings).rsplit("/", 1)[-1] if settings.env_ttl_hours else "",
        "ttl_margin_s": TTL_MARGIN_S,
        "max_tries": settings.recovery_max_tries, "tag": TAG.format(env=settings.env_name),
        "workdir": WORKDIR, "model": settings.model, "hourly_usd": _price(hourly_usd(settings)),
        "launch_tries": LAUNCH_TRIES, "launch_wait_s": LAUNCH_WAIT_S, "interval_min": INTERVAL_MIN,
        # the Cloud Build states of a build that has ended: its lock protects nothing (builder/cloud/lock.py)
        "finished": sorted(BUILD_ENDED),
        "scope": _scope(settings),
        # mig: the shared PD for the VMs the MIG recreates (templates/_mig_attach.sh.j2, as mig-attach)
        **mig_attach(settings),
        **places(settings),
        **moves(settings),
        **mig_failover(settings),
        # a multi-host Spot slice's VMs stop on preemption (modules/tpu_mig): restarted through 0
        "restarts_stopped": settings.arch == "mig" and settings.provisioning == "spot" and bulk_mode(settings),
    }


def mig_failover(settings: Settings) -> dict[str, Any]:
    """mig with more than one candidate in the slice's zone (``builder.catalogue.module_parts.tried``): a group
    Google preempted stays in the state and Compute Engine recreates its VMs where it is, so when
    that mode has no capacity the group stays short. The check removes such a group (short, and its
    list-errors since the loss show a text of builder/facts/capacity_errors.py, or short beyond
    ``acquire_wait_s``, the failover loop's wait) and marks the slice for a recreate, whose failover
    loop asks the candidates of its zone in order (docs/recovery.md, "Candidates"). A whole group is
    never removed (a short one trains nothing: the relaunch waits for every host); never another zone.
    ``fails_over_mig`` false: the group is left to the MIG, as with one candidate."""
    modes = [c.mode for _i, c in tried(settings, Action.UPDATE)] if settings.arch == "mig" and fails_over(settings) else []
    # with a move (TPU_RECOVERY_MOVE), a short group whose zone has one mode is removed too: its
    # recreate's refusal is what moves the environment (:func:`moves`)
    return {"fails_over_mig": len(modes) > 1 or bool(modes and moves(settings)["moves"]), "zone_modes": ", ".join(modes),
            "no_capacity": capacity_errors.ere(), "acquire_wait_s": ACQUIRE_WAIT_S}


def places(settings: Settings) -> dict[str, Any]:
    """Where the slice is and what each place it may be recreated in costs an hour (a candidate
    list, docs/recovery.md "Candidates"): ``place``, the candidate this build was rendered for (the
    one that granted the slice when it was last applied: the slice's module hands the Scheduler
    job the build of the candidate it applied); ``applied_record``, the applied snapshot's record,
    whose ``granted`` says where the recreate's failover loop put the slice; ``prices``, every
    candidate of the list and its hourly price (:func:`hourly_usd` there), so the record gives the
    new hourly cost of a slice that moved. One candidate: no prices (it cannot move)."""
    listed = settings.candidates if len(settings.candidates) > 1 else ()
    return {"place": f"{settings.zone} {settings.provisioning}",
            "applied_record": f"gs://{settings.state_bucket}/{record_object(settings.env_name)}",
            "prices": [{"place": c.label, "hourly": _price(hourly_usd(at(settings, c)))} for c in listed]}


def next_zones(settings: Settings) -> list[str]:
    """The zones a recovery may move the environment to, in the order it asks: those after the
    slice's zone in ``ZONE`` as written, then those before it (the list goes round). Empty without
    TPU_RECOVERY_MOVE (``Settings.recovery_move``) or without the failover loop whose refusals
    decide a move (``module_parts.fails_over``)."""
    if not (settings.recovery_move and fails_over(settings)):
        return []
    zones = list(dict.fromkeys([*split(settings.raw.get("ZONE", "")), *(c.zone for c in settings.candidates)]))
    zones = [z for z in zones if any(c.zone == z for c in settings.candidates)]
    i = zones.index(settings.zone)
    return zones[i + 1:] + zones[:i]


def move_minutes(settings: Settings) -> float:
    """How long a recovery that moves keeps the slice down, modelled (not measured): the wait for the
    check (:data:`INTERVAL_MIN`), the refused recreate in the zone, then the move's update in the
    next zone (docs/capacity.md, "Moving an environment to another zone"): the new slice, the
    dataset disk and Filestore before training resumes, each its apply's figure
    (builder/catalogue/durations.py)."""
    slice_ = f"{accelerator_module(settings.arch)}-apply"
    storage = ["filestore-apply", *(["shared_pd-apply"] if settings.shared_pd_attach else [])]
    return INTERVAL_MIN + sum(duration({"id": sid}, settings) for sid in (slice_, slice_, *storage))


def moves(settings: Settings) -> dict[str, Any]:
    """What the health build needs to move (:func:`next_zones`): ``moves``, whether it may;
    ``next_zones``; ``refused_line``: the failover loop's words when no mode of the zone granted
    the slice (templates/_acquire.sh.j2), read in the recreate's log (``gcloud builds log``);
    ``move_scope``: the move updates every module (the storage moves with the slice)."""
    zones = next_zones(settings)
    return {"moves": bool(zones), "next_zones": zones, "refused_line": f"no candidate of {settings.zone} granted",
            "move_scope": ["--tpu", "false", "--mig", "false"]}


def _price(hourly: float | None) -> str:
    """The record's ``hourly_usd`` as JSON: a number, or null where the price is unknown."""
    return "null" if hourly is None else f"{hourly:.4f}"


def _scope(settings: Settings) -> list[str]:
    return [w for m, on in ttl_scope(settings.arch).items() for w in (f"--{m}", "true" if on else "false")]


#: (step id, image kind of builder.render.pipeline.IMAGES, template).
STEPS: tuple[tuple[str, str, str], ...] = (
    ("health-check", "gcloud", "recovery_check.sh.j2"),
    ("health-prepare", "python", "recovery_prepare.sh.j2"),
    ("health-relaunch", "gcloud", "recovery_relaunch.sh.j2"),
)
#: With a move (:func:`moves`), between prepare and relaunch: the recreate's refusals read from its
#: build log, and the move's dispatch.
MOVE_STEPS: tuple[tuple[str, str, str], ...] = (
    ("health-refusals", "gcloud", "recovery_refusals.sh.j2"),
    ("health-move", "python", "recovery_move.sh.j2"),
)


def steps(settings: Settings) -> tuple[tuple[str, str, str], ...]:
    """The health build's steps for ``settings``: with a move, :data:`MOVE_STEPS` before the relaunch."""
    return (*STEPS[:2], *(MOVE_STEPS if moves(settings)["moves"] else ()), STEPS[2])


def build_request(settings: Settings) -> dict[str, Any]:
    """The Build the health check's job creates every :data:`INTERVAL_MIN` minutes."""
    env, ctx = environment(), context(settings)
    built = []
    for step_id, image, template in steps(settings):
        # a script too long for one argument runs from the kept source (build_limits.step_args)
        args, _subs = build_limits.step_args(step_id, "bash", env.get_template(template).render(
            step_id=step_id, **ctx).strip() + "\n")
        assert set(_subs) <= {"BUILD_ID=$BUILD_ID"}, _subs  # the env below passes BUILD_ID, nothing else
        if build_limits.shipped_path(args[1]):  # copied from the state bucket first, with gcloud
            assert image == "gcloud", step_id
            args = build_limits.fetched(args, settings.state_bucket)
        built.append({
            "id": step_id,
            "name": IMAGES[image],
            "entrypoint": "bash",
            "env": ["BUILD_ID=$BUILD_ID", "TPUBUILD_DISPATCH_BUILD=$BUILD_ID", "PIP_DISABLE_PIP_VERSION_CHECK=1",
                    "PIP_ROOT_USER_ACTION=ignore"],  # BUILD_ID: a shipped script's sub("BUILD_ID") too
            "args": args,
        })
    return build_limits.check({
        "source": {"storageSource": {"bucket": settings.state_bucket, "object": source_object(settings.env_name)}},
        "steps": built,
        "timeout": f"{TIMEOUT_S}s",
        # modules/health adds serviceAccount (the pipelines' own account), as modules/ttl does
        "options": {"logging": "CLOUD_LOGGING_ONLY"},
        "tags": ["tpubuild", f"tpubuild-{settings.env_name}", TAG.format(env=settings.env_name)],
    }, f"the health build of {settings.env_name}")


def parse_mark(text: str) -> dict[str, str]:
    """The mark's ``key=value`` lines (health-check writes them; health-relaunch counts the tries)."""
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def summary(records: list[dict[str, Any]], shown: int) -> dict[str, Any]:
    """What ``tpubuild status`` says of the records (oldest first): the newest ``shown`` of them,
    how many recovered, and the down time and its cost of every episode (a failed try is part of
    the episode the record that recovers or gives up ends, whose down time counts from the loss)."""
    def number(record: dict[str, Any], key: str) -> float:
        value = record.get(key, 0)
        return value if isinstance(value, (int, float)) else 0

    ended = [r for r in records if r.get("outcome") != "failed"]
    return {"records": records[-shown:], "count": len(records),
            "recovered": sum(r.get("outcome") == "recovered" for r in records),
            "down_s": sum(number(r, "down_s") for r in ended),
            "cost_usd": round(sum(number(r, "down_cost_usd") for r in ended), 2),
            "cost_known": all(isinstance(r.get("down_cost_usd"), (int, float)) for r in ended)}


def plan_text(settings: Settings) -> str:
    """What ``tpubuild plan`` and the docs say about the recovery of these values."""
    if not settings.recovery:
        return ("off (TPU_RECOVERY): a lost slice stays lost until `tpubuild update`" if settings.arch != "node"
                else "none on the legacy node architecture")

    where, move = "", ""
    if fails_over(settings):  # the recreate's failover loop (docs/recovery.md, "Candidates")
        modes = [c.mode for _i, c in tried(settings, Action.UPDATE)]
        stays = "" if next_zones(settings) else " (never in another zone)"
        where = (f" in the first of {', '.join(modes)} in {settings.zone} that grants it{stays}"
                 if len(modes) > 1 else f" in {settings.zone} {settings.provisioning}{' only' if stays else ''}")
    if next_zones(settings):
        minutes, hourly = move_minutes(settings), hourly_usd(settings)
        worth = f", ~${hourly * minutes / 60:.2f} of the slice's time" if hourly is not None else ""
        move = (f"; when no mode of {settings.zone} grants it, the environment moves to {', then '.join(next_zones(settings))} "
                f"(TPU_RECOVERY_MOVE; docs/recovery.md): down ~{minutes:.0f} min{worth} (modelled: the check's "
                "interval, the refused recreate, the new slice, disk and Filestore), both zones' storage billed until "
                "the old zone's is removed; training resumes from the bucket's checkpoint")
    return (f"auto (TPU_RECOVERY): every {INTERVAL_MIN} min a health build recreates a lost slice{where} and "
            f"relaunches {settings.model or 'nothing (MODEL is empty)'} from its last checkpoint{move}; it gives up "
            f"after {settings.recovery_max_tries} failed tries; never past the TTL nor while a build holds the lock")
