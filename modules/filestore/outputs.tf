output "name" {
  description = "Name of the Filestore instance."
  value       = google_filestore_instance.this[local.target].name
}

output "nfs_ip" {
  description = "IP address of the NFS server (mount <nfs_ip>:/<share_name>)."
  value       = google_filestore_instance.this[local.target].networks[0].ip_addresses[0]
}

output "share_name" {
  description = "Name of the file share (the NFS export path without the leading /)."
  value       = google_filestore_instance.this[local.target].file_shares[0].name
}

output "capacity_gb" {
  description = "Capacity of the file share in GiB."
  value       = google_filestore_instance.this[local.target].file_shares[0].capacity_gb
}

output "tier" {
  description = "Service tier of the instance."
  value       = google_filestore_instance.this[local.target].tier
}

output "location" {
  description = "Zone or region of the instance values.env asks for."
  value       = google_filestore_instance.this[local.target].location
}

output "slots" {
  description = "Every instance this state holds, by slot (a, b): location, tier, share_name, capacity_gb, network, source_backup (the backup it was restored from, \"\" for none). The next apply reads it back; two slots: a move to another zone is under way."
  value       = local.slots
}
