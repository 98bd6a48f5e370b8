# Shared: the modules whose Cloud Scheduler job asks Cloud Build to run one of the environment's
# builds (modules/ttl, modules/health) link this file (modules/_shared/README.md). Each sets
# local.invoker_account_id, local.invoker_display_name, local.invoker_description and
# local.request_body (the Build's JSON, builder/inputs/ttl.py or builder/inputs/recovery.py).

# Who the build runs as: the identity applying the module, i.e. the service account the
# environment's pipelines run as (they apply the TPU, so they can destroy and recreate it). Set
# explicitly on the build, so it is the same whatever the project's default build account is
# (legacy Cloud Build or Compute Engine default); the invoker may act as it
# (iam.serviceAccounts.actAs), nothing more.
data "google_client_openid_userinfo" "builder" {}

locals {
  builder_sa = "projects/${var.project_id}/serviceAccounts/${data.google_client_openid_userinfo.builder.email}"
  # an empty body ("": the caller's off) fails the job's precondition, which says why, not jsondecode
  build_body = jsonencode(merge(jsondecode(local.request_body == "" ? "{}" : local.request_body), { serviceAccount = local.builder_sa }))
}

resource "google_service_account" "invoker" {
  project      = var.project_id
  account_id   = local.invoker_account_id
  display_name = local.invoker_display_name
  description  = local.invoker_description
}

resource "google_project_iam_member" "invoker_builds" {
  #checkov:skip=CKV_GCP_49:The scheduler must create one build; Cloud Build has no narrower role than builds.editor and no per-build IAM, and this account may act as the builder account only (invoker_acts_as_builder), no other.
  project = var.project_id
  role    = "roles/cloudbuild.builds.editor"
  member  = "serviceAccount:${google_service_account.invoker.email}"
}

resource "google_service_account_iam_member" "invoker_acts_as_builder" {
  service_account_id = local.builder_sa
  role               = "roles/iam.serviceAccountUser"
  member             = "serviceAccount:${google_service_account.invoker.email}"
}
