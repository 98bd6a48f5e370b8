provider "google" {
  project = var.project_id
  zone    = var.zone
}

# ---- what the other modules applied, read from their state (same bucket, <env>/<module>) ----

data "terraform_remote_state" "filestore" {
  backend = "gcs"
  config = {
    bucket = var.state_bucket
    prefix = "${var.env_name}/filestore"
  }
}

data "terraform_remote_state" "tpu" {
  backend = "gcs"
  config = {
    bucket = var.state_bucket
    prefix = "${var.env_name}/tpu"
  }
}

data "terraform_remote_state" "shared_pd" {
  count   = var.shared_pd_attach ? 1 : 0
  backend = "gcs"
  config = {
    bucket = var.state_bucket
    prefix = "${var.env_name}/shared_pd"
  }
}

data "google_compute_image" "pinned" {
  count       = var.image_version == "" ? 0 : 1
  project     = var.source_image_project
  filter      = "(family eq \"${var.source_image_family}\") (name eq \".*${var.image_version}.*\")"
  most_recent = true
}

locals {
  # Network tag of the workers; the firewall rules (module.mig_firewall) target it.
  tag = var.name
  # The shared PD shows up on every worker as /dev/disk/by-id/google-<device name>.
  pd_device = "shared-pd"
  image = (var.image_version == ""
    ? "projects/${var.source_image_project}/global/images/family/${var.source_image_family}"
  : one(data.google_compute_image.pinned[*].self_link))

  # Everything here is independent of the TPU size, so a resize never changes the template.
  # The TPU's name and endpoints change with it and live in the MIG's all_instances_config.
  template_metadata = {
    "enable-oslogin"            = "TRUE"
    "block-project-ssh-keys"    = "TRUE"
    "enable-guest-attributes"   = "TRUE"
    "startup-script"            = file("${path.module}/../../env_setup/scripts/startup.sh")
    "tpubuild-arch"             = "node"
    "tpubuild-env"              = var.env_name
    "tpubuild-mount-point"      = var.mount_point
    "tpubuild-nfs-ip"           = data.terraform_remote_state.filestore.outputs.nfs_ip
    "tpubuild-nfs-share"        = data.terraform_remote_state.filestore.outputs.share_name
    "tpubuild-shared-pd-device" = var.shared_pd_attach ? local.pd_device : ""
    "tpubuild-workspace"        = "gs://${var.state_bucket}/workspace/${var.env_name}"
    "tpubuild-setup-script"     = var.setup_script
  }
}

# ---- the workers' own, least-privilege identity (modules/host_identity) ----

module "mig_identity" {
  source = "../host_identity"

  project_id                = var.project_id
  account_id                = var.service_account_id
  display_name              = "tpubuild ${var.env_name} MIG workers"
  description               = "Identity of the ${var.name} workers: reads the dataset and its workspace, writes logs and metrics."
  project_roles             = ["roles/logging.logWriter", "roles/monitoring.metricWriter"]
  env_name                  = var.env_name
  state_bucket              = var.state_bucket
  workspace_condition_title = "tpubuild-workspace-${var.env_name}"
  dataset_bucket            = var.dataset_bucket
}

# Leader election (env_setup/scripts/startup.sh) runs
# `gcloud compute instance-groups managed list-instances <group> --zone Z --project P`: one
# instanceGroupManagers.listManagedInstances call, which needs compute.instanceGroupManagers.get
# (gcloud's help names compute.instanceGroupManagers.list for the command, so both). A custom
# role with just those two instead of roles/compute.viewer, which reads the whole project's
# Compute Engine inventory. Role ids allow no hyphens; a role deleted by a destroy is undeleted
# by the provider when the environment is created again.
resource "google_project_iam_custom_role" "mig_reader" {
  role_id     = "tpubuild_${replace(var.env_name, "-", "_")}_mig_reader"
  title       = "tpubuild ${var.env_name} MIG reader"
  description = "Lets the ${var.name} workers list their own MIG's instances to elect a leader."
  permissions = ["compute.instanceGroupManagers.get", "compute.instanceGroupManagers.list"]
}

resource "google_project_iam_member" "mig_reader" {
  project = var.project_id
  role    = google_project_iam_custom_role.mig_reader.name
  member  = module.mig_identity.member
}

# ---- network access (modules/host_firewall): IAP-only SSH, and worker <-> TPU / worker <-> worker inside the VPC ----

module "mig_firewall" {
  source = "../host_firewall"

  network                = var.network
  name                   = var.name
  network_tag            = local.tag
  hosts                  = "workers"
  internal_description   = "XRT traffic between the ${var.name} workers and from the TPU's workers to them."
  internal_source_ranges = [data.terraform_remote_state.tpu.outputs.cidr_block]
}

# ---- the workers ----

resource "google_compute_instance_template" "worker" {
  #checkov:skip=CKV_GCP_40:access_config is rendered only when var.external_ip (MIG_EXTERNAL_IP) is true; it defaults to false and tests/terraform/test_security.py proves no external IP by default.
  name_prefix    = "${var.name}-"
  description    = "tpubuild ${var.env_name} worker (one per TPU host)"
  machine_type   = var.machine_type
  labels         = var.labels
  tags           = [local.tag]
  can_ip_forward = false
  metadata       = local.template_metadata

  disk {
    boot         = true
    auto_delete  = true
    source_image = local.image
    disk_size_gb = var.boot_disk_size_gb
    disk_type    = "pd-balanced"
    labels       = var.labels
  }

  dynamic "disk" {
    for_each = var.shared_pd_attach ? [true] : []
    content {
      boot        = false
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
      for_each = var.external_ip ? [true] : []
      content {
        network_tier = "PREMIUM"
      }
    }
  }

  service_account {
    email  = module.mig_identity.email
    scopes = ["https://www.googleapis.com/auth/cloud-platform"]
  }

  shielded_instance_config {
    enable_secure_boot          = true
    enable_vtpm                 = true
    enable_integrity_monitoring = true
  }

  scheduling {
    on_host_maintenance = "MIGRATE"
    automatic_restart   = true
  }

  lifecycle {
    create_before_destroy = true
  }
}

resource "google_compute_instance_group_manager" "workers" {
  name               = var.name
  base_instance_name = var.name
  zone               = var.zone
  description        = "tpubuild ${var.env_name}: one worker VM per TPU host"
  target_size        = var.target_size

  version {
    name              = "worker"
    instance_template = google_compute_instance_template.worker.self_link_unique
  }

  # The TPU's identity changes with a resize (the TPU is recreated); it is applied to the
  # workers without touching the template.
  all_instances_config {
    metadata = {
      "tpubuild-tpu-name"      = data.terraform_remote_state.tpu.outputs.name
      "tpubuild-tpu-endpoints" = join(",", data.terraform_remote_state.tpu.outputs.endpoints)
    }
  }

  # A resize changes only target_size (new VMs) and all_instances_config (existing VMs are
  # restarted so startup.sh re-reads the TPU endpoints); nothing is recreated. A template change
  # (image, machine type, startup script) replaces the workers, all at once: a partial set of
  # XRT workers cannot train anyway.
  update_policy {
    type                           = "PROACTIVE"
    minimal_action                 = "RESTART"
    most_disruptive_allowed_action = "REPLACE"
    replacement_method             = "RECREATE"
    max_surge_fixed                = 0
    max_unavailable_fixed          = var.target_size
  }

  wait_for_instances        = true
  wait_for_instances_status = "STABLE"

  timeouts {
    create = "30m"
    update = "30m"
  }

  depends_on = [
    module.mig_identity,
    google_project_iam_member.mig_reader,
  ]
}
