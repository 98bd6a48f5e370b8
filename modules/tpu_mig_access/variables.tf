variable "name" {
  description = "Name of the slice (tpu-<ENV_BUILD_NAME>): its network tag and the prefix of its firewall rules."
  type        = string

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,44}[a-z0-9])?$", var.name))
    error_message = "name must be 1-46 lowercase letters, digits or hyphens, starting with a letter."
  }
}
