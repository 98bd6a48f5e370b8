# Shared: every module that declares var.dataset_bucket links this file (modules/_shared/README.md).

variable "dataset_bucket" {
  description = "Bucket of GCS_DATASET; the module's service account (the hosts' or the seeder's) gets roles/storage.objectViewer on it. Empty: no dataset bucket, no grant."
  type        = string

  validation {
    condition     = var.dataset_bucket == "" || can(regex("^[a-z0-9][-a-z0-9_.]{1,221}[a-z0-9]$", var.dataset_bucket))
    error_message = "dataset_bucket must be empty or a bucket name (no gs:// and no path)."
  }
}
