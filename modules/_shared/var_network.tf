# Shared: every module that declares var.network links this file (modules/_shared/README.md).

variable "network" {
  description = "VPC network of the environment (NETWORK, a name such as default): the hosts and the TPU live in it, Filestore is reachable from it, the firewall rules are created in it."
  type        = string

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", var.network))
    error_message = "network must be a network name such as default."
  }
}
