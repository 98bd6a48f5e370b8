# A host's own, least-privilege identity: a dedicated service account, a few project roles, read
# access to the dataset bucket and to the environment's workspace in the state bucket (not to the
# Terraform state). A child module: the roots tpu_mig_access, tpu_vm (the hosts) and shared_pd (the seeder
# VM) call it; it has no backend and no tfvars of its own.

locals {
  member = "serviceAccount:${google_service_account.this.email}"
}

resource "google_service_account" "this" {
  account_id   = var.account_id
  display_name = var.display_name
  description  = var.description
}

# Only *_iam_member: never _binding/_policy, which would remove grants made by others.
resource "google_project_iam_member" "project" {
  for_each = var.project_roles
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

# Read the environment's workspace (model code, setup and prep scripts) in the state bucket, and
# nothing else in it: not the Terraform state. Listing is a bucket-level permission, so the
# condition lets the bucket itself through (object names are listable, other objects' contents
# are not readable). Needs uniform bucket-level access, which `tpubuild initialize` sets.
resource "google_storage_bucket_iam_member" "workspace" {
  bucket = var.state_bucket
  role   = "roles/storage.objectViewer"
  member = local.member

  condition {
    title       = var.workspace_condition_title
    description = "Objects under workspace/${var.env_name}/ only"
    expression  = "resource.type == \"storage.googleapis.com/Bucket\" || resource.name.startsWith(\"projects/_/buckets/${var.state_bucket}/objects/workspace/${var.env_name}/\")"
  }
}

# Write the environment's checkpoints (models/checkpoint_sync.sh, docs/recovery.md "Checkpoints in
# the bucket") and nothing else: objects under workspace/<env>/checkpoints/ only. Storage Object
# User, because a copy creates objects, overwrites one (the manifest) and deletes the generations it
# replaced; Storage Object Creator may neither overwrite nor delete
# (https://cloud.google.com/storage/docs/access-control/iam-roles). Listing the prefix is the
# workspace grant's bucket-level clause above. Only the training hosts get it (checkpoint_writer),
# not the seeder VM.
resource "google_storage_bucket_iam_member" "checkpoints" {
  count  = var.checkpoint_writer ? 1 : 0
  bucket = var.state_bucket
  role   = "roles/storage.objectUser"
  member = local.member

  condition {
    title       = "tpubuild-checkpoints-${var.env_name}"
    description = "Objects under workspace/${var.env_name}/checkpoints/ only"
    expression  = "resource.name.startsWith(\"projects/_/buckets/${var.state_bucket}/objects/workspace/${var.env_name}/checkpoints/\")"
  }
}
