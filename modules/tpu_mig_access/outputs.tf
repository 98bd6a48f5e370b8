# service_account_email and network_tag: outputs_hosts.tf (linked from modules/_shared).

output "reader_role" {
  description = "Custom role that lets the hosts list their own MIG."
  value       = google_project_iam_custom_role.mig_reader.name
}
