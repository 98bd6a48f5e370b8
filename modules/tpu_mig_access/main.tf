# TPU_ARCH="mig", plan module tpu: who the slice's TPU VMs are and what may reach them. The slice
# itself (workload policy, instance template, MIG) is modules/tpu_mig, which derives the account's
# email and the tag from the same variables (it does not read this module's state, so it need not
# wait for it; the pipeline's tpu-identity step makes the account first); it is kept apart so that
# the hosts' identity and firewall outlive a resize of the slice (docs/modules.md, "mig architecture").

provider "google" {
  project = var.project_id
}

locals {
  # Network tag of the slice's VMs; the firewall rules target it and modules/tpu_mig sets it
  # (its local.network_tag: var.name too).
  tag = var.name
  # The hosts' identity, for the outputs linked from modules/_shared/outputs_hosts.tf.
  hosts_identity = module.slice_identity
}

# ---- the hosts' own, least-privilege identity (modules/host_identity) ----

module "slice_identity" {
  source = "../host_identity"

  project_id                = var.project_id
  account_id                = var.service_account_id
  display_name              = "tpubuild ${var.env_name} TPU slice hosts"
  description               = "Identity of the ${var.name} TPU VMs (a MIG): reads the dataset and its workspace, writes logs and metrics."
  project_roles             = ["roles/logging.logWriter", "roles/monitoring.metricWriter"]
  env_name                  = var.env_name
  state_bucket              = var.state_bucket
  workspace_condition_title = "tpubuild-workspace-${var.env_name}"
  dataset_bucket            = var.dataset_bucket
  checkpoint_writer         = true # models/checkpoint_sync.sh: checkpoints that outlive the zone
}

# startup.sh lists the slice's own MIG (`gcloud compute instance-groups managed list-instances`,
# one instanceGroupManagers.listManagedInstances call) to elect the leader and to derive each VM's
# PJRT worker id and the peer list (TPU_WORKER_ID / TPU_WORKER_HOSTNAMES). A custom role with the
# two permissions gcloud needs instead of roles/compute.viewer, which reads the whole project's
# Compute Engine inventory. Role ids allow no hyphens.
resource "google_project_iam_custom_role" "mig_reader" {
  role_id     = "tpubuild_${replace(var.env_name, "-", "_")}_slice_reader"
  title       = "tpubuild ${var.env_name} slice reader"
  description = "Lets the ${var.name} TPU VMs list their own MIG's instances (worker ids, peers, leader)."
  permissions = ["compute.instanceGroupManagers.get", "compute.instanceGroupManagers.list"]
}

resource "google_project_iam_member" "mig_reader" {
  project = var.project_id
  role    = google_project_iam_custom_role.mig_reader.name
  member  = "serviceAccount:${module.slice_identity.email}"
}

# ---- network access (modules/host_firewall): IAP-only SSH, and VM <-> VM inside the VPC ----

module "slice_firewall" {
  source = "../host_firewall"

  network              = var.network
  name                 = var.name
  network_tag          = local.tag
  hosts                = "TPU slice hosts"
  internal_description = "Traffic between the TPU VMs of the ${var.name} slice (PJRT/XLA over the VPC, DCN)."
}
