# TPU_ARCH="mig", plan module mig: a TPU slice as a Compute Engine managed instance group of TPU
# VMs (v5p, v6e, TPU7x). Three resources that must live in one state: Google refuses to delete an
# instance template or a workload policy that a MIG uses, and only inside one state can Terraform
# order "create the new one, point the MIG at it, delete the old one" (create_before_destroy).
#
# Docs: https://docs.cloud.google.com/compute/docs/tpus/create-tpu-mig-multi-host-slice
# (instance template with a TPU machine type + workload policy HIGH_THROUGHPUT with the slice's
# accelerator_topology + MIG with target size = VMs of the slice). A MIG's workload policy can't
# change while the group has VMs; the pipeline drains the group first (docs/modules.md, "Resize").

provider "google" {
  project = var.project_id
  zone    = var.zone
}

# ---- what the other modules applied, read from their state (same bucket, <env>/<module>) ----

data "terraform_remote_state" "tpu" {
  backend = "gcs"
  config = {
    bucket = var.state_bucket
    prefix = "${var.env_name}/tpu"
  }
}

# filestore's and shared_pd's state: data.terraform_remote_state.* in remote_state_mounts.tf
# (linked from modules/_shared).

locals {
  region = join("-", slice(split("-", var.zone), 0, 2))
  # The shared PD shows up on every VM as /dev/disk/by-id/google-<device name>.
  pd_device = "shared-pd"
  spot      = var.provisioning == "spot"
  reserved  = var.provisioning == "reservation"
  # Flex-start (Dynamic Workload Scheduler): the VMs come from a resize request, run at most
  # var.max_run_hours and are then deleted (docs/capacity.md).
  flex = var.provisioning == "flex-start"
  # One policy per topology: a new topology is a new policy (the old one is deleted once the MIG
  # points at the new one); "4x4" is a legal name part ([a-z0-9-]).
  policy_name = "${var.name}-${var.topology}"

  metadata = {
    "enable-oslogin"                 = "TRUE"
    "block-project-ssh-keys"         = "TRUE"
    "enable-guest-attributes"        = "TRUE"
    "startup-script"                 = file("${path.module}/../../env_setup/scripts/startup.sh")
    "tpubuild-arch"                  = "mig"
    "tpubuild-env"                   = var.env_name
    "tpubuild-mount-point"           = var.mount_point
    "tpubuild-nfs-ip"                = data.terraform_remote_state.filestore.outputs.nfs_ip
    "tpubuild-nfs-share"             = data.terraform_remote_state.filestore.outputs.share_name
    "tpubuild-shared-pd-device"      = var.shared_pd_attach ? local.pd_device : ""
    "tpubuild-tpu-name"              = var.name
    "tpubuild-tpu-endpoints"         = ""
    "tpubuild-workspace"             = "gs://${var.state_bucket}/workspace/${var.env_name}"
    "tpubuild-setup-script"          = var.setup_script
    "tpubuild-accelerator-type"      = var.accelerator_type
    "tpubuild-topology"              = var.topology
    "tpubuild-vm-count"              = tostring(var.vm_count)
    "tpubuild-host-bounds"           = var.host_bounds
    "tpubuild-chips-per-host-bounds" = var.chips_per_host_bounds
  }
}

# ---- the slice's shape: one workload policy per topology (multi-host slices only) ----

resource "google_compute_resource_policy" "slice" {
  count  = var.accelerator_topology == "" ? 0 : 1
  name   = local.policy_name
  region = local.region

  description = "tpubuild ${var.env_name}: ${var.accelerator_type} as ${var.vm_count} ICI-connected TPU VMs"

  workload_policy {
    type                 = "HIGH_THROUGHPUT"
    accelerator_topology = var.accelerator_topology
  }

  lifecycle {
    create_before_destroy = true
  }
}

# ---- the hosts ----

