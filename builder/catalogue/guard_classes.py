"""What each Terraform resource type holds: the guard's one table (data, not code).

A type is classified by what losing it loses, not by which module uses it:

* :data:`DATA`: the resource *is* stored data (disks of every kind, snapshots, images, Filestore
  instances, backups and snapshots, buckets and their objects and folders). Destroying,
  replacing or forgetting one loses or orphans that data.
* :data:`TPU`: TPUs (and the slice's workload policy); replacing one interrupts training
  (announced, not refused); each module's catalogue entry lists its own.
* :data:`CAPACITY`: requests for TPU capacity (a flex-start resize request, a calendar-mode
  future reservation); deleting or forgetting one gives up capacity the slice waits on or runs
  on (announced, not refused: docs/capacity.md).
* :data:`NO_DATA`: types whose names sound like data but which only configure access or
  attachments (IAM bindings, ACLs, policy attachments, notifications, LB backends, transfer
  jobs...), and the stateless types our modules use (firewalls, templates, MIG, service
  accounts, roles).

A type in none of them is judged by its name (:data:`DATA_WORDS`): a new
``google_compute_hyperdisk_pool`` is treated as data until someone classifies it here. The test
``tests/unit/test_guard_classes.py`` checks that every resource type in ``modules/`` and every type of
the same families in the google/google-beta providers the modules pin (8.7, and 6.50 for the
legacy node roots) whose name sounds like data
(``tests/data/provider_resource_types.json``, from ``tools/provider_types.py``) is classified
explicitly.
"""

from __future__ import annotations

import re

from builder.catalogue.modules import TRAINING_RESOURCES

DATA: dict[str, str] = {
    # Compute Engine block storage and what is copied from it
    "google_compute_disk": "a persistent disk and everything on it (the shared PD holds the dataset)",
    "google_compute_region_disk": "a regional persistent disk and everything on it",
    "google_compute_snapshot": "a disk snapshot (destroy takes these to keep the shared PD's data)",
    "google_compute_instant_snapshot": "an instant disk snapshot",
    "google_compute_region_instant_snapshot": "an instant snapshot of a regional disk",
    "google_compute_image": "a disk image",
    "google_compute_machine_image": "a machine image (the VM's disks)",
    "google_compute_storage_pool": "a storage pool and the disks provisioned in it",
    # Filestore
    "google_filestore_instance": "the Filestore share (checkpoints and preprocessed data)",
    "google_filestore_backup": "a Filestore backup (destroy takes one to keep the share's data)",
    "google_filestore_snapshot": "a Filestore snapshot",
    # Cloud Storage
    "google_storage_bucket": "a Cloud Storage bucket and every object in it",
    "google_storage_bucket_object": "a Cloud Storage object",
    "google_storage_folder": "a Cloud Storage folder and the objects under it",
    "google_storage_managed_folder": "a Cloud Storage managed folder and the objects under it",
    # Cloud Logging: a log bucket keeps the logs routed to it
    **{f"google_logging_{parent}_bucket_config": "a Cloud Logging bucket and the logs kept in it"
       for parent in ("project", "folder", "organization", "billing_account")},
}

#: The modules' ``training_resources`` (builder/catalogue/modules.py): what the hosts train on.
TPU: frozenset[str] = frozenset(TRAINING_RESOURCES)

#: Capacity requests → what the guard announces when a plan deletes or forgets one.
CAPACITY: dict[str, str] = {
    "google_compute_resize_request": "deleted, the flex-start resize request's VMs not yet brought will not "
                                     "come; forgotten (flex-start is now a bulk group grown from 0, "
                                     "docs/modules.md), it stays with its group at Google and nothing is "
                                     "cancelled; the slice's running VMs still stop at their run limit",
    "google_compute_region_resize_request": "the regional flex-start resize request goes: VMs it did not bring "
                                            "yet will not come",
    "google_compute_future_reservation": "Google cannot cancel a submitted calendar-mode request: Terraform only "
                                         "forgets it; the reservation is billed until its end, and the slice's "
                                         "VMs on it stop when it ends",
}

NO_DATA: frozenset[str] = frozenset({
    # access to data, not data
    *(f"google_compute_{r}_iam_{k}" for r in ("disk", "region_disk", "snapshot", "instant_snapshot",
                                               "region_instant_snapshot", "image", "machine_image",
                                               "storage_pool", "backend_bucket", "region_backend_bucket")
      for k in ("binding", "member", "policy")),
    *(f"google_storage_{r}_iam_{k}" for r in ("bucket", "managed_folder") for k in ("binding", "member", "policy")),
    "google_storage_bucket_acl", "google_storage_bucket_access_control", "google_storage_default_object_acl",
    "google_storage_default_object_access_control", "google_storage_object_acl",
    "google_storage_object_access_control", "google_storage_hmac_key", "google_storage_notification",
    # attachments, settings and jobs around data
    "google_compute_attached_disk", "google_compute_disk_resource_policy_attachment",
    "google_compute_region_disk_resource_policy_attachment", "google_compute_disk_async_replication",
    "google_compute_snapshot_settings", "google_compute_backend_bucket", "google_compute_backend_bucket_signed_url_key",
    "google_compute_instance_from_machine_image", "google_storage_anywhere_cache",
    "google_storage_batch_operations_job", "google_storage_transfer_agent_pool", "google_storage_transfer_job",
    "google_storage_insights_dataset_config", "google_storage_insights_report_config",
    "google_storage_control_folder_intelligence_config", "google_storage_control_organization_intelligence_config",
    "google_storage_control_project_intelligence_config", "google_project_usage_export_bucket",
    "google_compute_region_backend_bucket",  # a load balancer's backend pointing at a bucket
    # how long deleted snapshots stay recoverable: a setting; the snapshots are classified above
    "google_compute_snapshot_recycle_bin_policy", "google_compute_organization_snapshot_recycle_bin_policy",
    "google_storage_ftp_server", "google_storage_ftp_user",  # FTP access to a bucket, not its objects
    # stateless types our modules use
    "google_compute_firewall", "google_compute_instance_template", "google_compute_instance_group_manager",
    "google_project_iam_member", "google_project_iam_custom_role", "google_service_account",
    "google_storage_bucket_iam_member",
    # the TTL (modules/ttl): a schedule that starts a build, and who may run it as whom
    "google_cloud_scheduler_job", "google_service_account_iam_member",
    "google_cloud_asset_folder_feed",  # a change feed to Pub/Sub ("folder" is the GCP folder it watches)
    # observability (modules/dashboard): views and counters over logs and metrics Google keeps
    "google_monitoring_dashboard", "google_logging_metric",
    # log routing and settings (the logs stay in their buckets); a linked dataset is a BigQuery view
    "google_logging_folder_exclusion", "google_logging_folder_settings", "google_logging_folder_sink",
    "google_logging_linked_dataset",
})

#: Words in a type's name that mean it probably holds data (for types nobody classified yet).
DATA_WORDS = re.compile(r"disk|snapshot|image|backup|bucket|object|folder|filestore|volume|storage|database|dataset")


def holds_data(rtype: str) -> bool:
    if rtype in DATA:
        return True
    if rtype in NO_DATA or rtype in TPU or rtype in CAPACITY:
        return False
    return bool(DATA_WORDS.search(rtype.removeprefix("google_")))


def what(rtype: str) -> str:
    """What losing a resource of this type loses, for messages."""
    return DATA.get(rtype, f"whatever this {rtype} holds (an unclassified type whose name says it holds data)")
