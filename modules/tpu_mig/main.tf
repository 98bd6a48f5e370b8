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

# The calendar-mode request and the workload policy's accelerator_topology_mode (google-beta only).
provider "google-beta" {
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

# This module's own state, as the last apply left it (an empty state before the first: the GCS
# backend writes one at init): whether its template carries the shared PD for the reason below.
data "terraform_remote_state" "mig" {
  backend = "gcs"
  config = {
    bucket = var.state_bucket
    prefix = "${var.env_name}/mig"
  }
  # an empty state (before the first apply) has neither; a state of the modules before mig-attach
  # has a name but no shared_pd_kept_in_template
  defaults = {
    name                       = ""
    shared_pd_kept_in_template = "absent"
  }
}

locals {
  # the scheduled builds' calls (modules/_shared/outputs_scheduled.tf tells their jobs)
  ttl_call    = module.slice_ttl
  health_call = module.slice_health
  region      = join("-", slice(split("-", var.zone), 0, 2))
  # The shared PD shows up on every VM as /dev/disk/by-id/google-<device name>.
  pd_device = "shared-pd"
  # Whether the instance template carries the shared PD. Not when the pipeline's mig-attach step
  # attaches it (var.shared_pd_attached_later): the VMs are made beside shared_pd-seed and get the
  # disk once it is seeded, as a VM holding it would keep the seeder from writing it. A slice
  # applied by the modules before mig-attach (its state has outputs but not
  # shared_pd_kept_in_template) has the disk in its template: it keeps it there, and records so,
  # because a template without it is a new template, and a new template recreates every VM of the
  # running slice (update_policy below). It keeps it until the slice is destroyed.
  kept_mark      = data.terraform_remote_state.mig.outputs.shared_pd_kept_in_template
  kept_before    = local.kept_mark == "absent" ? data.terraform_remote_state.mig.outputs.name != "" : local.kept_mark == true
  pd_kept        = var.shared_pd_attach && local.kept_before
  pd_in_template = var.shared_pd_attach && (!var.shared_pd_attached_later || local.pd_kept)
  spot           = var.provisioning == "spot"
  reserved       = var.provisioning == "reservation"
  # Flex-start (Dynamic Workload Scheduler): the VMs come from a resize request, run at most
  # var.max_run_hours and are then deleted (docs/capacity.md).
  flex = var.provisioning == "flex-start"
  # Calendar mode: a calendar-mode future reservation delivers reservation var.calendar.name at
  # var.calendar.start for var.calendar.days; the VMs are bound to it. Terraform makes the request
  # where google-beta knows the generation's vm_family, else the pipeline's mig-calendar step does.
  calendar    = var.provisioning == "calendar" && var.calendar != null
  cal         = local.calendar ? var.calendar : { name = "", start = "", days = 0, chips = 0, vm_family = "" }
  calendar_tf = local.calendar && local.cal.vm_family != ""
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
  provider = google-beta
  count    = var.accelerator_topology == "" ? 0 : 1
  name     = local.policy_name
  region   = local.region

  description = "tpubuild ${var.env_name}: ${var.accelerator_type} as ${var.vm_count} ICI-connected TPU VMs"

  workload_policy {
    type                 = "HIGH_THROUGHPUT"
    accelerator_topology = var.accelerator_topology
    # The ICI links are set up when the VMs are created, as a training slice needs (the API's
    # default); PROVISION_ONLY leaves them to a scheduler that connects chips later.
    accelerator_topology_mode = "AUTO_CONNECT"
  }

  lifecycle {
    create_before_destroy = true
    # A policy made before this field was set holds it empty; the field forces a new policy, and a
    # new policy drains the slice: leave those alone (they are AUTO_CONNECT, the API's default).
    ignore_changes = [workload_policy[0].accelerator_topology_mode]
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

  # the shared PD, read-only, where the pipeline does not attach it after the seed (pd_in_template)
  dynamic "disk" {
    for_each = local.pd_in_template ? [true] : []
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
  # MIG recreates them (a stopped VM would hold the slice's place without running). Calendar-mode
  # VMs are RESERVATION_BOUND: they run only on their reservation and are deleted when it ends.
  scheduling {
    on_host_maintenance         = "TERMINATE"
    automatic_restart           = !(local.spot || local.flex || local.calendar)
    preemptible                 = local.spot
    provisioning_model          = local.spot ? "SPOT" : (local.flex ? "FLEX_START" : (local.calendar ? "RESERVATION_BOUND" : "STANDARD"))
    instance_termination_action = local.spot || local.flex || local.calendar ? "DELETE" : null

    # Flex-start VMs run at most TPU_MAX_RUN_HOURS, then Compute Engine deletes them.
    dynamic "max_run_duration" {
      for_each = local.flex ? [var.max_run_hours * 3600] : []
      content {
        seconds = max_run_duration.value
      }
    }
  }

  # Reservation-bound: a named reservation (TPU_RESERVATION), else any matching one in the zone;
  # calendar mode: the reservation its request delivers (var.calendar.name).
  dynamic "reservation_affinity" {
    # Flex-start VMs must not consume a reservation (Google's flex-start template: NO_RESERVATION).
    for_each = local.reserved || local.flex || local.calendar ? [true] : []
    content {
      type = local.flex ? "NO_RESERVATION" : (local.calendar || var.reservation != "" ? "SPECIFIC_RESERVATION" : "ANY_RESERVATION")

      dynamic "specific_reservation" {
        for_each = local.flex ? [] : compact([local.calendar ? local.cal.name : var.reservation])
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

  # Flex-start and calendar VMs come when Google has the capacity (the request is fulfilled, the
  # reservation is delivered at its start): the apply does not wait; mig-resize does.
  wait_for_instances        = !(local.flex || local.calendar)
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
  name                   = var.flex_request_name
  zone                   = var.zone
  instance_group_manager = google_compute_instance_group_manager.slice.name
  description            = "tpubuild ${var.env_name}: ${var.vm_count} TPU VMs of ${var.accelerator_type} for at most ${var.max_run_hours} h"
  # The run limit lives on the template (scheduling.max_run_duration): gcloud's resize-requests
  # reference says a FLEX_START group takes its run duration from the template, not the request.
  resize_by = var.vm_count
}

# ---- calendar mode: one calendar-mode future reservation for the whole slice ----
# Google cannot cancel, delete or change a submitted calendar request: a destroy forgets it
# (deletion_policy ABANDON; the guard announces it) and the reservation ends at its end time,
# billed until then. Its reservation is named var.calendar.name (the request's own name), only
# VMs that name it consume it (specific_reservation_required), and it is deleted at the end.

resource "google_compute_future_reservation" "slice" {
  provider    = google-beta
  count       = local.calendar_tf ? 1 : 0
  name        = local.cal.name
  zone        = var.zone
  description = "tpubuild ${var.env_name}: ${local.cal.chips} chips of ${var.accelerator_type} for ${local.cal.days} days"

  reservation_mode                      = "CALENDAR"
  planning_status                       = "SUBMITTED"
  deployment_type                       = "DENSE"
  reservation_name                      = local.cal.name
  specific_reservation_required         = true
  auto_delete_auto_created_reservations = true
  deletion_policy                       = "ABANDON"

  time_window {
    start_time = local.cal.start
    duration {
      seconds = tostring(local.cal.days * 86400)
    }
  }

  aggregate_reservation {
    vm_family     = local.cal.vm_family
    workload_type = "BATCH"
    reserved_resources {
      accelerator {
        # the chips only, as gcloud's --tpu-version/--chip-count request them
        accelerator_count = local.cal.chips
      }
    }
  }
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

# ---- the health check (TPU_RECOVERY; modules/health): created and destroyed with the slice ----
# The MIG recreates lost VMs itself; the health build relaunches training once the slice is whole.

module "slice_health" {
  source = "../health"
  count  = var.health_build_body != "" ? 1 : 0

  project_id        = var.project_id
  region            = join("-", slice(split("-", var.zone), 0, 2))
  env_name          = var.env_name
  health_build_body = var.health_build_body
  health_schedule   = var.health_schedule
}
