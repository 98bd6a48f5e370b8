variable "account_id" {
  description = "account_id of the dedicated service account (6-30 characters)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][-a-z0-9]{4,28}[a-z0-9]$", var.account_id))
    error_message = "account_id must be 6-30 lowercase letters, digits or hyphens, starting with a letter."
  }
}

variable "display_name" {
  description = "Display name of the service account."
  type        = string

  validation {
    condition     = length(trimspace(var.display_name)) > 0 && length(var.display_name) <= 100
    error_message = "display_name must be 1-100 characters, not only spaces."
  }
}

variable "description" {
  description = "Description of the service account: whose identity it is and what it may do."
  type        = string

  validation {
    condition     = length(trimspace(var.description)) > 0 && length(var.description) <= 256
    error_message = "description must be 1-256 characters, not only spaces."
  }
}

variable "project_roles" {
  description = "Project roles granted to the account; only roles/logging.logWriter and roles/monitoring.metricWriter are allowed (least privilege)."
  type        = set(string)

  validation {
    condition     = alltrue([for role in var.project_roles : contains(["roles/logging.logWriter", "roles/monitoring.metricWriter"], role)])
    error_message = "project_roles may hold only roles/logging.logWriter and roles/monitoring.metricWriter."
  }
}

variable "workspace_condition_title" {
  description = "Title of the IAM condition on the state bucket grant (changing it replaces the grant)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][-a-z0-9]{0,99}$", var.workspace_condition_title))
    error_message = "workspace_condition_title must be 1-100 lowercase letters, digits or hyphens, starting with a letter."
  }
}

variable "checkpoint_writer" {
  description = "Whether the account may write the environment's checkpoints: roles/storage.objectUser on the state bucket's workspace/<env_name>/checkpoints/ objects only (the training hosts; not the seeder)."
  type        = bool
  default     = false
}
