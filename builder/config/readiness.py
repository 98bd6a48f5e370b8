"""Can ``tpubuild train`` run with this values.env as it stands? Warnings (not errors: the
infrastructure is still valid) that ``tpubuild validate`` prints; ``load`` does not add them to
``Settings.warnings`` (other commands do not train).

RoBERTa prepares its data from ``ROBERTA_DATA_SOURCE``: a gs:// folder, an absolute path, or a
folder on the shared PD (``<MOUNT_POINT>/shared_pd/...``). The last needs the disk attached to
every host (``SHARED_PD_DISK_ATTACH="true"``) and something on it: ``GCS_DATASET`` (copied onto
the disk after it is created) or ``SHARED_PD_RESTORE`` (a snapshot).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings


def train_warnings(settings: Settings) -> list[str]:
    options, lines, path = settings.model_options, settings.lines, settings.source
    if settings.model != "roberta" or "roberta_data_source" not in options:
        return []
    src = str(options["roberta_data_source"] or "")
    if src.startswith(("gs://", "/")):
        return []
    where = f"{settings.mount_point.rstrip('/')}/shared_pd{'/' + src if src else ''}"

    def at(*keys: str) -> str:
        line = next((lines[k] for k in keys if k in lines), None)
        return f"{path}:{line}" if line is not None else str(path)

    if not settings.shared_pd_attach:
        return [f"{at('SHARED_PD_DISK_ATTACH', 'ROBERTA_DATA_SOURCE', 'MODEL')}: `tpubuild train` cannot run as "
                f"shipped: RoBERTa reads its data from the shared PD ({where}) but SHARED_PD_DISK_ATTACH is "
                'false; set SHARED_PD_DISK_ATTACH="true" and GCS_DATASET (copied onto the disk), or '
                'ROBERTA_DATA_SOURCE="gs://bucket/folder"']
    if not settings.gcs_dataset and not settings.shared_pd_restore:
        return [f"{at('SHARED_PD_DISK_ATTACH', 'ROBERTA_DATA_SOURCE')}: `tpubuild train` reads {where} on the "
                "shared PD, but nothing fills the disk (no GCS_DATASET, no SHARED_PD_RESTORE); set GCS_DATASET "
                "to the raw text's gs:// folder, or put the data there yourself before training"]
    return []
