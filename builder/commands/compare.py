"""What a plan is compared with: the applied values (``--applied FILE``, ``--applied none``, or the
state bucket's snapshot read without a lock), and what GitOps ``auto`` would run from them. Read by
``plan``/``render`` (builder/commands/pipeline_cmds.py), ``plan --all`` (plan_all.py) and the
commands that compare before they act (core.py).

The cloud edge (builder/cloud/) is loaded inside the functions, on the path that reads the state
bucket: without credentials ``plan`` and ``render`` load no ``builder.cloud`` module
(tests/unit/test_import_budget.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.config import load
from builder.config.candidates import at, granted
from builder.facts.errors import BadInput, TpuBuildError
from builder.facts.files import MAX_BYTES, read_file
from builder.facts.records import record
from builder.planning import auto
from builder.planning.applied import applied_settings, compared_with

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings
    from builder.planning.plan import Plan


@record(frozen=False)
class Previous:
    """What the plan is compared with: the applied values (None: nothing applied, or unknown)
    and, from the state bucket, the snapshot's record; ``decision`` is auto's, once made."""

    settings: Settings | None
    source: str
    build_id: str = ""
    outstanding: frozenset[str] = frozenset()
    absent: frozenset[str] = frozenset()
    sources: dict[str, str] | None = None
    known: bool = True  # False: there was nothing to compare with (no file, no credentials)
    decision: Any = None
    #: the candidate that granted the slice, as the snapshot records it (builder/config/candidates.py);
    #: ``settings`` are placed there. None: not recorded (every snapshot before candidates), or no snapshot
    granted: Any = None
    #: True: read from an existing state bucket, where plan also reads a build stopped half way
    #: (builder/cloud/interrupted.py ``for_plan``)
    bucket: bool = False
    #: the applied list's first zone, as written (``settings`` are placed where the slice is): an
    #: update whose list puts another zone first moves the environment (candidates.reordered)
    first_zone: str | None = None

    @property
    def place(self) -> Any:
        """Where the applied slice is: the granted place the snapshot records, else (``--applied
        FILE``, a snapshot without one) the applied values' first candidate, where a build puts it
        when it has no other record. An update keeps the slice there while the list holds it, so a
        reordered ZONE list changes nothing (docs/capacity.md, "The granted place"); None: nothing
        applied is known."""
        if self.granted is not None or self.settings is None or not self.settings.candidates:
            return self.granted
        return self.settings.candidates[0]


def has_credentials() -> bool:
    """Whether Google credentials are configured, without importing google.auth (plan stays fast).
    In a pull request's plan build the build's account has them, with no file to show for it."""
    if os.environ.get("STORAGE_EMULATOR_HOST") or os.environ.get("GOOGLE_APPLICATION_CREDENTIALS"):
        return True
    if os.environ.get("TPUBUILD_PLAN_BUILD"):  # a GitOps plan build (builder/inputs/gitops.py): the metadata server's
        return True
    config = os.environ.get("CLOUDSDK_CONFIG") or os.path.join(os.path.expanduser("~"), ".config", "gcloud")
    return os.path.isfile(os.path.join(config, "application_default_credentials.json"))


def previous(settings: Settings, applied: str | None, *, need: bool) -> Previous:
    """The applied values to compare with: ``--applied FILE``, ``--applied none``, else the state
    bucket's snapshot (read-only, no lock) when credentials exist. ``need`` (auto): no source is
    bad input; otherwise the plan goes on without a comparison."""
    if applied is not None and applied.strip().lower() == "none":
        if need:
            raise BadInput("--applied: auto needs the applied values to decide; pass --applied FILE "
                           "(an empty file means nothing was applied yet)")
        return Previous(None, "nothing (--applied none)", known=False)
    if applied is not None:
        path = Path(applied)
        try:
            if not read_file(path, MAX_BYTES, what="an applied values file", fix="pass the values.env last "
                             "applied to this environment, or --applied none if nothing was applied").strip():
                return Previous(None, f"{path} (empty: nothing applied yet)")
            old = load(path)
            return Previous(old, compared_with(old, settings, str(path), destroy_with=str(path)), first_zone=old.zone)
        except TpuBuildError as exc:
            raise BadInput(f"--applied: {exc}") from None
    if not has_credentials():
        if need:
            raise BadInput("--applied: auto needs the applied snapshot; pass --applied FILE, or sign in "
                           "(gcloud auth application-default login) so it is read from the state bucket")
        return Previous(None, "nothing (no credentials to read the applied snapshot; pass --applied FILE)",
                        known=False)
    from builder.cloud import buckets, clients, snapshot

    where = f"gs://{settings.state_bucket}"
    try:
        client = clients.storage(settings.project_id)
        if not buckets.exists(client, settings.state_bucket):
            return Previous(None, f"{where} (no state bucket: nothing applied yet)")
        record = snapshot.read(client.bucket(settings.state_bucket), settings.env_name)
    except TpuBuildError as exc:
        if need:
            raise
        print(f"tpubuild: warning: could not read the applied snapshot ({exc}); no comparison", file=sys.stderr)
        return Previous(None, f"nothing (the applied snapshot could not be read)", known=False)
    if record is None:
        return Previous(None, f"{where}/{snapshot.values_path(settings.env_name)} (none: nothing applied yet)",
                        bucket=True)
    shown = f"{where}/{snapshot.values_path(settings.env_name)} (build {record.build_id or '?'})"
    try:
        old = applied_settings(record.values, settings)
    except (TpuBuildError, UnicodeDecodeError) as exc:
        if need:
            raise BadInput(f"{shown} no longer parses ({exc}); pass --applied FILE") from None
        return Previous(None, f"{shown}: no longer parses", known=False, bucket=True)
    shown = compared_with(old, settings, shown, destroy_with="<its values.env>")
    place = granted(record)  # the slice is where it was granted, whatever the applied list's first candidate
    return Previous(at(old, place) if place is not None else old, shown, record.build_id, record.outstanding,
                    record.absent, record.sources or None, granted=place, bucket=True, first_zone=old.zone)


def stopped_build(settings: Settings) -> dict[str, Any] | None:
    """A build that stopped half way, as ``status`` shows it (builder/cloud/interrupted.py): None when
    none did, or when it cannot be read (a warning says so; the plan itself stands)."""
    from builder.cloud import interrupted
    from builder.cloud.errors import describe
    from builder.cloud.status import READERS

    try:
        return interrupted.for_plan(settings, READERS)
    except Exception as exc:  # noqa: BLE001 - the plan is shown whatever this read meets
        why = str(exc) if isinstance(exc, TpuBuildError) else describe(exc)
        print(f"tpubuild: warning: could not read the environment lock ({why}); a build that stopped half way "
              "is not shown (tpubuild status shows it)", file=sys.stderr)
        return None


def auto_plan(settings: Settings, prev: Previous) -> Plan | None:
    """What GitOps ``auto`` would run (``builder.cloud.auto.decide_now``, the same decision
    ``submit`` makes); None: nothing to do. The decision is kept in ``prev.decision``."""
    from builder.cloud.auto import decide_now  # the digests of the repository's modules

    prev.decision = decide_now(settings, prev.settings, build_id=prev.build_id, outstanding=prev.outstanding,
                               absent=prev.absent, sources_then=prev.sources)
    return auto.plan_for(settings, prev.decision)
