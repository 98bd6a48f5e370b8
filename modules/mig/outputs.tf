output "name" {
  description = "Name of the managed instance group (also its instances' name prefix)."
  value       = google_compute_instance_group_manager.workers.name
}

output "instance_group" {
  description = "Self link of the instance group (list its VMs with gcloud compute instance-groups list-instances)."
  value       = google_compute_instance_group_manager.workers.instance_group
}

output "target_size" {
  description = "Number of worker VMs."
  value       = google_compute_instance_group_manager.workers.target_size
}

output "instance_template" {
  description = "Self link of the instance template the workers run."
  value       = google_compute_instance_template.worker.self_link
}

output "service_account_email" {
  description = "Email of the workers' service account."
  value       = module.mig_identity.email
}

output "network_tag" {
  description = "Network tag of the workers (the firewall rules target it)."
  value       = local.tag
}
