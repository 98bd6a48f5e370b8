provider "google" {
  project = var.project_id
  zone    = var.zone
}

provider "google-beta" {
  project = var.project_id
  zone    = var.zone
}

# filestore's and shared_pd's state: data.terraform_remote_state.* in remote_state_mounts.tf
# (linked from modules/_shared; read when they are there: the slice is asked for first, beside
# them, and its hosts get the NFS export and the disk later: local.nfs, the tpu-attach step).

locals {
  # the scheduled builds' calls (modules/_shared/outputs_scheduled.tf tells their jobs)
  ttl_call    = module.ttl
  health_call = module.health
  # Network tag of the TPU VM hosts; the firewall rules (module.tpu_vm_firewall) target it.
  tag = var.name
  # The hosts' identity (their account here and in the outputs of modules/_shared/outputs_hosts.tf).
  hosts_identity = module.tpu_vm_identity
  # A TPU VM names its first data disk persistent-disk-1: /dev/disk/by-id/google-persistent-disk-1.
  pd_device = "persistent-disk-1"

  metadata = {
    "enable-oslogin"            = "TRUE"
    "block-project-ssh-keys"    = "TRUE"
    "enable-guest-attributes"   = "TRUE"
    "startup-script"            = file("${path.module}/../../env_setup/scripts/startup.sh")
    "tpubuild-arch"             = "vm"
    "tpubuild-env"              = var.env_name
    "tpubuild-mount-point"      = var.mount_point
    "tpubuild-nfs-ip"           = local.nfs.ip
    "tpubuild-nfs-share"        = local.nfs.share
    "tpubuild-shared-pd-device" = var.shared_pd_attach ? local.pd_device : ""
    "tpubuild-tpu-name"         = local.slice_name
    "tpubuild-tpu-endpoints"    = ""
    "tpubuild-workspace"        = "gs://${var.state_bucket}/workspace/${var.env_name}"
    "tpubuild-setup-script"     = var.setup_script
  }

  # the slot's name: "a" is var.name, "b" var.name-b (make-before-break; a queued slice is "a")
  slice_name = local.target == "a" ? var.name : "${var.name}-b"
}

# ---- the hosts' own, least-privilege identity (modules/host_identity) ----

module "tpu_vm_identity" {
  source = "../host_identity"

  project_id                = var.project_id
  account_id                = var.service_account_id
  display_name              = "tpubuild ${var.env_name} TPU VM hosts"
  description               = "Identity of the ${var.name} TPU VM hosts: reads the dataset and its workspace, writes logs and metrics."
  project_roles             = ["roles/logging.logWriter", "roles/monitoring.metricWriter"]
  env_name                  = var.env_name
  state_bucket              = var.state_bucket
  workspace_condition_title = "tpubuild-workspace-${var.env_name}"
  dataset_bucket            = var.dataset_bucket
  checkpoint_writer         = true # models/checkpoint_sync.sh: checkpoints that outlive the zone
}

# ---- network access (modules/host_firewall): IAP-only SSH, and host <-> host inside the VPC ----

module "tpu_vm_firewall" {
  source = "../host_firewall"

  network              = var.network
  name                 = var.name
  network_tag          = local.tag
  hosts                = "TPU VM hosts"
  internal_description = "Traffic between the hosts of the ${var.name} TPU VM slice (PJRT/XLA collectives over the VPC)."
}

# ---- the TPU VM slice, in one of two slots ----
# The slice is slot "a" (named var.name) or "b" (var.name-b). A change that replaces the slice
# (make_before_break = true; docs/pipeline.md, "Make-before-break") puts the new slice in the
# free slot beside the running one: this apply creates it and waits until it is READY, the
# pipeline's tpu-swap step moves the training onto it, and the next apply of the same values
# (tpu-release) deletes the old slot. The slots the state holds come from this module's own outputs
# (the previous apply's `slices`), so the two applies need no input but values.env.
# With queued = true the slice is not a Terraform resource: google-beta 8.7's
# google_tpu_v2_queued_resource cannot carry metadata, a service account, data disks, scheduling,
# labels or a valid-until duration, so the pipeline's tpu-queue step requests it with
# `gcloud compute tpus queued-resources create` from this module's queued_request output
# (docs/pipeline.md). The identity and firewall above are created either way.

