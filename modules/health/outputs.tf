output "job" {
  description = "Full name of the health check's Cloud Scheduler job."
  value       = google_cloud_scheduler_job.health.id
}

output "invoker" {
  description = "Email of the service account the job calls Cloud Build as."
  value       = google_service_account.invoker.email
}
