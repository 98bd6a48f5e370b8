# Shared: every module that declares var.env_name links this file (modules/_shared/README.md).

variable "env_name" {
  description = "ENV_BUILD_NAME: names the environment's resources, its remote-state prefixes (<env_name>/<module>) and its workspace (workspace/<env_name>/)."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,22}[a-z0-9])?$", var.env_name))
    error_message = "env_name must be 1-24 lowercase letters, digits or hyphens, not starting or ending with a hyphen."
  }
}
