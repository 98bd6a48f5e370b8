# service_account_email and network_tag: outputs_hosts.tf (linked from modules/_shared).

output "name" {
  description = "Name of the slice values.env asks for, the one training runs on once tpu-swap ran: name or name-b (make-before-break alternates them); the queued resource's node id when queued."
  value       = local.slice_name
}

output "slices" {
  description = "Every slice this state holds, by slot (a, b): name, zone, the values that force a new slice (wanted), labels, metadata. The next apply reads it back (make-before-break); two slots: a replacement is under way."
  value       = local.slices
}

output "accelerator_type" {
  description = "Accelerator type of the slice."
  value       = var.accelerator_type
}

output "worker_ips" {
  description = "Internal IP address of each host, in worker order (worker 0 first); empty when queued (Terraform does not own the slice then: ask the TPU API)."
  value       = var.queued ? [] : google_tpu_v2_vm.this[local.target].network_endpoints[*].ip_address
}

output "external_ips" {
  description = "External IP address of each host; empty strings unless external_ips is true; empty when queued."
  value       = var.queued ? [] : [for e in google_tpu_v2_vm.this[local.target].network_endpoints : try(e.access_config[0].external_ip, "")]
}

output "hosts" {
  description = "Number of hosts in the slice (0 when queued: Terraform does not own the slice then)."
  value       = var.queued ? 0 : length(google_tpu_v2_vm.this[local.target].network_endpoints)
}

output "queued" {
  description = "Whether the slice is requested as a queued resource by the pipeline (var.queued)."
  value       = var.queued
}

output "queued_request" {
  description = "What the tpu-queue step needs for `gcloud compute tpus queued-resources create`: metadata (every key and value the direct TPU VM would get, startup script included), service_account_email, network_tag (the shared PD is attached by the tpu-attach step)."
  value = {
    metadata              = local.metadata
    service_account_email = local.hosts_identity.email
    network_tag           = local.tag
  }
}
