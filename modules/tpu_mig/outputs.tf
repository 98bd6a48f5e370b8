output "name" {
  description = "Name of the managed instance group values.env asks for (also its VMs' name prefix), the one training runs on once the pipeline moved it: name or name-b (make-before-break alternates them)."
  value       = google_compute_instance_group_manager.slice[local.target].name
}

output "slices" {
  description = "Every slice this state holds, by slot (a, b): name, the values that make a new template or policy (wanted), metadata, the shared PD in its template, account, network tag, calendar reservation. The next apply reads it back (make-before-break); two slots: a replacement is under way."
  value       = local.slices
}

output "instance_group" {
  description = "Self link of the instance group (list its VMs with gcloud compute instance-groups managed list-instances)."
  value       = google_compute_instance_group_manager.slice[local.target].instance_group
}

output "vm_count" {
  description = "Number of TPU VMs in the slice."
  value       = var.vm_count
}

output "workload_policy" {
  description = "Self link of the workload policy (empty for a single-host slice)."
  value       = lookup(local.policy_links, local.target, null)
}

output "instance_template" {
  description = "Self link of the instance template the slice's VMs run."
  value       = google_compute_instance_template.slice[local.target].self_link
}

output "shared_pd_kept_in_template" {
  description = "true: the slice was applied before the mig-attach step, with the shared PD in its instance template, and the template keeps it (dropping it would recreate every VM); the slot records it too (slices), which later applies read back."
  value       = local.pd_kept
}
