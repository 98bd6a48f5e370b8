provider "google" {
  project = var.project_id
}

# The dataset disk: written once by the seeder (env_setup/seeder), then attached READ_ONLY to
# every worker. `snapshot` only matters when the disk is created: a later change of the
# restore point must never replace a disk that holds data, so Terraform ignores it afterwards
# (SHARED_PD_RESTORE restores a disk that a destroy removed; it does not roll back a live one;
# a move to another zone makes the new zone's disk from a snapshot of the running one, below).
#
# Hyperdisk ML (type hyperdisk-ml: generations whose hosts attach only Hyperdisk) is shared
# read-only only in access mode READ_ONLY_MANY and written only in READ_WRITE_SINGLE: a blank disk
# is created READ_WRITE_SINGLE, and the seeder sets READ_ONLY_MANY once it has written it
# (env_setup/seeder/run_seeder.sh); a disk restored from a snapshot already holds the data and is
# created READ_ONLY_MANY. Terraform then ignores access_mode: the seeder's switch is not drift.
# Its throughput is Google's default for the size (it grows with the disk).
#
# Two slots (docs/capacity.md, "Moving an environment to another zone"): the disk is slot "a" or "b"
# of google_compute_disk.this, both named var.name (a zonal disk's name is unique per zone, so
# the same name exists in two zones at once). A change of zone with move = true (TPU_MOVE) puts
# the new zone's disk in the free slot beside the running one, made from var.snapshot (a snapshot
# of the running disk the pipeline took); the next apply with release = true deletes the slot of
# the old zone once the new one is in the state. The slots come back from this module's own
# `slots` output; a state written before the slots (google_compute_disk.this, moved to slot "a")
# is read from its outputs (self_link names its zone).

data "terraform_remote_state" "shared_pd" {
  backend = "gcs"
  config = {
    bucket = var.state_bucket
    prefix = "${var.env_name}/shared_pd"
  }
  defaults = {
    slots     = {}
    self_link = ""
    size_gb   = 0
    snapshot  = null
  }
}

locals {
  self        = data.terraform_remote_state.shared_pd.outputs
  legacy_zone = try(regex("/zones/([^/]+)/", local.self.self_link)[0], "")
  legacy = local.legacy_zone == "" ? {} : {
    a = {
      zone     = local.legacy_zone
      type     = var.type
      size_gb  = local.self.size_gb
      snapshot = local.self.snapshot == null ? "" : local.self.snapshot
    }
  }
  previous = length(local.self.slots) > 0 ? local.self.slots : local.legacy
  same     = [for slot, spec in local.previous : slot if spec.zone == var.zone]
  free     = [for slot in ["a", "b"] : slot if !contains(keys(local.previous), slot)]
  moving   = length(local.same) == 0 && var.move && length(local.previous) == 1
  # the slot the values go to: the one in this zone; else, moving, the free one; else the running
  # one (changed or replaced in place: the guard decides) or "a"
  target = length(local.same) > 0 ? local.same[0] : (
  local.moving ? local.free[0] : (length(local.previous) > 0 ? sort(keys(local.previous))[0] : "a"))
  kept = var.release && contains(keys(local.previous), local.target) ? {} : {
    for slot, spec in local.previous : slot => spec if slot != local.target
  }
  # a slot the state holds keeps the snapshot it was made from (only read at creation)
  target_spec = {
    zone     = var.zone
    type     = var.type
    size_gb  = var.size_gb
    snapshot = contains(keys(local.previous), local.target) ? local.previous[local.target].snapshot : var.snapshot
  }
  slots = merge(local.kept, { (local.target) = local.target_spec })
}

resource "google_compute_disk" "this" {
  #checkov:skip=CKV_GCP_37:Customer-supplied keys would have to be handed to Cloud Build, the seeder and every worker; the dataset disk uses Google-managed encryption at rest.
  for_each = local.slots

  name     = var.name
  zone     = each.value.zone
  type     = each.value.type
  size     = each.value.size_gb
  labels   = var.labels
  snapshot = each.value.snapshot == "" ? null : each.value.snapshot
  # Hyperdisk ML: blank READ_WRITE_SINGLE (the seeder writes it), from a snapshot READ_ONLY_MANY
  access_mode = each.value.type != "hyperdisk-ml" ? null : (each.value.snapshot == "" ? "READ_WRITE_SINGLE" : "READ_ONLY_MANY")

  lifecycle {
    ignore_changes = [snapshot, access_mode]
    precondition {
      condition     = !local.moving || var.snapshot != ""
      error_message = "The environment moves to another zone and the dataset disk's new zone has no snapshot to be made from: the pipeline's shared_pd-snapshot step takes one of the running disk first (docs/capacity.md, \"Moving an environment to another zone\")."
    }
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
