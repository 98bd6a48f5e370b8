provider "google" {
  project = var.project_id
  zone    = var.zone
}

provider "google-beta" {
  project = var.project_id
  zone    = var.zone
}

# ---- what filestore and shared_pd applied (they run before this module in the vm architecture) ----

data "terraform_remote_state" "filestore" {
  backend = "gcs"
  config = {
    bucket = var.state_bucket
    prefix = "${var.env_name}/filestore"
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

locals {
  # Network tag of the TPU VM hosts; the firewall rules below target it.
  tag = var.name
  # A TPU VM names its first data disk persistent-disk-1: /dev/disk/by-id/google-persistent-disk-1.
  pd_device = "persistent-disk-1"
  member    = "serviceAccount:${google_service_account.worker.email}"

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
}

# ---- the hosts' own, least-privilege identity ----

resource "google_service_account" "worker" {
  account_id   = var.service_account_id
  display_name = "tpubuild ${var.env_name} TPU VM hosts"
  description  = "Identity of the ${var.name} TPU VM hosts: reads the dataset and its workspace, writes logs and metrics."
}

resource "google_project_iam_member" "worker" {
  for_each = toset(["roles/logging.logWriter", "roles/monitoring.metricWriter"])
  project  = var.project_id
  role     = each.value
  member   = local.member
}

resource "google_storage_bucket_iam_member" "dataset" {
  count  = var.dataset_bucket == "" ? 0 : 1
  bucket = var.dataset_bucket
  role   = "roles/storage.objectViewer"
  member = local.member
}

# Read the environment's workspace in the state bucket, and nothing else in it (not the
# Terraform state). Listing is a bucket-level permission, so the condition lets the bucket
# itself through: object names are listable, other objects' contents are not readable.
resource "google_storage_bucket_iam_member" "workspace" {
  bucket = var.state_bucket
  role   = "roles/storage.objectViewer"
  member = local.member

  condition {
    title       = "tpubuild-workspace-${var.env_name}"
    description = "Objects under workspace/${var.env_name}/ only"
    expression  = "resource.type == \"storage.googleapis.com/Bucket\" || resource.name.startsWith(\"projects/_/buckets/${var.state_bucket}/objects/workspace/${var.env_name}/\")"
  }
}

# ---- network access: IAP-only SSH, and host <-> host inside the VPC ----

resource "google_compute_firewall" "iap_ssh" {
  name          = "${var.name}-iap-ssh"
  network       = var.network
  description   = "SSH to the ${var.name} TPU VM hosts through Identity-Aware Proxy TCP forwarding only."
  direction     = "INGRESS"
  source_ranges = ["35.235.240.0/20"]
  target_tags   = [local.tag]

  allow {
    protocol = "tcp"
    ports    = ["22"]
  }

  log_config {
    metadata = "INCLUDE_ALL_METADATA"
  }
}

resource "google_compute_firewall" "internal" {
  name        = "${var.name}-internal"
  network     = var.network
  description = "Traffic between the hosts of the ${var.name} TPU VM slice (PJRT/XLA collectives over the VPC)."
  direction   = "INGRESS"
  source_tags = [local.tag]
  target_tags = [local.tag]

  allow {
    protocol = "tcp"
  }

  allow {
    protocol = "udp"
  }

  allow {
    protocol = "icmp"
  }
}

# ---- the TPU VM slice ----

resource "google_tpu_v2_vm" "this" {
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
    email = google_service_account.worker.email
    scope = ["https://www.googleapis.com/auth/cloud-platform"]
  }

  dynamic "data_disks" {
    for_each = var.shared_pd_attach ? [true] : []
    content {
      source_disk = data.terraform_remote_state.shared_pd[0].outputs.id
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
    google_project_iam_member.worker,
    google_storage_bucket_iam_member.dataset,
    google_storage_bucket_iam_member.workspace,
    google_compute_firewall.internal,
  ]
}
