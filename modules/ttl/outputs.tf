output "job" {
  description = "Full name of the Cloud Scheduler job."
  value       = google_cloud_scheduler_job.ttl.id
}

output "schedule" {
  description = "The cron (UTC) the job fires on: the expiry's minute, hour, day and month."
  value       = google_cloud_scheduler_job.ttl.schedule
}

output "invoker" {
  description = "Email of the service account the job calls Cloud Build as."
  value       = google_service_account.invoker.email
}
