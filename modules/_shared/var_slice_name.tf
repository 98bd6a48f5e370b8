# Shared: the two roots of a TPU_ARCH="mig" slice (tpu_mig_access, tpu_mig) link this file
# (modules/_shared/README.md); both name what they create after the slice.

variable "name" {
  description = "Name of the slice (tpu-<ENV_BUILD_NAME>): the MIG, its VMs' prefix, the template's prefix and, with the topology, the workload policy (tpu_mig); the VMs' network tag and the prefix of their firewall rules (tpu_mig_access)."
  type        = string

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,44}[a-z0-9])?$", var.name))
    error_message = "name must be 1-46 lowercase letters, digits or hyphens, starting with a letter."
  }
}
