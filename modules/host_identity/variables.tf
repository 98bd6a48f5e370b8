variable "project_id" {
  description = "Google Cloud project that holds the environment; the service account and its project roles live there."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be 6-30 lowercase letters, digits or hyphens, starting with a letter."
  }
}

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

variable "env_name" {
  description = "ENV_BUILD_NAME: the account may read objects under workspace/<env_name>/ in the state bucket."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,22}[a-z0-9])?$", var.env_name))
    error_message = "env_name must be 1-24 lowercase letters, digits or hyphens, not starting or ending with a hyphen."
  }
}

variable "state_bucket" {
  description = "The environment's Terraform state bucket; the account may read its workspace/<env_name>/ objects and nothing else in it."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][-a-z0-9_.]{1,61}[a-z0-9]$", var.state_bucket))
    error_message = "state_bucket must be a bucket name (3-63 lowercase letters, digits, -, _ or .)."
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

variable "dataset_bucket" {
  description = "Bucket of GCS_DATASET; the account gets roles/storage.objectViewer on it. Empty: no dataset bucket, no grant."
  type        = string

  validation {
    condition     = var.dataset_bucket == "" || can(regex("^[a-z0-9][-a-z0-9_.]{1,221}[a-z0-9]$", var.dataset_bucket))
    error_message = "dataset_bucket must be empty or a bucket name (no gs:// and no path)."
  }
}