resource "google_compute_instance_template" "slice" {
  #checkov:skip=CKV_GCP_40:access_config is rendered only when var.external_ips (TPU_EXTERNAL_IPS) is true; it defaults to false and tests/terraform/test_security.py proves no external IP by default.
  #checkov:skip=CKV_GCP_39:TPU VMs boot Google's accelerator OS images (ubuntu-os-accelerator-images), whose TPU driver (vfio) Google documents with --no-shielded-secure-boot; vTPM and integrity monitoring stay on.
  name_prefix    = "${var.name}-"
  description    = "tpubuild ${var.env_name}: one TPU VM (${var.machine_type}) of ${var.accelerator_type}"
  machine_type   = var.machine_type
  labels         = var.labels
  tags           = [data.terraform_remote_state.tpu.outputs.network_tag]
  can_ip_forward = false
  metadata       = local.metadata

  # type and mode are set, not left to the provider: since provider 7.0 it no longer fills in a
  # template disk's type, mode or interface (the API does). These are the values a 6.x-applied
  # template holds, so the first 8.x plan is a no-op; interface stays the API's (NVMe for the
  # Hyperdisk boot disks of v6e and TPU7x).
  disk {
    boot         = true
    type         = "PERSISTENT"
    mode         = "READ_WRITE"
    auto_delete  = true
    source_image = "projects/${var.image_project}/global/images/family/${var.image_family}"
    disk_size_gb = var.boot_disk_size_gb
    disk_type    = var.boot_disk_type
    labels       = var.labels
  }

  dynamic "disk" {
    for_each = var.shared_pd_attach ? [true] : []
    content {
      boot        = false
      type        = "PERSISTENT"
      auto_delete = false
      source      = data.terraform_remote_state.shared_pd[0].outputs.name
      mode        = "READ_ONLY"
      device_name = local.pd_device
    }
  }

  network_interface {
    network    = var.network
    subnetwork = var.subnetwork == "" ? null : var.subnetwork

    dynamic "access_config" {
      for_each = var.external_ips ? [true] : []
      content {
        network_tier = "PREMIUM"
      }
    }
  }

  service_account {
    email  = data.terraform_remote_state.tpu.outputs.service_account_email
    scopes = ["https://www.googleapis.com/auth/cloud-platform"]
  }

  shielded_instance_config {
    enable_secure_boot          = false
    enable_vtpm                 = true
    enable_integrity_monitoring = true
  }

  # TPU VMs cannot live-migrate: maintenance stops them. Spot VMs are deleted on preemption so the
  # MIG recreates them (a stopped VM would hold the slice's place without running).
  scheduling {
    on_host_maintenance         = "TERMINATE"
    automatic_restart           = !(local.spot || local.flex)
    preemptible                 = local.spot
    provisioning_model          = local.spot ? "SPOT" : (local.flex ? "FLEX_START" : "STANDARD")
    instance_termination_action = local.spot || local.flex ? "DELETE" : null

    # Flex-start VMs run at most TPU_MAX_RUN_HOURS, then Compute Engine deletes them.
    dynamic "max_run_duration" {
      for_each = local.flex ? [var.max_run_hours * 3600] : []
      content {
        seconds = max_run_duration.value
      }
    }
  }

  # Reservation-bound: a named reservation (TPU_RESERVATION), else any matching one in the zone.
  dynamic "reservation_affinity" {
    # Flex-start VMs must not consume a reservation (Google's flex-start template: NO_RESERVATION).
    for_each = local.reserved || local.flex ? [true] : []
    content {
      type = local.flex ? "NO_RESERVATION" : (var.reservation == "" ? "ANY_RESERVATION" : "SPECIFIC_RESERVATION")

      dynamic "specific_reservation" {
        for_each = local.flex || var.reservation == "" ? [] : [var.reservation]
        content {
          key    = "compute.googleapis.com/reservation-name"
          values = [specific_reservation.value]
        }
      }
    }
  }

  lifecycle {
    create_before_destroy = true
  }
}

resource "google_compute_instance_group_manager" "slice" {
  name               = var.name
  base_instance_name = var.name
  zone               = var.zone
  description        = "tpubuild ${var.env_name}: the ${var.accelerator_type} slice (${var.vm_count} TPU VMs)"
  # Flex-start: the group starts empty and the resize request below adds the whole slice at
  # once when Dynamic Workload Scheduler finds the capacity.
  target_size = local.flex ? 0 : var.vm_count

  version {
    name              = "slice"
    instance_template = google_compute_instance_template.slice.self_link_unique
  }

  dynamic "resource_policies" {
    for_each = google_compute_resource_policy.slice[*].self_link
    content {
      workload_policy = resource_policies.value
    }
  }

  # A slice is all its VMs or nothing: a template change recreates every VM at once (a partial
  # set of ICI peers cannot train), never one by one.
  update_policy {
    type                           = "PROACTIVE"
    minimal_action                 = "REPLACE"
    most_disruptive_allowed_action = "REPLACE"
    replacement_method             = "RECREATE"
    max_surge_fixed                = 0
    max_unavailable_fixed          = var.vm_count
  }

  wait_for_instances        = !local.flex
  wait_for_instances_status = "STABLE"

  timeouts {
    create = "60m"
    update = "60m"
  }

  lifecycle {
    # The pipeline's mig-resize step sets the size after the apply (and mig-drain sets 0 before
    # a topology change), so Terraform creates the group at full size and then leaves it alone.
    ignore_changes = [target_size]
  }
}

# ---- flex-start: one resize request for the whole slice (all VMs or none) ----

resource "google_compute_resize_request" "slice" {
  count                  = local.flex ? 1 : 0
  name                   = "${var.name}-flex"
  zone                   = var.zone
  instance_group_manager = google_compute_instance_group_manager.slice.name
  description            = "tpubuild ${var.env_name}: ${var.vm_count} TPU VMs of ${var.accelerator_type} for at most ${var.max_run_hours} h"
  # The run limit lives on the template (scheduling.max_run_duration): gcloud's resize-requests
  # reference says a FLEX_START group takes its run duration from the template, not the request.
  resize_by = var.vm_count
}

# ---- the environment's TTL (ENV_TTL_HOURS; modules/ttl): created and destroyed with the slice ----
# Its build destroys with _MIG=true (builder/ttl.py SCOPE): this module, not the hosts' account
# and firewall (modules/tpu_mig_access), Filestore or the shared PD.

module "slice_ttl" {
  source = "../ttl"
  count  = var.ttl_hours > 0 ? 1 : 0

  project_id     = var.project_id
  region         = join("-", slice(split("-", var.zone), 0, 2))
  env_name       = var.env_name
  ttl_hours      = var.ttl_hours
  ttl_build_body = var.ttl_build_body
  tpu_id         = google_compute_instance_group_manager.slice.id
}
