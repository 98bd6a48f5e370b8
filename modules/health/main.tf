# The environment's health check (TPU_RECOVERY): a Cloud Scheduler job that, every few minutes,
# asks the Cloud Build API to run the health build of this environment (builder/inputs/recovery.py):
# it recreates a lost slice and relaunches training from its last checkpoint, never past the
# TTL and never while a build holds the environment lock. It is called by the module that holds
# the slice (as modules/ttl is), so it is created with the slice and removed when it is destroyed.

locals {
  # builder/inputs/recovery.py names the job tpubuild-<env>-health too; var_env_name.tf keeps
  # tb-<env>-hc within the 6-30 characters of a service account id.
  name                 = "tpubuild-${var.env_name}-health"
  invoker_account_id   = "tb-${var.env_name}-hc"
  invoker_display_name = "tpubuild ${var.env_name} health check"
  invoker_description  = "Runs the health-check Cloud Build build of ${var.env_name} (TPU_RECOVERY); nothing else."
  request_body         = var.health_build_body
}

# The invoker account, its two grants and the build's serviceAccount: modules/_shared/scheduled_build.tf.

resource "google_cloud_scheduler_job" "health" {
  project     = var.project_id
  region      = var.region
  name        = local.name
  description = "tpubuild health check of ${var.env_name}: recreates a lost slice and relaunches training (TPU_RECOVERY)"
  schedule    = var.health_schedule
  time_zone   = "Etc/UTC"

  # A failed call (the Cloud Build API's 429 or 5xx) is retried within the interval: Cloud Scheduler
  # does not retry at all with retry_count = 0, its default, and then waits for the next scheduled
  # run ("Retry jobs", cloud.google.com/scheduler/docs/configuring/retry-jobs). Retries stop after
  # 5 minutes, before the next run (every 10 minutes) could be skipped for them.
  retry_config {
    retry_count          = 3
    min_backoff_duration = "30s"
    max_retry_duration   = "300s"
  }

  http_target {
    http_method = "POST"
    uri         = "https://cloudbuild.googleapis.com/v1/projects/${var.project_id}/builds"
    body        = base64encode(local.build_body)
    headers = {
      "Content-Type" = "application/json"
    }
    oauth_token {
      service_account_email = google_service_account.invoker.email
      scope                 = "https://www.googleapis.com/auth/cloud-platform"
    }
  }

  lifecycle {
    # var.health_build_body is the roots' own (_shared/var_health.tf, where "" means no health
    # check): a caller creates this module only with one (count = health_build_body != "" ? 1 : 0).
    precondition {
      condition     = var.health_build_body != ""
      error_message = "modules/health is called only with a health_build_body (TPU_RECOVERY=auto)."
    }
  }

  depends_on = [google_project_iam_member.invoker_builds, google_service_account_iam_member.invoker_acts_as_builder]
}