data "terraform_remote_state" "tpu" {
  backend = "gcs"
  config = {
    bucket = var.state_bucket
    prefix = "${var.env_name}/tpu"
  }
  defaults = {
    slices           = {}
    accelerator_type = ""
  }
}

locals {
  # what forces a new TPU VM (ForceNew in google-beta): a slot whose values differ is another slice
  wanted = {
    accelerator_type = var.accelerator_type
    runtime_version  = var.runtime_version
    network          = var.network
    subnetwork       = var.subnetwork
    external_ips     = var.external_ips
    preemptible      = var.preemptible
    spot             = var.spot
    reserved         = var.reserved
  }
  # Each slot records the zone it was made in (the move to another zone, docs/capacity.md "Moving an
  # environment to another zone": the new zone's slice is made in the free slot beside the old
  # zone's); a slot recorded before zones were is in previous_zone (the applied snapshot's granted
  # zone, which a move passes) or, that unset, var.zone (nothing moves).
  recorded_zone = var.previous_zone != "" ? var.previous_zone : var.zone
  previous = var.queued ? {} : {
    for slot, spec in data.terraform_remote_state.tpu.outputs.slices : slot => merge({ zone = local.recorded_zone }, spec)
  }
  # a state written before the slots (google_tpu_v2_vm.this[0], moved to slot "a") has no `slices`
  legacy_type = length(local.previous) == 0 ? data.terraform_remote_state.tpu.outputs.accelerator_type : ""
  same        = [for slot, spec in local.previous : slot if spec.wanted == local.wanted && spec.zone == var.zone]
  free        = [for slot in ["a", "b"] : slot if !contains(keys(local.previous), slot)]
  # the slot the values go to: the one already holding them; else, making before breaking, a free
  # one beside the running slice; else the running one (replaced in place) or "a"
  target = length(local.same) > 0 ? local.same[0] : (
    var.make_before_break && length(local.previous) == 1 ? local.free[0] : (
  length(local.previous) > 0 ? sort(keys(local.previous))[0] : "a"))
  # the running slices kept beside a new one until it is READY and holds the training: every other
  # slot the state holds, until the release apply once the target is in the state
  # (release = true: the tpu-release step, after tpu-swap moved the training; never the first apply)
  kept = var.release && contains(keys(local.previous), local.target) ? {} : {
    for slot, spec in local.previous : slot => spec if slot != local.target
  }
  # The NFS export in the hosts' metadata. A slot the state holds keeps what it was made with: ""
  # (made before Filestore, as a create asks for the slice first: its hosts read the export from
  # the workspace at every boot, which filestore-publish writes) stays "", so nothing of a running
  # slice changes when Filestore comes; an export follows Filestore's state as before. A slice
  # that is not in the state takes Filestore's export when its state holds one, else "".
  stored_nfs = { for key in ["tpubuild-nfs-ip", "tpubuild-nfs-share"] : key => try(local.previous[local.target].metadata[key], null) }
  state_nfs  = { "tpubuild-nfs-ip" = data.terraform_remote_state.filestore.outputs.nfs_ip, "tpubuild-nfs-share" = data.terraform_remote_state.filestore.outputs.share_name }
  nfs_meta = { for key, stored in local.stored_nfs : key => (
    local.stored_nfs["tpubuild-nfs-ip"] == "" ? "" : (local.state_nfs[key] != "" ? local.state_nfs[key] : (stored == null ? "" : stored))
  ) }
  nfs = { ip = local.nfs_meta["tpubuild-nfs-ip"], share = local.nfs_meta["tpubuild-nfs-share"] }
  # the slice values.env asks for, in its slot
  slot = {
    name     = local.slice_name
    zone     = var.zone
    labels   = var.labels
    metadata = local.metadata
  }
  slices = var.queued ? {} : merge(local.kept, { (local.target) = merge(local.slot, { wanted = local.wanted }) })
}

