# What a root that gives the training hosts their identity and firewall tells about them: tpu_vm
# (whose hosts are its own TPU VMs) and tpu_mig_access (whose hosts are modules/tpu_mig's instance
# template, which derives both values from the same variables instead of reading this state). Each
# linking root sets local.tag and local.hosts_identity (its modules/host_identity call).

output "service_account_email" {
  description = "Email of the hosts' service account (the TPU VMs run as it; on mig, modules/tpu_mig puts it on the instance template)."
  value       = local.hosts_identity.email
}

output "network_tag" {
  description = "Network tag of the hosts: the IAP-SSH and internal firewall rules target it (on mig, every VM of the template carries it)."
  value       = local.tag
}
