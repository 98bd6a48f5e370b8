# Shared: every module that declares var.project_id links this file (modules/_shared/README.md).

variable "project_id" {
  description = "Google Cloud project that holds the environment (PROJECT_ID)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be 6-30 lowercase letters, digits or hyphens, starting with a letter."
  }
}
