output "name" {
  description = "Name of the TPU Node."
  value       = google_tpu_node.this.name
}

output "accelerator_type" {
  description = "Accelerator type of the TPU Node (e.g. v3-32)."
  value       = google_tpu_node.this.accelerator_type
}

output "ip_addresses" {
  description = "Internal IP address of each TPU worker, in the API's network endpoint order."
  value       = google_tpu_node.this.network_endpoints[*].ip_address
}

output "port" {
  description = "Port the TPU workers listen on (8470)."
  value       = google_tpu_node.this.network_endpoints[0].port
}

output "endpoints" {
  description = "ip:port of each TPU worker, in network endpoint order (what XRT_TPU_CONFIG lists)."
  value       = [for e in google_tpu_node.this.network_endpoints : "${e.ip_address}:${e.port}"]
}

output "hosts" {
  description = "Number of TPU hosts (one MIG worker VM each)."
  value       = length(google_tpu_node.this.network_endpoints)
}

output "cidr_block" {
  description = "CIDR block the TPU workers' addresses come from (the MIG firewall lets it reach the workers)."
  value       = google_tpu_node.this.cidr_block
}
