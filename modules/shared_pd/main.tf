provider "google" {
  project = var.project_id
}

# The dataset disk: written once by the seeder (env_setup/seeder), then attached READ_ONLY to
# every worker. `snapshot` only matters when the disk is created: a later change of the
# restore point must never replace a disk that holds data, so Terraform ignores it afterwards
# (SHARED_PD_RESTORE restores a disk that a destroy removed; it does not roll back a live one).
resource "google_compute_disk" "this" {
  #checkov:skip=CKV_GCP_37:Customer-supplied keys would have to be handed to Cloud Build, the seeder and every worker; the dataset disk uses Google-managed encryption at rest.
  name     = var.name
  zone     = var.zone
  type     = var.type
  size     = var.size_gb
  labels   = var.labels
  snapshot = var.snapshot == "" ? null : var.snapshot

  lifecycle {
    ignore_changes = [snapshot]
  }
}
