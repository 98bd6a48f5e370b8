output "service_account_email" {
  description = "Email of the slice hosts' service account (modules/tpu_mig puts it on the instance template)."
  value       = module.slice_identity.email
}

output "network_tag" {
  description = "Network tag the slice's VMs must carry for the IAP-SSH and internal rules."
  value       = local.tag
}

output "reader_role" {
  description = "Custom role that lets the hosts list their own MIG."
  value       = google_project_iam_custom_role.mig_reader.name
}
