output "name" {
  description = "Name of the Filestore instance."
  value       = google_filestore_instance.this.name
}

output "nfs_ip" {
  description = "IP address of the NFS server (mount <nfs_ip>:/<share_name>)."
  value       = google_filestore_instance.this.networks[0].ip_addresses[0]
}

output "share_name" {
  description = "Name of the file share (the NFS export path without the leading /)."
  value       = google_filestore_instance.this.file_shares[0].name
}

output "capacity_gb" {
  description = "Capacity of the file share in GiB."
  value       = google_filestore_instance.this.file_shares[0].capacity_gb
}

output "tier" {
  description = "Service tier of the instance."
  value       = google_filestore_instance.this.tier
}

output "location" {
  description = "Zone or region of the instance."
  value       = google_filestore_instance.this.location
}
