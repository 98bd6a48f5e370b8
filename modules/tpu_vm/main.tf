provider "google" {
  project = var.project_id
  zone    = var.zone
}

provider "google-beta" {
  project = var.project_id
  zone    = var.zone
}

# filestore's and shared_pd's state: data.terraform_remote_state.* in remote_state_mounts.tf
# (linked from modules/_shared; they run before this module in the vm architecture).

locals {
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
    "tpubuild-nfs-ip"           = data.terraform_remote_state.filestore.outputs.nfs_ip
    "tpubuild-nfs-share"        = data.terraform_remote_state.filestore.outputs.share_name
    "tpubuild-shared-pd-device" = var.shared_pd_attach ? local.pd_device : ""
    "tpubuild-tpu-name"         = var.name
    "tpubuild-tpu-endpoints"    = ""
    "tpubuild-workspace"        = "gs://${var.state_bucket}/workspace/${var.env_name}"
    "tpubuild-setup-script"     = var.setup_script
  }

  shared_pd_id = var.shared_pd_attach ? data.terraform_remote_state.shared_pd[0].outputs.id : ""
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

# ---- the TPU VM slice ----
# With queued = true the slice is not a Terraform resource: google-beta 8.7's
# google_tpu_v2_queued_resource cannot carry metadata, a service account, data disks, scheduling,
# labels or a valid-until duration, so the pipeline's tpu-queue step requests it with
# `gcloud compute tpus queued-resources create` from this module's queued_request output
# (docs/pipeline.md). The identity and firewall above are created either way.

resource "google_tpu_v2_vm" "this" {
  count    = var.queued ? 0 : 1
  provider = google-beta

  name             = var.name
  zone             = var.zone
  description      = "tpubuild ${var.env_name}"
  accelerator_type = var.accelerator_type
  runtime_version  = var.runtime_version
  labels           = var.labels
  tags             = [local.tag]
  metadata         = local.metadata

  network_config {
    network             = var.network
    subnetwork          = var.subnetwork == "" ? null : var.subnetwork
    enable_external_ips = var.external_ips
    can_ip_forward      = false
  }

  dynamic "scheduling_config" {
    for_each = var.preemptible || var.spot || var.reserved ? [true] : []
    content {
      preemptible = var.preemptible
      spot        = var.spot
      reserved    = var.reserved
    }
  }

  service_account {
    email = local.hosts_identity.email
    scope = ["https://www.googleapis.com/auth/cloud-platform"]
  }

  dynamic "data_disks" {
    for_each = var.shared_pd_attach ? [true] : []
    content {
      source_disk = local.shared_pd_id
      mode        = "READ_ONLY"
    }
  }

  timeouts {
    create = "60m"
    update = "30m"
    delete = "30m"
  }

  lifecycle {
    precondition {
      condition     = length([for flag in [var.preemptible, var.spot, var.reserved] : flag if flag]) <= 1
      error_message = "At most one of preemptible, spot and reserved may be true."
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
  tpu_id = var.queued ? "projects/${var.project_id}/locations/${var.zone}/nodes/${var.name}" : google_tpu_v2_vm.this[0].id
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
