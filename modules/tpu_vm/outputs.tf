output "name" {
  description = "Name of the TPU VM slice."
  value       = google_tpu_v2_vm.this.name
}

output "accelerator_type" {
  description = "Accelerator type of the slice."
  value       = google_tpu_v2_vm.this.accelerator_type
}

output "worker_ips" {
  description = "Internal IP address of each host, in worker order (worker 0 first)."
  value       = google_tpu_v2_vm.this.network_endpoints[*].ip_address
}

output "external_ips" {
  description = "External IP address of each host; empty strings unless external_ips is true."
  value       = [for e in google_tpu_v2_vm.this.network_endpoints : try(e.access_config[0].external_ip, "")]
}

output "hosts" {
  description = "Number of hosts in the slice."
  value       = length(google_tpu_v2_vm.this.network_endpoints)
}

output "service_account_email" {
  description = "Email of the hosts' service account."
  value       = module.tpu_vm_identity.email
}

output "network_tag" {
  description = "Network tag of the hosts (the firewall rules target it)."
  value       = local.tag
}

output "ttl_job" {
  description = "The TTL's Cloud Scheduler job (empty without ENV_TTL_HOURS)."
  value       = var.ttl_hours > 0 ? module.ttl[0].job : ""
}
