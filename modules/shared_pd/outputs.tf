output "name" {
  description = "Name of the disk (what an instance template's disk.source takes)."
  value       = google_compute_disk.this[local.target].name
}

output "self_link" {
  description = "Self link of the disk."
  value       = google_compute_disk.this[local.target].self_link
}

output "id" {
  description = "Relative path projects/P/zones/Z/disks/NAME (what a TPU VM's data_disks.source_disk takes)."
  value       = google_compute_disk.this[local.target].id
}

output "size_gb" {
  description = "Size of the disk in GB."
  value       = google_compute_disk.this[local.target].size
}

output "snapshot" {
  description = "Snapshot the disk was created from (null for a blank disk)."
  value       = google_compute_disk.this[local.target].snapshot
}

output "seeder_service_account_email" {
  description = "Email of the seeder VM's service account (the pipeline passes the same address as SEED_SERVICE_ACCOUNT)."
  value       = module.seeder_identity.email
}

output "slots" {
  description = "Every disk this state holds, by slot (a, b): zone, type, size_gb, snapshot (what it was made from, \"\" for blank). The next apply reads it back; two slots: a move to another zone is under way."
  value       = local.slots
}