resource "google_tpu_v2_vm" "this" {
  #checkov:skip=CKV2_GCP_32:enable_external_ips is the slot's external_ips, var.external_ips (TPU_EXTERNAL_IPS) when written, which defaults to false; tests/terraform/test_security.py proves no external IP by default.
  for_each = local.slices
  provider = google-beta

  name             = each.value.name
  zone             = each.value.zone
  description      = "tpubuild ${var.env_name}"
  accelerator_type = each.value.wanted.accelerator_type
  runtime_version  = each.value.wanted.runtime_version
  labels           = each.value.labels
  tags             = [local.tag]
  metadata         = each.value.metadata

  network_config {
    network             = each.value.wanted.network
    subnetwork          = each.value.wanted.subnetwork == "" ? null : each.value.wanted.subnetwork
    enable_external_ips = each.value.wanted.external_ips
    can_ip_forward      = false
  }

  dynamic "scheduling_config" {
    for_each = each.value.wanted.preemptible || each.value.wanted.spot || each.value.wanted.reserved ? [true] : []
    content {
      preemptible = each.value.wanted.preemptible
      spot        = each.value.wanted.spot
      reserved    = each.value.wanted.reserved
    }
  }

  service_account {
    email = local.hosts_identity.email
    scope = ["https://www.googleapis.com/auth/cloud-platform"]
  }

  # the create waits until the slice is READY: make-before-break's wait for the new slice
  timeouts {
    create = "60m"
    update = "30m"
    delete = "30m"
  }

  lifecycle {
    # The shared PD is attached read-only by the pipeline's tpu-attach step once shared_pd-seed has
    # written it (the TPU is created beside the seed, not after it), so Terraform leaves the
    # attachment alone; a TPU VM applied when Terraform attached it keeps it, with no diff.
    ignore_changes = [data_disks]
    # the dataset disk, when its state is there (it is made beside or, failing over, after the
    # slice): a zonal disk attaches only to hosts of its own zone (tpu-attach)
    precondition {
      condition     = !var.shared_pd_attach || !strcontains(try(data.terraform_remote_state.shared_pd[0].outputs.self_link, ""), "/zones/") || strcontains(try(data.terraform_remote_state.shared_pd[0].outputs.self_link, ""), "/zones/${var.zone}/")
      error_message = "The dataset disk (modules/shared_pd's state) is in another zone than the slice, and a zonal disk attaches only to hosts of its zone: apply shared_pd in the slice's zone first (docs/capacity.md, \"What moving zones costs\")."
    }
    precondition {
      condition     = length([for flag in [var.preemptible, var.spot, var.reserved] : flag if flag]) <= 1
      error_message = "At most one of preemptible, spot and reserved may be true."
    }
    precondition {
      condition     = length(local.previous) < 2 || length(local.same) > 0
      error_message = "Two slices run (a replacement did not finish) and values.env asks for neither: set the slice's values back to those of one of them and update (the other is deleted), then change them."
    }
    precondition {
      condition     = !var.make_before_break || local.legacy_type == "" || local.legacy_type == var.accelerator_type
      error_message = "This TPU state was written before make-before-break, so the running slice's values are unknown: apply the values it runs with once (tpubuild update), then change the slice; or set TPU_REPLACE=\"break-before-make\"."
    }
  }

  depends_on = [
    module.tpu_vm_identity,
    module.tpu_vm_firewall,
  ]
}

# ---- the environment's TTL (ENV_TTL_HOURS; modules/ttl): created and destroyed with the TPU ----

module "ttl" {
  source = "../ttl"
  count  = var.ttl_hours > 0 ? 1 : 0

  project_id     = var.project_id
  region         = join("-", slice(split("-", var.zone), 0, 2))
  env_name       = var.env_name
  ttl_hours      = var.ttl_hours
  ttl_build_body = var.ttl_build_body
  # queued: the slice is no resource here (the tpu-queue step creates it under the node id below)
  tpu_id = var.queued ? "projects/${var.project_id}/locations/${var.zone}/nodes/${var.name}" : google_tpu_v2_vm.this[local.target].id
}

# ---- the health check (TPU_RECOVERY; modules/health): created and destroyed with the TPU ----

module "health" {
  source = "../health"
  count  = var.health_build_body != "" ? 1 : 0

  project_id        = var.project_id
  region            = join("-", slice(split("-", var.zone), 0, 2))
  env_name          = var.env_name
  health_build_body = var.health_build_body
  health_schedule   = var.health_schedule
}
