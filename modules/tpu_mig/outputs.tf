output "name" {
  description = "Name of the managed instance group (also its VMs' name prefix)."
  value       = google_compute_instance_group_manager.slice.name
}

output "instance_group" {
  description = "Self link of the instance group (list its VMs with gcloud compute instance-groups managed list-instances)."
  value       = google_compute_instance_group_manager.slice.instance_group
}

output "vm_count" {
  description = "Number of TPU VMs in the slice."
  value       = var.vm_count
}

output "workload_policy" {
  description = "Self link of the workload policy (empty for a single-host slice)."
  value       = one(google_compute_resource_policy.slice[*].self_link)
}

output "instance_template" {
  description = "Self link of the instance template the slice's VMs run."
  value       = google_compute_instance_template.slice.self_link
}

output "shared_pd_kept_in_template" {
  description = "true: the slice was applied before the mig-attach step, with the shared PD in its instance template, and the template keeps it (dropping it would recreate every VM); the next apply reads it back from this state."
  value       = local.pd_kept
}
