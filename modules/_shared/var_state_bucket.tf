# Shared: every module that declares var.state_bucket links this file (modules/_shared/README.md).

variable "state_bucket" {
  description = "The environment's Terraform state bucket: roots read the other modules' state from it; a service account may read its workspace/<env_name>/ objects and nothing else in it."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][-a-z0-9_.]{1,61}[a-z0-9]$", var.state_bucket))
    error_message = "state_bucket must be a bucket name (3-63 lowercase letters, digits, -, _ or .)."
  }
}
