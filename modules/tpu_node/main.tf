provider "google" {
  project = var.project_id
}

# A TPU Node (v2/v3, XRT). The MIG workers (modules/mig) are its clients; they read this
# module's outputs through terraform_remote_state. Changing accelerator_type or
# runtime_version replaces the TPU (the API cannot change them in place).
resource "google_tpu_node" "this" {
  name               = var.name
  zone               = var.zone
  accelerator_type   = var.accelerator_type
  tensorflow_version = var.runtime_version
  network            = var.network
  labels             = var.labels

  # Either a /29 of our own, or (cidr_block = "") a range that service networking allocates
  # from the network's private service access range.
  cidr_block             = var.cidr_block == "" ? null : var.cidr_block
  use_service_networking = var.cidr_block == ""

  dynamic "scheduling_config" {
    for_each = var.preemptible ? [true] : []
    content {
      preemptible = true
    }
  }
}
