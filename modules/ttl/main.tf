# The environment's TTL: a Cloud Scheduler job that, once, asks the Cloud Build API to run the
# destroy-scoped build (_BUILD_ACTION=destroy, _TPU=true) of this environment. It is called by
# the TPU module, so it is created with the TPU and removed when the TPU is destroyed; Filestore,
# the shared PD and the buckets are never in its scope.

locals {
  # The job's and its invoker's names follow from the environment's: every caller gets the same
  # (builder/inputs/ttl.py names the job tpubuild-<env>-ttl too; var_env_name.tf keeps tb-<env>-tl within
  # the 6-30 characters of a service account id).
  name               = "tpubuild-${var.env_name}-ttl"
  invoker_account_id = "tb-${var.env_name}-tl"
  # Cloud Scheduler has no one-shot schedule: a cron on the expiry's minute, hour, day and month
  # fires once a year; the build it starts destroys this job with the TPU.
  expires_at = timeadd(timestamp(), "${var.ttl_hours}h")
  schedule   = formatdate("m H D M *", local.expires_at)
}

# The invoker account, its two grants and the build's serviceAccount: modules/_shared/scheduled_build.tf.
locals {
  invoker_display_name = "tpubuild ${var.env_name} TTL"
  invoker_description  = "Runs the TTL's destroy-scoped Cloud Build build of ${var.env_name}; nothing else."
  request_body         = var.ttl_build_body
}

resource "terraform_data" "tpu" {
  input = var.tpu_id
}

resource "google_cloud_scheduler_job" "ttl" {
  project     = var.project_id
  region      = var.region
  name        = local.name
  description = "tpubuild TTL of ${var.env_name}: destroys the TPU (not Filestore, the disk or the buckets)"
  schedule    = local.schedule
  time_zone   = "Etc/UTC"

  retry_config {
    retry_count          = 3
    min_backoff_duration = "60s"
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
    # var.ttl_hours and var.ttl_build_body are the roots' own (_shared/var_ttl.tf, where 0 and ""
    # mean no TTL): a caller creates this module only with a TTL (count = ttl_hours > 0 ? 1 : 0).
    precondition {
      condition     = var.ttl_hours >= 1 && var.ttl_build_body != ""
      error_message = "modules/ttl is called only with a TTL: ttl_hours of 1 or more and a ttl_build_body."
    }
    # `tpubuild ttl extend` moves the schedule; a later apply must not move it back. A new TPU
    # (replaced) gets a new job, counted from its own creation.
    ignore_changes       = [schedule, description]
    replace_triggered_by = [terraform_data.tpu]
  }

  depends_on = [google_project_iam_member.invoker_builds, google_service_account_iam_member.invoker_acts_as_builder]
}
