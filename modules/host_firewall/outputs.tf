output "iap_ssh_rule" {
  description = "Name of the IAP SSH rule (tcp:22 from 35.235.240.0/20 to network_tag)."
  value       = google_compute_firewall.iap_ssh.name
}

output "internal_rule" {
  description = "Name of the rule that lets the hosts (and internal_source_ranges) reach each other."
  value       = google_compute_firewall.internal.name
}
