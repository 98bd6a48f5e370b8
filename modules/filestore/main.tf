provider "google" {
  project = var.project_id
}

# ---- the instance, in one of two slots (docs/capacity.md, "Moving an environment to another zone") ----
# The instance is slot "a" or "b" of google_filestore_instance.this, both named var.name: a
# Filestore instance ID is unique per location, so the same name exists in two zones at once. A
# change of location (the environment moves to another zone) with move = true (TPU_MOVE) puts the
# new instance in the free slot beside the running one, restored from source_backup (a backup of
# the running share the pipeline took); the next apply with release = true deletes the slot of the
# old location, once the new one is in the state. The slots the state holds come from this module's
# own `slots` output (the previous apply's), so the applies need no input but values.env and the
# backup's name. A change that keeps the location goes to the slot that holds it, as before.

data "terraform_remote_state" "filestore" {
  backend = "gcs"
  config = {
    bucket = var.state_bucket
    prefix = "${var.env_name}/filestore"
  }
  defaults = {
    slots       = {}
    location    = ""
    tier        = ""
    share_name  = ""
    capacity_gb = 0
  }
}

locals {
  # BASIC_HDD, BASIC_SSD, ZONAL and HIGH_SCALE_SSD instances live in a zone; REGIONAL and
  # ENTERPRISE instances in a region (a move within the region keeps them).
  location = contains(["REGIONAL", "ENTERPRISE"], var.tier) ? var.region : var.zone
  self     = data.terraform_remote_state.filestore.outputs
  # a state written before the slots (google_filestore_instance.this, moved to slot "a") has no
  # `slots`: its one instance is slot "a", where its outputs say (network: the instance's own)
  legacy = local.self.location == "" ? {} : {
    a = {
      location      = local.self.location
      tier          = local.self.tier
      share_name    = local.self.share_name
      capacity_gb   = local.self.capacity_gb
      network       = var.network
      source_backup = ""
    }
  }
  previous = length(local.self.slots) > 0 ? local.self.slots : local.legacy
  same     = [for slot, spec in local.previous : slot if spec.location == local.location]
  free     = [for slot in ["a", "b"] : slot if !contains(keys(local.previous), slot)]
  # the slot the values go to: the one in this location; else, moving, a free one beside the
  # running instance; else the running one (changed or replaced in place: the guard decides) or "a"
  target = length(local.same) > 0 ? local.same[0] : (
    var.move && length(local.previous) == 1 ? local.free[0] : (
  length(local.previous) > 0 ? sort(keys(local.previous))[0] : "a"))
  moving = length(local.same) == 0 && var.move && length(local.previous) == 1
  # the instances kept beside the target, exactly as recorded, until the release apply
  kept = var.release && contains(keys(local.previous), local.target) ? {} : {
    for slot, spec in local.previous : slot => spec if slot != local.target
  }
  # a new slot is restored from the backup; a slot the state holds keeps what it was made from
  target_spec = {
    location      = local.location
    tier          = var.tier
    share_name    = var.share_name
    capacity_gb   = var.capacity_gb
    network       = var.network
    source_backup = contains(keys(local.previous), local.target) ? try(local.previous[local.target].source_backup, "") : (local.moving ? var.source_backup : "")
  }
  slots = merge(local.kept, { (local.target) = local.target_spec })
}

resource "google_filestore_instance" "this" {
  for_each = local.slots

  name     = var.name
  location = each.value.location
  tier     = each.value.tier
  labels   = var.labels

  file_shares {
    name          = each.value.share_name
    capacity_gb   = each.value.capacity_gb
    source_backup = each.value.source_backup == "" ? null : each.value.source_backup
  }

  networks {
    network      = each.value.network
    modes        = ["MODE_IPV4"]
    connect_mode = "DIRECT_PEERING"
  }

  lifecycle {
    # the backup only matters when the instance is created: a later backup never replaces it
    ignore_changes = [file_shares[0].source_backup]
    precondition {
      condition     = !local.moving || var.tier != "HIGH_SCALE_SSD"
      error_message = "A HIGH_SCALE_SSD share has no backups to move it from (https://cloud.google.com/filestore/docs/backups): keep its zone, or set TPU_MOVE=\"false\" and destroy, then create (docs/capacity.md, \"Moving an environment to another zone\")."
    }
    precondition {
      condition     = !local.moving || var.source_backup != ""
      error_message = "The environment moves to another location and the share's new instance has no source_backup: the pipeline's filestore-backup step takes one of the running share first (docs/capacity.md, \"Moving an environment to another zone\")."
    }
  }
}
