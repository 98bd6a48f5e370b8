# Legacy, destroy only (destroy_only.tf, README.md). What the state of an environment created
# before 2025-04-25 holds, and `terraform plan -destroy` deletes: google_tpu_node.this, the TPU Node.
# Nothing of it holds data (the dataset disk and Filestore are the shared_pd and filestore modules').
provider "google" {
  project = var.project_id
  zone    = var.zone
}
