# Legacy, destroy only (destroy_only.tf, README.md). What the state of a node environment holds,
# and `terraform plan -destroy` deletes (any former address too, e.g. google_service_account.worker
# from before the host_identity split): the workers' instance template and MIG, the MIG reader
# custom role and its grant, module.mig_identity (service account, its grants) and
# module.mig_firewall (IAP SSH, internal). Nothing of it holds data: the dataset disk was attached
# READ_ONLY with auto_delete = false and belongs to the shared_pd module.
provider "google" {
  project = var.project_id
  zone    = var.zone
}
