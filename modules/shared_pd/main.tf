provider "google" {
  project = var.project_id
}

# The dataset disk: written once by the seeder (env_setup/seeder), then attached READ_ONLY to
# every worker. `snapshot` only matters when the disk is created: a later change of the
# restore point must never replace a disk that holds data, so Terraform ignores it afterwards
# (SHARED_PD_RESTORE restores a disk that a destroy removed; it does not roll back a live one).
#
# Hyperdisk ML (type hyperdisk-ml: generations whose hosts attach only Hyperdisk) is shared
# read-only only in access mode READ_ONLY_MANY and written only in READ_WRITE_SINGLE: a blank disk
# is created READ_WRITE_SINGLE, and the seeder sets READ_ONLY_MANY once it has written it
# (env_setup/seeder/run_seeder.sh); a disk restored from a snapshot already holds the data and is
# created READ_ONLY_MANY. Terraform then ignores access_mode: the seeder's switch is not drift.
# Its throughput is Google's default for the size (it grows with the disk).
locals {
  access_mode = var.type != "hyperdisk-ml" ? null : (var.snapshot == "" ? "READ_WRITE_SINGLE" : "READ_ONLY_MANY")
}

resource "google_compute_disk" "this" {
  #checkov:skip=CKV_GCP_37:Customer-supplied keys would have to be handed to Cloud Build, the seeder and every worker; the dataset disk uses Google-managed encryption at rest.
  name        = var.name
  zone        = var.zone
  type        = var.type
  size        = var.size_gb
  labels      = var.labels
  snapshot    = var.snapshot == "" ? null : var.snapshot
  access_mode = local.access_mode

  lifecycle {
    ignore_changes = [snapshot, access_mode]
  }
}

# ---- the seeder VM's own, least-privilege identity ----
#
# The pipeline's shared_pd-seed step (env_setup/seeder/run_seeder.sh) fills this disk from a
# short-lived VM right after this module is applied, before mig (node) or tpu_vm (vm) exist on a
# first create; so the VM cannot run as the hosts' account, and the project's default compute
# account is Editor in older projects and has no roles at all where the organisation turned
# automatic grants off. It runs as this account instead, which can only read the dataset and
# the environment's workspace (MIG_SEED_DATA_PREP_SCRIPT is read from there) and write logs
# (modules/host_identity).

module "seeder_identity" {
  source = "../host_identity"

  project_id                = var.project_id
  account_id                = var.seeder_service_account_id
  display_name              = "tpubuild ${var.env_name} shared PD seeder"
  description               = "Identity of the seed-${var.env_name} VM: reads the dataset and its workspace, writes logs."
  project_roles             = ["roles/logging.logWriter"]
  env_name                  = var.env_name
  state_bucket              = var.state_bucket
  workspace_condition_title = "tpubuild-seeder-workspace-${var.env_name}"
  dataset_bucket            = var.dataset_bucket
}
