# Shared: every module that declares var.service_account_id links this file (modules/_shared/README.md).

variable "service_account_id" {
  description = "account_id of the hosts' dedicated service account (6-30 characters)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][-a-z0-9]{4,28}[a-z0-9]$", var.service_account_id))
    error_message = "service_account_id must be 6-30 lowercase letters, digits or hyphens, starting with a letter."
  }
}
