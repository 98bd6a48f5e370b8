output "email" {
  description = "Email of the service account (what a VM's or TPU VM's service_account.email takes)."
  value       = google_service_account.this.email
}
